"""Forward vs reverse mode (passes and ops for a full Jacobian), finite differences with an h
sweep, and the activation memory the backward pass keeps. Everything runs the real engine and
counts what it ran with ``trace_ops``."""
from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from engine import api
from engine.dtypes import as_dtype
from engine.tensor import kept_bytes, no_grad, tensor, trace_ops
from .parser import ExpressionError, Program, check_deadline
from .trace import _as_program, record_execution, run_forward
from .numbers import count, human_bytes


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
                check_deadline()
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
            check_deadline()
            for leaf in run.leaves.values():
                leaf.grad = None
            seed = np.zeros(out.shape)
            seed.reshape(-1)[k] = 1.0
            if out.requires_grad:
                out.backward(tensor(seed), retain_graph=True)  # one pass per row, through one graph
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


N_DIRECTIONS = 3      # random directions checked per larger input (as engine.gradcheck does)
PER_ELEMENT_MAX = 8   # inputs up to this many elements are checked element by element


@dataclass
class DirectionalDifferences:
    """Central differences of (the sum of) the output along random directions v of one input:
    ``(f(x + h v) - f(x - h v)) / 2h``, which autodiff predicts as ``<df/dx, v>``.

    One estimate per direction costs two runs whatever the input's size; a per-element check would
    cost two runs per element (4,000 runs for two 1000-element inputs).
    """
    directions: list          # nested lists, each of the input's shape (standard normal entries)
    estimates: list[float]

    def autodiff(self, grad: Any) -> list[float]:
        """``<grad, v>`` for each direction v (what the estimates should be)."""
        g = np.asarray(grad, dtype=np.float64)
        return [float(np.sum(g * np.asarray(v, dtype=np.float64))) for v in self.directions]

    def max_difference(self, grad: Any) -> float | None:
        """max over directions of |<grad, v> - estimate| (None without a gradient)."""
        if grad is None:
            return None
        return float(max(abs(a - e) for a, e in zip(self.autodiff(grad), self.estimates)))


def central_differences(program: Program | str, inputs: Mapping[str, Any] | str, h: float = 1e-6,
                        dtype: str = "float64", n_directions: int = N_DIRECTIONS,
                        per_element_max: int = PER_ELEMENT_MAX, seed: int = 0) -> dict[str, Any]:
    """Central differences of (the sum of) the output, computed in ``dtype``, for each input.

    An input of at most ``per_element_max`` elements gets ``(f(x + h e_i) - f(x - h e_i)) / 2h`` for
    every element i (a float, or a nested list of the input's shape); a larger one gets
    :class:`DirectionalDifferences` along ``n_directions`` random directions (seeded), as
    ``engine.gradcheck`` does: the cost no longer grows with the input's size.

    Raises:
        ExpressionError: bad program/inputs, or the request's deadline passed.
    """
    program, inputs = _as_program(program, inputs)
    arrays = _input_arrays(program, inputs, dtype)
    value = _scalar_f(program, dtype)
    npdt = arrays[0].dtype.type if arrays else np.float64
    rng = np.random.default_rng(seed)
    out: dict[str, Any] = {}

    def estimate(i: int, step: np.ndarray) -> float:
        check_deadline()
        xp = [a.copy() for a in arrays]
        xm = [a.copy() for a in arrays]
        xp[i] = xp[i] + step.astype(npdt)
        xm[i] = xm[i] - step.astype(npdt)
        return float((value(xp) - value(xm)) / npdt(2 * h))

    for i, name in enumerate(program.input_names):
        size = arrays[i].size
        if size <= per_element_max:
            g = np.zeros(arrays[i].shape, dtype=np.float64)
            for j in range(size):
                e = np.zeros(arrays[i].shape)
                e.reshape(-1)[j] = h
                g.reshape(-1)[j] = estimate(i, e)
            out[name] = float(g) if g.ndim == 0 else g.tolist()
        else:
            dirs = [rng.standard_normal(arrays[i].shape) for _ in range(n_directions)]
            out[name] = DirectionalDifferences([v.tolist() for v in dirs], [estimate(i, h * v) for v in dirs])
    return out


@dataclass
class HSweepRow:
    dtype: str
    h: float
    estimate: float
    abs_error: float
    rel_error: float
    scheme: str = "central"   # 'central': (f(x+h) - f(x-h)) / 2h;  'forward': (f(x+h) - f(x)) / h


