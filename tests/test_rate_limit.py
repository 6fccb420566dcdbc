"""How fast one session and one client may make the server run pages (kit/rate_limit). The
limits must stop the attack (four sessions rerunning five times a second took 98 % of the server; join codes
guessed as fast as links open) and never refuse a real student or lecturer: simulated on the limits' own clock."""
from __future__ import annotations

import pytest

from explorer.kit import rate_limit as rl


def run(pattern, rate: rl.Rate) -> list[bool]:
    """Whether each run of ``pattern`` (the times, in seconds) is allowed by one bucket of ``rate``."""
    bucket, out = None, []
    for t in pattern:
        bucket, wait = rl.take(bucket, rate, t)
        out.append(wait == 0.0)
    return out


def every(step: float, seconds: float, start: float = 0.0) -> list[float]:
    return [start + k * step for k in range(int(seconds / step))]


def test_the_attack_is_held_to_the_sustained_rate():
    """Five page runs a second for a minute: after the burst, one a second gets through (65 of 300)."""
    allowed = run(every(0.2, 60), rl.SESSION_RUNS)
    assert not all(allowed) and allowed[:30] == [True] * 30
    assert sum(allowed) <= rl.SESSION_RUNS.burst + 60 * rl.SESSION_RUNS.per_second + 1
    assert sum(allowed[-50:]) <= 11                                  # the last 10 s: about one a second


def test_a_real_session_is_never_refused():
    """What a session asks for itself (Step, Back and the slider rerun the stepper's fragment, and Play's timer and
    following a lecturer are not counted): 25 clicks as fast as a hand clicks (Play, Pause, another page, a
    checkbox), then one every second for an hour of a lecture."""
    clicks = every(0.15, 25 * 0.15) + every(1.0, 3600, start=4.0)
    assert all(run(clicks, rl.SESSION_RUNS))


def test_a_lecture_hall_behind_one_address_is_never_refused():
    """200 students opening the app through the QR code's join link within 20 s, then each running a page every
    20 s (their own clicks: 10 a second from the hall) for an hour."""
    opens = [k * 0.1 for k in range(200)]
    assert all(run(opens, rl.CLIENT_JOINS))
    own = sorted(opens + [3.0 + k * 0.1 for k in range(36_000)])     # 10 runs a second for an hour
    assert all(run(own, rl.CLIENT_RUNS))


def test_guessing_join_codes_is_held_to_one_a_second():
    allowed = run(every(0.05, 600), rl.CLIENT_JOINS)                  # 20 guesses a second for ten minutes
    assert sum(allowed) <= rl.CLIENT_JOINS.burst + 600 * rl.CLIENT_JOINS.per_second + 1   # 801 of 12,000
    assert sum(allowed[-200:]) <= 11                                  # the last 10 s: one a second


def test_a_refusal_takes_nothing_and_says_how_long_to_wait():
    bucket, wait = rl.take(rl.Bucket(0.0, 10.0), rl.Rate(5, 2.0), 10.0)
    assert wait == pytest.approx(0.5) and bucket.tokens == 0.0
    bucket, wait = rl.take(bucket, rl.Rate(5, 2.0), 10.25)            # asked again early: still refused
    assert wait == pytest.approx(0.25)
    assert rl.take(bucket, rl.Rate(5, 2.0), 10.5)[1] == 0.0           # on time: allowed
    assert rl.take(None, rl.Rate(5, 2.0), 0.0) == (rl.Bucket(4.0, 0.0), 0.0)
    assert rl.wait_text(0.2) == "1 s" and rl.wait_text(11.5) == "12 s"


def test_the_client_buckets_are_bounded_in_memory():
    limiter = rl.RateLimiter(rl.Rate(2, 1.0), max_keys=1000)
    for k in range(50_000):                                          # addresses made up by an attacker
        limiter.take(f"198.51.{k // 256}.{k % 256}", 0.0)
    assert len(limiter) == 1000
    assert limiter.take("203.0.113.1", 0.0) == 0.0 and limiter.take("203.0.113.1", 0.0) == 0.0
    assert limiter.take("203.0.113.1", 0.0) == pytest.approx(1.0)     # its own bucket, not another's


@pytest.mark.parametrize("peer, headers, key", [
    ("93.184.216.34", {}, "93.184.216.34"),                                        # a direct connection
    ("93.184.216.34", {"X-Forwarded-For": "10.0.0.1"}, "93.184.216.34"),           # a client's own header: ignored
    ("2606:2800:220:1::1", {}, "2606:2800:220:1::1"),
    ("172.18.0.5", {"X-Forwarded-For": "1.2.3.4, 203.0.113.7"}, "203.0.113.7"),    # HAProxy in compose: its entry
    (None, {"x-forwarded-for": "203.0.113.9"}, "203.0.113.9"),                     # HAProxy on this machine
    (None, {}, rl.LOCAL),                                                          # this machine's own browser
    # a server listening on every address (IPv6 and IPv4 at once) sees IPv4 peers as IPv4-mapped IPv6 addresses
    ("::ffff:127.0.0.1", {"X-Forwarded-For": "203.0.113.8"}, "203.0.113.8"),       # HAProxy on this machine
    ("::ffff:172.18.0.5", {"X-Forwarded-For": "203.0.113.6"}, "203.0.113.6"),      # HAProxy in compose
    ("::ffff:93.184.216.34", {"X-Forwarded-For": "10.0.0.1"}, "93.184.216.34"),   # a direct client, its header ignored
])
def test_the_client_is_the_address_the_proxy_saw(peer, headers, key):
    assert rl.client_key(peer, headers) == key
