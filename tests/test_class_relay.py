"""The relayed class view: rendered once by the lecturer's run, served to followers by the class's routes
(explorer/classroom/views.py, explorer/classroom/web.py), without a browser."""
from __future__ import annotations

import asyncio
import gzip
import json
import threading

import pytest

from explorer.classroom import broker as cb
from explorer.classroom.views import ClassView, markdown_html, mask_answer
from explorer.classroom.web import ViewStore, Watcher, routes


def test_markdown_of_step_headers_is_converted_and_user_text_is_never_markup():
    out = markdown_html("#### Step 8 of 14 · backward\nx̄5 = **244.69** (`1 of 1`) received")
    assert out == ("<h4>Step 8 of 14 · backward</h4><p>x̄5 = <b>244.69</b> (<code>1 of 1</code>) received</p>")
    hostile = markdown_html("<script>alert(1)</script> [a](http://x) \\*not bold\\* **<b>x</b>**")
    assert "<script>" not in hostile and "<a" not in hostile and "&lt;b&gt;x&lt;/b&gt;" in hostile
    assert "*not bold*" in hostile
    assert markdown_html("- one\n- *two*") == "<ul><li>one</li><li><i>two</i></li></ul>"


def test_an_answer_is_masked_in_text_only_and_only_whole():
    view = {"header": "x̄5 = 244.69", "blocks": [{"kind": "plot", "figure": {
        "data": [{"x": [244.69, 1.0], "text": ["x̄5 = 244.69", "= 1244.69", "244.695", "−244.69"]}]}}]}
    masked = mask_answer(view, "244.69")
    assert masked["header"] == "x̄5 = ?"
    trace = masked["blocks"][0]["figure"]["data"][0]
    assert trace["x"] == [244.69, 1.0]                       # coordinates are numbers, not text: untouched
    assert trace["text"] == ["x̄5 = ?", "= 1244.69", "244.695", "?"]


def test_a_view_over_the_bound_is_refused():
    v = ClassView("Expression_explorer", "Expression explorer", "<h4>Step 1</h4>")
    v.add_html("x" * 2_000_000)
    with pytest.raises(ValueError, match="relayed"):
        v.to_json()


def _run(coro):
    """asyncio.run on a thread of its own: the browser tests' Playwright (sync API) keeps an event loop
    running on the main thread for the whole session, and asyncio.run refuses to start beside it."""
    out: dict = {}

    def target():
        try:
            out["value"] = asyncio.run(coro)
        except BaseException as exc:                 # re-raised on the test's thread
            out["error"] = exc

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(120)
    assert not t.is_alive(), "the scenario did not finish in 120 s"
    if "error" in out:
        raise out["error"]
    return out.get("value")


def _view() -> str:
    view = ClassView("Expression_explorer", "Expression explorer", "<h4>Step 8 of 14</h4>")
    view.add_html("<p>x̄5 = 244.69</p>")
    return view.to_json()


def _class_with_view(b):
    code, secret = b.create("Expression_explorer", {"step": "7"})
    version = b.publish(code, secret, "Expression_explorer", {"step": "8"}, view=_view())
    return code, secret, version


def test_followers_get_the_view_compressed_once_and_masked_until_the_reveal():
    b = cb.InProcessBroker()
    code, secret, version = _class_with_view(b)
    store = ViewStore(lambda: b)
    first = store.get(code, version)
    assert store.get(code, version) is first                 # one compression for every follower
    assert "244.69" in gzip.decompress(first).decode()
    assert store.get(code, version - 1) is None              # a view of another version is never served
    q = b.ask(code, secret, "What is x̄5?", "number", "244.69", 1e-3)
    b.publish(code, secret, "Expression_explorer", {"step": "8", "_q": str(q.qid)}, view=_view())
    masked = gzip.decompress(store.get(code, b.state(code).version)).decode()
    assert "244.69" not in masked and "x̄5 = ?" in masked
    b.reveal(code, secret, q.qid)
    b.publish(code, secret, "Expression_explorer", {"step": "8", "_q": f"{q.qid}r"}, view=_view())
    assert "244.69" in gzip.decompress(store.get(code, b.state(code).version)).decode()