# unit roundoff (half the machine epsilon) of each dtype: the relative error of one rounded value
UNIT_ROUNDOFF = {"float64": float(np.finfo(np.float64).eps) / 2, "float32": float(np.finfo(np.float32).eps) / 2}


@dataclass
class ErrorModel:
    """The textbook error model of a finite difference and the h that minimises it.

    central: |error| ~ h^2 |f'''| / 6 + eps |f| / h, minimised at h* = (3 eps |f| / |f'''|)^(1/3);
    forward: |error| ~ h |f''| / 2 + 2 eps |f| / h, minimised at h* = 2 (eps |f| / |f''|)^(1/2).
    ``slope`` is the truncation term's power of h (2 or 1); the rounding term always has slope -1.
    """
    scheme: str
    dtype: str
    eps: float
    truncation_coefficient: float  # |f'''| / 6 (central) or |f''| / 2 (forward)
    rounding_coefficient: float    # eps |f| (central) or 2 eps |f| (forward)
    slope: int
    best_h: float | None           # None when the truncation term vanishes (f''' = 0 or f'' = 0)

    def truncation(self, h: float) -> float:
        return self.truncation_coefficient * h ** self.slope

    def rounding(self, h: float) -> float:
        return self.rounding_coefficient / h

    def error(self, h: float) -> float:
        return self.truncation(h) + self.rounding(h)


def error_model(scheme: str, dtype: str, f: float, d2: float, d3: float) -> ErrorModel:
    """:class:`ErrorModel` of ``scheme`` in ``dtype`` from f, f'' and f''' at the point.

    Raises:
        ValueError: unknown scheme.
    """
    name = as_dtype(dtype).name
    eps = UNIT_ROUNDOFF[name]
    if scheme == "central":
        trunc, rnd, slope = abs(d3) / 6.0, eps * abs(f), 2
        best = (rnd / (2 * trunc)) ** (1 / 3) if trunc > 0 and rnd > 0 else None
    elif scheme == "forward":
        trunc, rnd, slope = abs(d2) / 2.0, 2 * eps * abs(f), 1
        best = (rnd / trunc) ** 0.5 if trunc > 0 and rnd > 0 else None
    else:
        raise ValueError(f"unknown finite-difference scheme {scheme!r} (central or forward)")
    if best is not None and not math.isfinite(best):
        best = None
    return ErrorModel(scheme, name, eps, trunc, rnd, slope, best)


@dataclass
class HSweep:
    wrt: str
    exact: float
    rows: list[HSweepRow]
    best_h: dict[str, float] = field(default_factory=dict)     # central scheme, per dtype (see h_sweep)
    lowest_h: dict[str, float] = field(default_factory=dict)   # the sweep's lowest point (central, per dtype)
    derivatives: list[float] = field(default_factory=list)     # f, f', f'', f''' along the swept element
    models: list[ErrorModel] = field(default_factory=list)

    def model(self, scheme: str, dtype: str) -> ErrorModel | None:
        return next((m for m in self.models if m.scheme == scheme and m.dtype == dtype), None)

    def series(self, scheme: str, dtype: str) -> tuple[list[float], list[float]]:
        """(hs, |errors|) of one scheme and dtype, in sweep order."""
        rows = [r for r in self.rows if r.scheme == scheme and r.dtype == dtype]
        return [r.h for r in rows], [r.abs_error for r in rows]

    def to_dict(self) -> dict:
        return asdict(self)


def default_hs(per_decade: int = 4, smallest_exponent: int = 12) -> list[float]:
    """1e-1 ... 1e-12 with ``per_decade`` points per decade (every power of ten included)."""
    return [10.0 ** (-k / per_decade) for k in range(per_decade, smallest_exponent * per_decade + 1)]


