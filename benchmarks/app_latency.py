"""Server time of every interaction on every page, with each widget driven to its extremes.

    python benchmarks/app_latency.py                 # every page
    python benchmarks/app_latency.py --page 2 --page 5 --verbose
    python benchmarks/app_latency.py --budget 300    # stop a page after 300 s of its own reruns

Each page of app/pages/ is opened through streamlit's AppTest (the real page script, headless, on this
machine). Then every widget the page shows is driven in turn: a slider, select-slider or number input to
its minimum and to its maximum, every option of a selectbox or radio (at most --options of them), a toggle
or checkbox flipped and flipped back, and every button pressed once (buttons that start work, such as
Start training, included: what is timed is the rerun that starts it, the work itself runs off the script
thread). Widgets that appear only after an interaction are driven too. The time of each rerun is AppTest's
wall time for `run()`, the server's side of a click (the browser's drawing is not included).

Printed per page: interactions, median, p95 and max rerun time and the slowest interactions, then the
goal (p95 <= 1 s, max <= 3 s at every setting the widgets allow) met or not. A rerun that raises, or that
AppTest gives up on after --timeout s, is reported as such.
"""
from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = ROOT / "app" / "pages"
GOAL_P95_S, GOAL_MAX_S = 1.0, 3.0
# widget kinds AppTest exposes, with how each is driven
KINDS = ("slider", "select_slider", "number_input", "selectbox", "radio", "toggle", "checkbox", "button",
         "multiselect")


@dataclass
class Timing:
    page: str
    action: str
    seconds: float
    problem: str | None = None


def _settings(kind: str, el, max_options: int) -> list:
    """The values a widget of ``kind`` is driven to (its extremes, or each option)."""
    if kind == "slider":
        return [el.min, el.max]
    if kind == "select_slider":  # AppTest lists the formatted options; set values of the current value's type
        opts = list(el.options)
        kind_of = type(el.value) if isinstance(el.value, (int, float)) else None
        pick = [opts[0], opts[-1]] if opts else []
        return [kind_of(o) if kind_of else o for o in pick]
    if kind == "number_input":
        out = [v for v in (el.min, el.max) if v is not None]
        return out
    if kind in ("selectbox", "radio"):
        return list(el.options)[:max_options]
    if kind in ("toggle", "checkbox"):
        return [not el.value, el.value]
    if kind == "multiselect":
        opts = list(el.options)
        return [opts[:max_options], []] if opts else []
    return []


def _find(at, kind: str, key: str):
    for el in getattr(at, kind):
        if el.key == key:
            return el
    return None


def _run(at, page: str, action: str, timeout: float, out: list[Timing]) -> None:
    t0 = time.perf_counter()
    problem = None
    try:
        at.run(timeout=timeout)
    except RuntimeError as e:  # AppTest's "script run timed out"
        problem = f"timed out after {timeout:.0f} s" if "timed out" in str(e).lower() else f"error: {e}"
    except Exception as e:  # noqa: BLE001 - a crash is a finding, reported with the rest
        problem = f"error: {type(e).__name__}: {e}"
    dt = time.perf_counter() - t0
    if problem is None and len(at.exception):
        problem = "exception shown: " + str(at.exception[0].value)[:120]
    out.append(Timing(page, action, dt, problem))


