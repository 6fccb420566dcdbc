import sys
from pathlib import Path

import pytest


import engine  # noqa: E402
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