def directional_derivatives(program: Program | str, inputs: Mapping[str, Any] | str, wrt: str,
                            index: int = 0) -> list[float]:
    """[f, f', f'', f'''] of (the sum of) the output along element ``index`` of input ``wrt``, in float64.

    The higher derivatives are the engine's own: ``engine.grad`` nested three times, i.e. the
    backward pass differentiating its own gradient graph.

    Raises:
        ExpressionError: bad program/inputs or ``wrt``.
    """
    program, inputs = _as_program(program, inputs)
    if wrt not in program.input_names:
        raise ExpressionError(f"`{wrt}` is not an input of the program (inputs: {', '.join(program.input_names)})",
                              kind="undefined")
    arrays = _input_arrays(program, inputs)
    i = program.input_names.index(wrt)
    f = program.function()
    others = [tensor(a) for a in arrays]
    one_hot = np.zeros(arrays[i].shape)
    one_hot.reshape(-1)[index] = 1.0
    t0 = float(arrays[i].reshape(-1)[index])
    rest = tensor(arrays[i] - t0 * one_hot)
    direction = tensor(one_hot)

    def along(t):
        args = list(others)
        args[i] = rest + t * direction if arrays[i].ndim else t
        out = f(*args)
        return out.sum() if out.ndim else out

    d1 = api.grad(along)
    d2 = api.grad(d1)
    d3 = api.grad(d2)
    t = tensor(t0)
    with np.errstate(all="ignore"):
        return [float(g(t).numpy()) for g in (along, d1, d2, d3)]


def h_sweep(program: Program | str, inputs: Mapping[str, Any] | str, wrt: str | None = None, index: int = 0,
            hs: Sequence[float] | None = None, dtypes: Sequence[str] = ("float32", "float64"),
            schemes: Sequence[str] = ("central", "forward")) -> HSweep:
    """Finite-difference error against autodiff (float64) for each h, dtype and scheme.

    Central differences: truncation error ~ h^2, rounding ~ eps / h; forward differences:
    truncation ~ h. The *best h* of each dtype (``HSweep.best_h``, central scheme) is the
    minimiser of the error model h^2 |f'''| / 6 + eps |f| / h with f''' from the engine (nested
    ``engine.grad``), not the sweep's lowest point (``HSweep.lowest_h``): rounding error is noisy,
    and one lucky cancellation can put the lowest point a decade away from where the error is
    small systematically. When f''' = 0 (no truncation error) it falls back to the lowest point.

    Args:
        wrt: input name (default: the first input); index: element of that input (flat, C order).
        hs: step sizes (default :func:`default_hs`: 1e-1 ... 1e-12, four per decade).
        schemes: 'central' and/or 'forward'.
    Raises:
        ExpressionError: bad program, inputs, ``wrt`` or ``index``.
    """
    program, inputs = _as_program(program, inputs)
    wrt = wrt or program.input_names[0]
    if wrt not in program.input_names:
        raise ExpressionError(f"`{wrt}` is not an input of the program (inputs: {', '.join(program.input_names)})",
                              kind="undefined")
    hs = list(hs) if hs is not None else default_hs()
    tr = record_execution(program, inputs)
    size = tr.grad_arrays[wrt].size
    if not 0 <= index < size:
        raise ExpressionError(f"element {index} of `{wrt}` does not exist (it has {size} elements: 0 to {size - 1})",
                              kind="undefined")
    # the whole gradient: the trace's plain values stop at 64 elements (a 10x10 input's was None)
    exact = float(tr.grad_arrays[wrt].reshape(-1)[index])
    derivs = directional_derivatives(program, inputs, wrt, index)
    i = program.input_names.index(wrt)
    rows: list[HSweepRow] = []
    lowest: dict[str, float] = {}
    models: list[ErrorModel] = []
    for dt in dtypes:
        arrays = _input_arrays(program, inputs, dt)
        npdt = arrays[0].dtype.type
        value = _scalar_f(program, dt)
        f0 = value(arrays)
        for scheme in schemes:
            models.append(error_model(scheme, dt, derivs[0], derivs[2], derivs[3]))
            best_err = np.inf
            for h in hs:
                check_deadline()
                xp = [a.copy() for a in arrays]
                xp[i].reshape(-1)[index] += npdt(h)
                with np.errstate(all="ignore"):
                    if scheme == "central":
                        xm = [a.copy() for a in arrays]
                        xm[i].reshape(-1)[index] -= npdt(h)
                        est = float((value(xp) - value(xm)) / npdt(2 * h))
                    else:
                        est = float((value(xp) - f0) / npdt(h))
                err = abs(est - exact)
                rows.append(HSweepRow(dt, float(h), est, err, err / max(abs(exact), 1e-300), scheme))
                if scheme == "central" and err < best_err:
                    best_err, lowest[dt] = err, float(h)
    best = {}
    for dt in lowest:
        m = next((m for m in models if m.scheme == "central" and m.dtype == as_dtype(dt).name), None)
        best[dt] = m.best_h if m is not None and m.best_h is not None else lowest[dt]
    return HSweep(wrt, exact, rows, best, lowest, derivs, models)


