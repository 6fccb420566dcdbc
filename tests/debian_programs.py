"""The Debian programs some tests run for real (Redis, HAProxy): on CI, where ``.ci/run`` installs them, a missing one
fails the test; on a developer's machine it skips it, saying what to install."""
from __future__ import annotations

import os

import pytest

from benchmarks.class_stack import find


def require(*programs: str) -> None:
    """Fail (on CI) or skip (elsewhere) the calling test unless every one of ``programs`` is installed."""
    missing = [p for p in programs if find(p) is None]
    if not missing:
        return
    names = " and ".join(missing)
    if os.environ.get("CI"):
        them = "them" if len(missing) > 1 else "it"
        pytest.fail(f"{names} missing: .ci/run installs {them} from Debian (apt-get install {' '.join(missing)})")
    pytest.skip(f"{names} not installed (apt-get install {' '.join(missing)})")
