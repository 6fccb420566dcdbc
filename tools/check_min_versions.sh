#!/usr/bin/env bash
# Check that requirements.txt's lower bounds really work: install the pinned oldest versions
# (requirements-min.txt) into a fresh virtual environment and run the test suite there without the
# real-browser tests (those exercise Chromium and Playwright, not the Python packages' APIs).
#
#   bash tools/check_min_versions.sh            # venv in $TMPDIR, removed afterwards
#   KEEP_VENV=1 bash tools/check_min_versions.sh
set -euo pipefail
cd "$(dirname "$0")/.."
venv="$(mktemp -d)/min-venv"
python3 -m venv "$venv"
trap '[ -n "${KEEP_VENV:-}" ] || rm -rf "$(dirname "$venv")"' EXIT
"$venv/bin/python" -m pip install -q --disable-pip-version-check -r requirements-min.txt
"$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps -e .
"$venv/bin/python" -m pip list --disable-pip-version-check 2>/dev/null | grep -iE '^(numpy|streamlit|plotly|pydot|pandas|pyarrow|pytest|hypothesis|anywidget|ipykernel|nbclient|nbformat) '
"$venv/bin/python" -m pytest -q -p no:cacheprovider --ignore=tests/browser -m "not slow" "$@"