# ---------------------------------------------------------------------------
# activation memory
#
# What an MLP of L x (Linear + ReLU) keeps for its backward pass, without the network's input x (the
# caller's data, alive anyway; the notes subtract it too) and the weights (they exist anyway):
#   the notes' rule: two saved tensors per layer, the Linear's input h (for W̄ = hᵀȳ) and, for ReLU's
#       mask, its input z: 2L - 1, each its own buffer.
#   this engine, measured on its graph: each op keeps only what its VJP reads (``Op.saves``): the matmul
#       its inputs h and W, the bias add nothing, ReLU its output y (1[y > 0] is the mask). Counted as
#       the ops save them that is 2L - 1 tensors, the rule; ReLU k's output is Linear k+1's input, one
#       tensor saved by two ops, so they fill L buffers (PyTorch's ReLU saves its output too).

RELU_SAVED = ("ReLU's VJP needs its mask 1[z > 0]. This engine's ReLU keeps its output y = relu(z) and reads "
              "the mask from it (y > 0 exactly where z > 0), as PyTorch's does; the notes keep its input z. That "
              "output is also the next Linear's saved input, so one buffer serves both.")


@dataclass
class LayerMemory:
    layer: int
    kept_bytes: int           # measured: buffers this layer adds to what the engine's graph holds for backward
    saved_tensors: int        # measured: tensors this layer's ops save (a tensor two ops save counts twice)
    notes_bytes: int = 0      # the notes' rule: the Linear's input and ReLU's input z


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
    def saved_total(self) -> int:
        return sum(layer.saved_tensors for layer in self.layers)

    @property
    def notes_total(self) -> int:
        return sum(layer.notes_bytes for layer in self.layers)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["kept_total"], d["saved_total"], d["notes_total"] = self.kept_total, self.saved_total, self.notes_total
        return d


def _itemsize(dtype: str) -> int:
    return np.dtype(np.float32 if as_dtype(dtype).name == "float32" else np.float64).itemsize


def _check_sizes(**sizes: int) -> None:
    for name, v in sizes.items():
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")


def _mlp(depth: int, in_features: int, width: int, batch: int, dtype: str, seed: int):
    """Run an MLP's forward pass; returns (each layer's output, input x, layers, the unique id each layer's
    ops start at)."""
    from engine import nn
    from engine.tensor import next_unique_id
    rng = np.random.default_rng(seed)
    layers = [nn.Linear(in_features if k == 0 else width, width, dtype=dtype, seed=seed + k) for k in range(depth)]
    x = tensor(rng.standard_normal((batch, in_features)), dtype=dtype)
    h, outs, starts = x, [], []
    for lay in layers:
        starts.append(next_unique_id())
        h = lay(h).relu()
        outs.append(h)
    return outs, x, layers, starts


def _saved_per_layer(h, x, layers, starts: list[int]) -> list[int]:
    """Tensors each layer's ops save (read from the graph: ``engine.tensor.saved_for_backward``), leaving
    out the input x and the weights (views of them, such as Wᵀ, too)."""
    from engine.tensor import saved_for_backward
    skip = {p.backend.buffer(p.data)[0] for lay in layers for p in lay.parameters()}
    skip.add(x.backend.buffer(x.data)[0])
    counts = [0] * len(layers)
    for node, t in saved_for_backward(h):
        if t.backend.buffer(t.data)[0] in skip:
            continue
        k = max(i for i, start in enumerate(starts) if node.unique_id >= start)
        counts[k] += 1
    return counts


