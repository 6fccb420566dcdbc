"""A server warms up when it starts, so that the first visitor of a page does not pay for it.

A page's first run in a fresh server process used to import its modules (the engine, the page's explorer module,
Plotly, pandas, ...: 1-2 s of CPU on a quiet machine) and start the fixed figures before its title was drawn; on a
loaded machine that took 18-31 s. :func:`start`, called once when ``streamlit run`` imports
``app/Home.py``, does that work on a background thread instead: it imports every module the pages import (read
from the pages' own ``import`` lines, so a new page is warmed with no list to update) and :data:`LAZY_MODULES`,
then starts the fixed figures (:mod:`explorer.kit.fixed`). Each import runs as background work of the process's
:class:`~explorer.kit.priority.PriorityGate`: it waits while a step or a page open computes.

The module list (:func:`page_modules`) needs no Streamlit and no thread, and is unit-tested.
"""
from __future__ import annotations

import ast
import importlib
import sys
import threading
from pathlib import Path
from typing import Callable, Iterable

from . import fixed, priority

# imported inside functions on a page's first table or step (show_table, the contributions table, Streamlit's
# dataframe serialisation): 0.6 s of a first backward step on the Expression explorer was pandas' import
LAZY_MODULES = ("pandas", "pandas.io.formats.style", "pyarrow", "plotly.graph_objects", "plotly.io")
APP_DIR = Path(__file__).resolve().parents[2] / "app"


def page_modules(pages_dir: Path) -> list[str]:
    """The absolute modules the page files in ``pages_dir`` import at their top level, each once, in the pages'
    order (their numbers), then the order of their lines.

    Raises:
        FileNotFoundError: when ``pages_dir`` is not a directory.
        SyntaxError: when a page file does not parse.
    """
    if not pages_dir.is_dir():
        raise FileNotFoundError(f"no pages directory at {pages_dir}")
    files = sorted(pages_dir.glob("[0-9]*_*.py"), key=lambda p: int(p.stem.split("_", 1)[0]))
    root = pages_dir.resolve().parents[1]   # the repository: app/pages -> .

    def submodule(module: str, name: str) -> bool:   # `from explorer import cross_entropy`: a file of the repo
        where = root.joinpath(*module.split("."), name)
        return where.with_suffix(".py").is_file() or (where / "__init__.py").is_file()

    seen: dict[str, None] = {}
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in tree.body:
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                # `from explorer import cross_entropy as C`: the submodule, where it is one
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names
                                         if a.name != "*" and submodule(node.module, a.name)]
            else:
                continue
            for name in names:
                if name.split(".")[0] != "__future__":
                    seen.setdefault(name, None)
    return list(seen)


def warm(modules: Iterable[str], gate: priority.PriorityGate, importer: Callable[[str], object] | None = None,
         then: Callable[[], None] | None = None) -> list[str]:
    """Import ``modules`` one after another, each as background work of ``gate``, then call ``then``.

    A name that is not a module (``from x import function``) or that fails to import is skipped: the page that
    imports it reports its own error when it runs. Returns the names imported.
    """
    importer = importer or importlib.import_module
    done = []
    for name in modules:
        if name in sys.modules and importer is importlib.import_module:
            continue
        with gate.enter(priority.BACKGROUND):
            try:
                importer(name)
            except Exception:   # noqa: BLE001 - a function imported from a module (ImportError), an optional
                continue        # package, a broken module: the page itself shows what is wrong when opened
        done.append(name)
    if then is not None:
        then()
    return done


_STARTED = threading.Event()


def start(pages_dir: Path | None = None) -> bool:
    """Warm this server process up on a background thread (once per process; later calls do nothing).
    Returns whether this call started it."""
    if _STARTED.is_set():
        return False
    _STARTED.set()
    names = list(LAZY_MODULES)
    try:
        names = page_modules(pages_dir or APP_DIR / "pages") + names
    except (OSError, SyntaxError):
        pass   # the pages report their own problem when opened; the fixed figures still start
    threading.Thread(target=warm, args=(names, priority.gate()), kwargs={"then": fixed.start},
                     name="warm-up", daemon=True).start()
    return True


__all__ = ["LAZY_MODULES", "page_modules", "start", "warm"]