def test_a_long_poll_returns_at_once_when_behind_and_wakes_on_the_next_step():
    b = cb.InProcessBroker()
    code, secret, version = _class_with_view(b)

    async def scenario():
        w = Watcher(lambda: b, tick_s=0.01)
        now = await w.wait(code, version - 1, timeout=5)
        assert now.version == version                        # behind: answered at once
        waiting = [asyncio.create_task(w.wait(code, version, timeout=10)) for _ in range(50)]
        await asyncio.sleep(0.05)
        assert not any(t.done() for t in waiting)            # held while nothing changes
        b.publish(code, secret, "Expression_explorer", {"step": "9"})
        done = await asyncio.wait_for(asyncio.gather(*waiting), 5)
        assert {s.version for s in done} == {version + 1}
        late = await w.wait(code, version + 1, timeout=0.05)  # nothing new: the current state after the timeout
        assert late.version == version + 1

    _run(scenario())


def test_a_code_nobody_can_follow_is_not_watched_and_never_holds_the_loop():
    """An unknown code (or a broker that is down) is answered with the error and leaves nothing watched: the
    replica's watcher task then ends, and a real follower's long poll is still woken by the next step."""
    b = cb.InProcessBroker()
    code, secret, version = _class_with_view(b)

    async def scenario():
        w = Watcher(lambda: b, tick_s=0.01)
        for _ in range(3):
            with pytest.raises(cb.ClassNotFound):
                await asyncio.wait_for(w.wait("ZZZZZZ", -1, timeout=5), 5)
        assert w.watched == []
        follower = asyncio.create_task(w.wait(code, version, timeout=10))
        with pytest.raises(cb.ClassNotFound):
            await asyncio.wait_for(w.wait("ZZZZZZ", -1, timeout=5), 5)
        await asyncio.sleep(0.03)
        assert w.watched == [code]
        b.publish(code, secret, "Expression_explorer", {"step": "9"})
        assert (await asyncio.wait_for(follower, 5)).version == version + 1
        assert w.watched == []
        await asyncio.wait_for(w._task, 5)                    # nobody waits: the watcher's task ends

    _run(scenario())
    again = Watcher(lambda: b, tick_s=0.01)
    for since in (version + 1, version + 1, -1):             # one watcher, a new event loop each time
        assert _run(asyncio.wait_for(again.wait(code, since, timeout=0.05), 5)).version == version + 1


def test_a_class_brought_back_after_the_store_lost_it_never_shows_a_view_cached_for_its_old_versions():
    lost = cb.InProcessBroker()
    code, secret, version = _class_with_view(lost)
    now = [lost]
    store = ViewStore(lambda: now[0])
    old = gzip.decompress(store.get(code, version)).decode()
    assert "Step 8 of 14" in old
    now[0] = cb.InProcessBroker()                             # the store restarted empty
    back = now[0].restore(code, secret, "Expression_explorer", {"step": "3"})
    assert back > version
    view = ClassView("Expression_explorer", "Expression explorer", "<h4>Step 4 of 14</h4>")
    view.add_html("<p>x̄3</p>")
    now[0].publish(code, secret, "Expression_explorer", {"step": "4"}, view=view.to_json())
    shown = gzip.decompress(store.get(code, now[0].state(code).version)).decode()
    assert "Step 4 of 14" in shown and "Step 8" not in shown


class _Reply:
    def __init__(self, status: int, headers: dict[str, str], content: bytes):
        self.status_code, self.headers, self.content = status, headers, content
        self.text = (gzip.decompress(content) if headers.get("content-encoding") == "gzip" else content).decode()

    def json(self):
        return json.loads(self.text)


