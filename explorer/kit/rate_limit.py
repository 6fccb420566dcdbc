"""How fast one session and one client may make the server run pages: token buckets, sized so that a real
student or lecturer never meets them (no Streamlit here; ``kit/widgets.start_page`` applies them).

Measured: four sessions rerunning a page five times a second took 98 % of a two-core server (others' page loads
went from 0.08 s to 2.4 s), and a join code could be guessed as fast as a script could open links (80 ms of CPU
each). What a real class does, and what the limits leave room for:

* a page run the session asked for itself (a click outside the stepper, typing a program, Play / Pause, another
  page): :data:`SESSION_RUNS`, 30 at once and then one a second for as long as it goes on. Step, Back and the
  slider rerun the stepper's fragment only, and Play's timer and following the lecturer start runs that the
  session did not ask for (their pace is the timer's, at most four a second, or the lecturer's): none of these
  is counted, so stepping fast, playing at "very fast" or following a lecturer who steps fast is never refused;
* the same runs of every session of one client (a browser, or a lecture hall behind one address):
  :data:`CLIENT_RUNS`, 400 at once (a class of 200 opening the app and its join link) and then ten a second;
* opening a ``?join=`` link: :data:`CLIENT_JOINS`, 200 at once (a class scanning the QR code) and then one a
  second: a guesser then finds one of ten live classes among the 31^6 codes once in about three years, and costs
  the server 8 % of a core.

* starting a class: :data:`CLIENT_CLASSES`, five at once and then one every five minutes per client (a lecturer
  starts one or two a lecture); the server holds :data:`explorer.classroom.broker.MAX_CLASSES` in all.

The client buckets live in one :class:`RateLimiter` per server process, at most :data:`MAX_CLIENTS` of them
(least recently used dropped: a dropped bucket starts full again, which costs a returning client a fresh burst
and never a refusal), so their memory is bounded whatever the number of clients.
"""
from __future__ import annotations

import ipaddress
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Mapping


@dataclass(frozen=True)
class Rate:
    """A token bucket's size: ``burst`` runs at once, then ``per_second`` for as long as it goes on."""
    burst: float
    per_second: float


SESSION_RUNS = Rate(30, 1.0)
CLIENT_RUNS = Rate(400, 10.0)
CLIENT_JOINS = Rate(200, 1.0)
CLIENT_CLASSES = Rate(5, 1 / 300)   # "Start a class": five at once per client, then one every five minutes
MAX_CLIENTS = 10_000


@dataclass(frozen=True)
class Bucket:
    """The tokens left at time ``at`` (a monotonic clock, seconds)."""
    tokens: float
    at: float


def take(bucket: Bucket | None, rate: Rate, now: float, cost: float = 1.0) -> tuple[Bucket, float]:
    """Take ``cost`` tokens at ``now``: ``(the bucket after, 0.0)`` when there are enough, else ``(the bucket
    unchanged but refilled, seconds until there will be)``; a refused run takes nothing, so refusals never
    lengthen the wait. ``None`` is a full bucket."""
    if bucket is None:
        tokens = rate.burst
    else:
        tokens = min(rate.burst, bucket.tokens + max(0.0, now - bucket.at) * rate.per_second)
    if tokens >= cost:
        return Bucket(tokens - cost, now), 0.0
    return Bucket(tokens, now), (cost - tokens) / rate.per_second


class RateLimiter:
    """Token buckets by key (a client's address), at most ``max_keys`` of them; thread-safe."""

    def __init__(self, rate: Rate, max_keys: int = MAX_CLIENTS):
        self.rate = rate
        self.max_keys = int(max_keys)
        self._lock = threading.Lock()
        self._buckets: OrderedDict[str, Bucket] = OrderedDict()

    def take(self, key: str, now: float, cost: float = 1.0) -> float:
        """0.0 when ``key`` may go on (its tokens taken), else the seconds it has to wait."""
        with self._lock:
            bucket, wait = take(self._buckets.pop(key, None), self.rate, now, cost)
            self._buckets[key] = bucket
            while len(self._buckets) > self.max_keys:
                self._buckets.popitem(last=False)
            return wait

    def __len__(self) -> int:
        return len(self._buckets)


LOCAL = "local"


def client_key(peer: str | None, headers: Mapping[str, str] | None) -> str:
    """Who a request comes from: the address of the connection (``peer``; Streamlit gives None for this machine
    itself); when that is a proxy (this machine, or a private address: deploy/haproxy.cfg's, which adds
    ``X-Forwarded-For``), the address the proxy saw, the header's last entry (earlier entries are the client's own
    word). :data:`LOCAL` for this machine's own browser without a proxy (a lecturer's laptop, a headless test): the
    limits protect a shared server from its remote clients, and are not applied to it."""
    peer = (peer or "").strip()
    forwarded = ""
    for name, value in (headers or {}).items():
        if name.lower() == "x-forwarded-for":
            forwarded = str(value).split(",")[-1].strip()
    try:
        address = ipaddress.ip_address(peer) if peer else None
    except ValueError:
        address = None
    # a server listening on IPv6 and IPv4 at once sees an IPv4 peer as ::ffff:a.b.c.d (not loopback to Python)
    if getattr(address, "ipv4_mapped", None) is not None:
        address = address.ipv4_mapped
        peer = str(address)
    behind_proxy = address is not None and (address.is_loopback or address.is_private)
    if forwarded and (behind_proxy or not peer):
        return forwarded[:64]
    return peer[:64] or LOCAL


def wait_text(seconds: float) -> str:
    """``"1 s"``, ``"12 s"``: a wait as a page says it (whole seconds, at least one)."""
    return f"{max(1, int(seconds + 0.999))} s"
