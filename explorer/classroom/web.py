"""The class's own HTTP routes, served by each replica beside Streamlit (``app/Home.py`` builds ``st.App`` with them).

A following student's page runs no script while the lecturer steps. Its browser long-polls
``/class/api/CODE/state?since=V`` (answered at once when the class is past version V, else held until it is,
at most :data:`WAIT_S`), then fetches ``/class/api/CODE/view/V``: the view the lecturer's own page run rendered
once (:mod:`explorer.classroom.views`), gzip-compressed once per replica and kept in a bounded cache. So a step
costs a replica one small response per follower, whatever the page draws; only a page change or a question
reruns a follower's page (in :mod:`explorer.kit.class_widgets`).

One asyncio task per replica watches the classes that have waiting followers (a memory read per class and tick,
:data:`TICK_S`), so the cost of waiting does not grow with the class either.
"""
from __future__ import annotations

import asyncio
import gzip
import json
import time
from pathlib import Path
from typing import Any, Callable

from .broker import BrokerUnavailable, ClassNotFound, broker_from_env, normalise_code
from .views import json_bytes, mask_answer, state_message

WAIT_S = 20.0                   # a long poll is answered within this (HAProxy's server timeout is 60 s)
TICK_S = 0.05                   # how often the watcher reads the states of classes with waiting followers
VIEW_CACHE_BYTES = 32 << 20     # compressed views kept per replica
STATIC = Path(__file__).with_name("static")
ASSET_MAX_AGE_S = 24 * 3600


class Watcher:
    """Followers waiting for a class to change, woken together by one task per event loop.

    A class is watched only while someone waits on it: the last waiter to leave (answered, timed out, or failed
    because the class does not exist or the broker is down) removes it, so codes nobody follows cost nothing.
    """

    def __init__(self, broker_fn: Callable[[], Any] = broker_from_env, tick_s: float = TICK_S):
        self._broker_fn, self._tick = broker_fn, tick_s
        self._events: dict[str, asyncio.Event] = {}
        self._waiting: dict[str, int] = {}
        self._seen: dict[str, tuple] = {}
        self._task: asyncio.Task | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def watched(self) -> list[str]:
        """The codes being watched now (for tests and the replica's own checks)."""
        return sorted(self._waiting)

    async def _read(self, code: str):
        return await asyncio.to_thread(self._broker_fn().state, code)

    def _on_this_loop(self) -> None:
        loop = asyncio.get_running_loop()
        if loop is not self._loop:            # events and the task belong to one loop; a new loop starts afresh
            self._loop, self._task = loop, None
            self._events.clear(), self._waiting.clear(), self._seen.clear()

    def _ensure_task(self) -> None:
        """Called after registering an event: a task that has seen no events has ended, so this starts one."""
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._watch())

    async def wait(self, code: str, since: int, timeout: float = WAIT_S):
        """The class's state once its version is past ``since`` (or the current one after ``timeout``).

        Raises what the broker raises (:class:`ClassNotFound`, :class:`BrokerUnavailable`)."""
        self._on_this_loop()
        deadline = time.monotonic() + timeout
        self._waiting[code] = self._waiting.get(code, 0) + 1
        try:
            while True:
                event = self._events.setdefault(code, asyncio.Event())   # before reading: no change is missed
                self._ensure_task()
                state = await self._read(code)
                left = deadline - time.monotonic()
                if state.version > since or left <= 0:
                    return state
                try:
                    await asyncio.wait_for(event.wait(), left)
                except asyncio.TimeoutError:
                    pass
        finally:
            left_waiting = self._waiting.get(code, 1) - 1
            if left_waiting > 0:
                self._waiting[code] = left_waiting
            else:
                self._waiting.pop(code, None)
                self._events.pop(code, None)
                self._seen.pop(code, None)

    async def _watch(self) -> None:
        while self._events:
            await asyncio.sleep(self._tick)
            for code, event in list(self._events.items()):
                try:
                    state = await self._read(code)
                    mark: tuple = (state.version, state.page)
                except ClassNotFound:
                    mark = ("no such class",)
                except BrokerUnavailable:
                    mark = ("broker down",)
                if mark != self._seen.get(code):      # waiters re-read: they get the new state or the error
                    if code in self._waiting:
                        self._seen[code] = mark
                    if self._events.get(code) is event:   # not a newer event made while this read was out
                        del self._events[code]
                    event.set()
        self._seen.clear()