def activation_memory(depth: int, width: int, batch: int, dtype: str = "float32", in_features: int | None = None,
                      seed: int = 0) -> MemoryReport:
    """Bytes of intermediate values the backward pass keeps for an MLP (Linear + ReLU) x depth.

    Measured: the engine runs the forward pass (NumPy backend) and its graph is read: the tensors each
    layer's ops save (``engine.tensor.saved_for_backward``) and the bytes of the distinct buffers behind
    them (``engine.tensor.kept_bytes``: each buffer once, neither a parameter nor the input x); a layer
    is charged what its ops add. Beside them, per layer, the notes' rule (Linear input + ReLU input, the
    first layer's input being x); see the comment above.

    Raises:
        ValueError: a size that is not a positive integer, or a network too large to run
            (depth x width x batch > 5e7; :func:`memory_at_scale` gives any size).
    """
    _check_sizes(depth=depth, width=width, batch=batch)
    if depth * width * batch > 50_000_000:
        raise ValueError("this MLP is too large to run for a measurement (depth*width*batch > 5e7); "
                         "memory_at_scale computes any size from a small run")
    in_features = in_features or width
    itemsize = _itemsize(dtype)
    outs, x, layers, starts = _mlp(depth, in_features, width, batch, dtype, seed)
    saved = _saved_per_layer(outs[-1], x, layers, starts)
    buffer = batch * width * itemsize
    result, before = [], 0
    for k, h in enumerate(outs):  # the graph after layer k is the graph of layer k's output
        total = kept_bytes(h, exclude=[x])
        result.append(LayerMemory(k + 1, total - before, saved[k], buffer * (1 if k == 0 else 2)))
        before = total
    pbytes = sum(p.numel() * itemsize for lay in layers for p in lay.parameters())
    return MemoryReport(depth, width, batch, as_dtype(dtype).name, in_features, result, pbytes)


@functools.lru_cache(maxsize=256)
def _small_mlp_counts(depth: int, width: int, batch: int, dtype: str) -> tuple[int, int]:
    """(tensors saved, bytes of distinct buffers kept) for backward after the whole MLP, counted once at the
    end rather than after every layer (that is quadratic in depth: 3.6 s at depth 1000). Remembered per
    size: it depends on nothing else."""
    outs, x, layers, starts = _mlp(depth, width, width, batch, dtype, 0)
    return sum(_saved_per_layer(outs[-1], x, layers, starts)), kept_bytes(outs[-1], exclude=[x])


def mlp_saved_counts(depth: int) -> tuple[int, int]:
    """(tensors the engine's graph saves for backward, distinct buffers they fill) for a depth-``depth``
    Linear + ReLU MLP, without the input x and the weights, read from a small copy of the network."""
    _check_sizes(depth=depth)
    saved, kept = _small_mlp_counts(int(depth), 4, 2, "float64")
    return saved, kept // (4 * 2 * 8)


@dataclass
class MemoryAtScale:
    """What an MLP of ``depth`` x (Linear(width) + ReLU) keeps for backward, counted in batch x width buffers."""
    depth: int
    width: int
    batch: int
    dtype: str
    buffer_bytes: int         # one batch x width buffer
    engine_saved: int         # measured on this engine: tensors its ops save (2L - 1)
    engine_buffers: int       # measured on this engine: the distinct buffers they fill (L)
    notes_buffers: int        # the notes' rule (2L - 1 tensors, each its own buffer)
    parameter_bytes: int

    @property
    def engine_bytes(self) -> int:
        return self.engine_buffers * self.buffer_bytes

    @property
    def notes_bytes(self) -> int:
        return self.notes_buffers * self.buffer_bytes

    def rows(self) -> list[dict]:
        """One row per count: what is kept, tensors saved, buffers, bytes, MB and MiB."""
        out = []
        for label, rule, saved, n in (
                ("this engine (measured)", "Linear input h + ReLU output y per layer (y is the next Linear's input)",
                 self.engine_saved, self.engine_buffers),
                ("the notes' rule", "Linear input h + ReLU input z per layer", self.notes_buffers, self.notes_buffers)):
            b = n * self.buffer_bytes
            out.append({"count": label, "what is kept": rule, "tensors saved": saved, "buffers": n, "bytes": b,
                        "MB": round(b / 1e6, 1), "MiB": round(b / 2 ** 20, 1)})
        return out

    def to_dict(self) -> dict:
        d = asdict(self)
        d.update(engine_bytes=self.engine_bytes, notes_bytes=self.notes_bytes)
        return d


MAX_SCALE_DEPTH = 1000


