"""deploy/haproxy.cfg for real: Debian's HAProxy in front of two Streamlit replicas on loopback.

The config file is the one compose.yaml mounts; only the addresses come from the environment. Checked:
the first response names a replica in a cookie, a browser that sends it back stays on that replica (pages
and the websocket Streamlit runs a page over), new browsers are spread over both replicas, and when a
replica fails its health checks its browsers are sent to the other one.
"""
from __future__ import annotations

import http.cookiejar
import time
import urllib.request
from pathlib import Path

import pytest

from benchmarks.class_stack import HAPROXY_CONFIG, ClassStack, stop
from tests.debian_programs import require

ROOT = Path(__file__).resolve().parents[1]
CONFIG = HAPROXY_CONFIG


@pytest.fixture(scope="module")
def proxied(tmp_path_factory):
    require("haproxy", "redis-server")
    stack = ClassStack(tmp_path_factory.mktemp("proxy"), replicas=2)
    with stack:
        yield stack.url, stack.apps


def _opener():
    jar = http.cookiejar.CookieJar()
    return urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar)), jar


def _served_by(opener, url: str) -> str:
    with opener.open(url, timeout=10) as r:
        assert r.status == 200
        return r.headers["X-Explorer-Replica"]


def test_a_browser_stays_on_its_replica_and_browsers_are_spread(proxied):
    url, _ = proxied
    seen = set()
    for _ in range(4):
        opener, jar = _opener()
        first = _served_by(opener, url + "/")
        assert {c.name: c.value for c in jar}["explorer_replica"] == first
        for path in ("/Expression_explorer", "/_stcore/health", "/Backprop_orders"):
            assert _served_by(opener, url + path) == first        # sticky by the cookie
        seen.add(first)
    assert seen == {"app1", "app2"}                                 # round robin over new browsers


def test_the_websocket_runs_a_page_through_the_proxy_on_the_cookies_replica(proxied):
    import asyncio

    import websockets
    from explorer.kit.streamlit_private import private
    BackMsg, ForwardMsg = private("BackMsg"), private("ForwardMsg")

    url, _ = proxied
    opener, jar = _opener()
    replica = _served_by(opener, url + "/")
    cookie = f"explorer_replica={replica}"

    async def run_page() -> tuple[bool, str]:
        ws_url = url.replace("http://", "ws://") + "/_stcore/stream"
        async with websockets.connect(ws_url, subprotocols=["streamlit"], additional_headers={"Cookie": cookie},
                                      max_size=None, open_timeout=30) as ws:
            msg = BackMsg()
            msg.rerun_script.page_name = "Topological_sort"
            msg.rerun_script.query_string = ""
            await ws.send(msg.SerializeToString())
            served = ws.response.headers.get("X-Explorer-Replica", "")
            while True:
                fm = ForwardMsg()
                fm.ParseFromString(await asyncio.wait_for(ws.recv(), 60))
                if fm.WhichOneof("type") == "script_finished":
                    return fm.script_finished == ForwardMsg.FINISHED_SUCCESSFULLY, served

    # in a thread of its own: after the browser tests, Playwright's loop may be running in this one
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(1) as pool:
        ok, served = pool.submit(asyncio.run, run_page()).result()
    assert ok and served == replica


def test_a_failed_replica_sends_its_browsers_to_the_other(proxied):
    url, replicas = proxied
    opener, jar = _opener()
    # a browser on app2 (new browsers alternate, so a few tries find one)
    for _ in range(4):
        opener, jar = _opener()
        if _served_by(opener, url + "/") == "app2":
            break
    else:
        pytest.fail("no browser was sent to app2")
    stop(replicas["app2"][1])
    deadline = time.monotonic() + 30
    served = None
    while time.monotonic() < deadline:
        try:
            served = _served_by(opener, url + "/_stcore/health")
            if served == "app1":
                break
        except OSError:
            pass
        time.sleep(0.3)
    assert served == "app1"


def test_compose_deploys_this_config_with_every_address_it_reads():
    import re
    compose = (ROOT / "compose.yaml").read_text()
    assert "./deploy/haproxy.cfg:/usr/local/etc/haproxy/haproxy.cfg" in compose
    wanted = set(re.findall(r"\$\{([A-Z0-9_]+)-", CONFIG.read_text()))
    assert wanted == {"HAPROXY_BIND", "APP1_ADDR", "APP2_ADDR"}
    for var in wanted:
        assert re.search(rf"^\s+{var}: ", compose, re.M), var
    servers = re.findall(r"^\s+server (app\d+) ", CONFIG.read_text(), re.M)
    services = re.findall(r"^  (app\d+): \*app", compose, re.M)
    assert servers == services == ["app1", "app2"]