class _Client:
    """GET requests straight into an ASGI app (the protocol a server speaks to it)."""

    def __init__(self, app):
        self.app = app

    def get(self, url: str, headers: dict[str, str] | None = None) -> _Reply:
        path, _, query = url.partition("?")
        scope = {"type": "http", "method": "GET", "path": path, "raw_path": path.encode(), "root_path": "",
                 "query_string": query.encode(), "scheme": "http", "server": ("test", 80), "client": ("t", 1),
                 "http_version": "1.1", "asgi": {"version": "3.0"},
                 "headers": [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]}
        out: dict = {"body": b""}

        async def exchange():
            finished, asked = asyncio.Event(), []

            async def receive():      # as a server does: the request once, then nothing until the client leaves
                if not asked:
                    asked.append(1)
                    return {"type": "http.request", "body": b"", "more_body": False}
                await finished.wait()
                return {"type": "http.disconnect"}

            async def send(message):
                if message["type"] == "http.response.start":
                    out["status"] = message["status"]
                    out["headers"] = {k.decode().lower(): v.decode() for k, v in message["headers"]}
                elif message["type"] == "http.response.body":
                    out["body"] += message.get("body", b"")
                    if not message.get("more_body", False):
                        finished.set()

            await asyncio.wait_for(self.app(scope, receive, send), 60)

        _run(exchange())
        return _Reply(out["status"], out["headers"], out["body"])


def test_the_routes_answer_over_http():
    from starlette.applications import Starlette

    b = cb.InProcessBroker()
    code, _, version = _class_with_view(b)
    client = _Client(Starlette(routes=routes(lambda: b)))
    r = client.get(f"/class/api/{code}/state?since=-1")
    assert r.status_code == 200 and r.json() == {"version": version, "page": "Expression_explorer",
                                                 "question": "", "view": True}
    assert "step" not in r.text                              # the lecturer's parameters are not sent
    v = client.get(f"/class/api/{code}/view/{version}")
    assert v.status_code == 200 and v.json()["header"] == "<h4>Step 8 of 14</h4>"
    assert client.get(f"/class/api/{code}/view/{version + 5}").status_code == 404
    assert client.get("/class/api/ZZZZZZ/state").status_code == 404
    assert client.get(f"/class/api/{code}/state?since={version - 1}").json()["version"] == version  # still served
    assert client.get("/class/api/not-a-code/state").json() == {"error": "not a class code"}
    js = client.get("/class/static/follow.js")
    assert js.status_code == 200 and "class/api/" in js.text
    plotly = client.get("/class/static/plotly.min.js", headers={"Accept-Encoding": "gzip"})
    assert plotly.status_code == 200 and plotly.headers["content-encoding"] == "gzip"
    assert "max-age" in plotly.headers["cache-control"]


class _LaggingCopy:
    """A replica whose copy of the class's state (Redis pub/sub, read by ``state``) is behind the store, as it is
    on a busy server while the subscriber's thread waits for the interpreter; everything else is the store's."""

    def __init__(self, store):
        self.store, self.frozen = store, {}

    def freeze(self, code):
        self.frozen[code] = self.store.state(code)

    def state(self, code):
        return self.frozen.get(code) or self.store.state(code)

    def __getattr__(self, name):
        return getattr(self.store, name)


def test_a_follower_is_told_of_the_step_and_its_view_together_when_the_replicas_copy_lags():
    """The state answer and the view come from one read of the store: never "version V, no view" beside the
    view of V+1 (a follower told that runs its page instead; class_load.py counted it on a busy 2-core box)."""
    from starlette.applications import Starlette

    b = cb.InProcessBroker()
    code, secret, version = _class_with_view(b)
    lag = _LaggingCopy(b)
    lag.freeze(code)                                            # the copy stays at `version`
    newer = b.publish(code, secret, "Expression_explorer", {"step": "9"}, view=_view())
    client = _Client(Starlette(routes=routes(lambda: lag)))
    r = client.get(f"/class/api/{code}/state?since={version - 1}").json()
    assert r == {"version": newer, "page": "Expression_explorer", "question": "", "view": True}
    assert client.get(f"/class/api/{code}/view/{newer}").status_code == 200
    assert client.get(f"/class/api/{code}/view/{version}").status_code == 404   # not the view of this state


def test_a_view_is_masked_by_its_own_state_even_when_the_replicas_copy_lags():
    b = cb.InProcessBroker()
    code, secret, _ = _class_with_view(b)
    lag = _LaggingCopy(b)
    lag.freeze(code)                                            # the copy has no question on screen yet
    q = b.ask(code, secret, "What is x̄5?", "number", "244.69", 1e-3)
    asked = b.publish(code, secret, "Expression_explorer", {"step": "8", "_q": str(q.qid)}, view=_view())
    shown = gzip.decompress(ViewStore(lambda: lag).get(code, asked)).decode()
    assert "244.69" not in shown and "x̄5 = ?" in shown
