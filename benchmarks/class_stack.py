"""Redis, two Streamlit replicas sharing a class through it, and HAProxy in front (deploy/haproxy.cfg), all on
loopback: what ``benchmarks/class_load.py`` and the class's browser test run against.

    with ClassStack(tmp_dir) as stack:
        stack.url              # the proxy: http://127.0.0.1:PORT
        stack.restart_redis()  # stop and start redis-server on the same port (it forgets everything)
"""
from __future__ import annotations

import os
import signal
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HAPROXY_CONFIG = ROOT / "deploy" / "haproxy.cfg"


def find(program: str) -> str | None:
    """``program`` on PATH or in /usr/sbin (Debian puts haproxy there)."""
    return shutil.which(program) or (f"/usr/sbin/{program}" if os.path.exists(f"/usr/sbin/{program}") else None)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, timeout: float = 120.0, proc: subprocess.Popen | None = None) -> None:
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


def stop(proc: subprocess.Popen | None) -> None:
    if proc is not None and proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def start_proxy(app1_port: int, app2_port: int, log: Path) -> tuple[subprocess.Popen, str]:
    """Debian's HAProxy with deploy/haproxy.cfg on a free loopback port, in front of the replicas serving on
    loopback ports ``app1_port`` and ``app2_port`` (the same port twice: one server behind the proxy, as a
    test of what a proxied browser meets needs); (the process, its URL) once it answers. It adds
    X-Forwarded-For, as deployed: the app then limits its clients as it does behind the real proxy."""
    haproxy = find("haproxy")
    if haproxy is None:
        raise RuntimeError("missing: haproxy (apt-get install haproxy)")
    front = free_port()
    env = dict(os.environ, HAPROXY_BIND=f"127.0.0.1:{front}", APP1_ADDR=f"127.0.0.1:{app1_port}",
               APP2_ADDR=f"127.0.0.1:{app2_port}")
    proc = subprocess.Popen([haproxy, "-db", "-f", str(HAPROXY_CONFIG)], env=env, stdout=open(log, "wb"),
                            stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{front}"
    try:
        wait_http(url + "/_stcore/health", proc=proc)
    except BaseException:
        stop(proc)
        raise
    return proc, url


class ClassStack:
    """See the module docstring. ``replicas=0``: Redis only (for sessions run in this process). Raises
    RuntimeError naming a missing program (redis-server, haproxy)."""

    def __init__(self, logs: Path, replicas: int = 2, redis_args: tuple[str, ...] | None = None):
        self.redis_bin, self.haproxy_bin = find("redis-server"), find("haproxy")
        needed = (("redis-server", self.redis_bin),) + ((("haproxy", self.haproxy_bin),) if replicas else ())
        missing = [n for n, p in needed if p is None]
        if missing:
            raise RuntimeError(f"missing: {', '.join(missing)} (apt-get install redis-server haproxy)")
        if replicas not in (0, 2):
            raise ValueError("deploy/haproxy.cfg names two replicas")
        self.replicas = replicas
        # how Redis keeps its data: nothing on disk by default (a restart forgets every class); compose.yaml's
        # arguments (append-only file) where a test checks what the deployment keeps
        self.redis_args = tuple(redis_args) if redis_args is not None else ("--save", "", "--appendonly", "no")
        self.logs = Path(logs)
        self.logs.mkdir(parents=True, exist_ok=True)
        self.redis_port = free_port()
        self.redis: subprocess.Popen | None = None
        self.apps: dict[str, tuple[int, subprocess.Popen]] = {}
        self.proxy: subprocess.Popen | None = None
        self.url = ""

    @property
    def redis_url(self) -> str:
        return f"redis://127.0.0.1:{self.redis_port}/0"

    def start_redis(self) -> None:
        self.redis = subprocess.Popen([self.redis_bin, *self.redis_args, "--port", str(self.redis_port),
                                       "--bind", "127.0.0.1", "--dir", str(self.logs)],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.redis_port), timeout=0.5) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def stop_redis(self) -> None:
        """Stop Redis (every class is lost: it keeps nothing on disk)."""
        stop(self.redis)
        self.redis = None

    def restart_redis(self, down_s: float = 1.0) -> None:
        """Stop Redis (without persistence every class is lost), wait ``down_s``, start it again."""
        stop(self.redis)
        time.sleep(down_s)
        self.start_redis()

    def start_replica(self, name: str, wait: bool = True) -> None:
        """Start replica ``name`` (again: on the port the proxy knows it by)."""
        env = dict(os.environ, AUTODIFF_CLASS_BROKER=self.redis_url,
                   PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
        port = self.apps[name][0] if name in self.apps else free_port()
        p = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app/Home.py",
                              "--server.headless", "true", "--server.address", "127.0.0.1",
                              "--server.port", str(port), "--browser.gatherUsageStats", "false",
                              "--server.fileWatcherType", "none"],
                             cwd=ROOT, env=env, stdout=open(self.logs / f"{name}.log", "ab"),
                             stderr=subprocess.STDOUT)
        self.apps[name] = (port, p)
        if wait:
            wait_http(f"http://127.0.0.1:{port}/_stcore/health", proc=p)

    def kill_replica(self, name: str) -> None:
        """Replica ``name`` dies at once (SIGKILL: no goodbye to its browsers)."""
        from benchmarks.load_test import descendants
        p = self.apps[name][1]
        for pid in descendants(p.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        p.kill()
        p.wait(10)

    def __enter__(self) -> "ClassStack":
        try:
            self.start_redis()
            if not self.replicas:
                return self
            for name in ("app1", "app2"):
                self.start_replica(name, wait=False)
            for port, p in self.apps.values():
                wait_http(f"http://127.0.0.1:{port}/_stcore/health", proc=p)
            self.proxy, self.url = start_proxy(self.apps["app1"][0], self.apps["app2"][0], self.logs / "haproxy.log")
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc) -> None:
        stop(self.proxy)
        for _, p in self.apps.values():
            stop(p)
        stop(self.redis)