def memory_at_scale(depth: int, width: int, batch: int, dtype: str = "float32") -> MemoryAtScale:
    """Memory kept for backward by an MLP of any size (e.g. the notes' exercise 9: 10 x 4096, batch 512).

    The engine runs the same network at width 4, batch 2 and its graph is read: the tensors its ops save
    and the buffers behind them (:func:`activation_memory`); every one of them is one batch x width
    buffer (the graph's structure does not depend on the sizes), so the count scales exactly to the
    sizes asked for.

    Raises:
        ValueError: a size that is not a positive integer, or depth > 1000.
    """
    _check_sizes(depth=depth, width=width, batch=batch)
    if depth > MAX_SCALE_DEPTH:
        raise ValueError(f"depth must be at most {MAX_SCALE_DEPTH}, got {depth}")
    small_w, small_b = 4, 2
    saved, kept_total = _small_mlp_counts(int(depth), small_w, small_b, as_dtype(dtype).name)
    unit = small_w * small_b * _itemsize(dtype)
    engine_buffers, rest = divmod(kept_total, unit)
    if rest:  # would mean a kept buffer of another shape: then the scaling below would be wrong
        raise AssertionError(f"kept {kept_total} bytes is not a whole number of {unit}-byte buffers")
    itemsize = _itemsize(dtype)
    return MemoryAtScale(int(depth), int(width), int(batch), as_dtype(dtype).name, int(batch) * int(width) * itemsize,
                         int(saved), int(engine_buffers), 2 * int(depth) - 1,
                         int(depth) * (int(width) * int(width) + int(width)) * itemsize)


# ---------------------------------------------------------------------------
# Jacobian sizes: why frameworks never build the Jacobian


@dataclass
class JacobianSizes:
    """Bytes of Jacobians against the vectors a VJP works with, for a layer x (d_in) -> y (d_out), batch B.

    ``per_example``: one example through the layer, J = dy/dx is d_out x d_in.
    ``whole_batch``: the batch as one function R^(B d_in) -> R^(B d_out) (a layer, or a whole network
    with those input and output widths): (B d_out) x (B d_in).
    ``vjp``: what a VJP holds instead, the cotangent ȳ (B d_out numbers); its result x̄ has B d_in.
    ``forward_passes`` / ``reverse_passes``: JVPs (one per input element) or VJPs (one per output
    element) to build the whole-batch Jacobian column by column or row by row.
    """
    width_in: int
    width_out: int
    batch: int
    dtype: str
    itemsize: int

    @property
    def per_example_elements(self) -> int:
        return self.width_out * self.width_in

    @property
    def whole_batch_elements(self) -> int:
        return self.batch * self.width_out * self.batch * self.width_in

    @property
    def vjp_elements(self) -> int:
        return self.batch * self.width_out

    @property
    def forward_passes(self) -> int:
        return self.batch * self.width_in

    @property
    def reverse_passes(self) -> int:
        return self.batch * self.width_out

    def rows(self) -> list[dict]:
        """Table rows: what, its shape, elements, bytes (exact) and a readable size."""
        b, di, do = self.batch, self.width_in, self.width_out
        out = []
        for what, shape, n in (
                ("Jacobian of one example (one layer)", f"{count(do)} × {count(di)}", self.per_example_elements),
                ("Jacobian of the whole batch (layer or network)", f"{count(b * do)} × {count(b * di)}",
                 self.whole_batch_elements),
                ("VJP: the cotangent ȳ it carries instead", f"{count(b)} × {count(do)}", self.vjp_elements)):
            out.append({"what": what, "shape": shape, "elements": count(n), "bytes": n * self.itemsize,
                        "size": human_bytes(n * self.itemsize)})
        return out


def jacobian_sizes(width_in: int = 4096, width_out: int = 4096, batch: int = 2048,
                   dtype: str = "float64") -> JacobianSizes:
    """Sizes of full Jacobians against a VJP's vector. The defaults give the notes' three numbers:
    0.134 GB (one example), 5.6e5 GB (the whole batch), 67 MB (the VJP's cotangent).

    Raises:
        ValueError: a size that is not a positive integer.
    """
    _check_sizes(width_in=width_in, width_out=width_out, batch=batch)
    return JacobianSizes(int(width_in), int(width_out), int(batch), as_dtype(dtype).name, _itemsize(dtype))
