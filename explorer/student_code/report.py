"""The report on a student's ``autodiff.py``: every graph's verdict, the random graphs counted, the
exponential-work check on doubling chains, and the text the command prints."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from explorer.explain.harness import WRONG_GRADIENTS, gradients_wrong

from .diagnose import Reference, Verdict, diagnose, error_text, reference
from .graphs import DOUBLING_DEPTHS, LECTURE_GRAPHS, N_RANDOM, all_keys
from .runner import StudentRun, run_student_code


@dataclass
class Scaling:
    """VJP calls against depth on the doubling chain (v_k = v_{k-1}·v_{k-1}): the student's and the
    engine's, per depth run; ``exponential`` when the student's double with each depth (or were stopped)."""
    depths: list[int]
    calls: list[int | None]
    engine_calls: list[int]
    exponential: bool
    text: str


FAILED = ("exception", "recursion", "not_implemented", "time_limit", "work_limit", "memory")


@dataclass
class RandomCount:
    """The random graphs counted as Backprop orders (page 5) counts them: ``wrong`` by
    :func:`explorer.explain.harness.gradients_wrong` on the inputs' gradients; ``failed`` (the code raised or was
    stopped, or was not run after that) counted apart, as page 5's errors; the rest split into ``right``, ``warned`` (right, the protocol
    misused) and ``inner`` (the inputs' gradients right, an inner node's adjoint wrong on the way)."""
    graphs: int
    wrong: int
    failed: Counter
    inner: int
    warned: int
    right: int

    criterion = f"{WRONG_GRADIENTS}; Backprop orders, page 5, counts the same way"

    def counted(self) -> str:
        """``wrong on 190 of 200``."""
        return f"wrong on {self.wrong} of {self.graphs}"

    def headline(self) -> str:
        """``200 random graphs: wrong on 190 of 200`` with the criterion, in words."""
        return f"{self.graphs} random graphs: {self.counted()} ({self.criterion})"

    def rest(self) -> str:
        """What the graphs not counted wrong were, one line."""
        parts = [f"right on {self.right}"]
        if self.inner:
            parts.append(f"the inputs' gradients right but an inner node's adjoint wrong on {self.inner}")
        if self.warned:
            parts.append(f"right with a warning on {self.warned}")
        parts += [f"{k.replace('_', ' ')} on {n}" for k, n in sorted(self.failed.items())]
        return f"of the other {self.graphs - self.wrong}: " + ", ".join(parts)


def count_random(verdicts: list) -> RandomCount:
    """Count the random graphs' verdicts (see :class:`RandomCount`); graphs not run (the code was stopped on an
    earlier one) count with the failed ones."""
    stopped = FAILED + ("not_run",)
    failed = Counter(v.kind for v in verdicts if v.kind in stopped)
    wrong = sum(1 for v in verdicts if v.kind not in stopped and v.inputs_wrong)
    rest = [v for v in verdicts if v.kind not in stopped and not v.inputs_wrong]
    return RandomCount(len(verdicts), wrong, failed, sum(1 for v in rest if v.kind == "wrong_gradient"),
                       sum(1 for v in rest if v.kind == "warning"), sum(1 for v in rest if v.kind == "right"))


@dataclass
class StudentReport:
    path: str
    file: str | None
    load_error: dict | None
    verdicts: dict[str, Verdict] = field(default_factory=dict)
    scaling: Scaling | None = None
    run: StudentRun | None = None
    references: dict[str, Reference] = field(default_factory=dict)
    # the random graphs counted while every reference is at hand (the page keeps only the ones it animates)
    random_tally: RandomCount | None = None

    @property
    def loaded(self) -> bool:
        return self.load_error is None

    def lecture(self) -> list[Verdict]:
        return [self.verdicts[s.key] for s in LECTURE_GRAPHS if s.key in self.verdicts]

    def random(self) -> list[Verdict]:
        return [v for k, v in self.verdicts.items() if k.startswith("random-")]

    def random_count(self) -> RandomCount | None:
        """The random graphs counted as Backprop orders counts them (None when none ran)."""
        return self.random_tally

    def headline(self) -> str:
        """The whole report in one line."""
        if self.load_error is not None:
            return _load_text(self.load_error)
        kinds = Counter(v.kind for v in self.verdicts.values() if not v.key.startswith("doubling-"))
        if kinds.get("not_implemented"):
            return "not implemented yet: the starter's NotImplementedError is still there"
        graphs = [v for v in self.verdicts.values() if not v.key.startswith("doubling-")]
        # wrong: the inputs' gradients, by the criterion the random graphs' line states (Backprop orders' own)
        failing = [v for v in graphs if v.kind in FAILED or v.kind == "not_run"]
        wrong = [v for v in graphs if v not in failing and v.inputs_wrong]
        inner = [v for v in graphs if v.kind == "wrong_gradient" and v not in failing and not v.inputs_wrong]
        warned = [v for v in graphs if v.kind == "warning"]
        if not failing and not wrong and not inner and not warned and not (self.scaling and self.scaling.exponential):
            return f"right on every graph ({len(graphs)} graphs" + (
                ", one VJP call per node on the doubling chains)" if self.scaling else ")")
        parts = []
        errors = {v.headline for v in failing if v.error is not None}
        if failing and len(failing) == len(graphs) and len(errors) == 1:
            parts.append(f"{errors.pop()} (on every graph)")
        else:
            if wrong:
                parts.append(f"wrong on {len(wrong)} of {len(graphs)} graphs")
            if failing:
                parts.append(f"failing on {len(failing)}" + ("" if wrong else f" of {len(graphs)} graphs"))
        if inner:
            parts.append(f"inner adjoint wrong on {len(inner)}")   # the inputs' gradients right (one line on page 13)
        if warned:
            parts.append(f"{'warning' if wrong or inner else 'right with a warning'} on {len(warned)}")
        if self.scaling and self.scaling.exponential:
            parts.append("exponential work")
        return "; ".join(parts)

    def text(self) -> str:
        """The report as the command prints it."""
        lines = [f"Student code: {self.file or self.path}", f"Verdict: {self.headline()}", ""]
        if self.load_error is not None:
            return "\n".join(lines).rstrip() + "\n"
        for v in self.lecture():
            lines.append(f"{_mark(v)} {v.title}")
            lines.append(f"    {v.headline}")
            lines += [f"    - {d}" for d in v.details]
        rnd, count = self.random(), self.random_count()
        if count is not None:
            lines.append(f"{'✔' if count.right == count.graphs else '✘'} {count.headline()}")
            lines.append(f"    {count.rest()}")
            first = next((v for v in rnd if not v.right), None)
            if first is not None:
                lines.append(f"    first: {first.title}: {first.headline}")
                lines += [f"    - {d}" for d in first.details[:3]]
        deep = self.verdicts.get("deep")
        if deep is not None:
            lines.append(f"{_mark(deep)} {deep.title}")
            lines.append(f"    {deep.headline}")
        if self.scaling is not None:
            lines.append(f"{'✘' if self.scaling.exponential else '✔'} VJP calls against depth (doubling chain)")
            lines.append(f"    {self.scaling.text}")
        return "\n".join(lines) + "\n"


def _mark(v: Verdict) -> str:
    return "✔" if v.right else ("~" if v.kind == "warning" else "✘")


def _load_text(err: dict) -> str:
    kind = err.get("kind")
    if kind in ("syntax_error", "not_implemented"):
        return error_text(err)
    if kind in ("missing", "crashed"):
        return str(err.get("message"))
    return "the file could not be loaded: " + error_text(err)


def scaling_of(verdicts: dict[str, Verdict]) -> Scaling | None:
    """The doubling-chain series: exponential when the student's calls at least double per depth over the
    last three depths run and exceed the engine's, or when a depth was stopped at the work limit."""
    depths, calls, engine = [], [], []
    for d in DOUBLING_DEPTHS:
        v = verdicts.get(f"doubling-{d}")
        if v is None or v.kind == "not_run":
            continue
        depths.append(d)
        calls.append(None if v.kind not in ("right", "warning", "wrong_gradient", "work_limit") else v.vjp_calls)
        engine.append(v.engine_vjp_calls)
    if not depths or all(c is None for c in calls):
        return None
    stopped = any(verdicts[f"doubling-{d}"].kind == "work_limit" for d in depths)
    known = [(d, c, e) for d, c, e in zip(depths, calls, engine) if c is not None]
    growth = len(known) >= 3 and all(b[1] >= 1.8 * a[1] and b[1] > b[2] for a, b in zip(known[-3:], known[-2:]))
    series = ", ".join(f"{d}: {c if c is not None else '—'}" for d, c in zip(depths, calls))
    eng = ", ".join(str(e) for e in engine)
    if stopped or growth:
        text = f"exponential work: VJP calls by depth {series} (2^d − 1); the engine's: {eng} (one per node)"
    else:
        text = f"VJP calls by depth {series}; the engine's: {eng}"
    return Scaling(depths, calls, engine, bool(stopped or growth), text)


def report_for(path: str, keys: list[str] | None = None, n_random: int = N_RANDOM, **limits) -> StudentReport:
    """Run the student's code (in the sandboxed child) on the graphs and diagnose every one."""
    keys = list(keys) if keys is not None else all_keys(n_random)
    run = run_student_code(path, keys, **limits)
    return report_from_run(run, keys)


def report_from_run(run: StudentRun, keys: list[str]) -> StudentReport:
    load = run.load
    rep = StudentReport(run.path, load.get("file"), None if load.get("ok") else load.get("error"), run=run)
    if not load.get("ok"):
        return rep
    for k in keys:
        ref = reference(k)
        rep.references[k] = ref
        rep.verdicts[k] = diagnose(k, run.graphs.get(k), ref, run.skipped.get(k))
    rep.scaling = scaling_of(rep.verdicts)
    rnd = rep.random()
    rep.random_tally = count_random(rnd) if rnd else None
    return rep
