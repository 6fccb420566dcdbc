"""deploy/haproxy.cfg for real: Debian's HAProxy in front of two Streamlit replicas on loopback.

The config file is the one compose.yaml mounts; only the addresses come from the environment. Checked:
the first response names a replica in a cookie, a browser that sends it back stays on that replica (pages
and the websocket Streamlit runs a page over), new browsers are spread over both replicas, and when a
replica fails its health checks its browsers are sent to the other one.
"""
from __future__ import annotations

import http.cookiejar
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "deploy" / "haproxy.cfg"
HAPROXY = shutil.which("haproxy") or ("/usr/sbin/haproxy" if os.path.exists("/usr/sbin/haproxy") else None)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_http(url: str, timeout: float = 90.0, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{proc.args[0]} exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError(url)


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def proxied(tmp_path_factory):
    if HAPROXY is None:
        if os.environ.get("CI"):
            pytest.fail("haproxy is missing: .ci/run installs Debian's haproxy")
        pytest.skip("haproxy is not installed (apt-get install haproxy)")
    logs = tmp_path_factory.mktemp("proxy")
    replicas = {}
    procs = []
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    try:
        for name in ("app1", "app2"):
            port = _free_port()
            out = open(logs / f"{name}.log", "wb")
            p = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app/Home.py", "--server.headless", "true",
                                  "--server.address", "127.0.0.1", "--server.port", str(port)],
                                 cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
            procs.append(p)
            replicas[name] = (port, p)
        for port, p in replicas.values():
            _wait_http(f"http://127.0.0.1:{port}/_stcore/health", proc=p)
        front = _free_port()
        henv = dict(os.environ, HAPROXY_BIND=f"127.0.0.1:{front}",
                    APP1_ADDR=f"127.0.0.1:{replicas['app1'][0]}", APP2_ADDR=f"127.0.0.1:{replicas['app2'][0]}")
        check = subprocess.run([HAPROXY, "-c", "-f", str(CONFIG)], env=henv, capture_output=True, text=True)
        assert check.returncode == 0, check.stdout + check.stderr
        hp = subprocess.Popen([HAPROXY, "-db", "-f", str(CONFIG)], env=henv, stdout=open(logs / "haproxy.log", "wb"),
                              stderr=subprocess.STDOUT)
        procs.append(hp)
        url = f"http://127.0.0.1:{front}"
        _wait_http(url + "/_stcore/health", proc=hp)
        yield url, replicas
    finally:
        for p in reversed(procs):
            _stop(p)


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
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

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
    _stop(replicas["app2"][1])
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