class ViewStore:
    """Views as followers receive them: gzip-compressed once per (class, version, question mask) per replica."""

    def __init__(self, broker_fn: Callable[[], Any] = broker_from_env, max_bytes: int = VIEW_CACHE_BYTES):
        from explorer.kit.budget import ByteLRU
        self._broker_fn = broker_fn
        self._cache = ByteLRU(max_bytes)

    def _mask_for(self, code: str, state) -> tuple[int, str] | None:
        marker = str(state.params.get("_q", ""))
        if not marker or marker.endswith("r"):
            return None
        q = self._broker_fn().question(code)
        if q is None or q.revealed or q.kind != "number":
            return None
        return q.qid, q.answer

    def get(self, code: str, version: int) -> bytes | None:
        """The compressed view of ``version`` (None when the class has no view of that version)."""
        broker = self._broker_fn()
        state, view_version = broker.snapshot(code)
        if view_version != int(version):
            return None
        mask = self._mask_for(code, state)      # the question marker of the state this view belongs to
        key = (code, int(version), mask[0] if mask else None)
        hit, value = self._cache.get(key)
        if hit:
            return value
        with self._cache.computing(key):
            hit, value = self._cache.get(key)
            if hit:
                return value
            found = broker.view(code)
            if found is None or found[0] != int(version):
                return None
            text = found[1]
            if mask:
                text = json.dumps(mask_answer(json.loads(text), mask[1]), separators=(",", ":"), ensure_ascii=False)
            value = gzip.compress(text.encode(), compresslevel=6)
            self._cache.put(key, value, size=len(value))
            return value


def _code(request) -> str | None:
    try:
        return normalise_code(request.path_params["code"])
    except ClassNotFound:
        return None


def routes(broker_fn: Callable[[], Any] = broker_from_env) -> list:
    """The Starlette routes of a class (``/class/api/...`` and ``/class/static/...``)."""
    from starlette.responses import FileResponse, Response
    from starlette.routing import Route

    watcher, views = Watcher(broker_fn), ViewStore(broker_fn)
    nocache = {"Cache-Control": "no-store"}

    def problem(status: int, text: str) -> Response:
        return Response(json_bytes({"error": text}), status, media_type="application/json", headers=nocache)

    async def state(request) -> Response:
        code = _code(request)
        if code is None:
            return problem(404, "not a class code")
        try:
            since = int(request.query_params.get("since", "-1"))
        except ValueError:
            since = -1
        try:
            await watcher.wait(code, since)      # woken by the replica's copy of the state; answered from the store
            st, view_version = await asyncio.to_thread(broker_fn().snapshot, code)
        except ClassNotFound:
            return problem(404, "no such class")
        except BrokerUnavailable:
            return problem(503, "the class server is unreachable")
        return Response(json_bytes(state_message(st, view_version == st.version)),
                        media_type="application/json", headers=nocache)

    async def view(request) -> Response:
        code = _code(request)
        if code is None:
            return problem(404, "not a class code")
        try:
            body = await asyncio.to_thread(views.get, code, int(request.path_params["version"]))
        except ClassNotFound:
            return problem(404, "no such class")
        except BrokerUnavailable:
            return problem(503, "the class server is unreachable")
        if body is None:
            return problem(404, "no view of that version")
        return Response(body, media_type="application/json",
                        headers={**nocache, "Content-Encoding": "gzip", "Vary": "Accept-Encoding"})

    def asset(path: Path, media: str) -> Callable:
        packed: list[bytes] = []      # compressed once per replica (plotly.js is 4.8 MB, 1.4 MB packed)

        async def serve(request) -> Response:
            headers = {"Cache-Control": f"public, max-age={ASSET_MAX_AGE_S}", "Vary": "Accept-Encoding"}
            if "gzip" not in request.headers.get("accept-encoding", ""):
                return FileResponse(path, media_type=media, headers=headers)
            if not packed:
                packed.append(await asyncio.to_thread(lambda: gzip.compress(path.read_bytes(), compresslevel=6)))
            return Response(packed[0], media_type=media, headers={**headers, "Content-Encoding": "gzip"})
        return serve

    out = [Route("/class/api/{code}/state", state), Route("/class/api/{code}/view/{version:int}", view),
           Route("/class/static/follow.js", asset(STATIC / "follow.js", "text/javascript"))]
    plotly_js = plotly_js_path()
    if plotly_js is not None:
        out.append(Route("/class/static/plotly.min.js", asset(plotly_js, "text/javascript")))
    return out


def plotly_js_path() -> Path | None:
    """plotly.js as the installed Plotly package ships it (drawn by the follower's browser; no network)."""
    try:
        import plotly
    except ImportError:     # pragma: no cover - a dependency
        return None
    path = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    return path if path.is_file() else None