def drive_page(path: Path, timeout: float, max_options: int, budget_s: float, verbose: bool) -> list[Timing]:
    from streamlit.testing.v1 import AppTest

    page = path.stem
    out: list[Timing] = []
    at = AppTest.from_file(str(path), default_timeout=timeout)
    _run(at, page, "open", timeout, out)
    seen: set[tuple[str, str]] = set()
    spent = out[-1].seconds
    progress = True
    while progress and spent < budget_s:
        progress = False
        for kind in KINDS:
            for el in list(getattr(at, kind)):
                key = el.key
                if key is None or (kind, key) in seen:
                    continue
                seen.add((kind, key))
                progress = True
                label = getattr(el, "label", key)
                if kind == "button":
                    cur = _find(at, kind, key)
                    if cur is None or getattr(cur, "disabled", False):
                        continue
                    cur.click()
                    _run(at, page, f"press '{label}'", timeout, out)
                else:
                    for value in _settings(kind, el, max_options):
                        cur = _find(at, kind, key)
                        if cur is None or getattr(cur, "disabled", False):
                            break
                        if kind in ("selectbox", "radio") and value not in list(cur.options):
                            continue  # the options changed with an earlier setting
                        before = cur.value
                        try:
                            cur.set_value(value)
                            cur._widget_state  # noqa: B018 - raises now if AppTest cannot send this value
                        except Exception as e:  # noqa: BLE001
                            out.append(Timing(page, f"{kind} '{label}' = {value!r}", 0.0, f"cannot set: {e}"))
                            cur.set_value(before)
                            continue
                        _run(at, page, f"{kind} '{label}' = {str(value)[:40]}", timeout, out)
                spent = sum(t.seconds for t in out)
                if verbose:
                    t = out[-1]
                    print(f"  {t.seconds * 1000:8.0f} ms  {t.action}{'  [' + t.problem + ']' if t.problem else ''}",
                          flush=True)
                if spent >= budget_s:
                    out.append(Timing(page, "(page budget reached: remaining widgets not driven)", 0.0,
                                      f"budget {budget_s:.0f} s"))
                    break
            if spent >= budget_s:
                break
    # stop anything a button started (training threads or processes) before the next page
    for el in getattr(at, "button"):
        if el.key and "stop" in el.key.lower():
            try:
                el.click()
                at.run(timeout=timeout)
            except Exception:  # noqa: BLE001
                pass
    return out


def p95(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(0.95 * (len(xs) - 1))))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--page", action="append", default=[], help="page number or name part (repeatable)")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds before a rerun counts as timed out")
    ap.add_argument("--options", type=int, default=12, help="at most this many options of a selectbox/radio")
    ap.add_argument("--budget", type=float, default=240.0, help="seconds of reruns per page at most")
    ap.add_argument("--verbose", action="store_true", help="print every interaction as it runs")
    args = ap.parse_args(argv)
    pages = sorted(PAGES.glob("*.py"), key=lambda p: int(p.stem.split("_")[0]) if p.stem[0].isdigit() else 0)
    if args.page:
        pages = [p for p in pages if any(p.stem.split("_")[0] == s or s.lower() in p.stem.lower() for s in args.page)]
    all_ok = True
    print(f"{'page':28} {'runs':>5} {'median ms':>10} {'p95 ms':>8} {'max ms':>8} {'problems':>9}  goal (p95 <= "
          f"{GOAL_P95_S * 1000:.0f} ms, max <= {GOAL_MAX_S * 1000:.0f} ms)")
    details = []
    for path in pages:
        if args.verbose:
            print(f"{path.stem}:", flush=True)
        timings = drive_page(path, args.timeout, args.options, args.budget, args.verbose)
        secs = [t.seconds for t in timings if t.seconds > 0]
        problems = [t for t in timings if t.problem]
        med, q95, mx = statistics.median(secs), p95(secs), max(secs)
        ok = q95 <= GOAL_P95_S and mx <= GOAL_MAX_S and not any("error" in (t.problem or "") for t in problems)
        all_ok &= ok
        print(f"{path.stem:28} {len(secs):5d} {med * 1000:10.0f} {q95 * 1000:8.0f} {mx * 1000:8.0f} "
              f"{len(problems):9d}  {'met' if ok else 'NOT met'}", flush=True)
        slow = sorted(timings, key=lambda t: -t.seconds)[:3]
        details.append((path.stem, slow, problems))
    print("\nslowest interactions per page, and problems:")
    for stem, slow, problems in details:
        print(f"  {stem}: " + "; ".join(f"{t.action} {t.seconds * 1000:.0f} ms" for t in slow))
        for t in problems:
            print(f"    ! {t.action}: {t.problem}")
    print(f"\nall pages: goal {'met' if all_ok else 'NOT met'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
