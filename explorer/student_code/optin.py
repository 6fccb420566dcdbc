"""Whether this server runs a student's file: the app's ``-- --student-code PATH`` option, read from its command
line. Light (no engine, no plotting), so that every page can say at start what the option asked for."""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

OPTION = "--student-code"
CLASS_SERVER_ENV = "AUTODIFF_CLASS_SERVER"

PAGE_PURPOSE = ("This page runs **your** `topological_sort` and `backpropagate` (HW2, problem 1) on the lecture's "
                "graphs and animates your backward order beside the engine's, marking the first node whose adjoint "
                "differs and saying why. Your code runs in a separate process with a time and a memory limit; the "
                "app talks to it only through the protocol calls it records.")
START_COMMANDS = (f"streamlit run app/Home.py -- {OPTION} PATH/TO/llmsys_hw2",
                  "python -m explorer.student_code PATH")
START_HINT = (f"On your own machine, start the explorer naming your file or your HW2 folder: "
              f"`{START_COMMANDS[0]}` (or `.../minitorch/autodiff.py`). "
              f"Or, without the app: `{START_COMMANDS[1]}`.")


@dataclass(frozen=True)
class OptIn:
    """Whether this server runs student code: ``path`` (the file or folder named when the app was started)
    or None, and ``refused``: why not, in words for the page (None when it runs). ``missing``: the path the
    command line named when it does not exist (the server's own words for its operator; a page shows only its
    last part)."""
    path: str | None
    refused: str | None
    missing: str | None = None

    @property
    def enabled(self) -> bool:
        return self.path is not None and self.refused is None

    @property
    def reason(self) -> str | None:
        """``refused`` without the how-to-start hint (the page shows the commands as code blocks of their own)."""
        return None if self.refused is None else self.refused.replace(" " + START_HINT, "")


def opt_in(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> OptIn:
    """Read the opt-in from the app's command line (``streamlit run app/Home.py -- --student-code PATH``).

    Off by default; refused on a class server (``AUTODIFF_CLASS_SERVER`` set, as in the Docker image)
    whatever the command line says, and for a path that does not exist. Whatever it says, the page runs the
    project's own samples (:mod:`explorer.student_code.samples`), on a class server too: they are not a
    student's code, and they run in the same sandboxed child.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    environ = os.environ if environ is None else environ
    path = None
    for i, a in enumerate(argv):
        if a == OPTION and i + 1 < len(argv):
            path = argv[i + 1]
        elif a.startswith(OPTION + "="):
            path = a.split("=", 1)[1]
    if environ.get(CLASS_SERVER_ENV, "").strip() not in ("", "0"):
        return OptIn(None, "This is a class server: it never runs students' code (its operator set "
                           f"{CLASS_SERVER_ENV}; the samples on this page are the project's own). Code runs on your "
                           "machine only, where a mistake in it cannot reach anyone else's session. " + START_HINT)
    if not path:
        return OptIn(None, "Running your own code is off: the app runs a student's file only when it was started "
                           f"with {OPTION} naming it (never on a server others use). " + START_HINT)
    if not Path(path).expanduser().exists():
        return OptIn(None, f"The app was started with {OPTION}, but that path does not exist. " + START_HINT,
                     missing=path)
    return OptIn(str(Path(path).expanduser().resolve()), None)


def missing_notice(optin: OptIn) -> str | None:
    """What page 13 says first when the command line named a path that does not exist (plain text: the page
    escapes it), naming only the path's last part (no path of the server's machine reaches a browser);
    None otherwise."""
    if optin.missing is None:
        return None
    name = Path(optin.missing.rstrip("/\\") or optin.missing).name or optin.missing
    return (f"The app was started with {OPTION} naming “{name}”, which does not exist on the server, so this page "
            "runs the project's samples instead of your code. Restart the app naming your HW2 folder or your "
            "autodiff.py (see “Run your own HW2 code on this page” at the end of the page).")


def server_notes(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> list[str]:
    """The lines the server prints once, when it runs its first page, about how it was started: a
    ``--student-code`` path that does not exist (the full path: the operator's own terminal). Empty when
    there is nothing to say, so that normal use prints nothing."""
    optin = opt_in(argv, environ)
    if optin.missing is None:
        return []
    where = Path(optin.missing).expanduser().absolute()
    shown = optin.missing if str(where) == optin.missing else f"{optin.missing} ({where})"
    return [f"Autodiff Explorer: {OPTION} {shown}: no such file or folder; page 13 (Your HW2 code) runs the "
            "project's samples instead. Restart with the path of your HW2 folder or its minitorch/autodiff.py."]


__all__ = ["OPTION", "CLASS_SERVER_ENV", "PAGE_PURPOSE", "START_COMMANDS", "START_HINT", "OptIn", "opt_in",
           "missing_notice", "server_notes"]
