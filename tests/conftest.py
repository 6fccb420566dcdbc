import os

import pytest

# The app's .streamlit/config.toml keeps tracebacks from browsers (client.showErrorDetails = false);
# AppTest reads the same file, so a failing page test would only say "redacted". Test configuration
# only: tests/browser/conftest.py removes this again for the real server it starts.
os.environ.setdefault("STREAMLIT_CLIENT_SHOW_ERROR_DETAILS", "true")

import engine  # noqa: E402
import explorer  # noqa: E402,F401  (guards ast.parse across threads: explorer/kit/ast_guard.py)
from engine.backends import known  # noqa: E402


def backend_params():
    """Every backend the engine knows; unavailable ones skip with the reason."""
    params = []
    available = set(engine.available_backends())
    for name in known():
        marks = []
        if name not in available:
            marks.append(pytest.mark.skip(reason=f"backend {name!r} not available on this machine"))
        params.append(pytest.param(name, marks=marks, id=name))
    return params


@pytest.fixture(params=backend_params())
def backend(request):
    return request.param


BROWSER_TESTS = "tests/browser/"


def pytest_xdist_make_scheduler(config, log):
    """The suite runs on two workers (pytest-xdist, pytest.ini): a test module goes to one worker, and the browser
    tests, all of them, form one unit that one worker runs module after module (one Chromium and one app server at
    a time, as in a one-process run) while the other worker takes the rest of the suite. (xdist's own
    ``--dist loadgroup`` would say this with markers, but does not group anything under pytest 9.)"""
    from xdist.scheduler import LoadScopeScheduling

    class BrowserTestsTogether(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return BROWSER_TESTS if nodeid.startswith(BROWSER_TESTS) else super()._split_scope(nodeid)

    return BrowserTestsTogether(config, log)
