"""Forward vs reverse mode (passes and ops for a full Jacobian), finite differences with an h
sweep, and the activation memory the backward pass keeps. Everything runs the real engine and
counts what it ran with ``trace_ops``."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from .. import api
from ..dtypes import as_dtype
from ..tensor import Tensor, no_grad, tensor, trace_ops
from .parser import ExpressionError, Program
from .trace import _as_program, record_execution, run_forward


class _Counter:
    def __init__(self) -> None:
        self.n = 0

    def __call__(self, op, inputs, params, out) -> None:
        self.n += 1


def op_counts(program: Program | str, inputs: Mapping[str, Any] | str) -> dict[str, int]:
    """Engine ops run by one forward pass and by one (topological) backward pass."""
    tr = record_execution(program, inputs)
    return {"forward_ops": tr.forward_ops, "backward_ops": tr.backward_ops}


def _input_arrays(program: Program, inputs: Mapping[str, Any], dtype: str = "float64") -> list[np.ndarray]:
    missing = [n for n in program.input_names if n not in inputs]
    if missing:
        raise ExpressionError(f"no value given for input(s) {', '.join(missing)}", kind="undefined")
    npdt = np.float32 if as_dtype(dtype).name == "float32" else np.float64
    return [np.array(inputs[n], dtype=npdt) for n in program.input_names]


@dataclass
class ModeCost:
    mode: str                 # 'forward (JVP)' | 'reverse (VJP)'
    passes: int               # JVP passes, or backward passes (after one forward)
    builds: str               # 'columns' | 'rows'
    forward_ops: int
    backward_ops: int
    jacobian: list            # m x n

    @property
    def total_ops(self) -> int:
        return self.forward_ops + self.backward_ops


@dataclass
class JacobianCosts:
    n_inputs: int             # n: total input elements
    n_outputs: int            # m: output elements
    forward: ModeCost
    reverse: ModeCost
    max_difference: float

    @property
    def agree(self) -> bool:
        return self.max_difference <= 1e-9 * max(1.0, float(np.max(np.abs(np.asarray(self.reverse.jacobian)))))

    def rows(self) -> list[dict]:
        """Table rows: mode, passes, what one pass gives, ops."""
        return [{"mode": c.mode, "passes": c.passes, "each pass gives": f"one {c.builds[:-1]} of J",
                 "forward ops": c.forward_ops, "backward ops": c.backward_ops, "total ops": c.total_ops}
                for c in (self.forward, self.reverse)]

    def to_dict(self) -> dict:
        d = asdict(self)
        d["agree"] = self.agree
        return d


def jacobian_costs(program: Program | str, inputs: Mapping[str, Any] | str,
                   wrt: Sequence[str] | None = None) -> JacobianCosts:
    """The full Jacobian of R^n -> R^m both ways, counting passes and engine ops.

    Forward mode: one ``engine.jvp`` pass per input element (a column each).
    Reverse mode: one forward pass, then one backward pass per output element (a row each).

    Args:
        wrt: the inputs that are variables (default: all); the others are constant data.
    """
    program, inputs = _as_program(program, inputs)
    wrt = list(wrt) if wrt is not None else list(program.input_names)
    for name in wrt:
        if name not in program.input_names:
            raise ExpressionError(f"`{name}` is not an input of the program", kind="undefined")
    arrays = _input_arrays(program, inputs)
    f = program.function()
    var = [i for i, name in enumerate(program.input_names) if name in wrt]
    n = int(sum(arrays[i].size for i in var))
    # forward mode: columns
    cols = []
    fw = _Counter()
    with trace_ops(fw):
        for i in var:
            for j in range(arrays[i].size):
                tangents = [np.zeros_like(b) for b in arrays]
                tangents[i].reshape(-1)[j] = 1.0
                _, t = api.jvp(f, [tensor(b) for b in arrays], [tensor(tt) for tt in tangents])
                cols.append(t.numpy().reshape(-1))
    m = int(cols[0].size) if cols else 0
    jf = np.stack(cols, axis=1) if cols else np.zeros((0, 0))
    # reverse mode: rows
    run = run_forward(program, inputs, constants=[n_ for n_ in program.input_names if n_ not in wrt])
    out = run.output
    m = out.numel()
    rows = []
    bw = _Counter()
    with trace_ops(bw):
        for k in range(m):
            for leaf in run.leaves.values():
                leaf.grad = None
            seed = np.zeros(out.shape)
            seed.reshape(-1)[k] = 1.0
            if out.requires_grad:
                out.backward(tensor(seed))
            row = [(leaf.grad.numpy() if leaf.grad is not None else np.zeros(leaf.shape)).reshape(-1)
                   for name, leaf in run.leaves.items() if name in wrt]
            rows.append(np.concatenate(row) if row else np.zeros(0))
    jr = np.stack(rows, axis=0) if rows else np.zeros((0, n))
    diff = float(np.max(np.abs(jf - jr))) if jf.size else 0.0
    return JacobianCosts(
        n, m,
        ModeCost("forward (JVP)", n, "columns", fw.n, 0, jf.tolist()),
        ModeCost("reverse (VJP)", m, "rows", len(run.steps), bw.n, jr.tolist()),
        diff)


def _scalar_f(program: Program, dtype: str):
    f = program.function()

    def value(arrays: Sequence[np.ndarray]) -> float:
        with no_grad(), np.errstate(all="ignore"):
            out = f(*[tensor(a, dtype=dtype) for a in arrays])
        arr = out.numpy()
        return arr.reshape(-1).sum(dtype=arr.dtype)  # non-scalar output: sum (as the backward seed does)

    return value


def central_differences(program: Program | str, inputs: Mapping[str, Any] | str, h: float = 1e-6,
                        dtype: str = "float64") -> dict[str, Any]:
    """(f(x + h e_i) - f(x - h e_i)) / 2h for every input element, computed in ``dtype``."""
    program, inputs = _as_program(program, inputs)
    arrays = _input_arrays(program, inputs, dtype)
    value = _scalar_f(program, dtype)
    npdt = arrays[0].dtype.type if arrays else np.float64
    out: dict[str, Any] = {}
    for i, name in enumerate(program.input_names):
        g = np.zeros(arrays[i].shape, dtype=np.float64)
        for j in range(arrays[i].size):
            xp = [a.copy() for a in arrays]
            xm = [a.copy() for a in arrays]
            xp[i].reshape(-1)[j] += npdt(h)
            xm[i].reshape(-1)[j] -= npdt(h)
            g.reshape(-1)[j] = float((value(xp) - value(xm)) / npdt(2 * h))
        out[name] = float(g) if g.ndim == 0 else g.tolist()
    return out


@dataclass
class HSweepRow:
    dtype: str
    h: float
    estimate: float
    abs_error: float
    rel_error: float


@dataclass
class HSweep:
    wrt: str
    exact: float
    rows: list[HSweepRow]
    best_h: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


def h_sweep(program: Program | str, inputs: Mapping[str, Any] | str, wrt: str | None = None, index: int = 0,
            hs: Sequence[float] | None = None, dtypes: Sequence[str] = ("float32", "float64")) -> HSweep:
    """Central-difference error against autodiff (float64) for each h and dtype.

    Large h: truncation error ~ h^2; small h: rounding error ~ eps / h. The best h is near
    eps^(1/3): about 1e-2..1e-3 in float32 and 1e-5..1e-6 in float64.

    Args:
        wrt: input name (default: the first input); index: element of that input.
        hs: step sizes (default 1e-1 ... 1e-12).
    """
    program, inputs = _as_program(program, inputs)
    wrt = wrt or program.input_names[0]
    if wrt not in program.input_names:
        raise ExpressionError(f"`{wrt}` is not an input of the program (inputs: {', '.join(program.input_names)})",
                              kind="undefined")
    hs = list(hs) if hs is not None else [10.0 ** -k for k in range(1, 13)]
    tr = record_execution(program, inputs)
    exact = float(np.asarray(tr.grads[wrt], dtype=float).reshape(-1)[index])
    i = program.input_names.index(wrt)
    rows: list[HSweepRow] = []
    best: dict[str, float] = {}
    for dt in dtypes:
        arrays = _input_arrays(program, inputs, dt)
        npdt = arrays[0].dtype.type
        value = _scalar_f(program, dt)
        best_err = np.inf
        for h in hs:
            xp = [a.copy() for a in arrays]
            xm = [a.copy() for a in arrays]
            xp[i].reshape(-1)[index] += npdt(h)
            xm[i].reshape(-1)[index] -= npdt(h)
            with np.errstate(all="ignore"):
                est = float((value(xp) - value(xm)) / npdt(2 * h))
            err = abs(est - exact)
            rows.append(HSweepRow(dt, float(h), est, err, err / max(abs(exact), 1e-300)))
            if err < best_err:
                best_err, best[dt] = err, float(h)
    return HSweep(wrt, exact, rows, best)


# ---------------------------------------------------------------------------
# activation memory


@dataclass
class LayerMemory:
    layer: int
    kept_bytes: int           # measured: buffers the engine's graph holds for this layer's backward
    minimum_bytes: int        # analytic: what the VJPs strictly need (layer input + activation output)


@dataclass
class MemoryReport:
    depth: int
    width: int
    batch: int
    dtype: str
    in_features: int
    layers: list[LayerMemory]
    parameter_bytes: int

    @property
    def kept_total(self) -> int:
        return sum(layer.kept_bytes for layer in self.layers)

    @property
    def minimum_total(self) -> int:
        return sum(layer.minimum_bytes for layer in self.layers)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["kept_total"], d["minimum_total"] = self.kept_total, self.minimum_total
        return d


def _root(arr: np.ndarray) -> np.ndarray:
    while isinstance(arr.base, np.ndarray):
        arr = arr.base
    return arr


def activation_memory(depth: int, width: int, batch: int, dtype: str = "float32", in_features: int | None = None,
                      seed: int = 0) -> MemoryReport:
    """Bytes of intermediate values the backward pass keeps for an MLP (Linear + ReLU) x depth.

    Measured: the engine runs the forward pass (NumPy backend); every buffer referenced by the
    graph's histories (op inputs and saved values) that is not a parameter is counted once (views
    share their base buffer), assigned to the layer whose ops first reference it.
    Analytic minimum: each layer's input (for dW) and its ReLU output (for the ReLU VJP), i.e.
    batch x (in + width) elements per layer, counting every buffer once overall.
    """
    from .. import nn
    for name, v in (("depth", depth), ("width", width), ("batch", batch)):
        if not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    if depth * width * batch > 50_000_000:
        raise ValueError("this MLP is too large to run for a measurement (depth*width*batch > 5e7)")
    in_features = in_features or width
    itemsize = np.dtype(np.float32 if as_dtype(dtype).name == "float32" else np.float64).itemsize
    rng = np.random.default_rng(seed)
    layers = [nn.Linear(in_features if k == 0 else width, width, dtype=dtype, seed=seed + k) for k in range(depth)]
    params = {id(_root(np.asarray(p.data))) for lay in layers for p in lay.parameters()}
    x = tensor(rng.standard_normal((batch, in_features)), dtype=dtype)
    per_layer: list[list] = [[] for _ in range(depth)]
    current = [0]

    def hook(op, inputs, p, out):
        if out.requires_grad:
            per_layer[current[0]].append(out.history)

    h = x
    with trace_ops(hook):
        for k, lay in enumerate(layers):
            current[0] = k
            h = lay(h).relu()
    seen: set[int] = set(params)
    result = []
    for k, hists in enumerate(per_layer):
        kept = 0
        for hist in hists:
            held = list(hist.inputs)
            saved = hist.saved if isinstance(hist.saved, (tuple, list)) else (hist.saved,)
            held += [s for s in saved if s is not None]
            for t in held:
                arr = t.data if isinstance(t, Tensor) else t
                if not isinstance(arr, np.ndarray):
                    continue
                root = _root(arr)
                if id(root) in seen:
                    continue
                seen.add(id(root))
                kept += root.nbytes
        fan_in = in_features if k == 0 else 0  # later layers' inputs are the previous ReLU outputs
        minimum = batch * (fan_in + width) * itemsize
        result.append(LayerMemory(k + 1, kept, minimum))
    pbytes = sum(p.numel() * itemsize for lay in layers for p in lay.parameters())
    return MemoryReport(depth, width, batch, as_dtype(dtype).name, in_features, result, pbytes)
