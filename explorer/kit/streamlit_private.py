"""Every use of Streamlit's private API in this repository, in one place.

Streamlit has no public API for three things the app needs, so it reaches inside:

* which page run (if any) this thread is executing, its session's id and whether it reruns a fragment only
  (``streamlit.runtime.scriptrunner.get_script_run_ctx``): the pool of training runs counts runs per session,
  and the priority gate ranks a Step (a fragment's rerun) above a page open. ``st.context`` has headers,
  cookies and the like, but no session id and nothing about fragments.
* whether a session is still connected (``streamlit.runtime.Runtime.instance().is_active_session``): a training
  run stops a little after its browser tab is gone, instead of training for nobody until it ends.
* for measuring and testing only: the script runner the benchmarks time, AppTest's internals they patch to
  rerun one fragment as a browser does, and the websocket's messages (``streamlit.proto``) that the load test
  and the proxy's test speak.

These names are not Streamlit's promise and may change in any release, so ``requirements.txt`` pins Streamlit
from above to the versions tested with them, and ``tests/test_streamlit_private.py`` checks that each name
listed in :data:`PRIVATE` resolves and that the installed Streamlit is within those bounds. Before raising that
bound, run that test (and the sentiment and classroom tests) on the new version.

Nothing is imported until it is used: modules that import this one run without Streamlit loaded (scripts,
the student-code sandbox), and ``import streamlit`` costs about half a second.
"""
from __future__ import annotations

import importlib
from typing import Any, Callable

# name -> "module" or "module:attribute.path": every private Streamlit object the repository reaches. Attribute
# paths that only the benchmarks patch are listed too, so the test notices when a release removes them.
PRIVATE: dict[str, str] = {
    "get_script_run_ctx": "streamlit.runtime.scriptrunner:get_script_run_ctx",
    "ScriptRunContext": "streamlit.runtime.scriptrunner:ScriptRunContext",     # what it returns
    "Runtime": "streamlit.runtime:Runtime",
    "ScriptRunner": "streamlit.runtime.scriptrunner.script_runner:ScriptRunner",
    "ScriptRunner._run_script": "streamlit.runtime.scriptrunner.script_runner:ScriptRunner._run_script",
    "RerunData": "streamlit.runtime.scriptrunner_utils.script_requests:RerunData",
    "app_test": "streamlit.testing.v1.app_test",
    "app_test.ScriptCache": "streamlit.testing.v1.app_test:ScriptCache",
    "local_script_runner": "streamlit.testing.v1.local_script_runner",
    "local_script_runner.ScriptCache": "streamlit.testing.v1.local_script_runner:ScriptCache",
    "local_script_runner.RerunData": "streamlit.testing.v1.local_script_runner:RerunData",
    "local_script_runner.parse_tree_from_messages":
        "streamlit.testing.v1.local_script_runner:parse_tree_from_messages",
    "BackMsg": "streamlit.proto.BackMsg_pb2:BackMsg",
    "ForwardMsg": "streamlit.proto.ForwardMsg_pb2:ForwardMsg",
}


def private(name: str) -> Any:
    """The private Streamlit object listed as ``name`` in :data:`PRIVATE` (a module, a class, a function).

    Raises:
        KeyError: when ``name`` is not listed (add it there, with the reason, before using it).
        ImportError, AttributeError: when the installed Streamlit no longer has it.
    """
    where = PRIVATE[name]
    module, _, path = where.partition(":")
    obj: Any = importlib.import_module(module)
    for part in path.split(".") if path else ():
        obj = getattr(obj, part)
    return obj


def _run_context() -> Any:
    """The page run this thread executes (Streamlit's ScriptRunContext), or None outside one."""
    return private("get_script_run_ctx")(suppress_warning=True)


def in_page_run() -> bool:
    """Whether this thread is running a page's script (False in tests, scripts and worker threads)."""
    return _run_context() is not None


def fragment_run() -> bool:
    """Whether this thread runs a page's fragments only (a Step, a poll), not the whole page."""
    ctx = _run_context()
    return ctx is not None and bool(ctx.fragment_ids_this_run)


def session_id() -> str | None:
    """The id of the browser session whose page run this thread executes, or None outside a page run."""
    ctx = _run_context()
    return None if ctx is None else ctx.session_id


def session_connected() -> Callable[[], bool] | None:
    """A function that says whether the calling page run's browser session is still connected (it keeps
    answering after the run ends), or None where there is no such session (outside a page run, or no Streamlit
    runtime in this process)."""
    sid = session_id()
    runtime_class = private("Runtime")
    if sid is None or not runtime_class.exists():
        return None
    runtime = runtime_class.instance()
    if not runtime.is_active_session(sid):
        return None
    return lambda: runtime.is_active_session(sid)


__all__ = ["PRIVATE", "private", "in_page_run", "fragment_run", "session_id", "session_connected"]
