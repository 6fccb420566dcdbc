"""The Tensor: backend array + autodiff history, with a PyTorch-shaped API.

A tensor produced by an op is its own history: it keeps the op, its inputs and its
parameters in slots of its own (``t.history is t``), so a graph holds one Python object
per node, as PyTorch's graph holds one tensor per node. :class:`History` is the same
record standing alone, for the static graph's replays. ``apply`` is the single place where an
op runs: it calls the op's forward on the backend, records history when a
gradient will be needed, carries forward-mode tangents, and tells any tracing
hooks (explain layer, graph capture) what ran.
"""
from __future__ import annotations

import inspect
import itertools
import operator
import threading
import weakref
from contextlib import contextmanager
from typing import Any, Callable, Iterator, NamedTuple, Sequence

import numpy as np

from . import autodiff
from .backends import Backend, get_backend
from .dtypes import DType, as_dtype, bool_, float32, float64, int64

_ids = itertools.count(1)
_F64 = np.float64   # the data of a 0-d float64 tensor on the NumPy backend: the scalar fast path's values
_new = object.__new__


def next_unique_id() -> int:
    """A unique id no tensor has yet: every tensor made later gets a larger one (ids only grow)."""
    return next(_ids)


class _State(threading.local):
    """Per-thread engine mode: several trainings in several threads stay independent."""

    def __init__(self) -> None:
        self.grad_enabled = True
        self.forward_mode = 0     # >0 while jvp() runs: tangents are propagated
        self.hooks: list[Callable] = []
        self.releasing = 0        # while backward() releases its graph: that pass's number (see chain_rule)
        self.freeing = False      # ...and frees what each node saved right after its VJP (see _drop_saved)
        self.copies: dict[int, list] = {}  # while freeing: edges made to nodes not yet processed (_released_edge)


_state = _State()
_backward_passes = itertools.count(1)


@contextmanager
def releasing(release: bool = True, free: bool = True) -> Iterator[None]:
    """The backward passes run inside release the nodes whose VJPs they run (``release``) and free
    what each saved right after its VJP (``free``: for walks that run each VJP once); neither, inside
    a pass that does, when ``release`` is False (``retain_graph=True``)."""
    st = _state
    outer = st.releasing, st.freeing, st.copies
    st.releasing = next(_backward_passes) if release else 0
    st.freeing, st.copies = release and free, {}
    try:
        yield
    finally:
        st.releasing, st.freeing, st.copies = outer


class GraphReleasedError(RuntimeError):
    """A backward pass reached a node whose saved context an earlier ``backward()`` released
    (PyTorch's "Trying to backward through the graph a second time")."""


def _released(node: "Tensor") -> GraphReleasedError:
    return GraphReleasedError(
        f"Trying to backward through the graph a second time: node '{node.op.name}' (#{node.unique_id}) released "
        f"what it saved for backward when an earlier backward() ran its VJP. Pass backward(retain_graph=True) "
        f"to the earlier call if you need to backward through the graph again.")


def is_grad_enabled() -> bool:
    return _state.grad_enabled


def in_forward_mode() -> bool:
    """True while ``engine.jvp`` runs the user's function (False inside a JVP rule itself)."""
    return _state.forward_mode > 0


@contextmanager
def set_grad_enabled(mode: bool) -> Iterator[None]:
    prev = _state.grad_enabled
    _state.grad_enabled = bool(mode)
    try:
        yield
    finally:
        _state.grad_enabled = prev


class no_grad:
    """Context manager (and decorator): ops inside record no history."""

    def __enter__(self):
        self._prev = _state.grad_enabled
        _state.grad_enabled = False
        return self

    def __exit__(self, *exc):
        _state.grad_enabled = self._prev
        return False

    def __call__(self, fn):
        def wrapper(*args, **kwargs):
            with no_grad():
                return fn(*args, **kwargs)
        wrapper.__name__ = getattr(fn, "__name__", "wrapper")
        wrapper.__doc__ = getattr(fn, "__doc__", None)
        return wrapper


@contextmanager
def trace_ops(hook: Callable[[type["Op"], tuple, Any, "Tensor"], None]) -> Iterator[None]:
    """Call ``hook(op, inputs, params, output)`` after every op applied in this thread."""
    _state.hooks.append(hook)
    try:
        yield
    finally:
        _state.hooks.remove(hook)


class OpRun(NamedTuple):
    """One op as :func:`recording` saw it run: the op, its input tensors, its parameters, its output."""
    op: type["Op"]
    inputs: tuple
    params: Any
    out: "Tensor"

    @property
    def multiply_adds(self) -> int:
        return self.op.multiply_adds([t.shape for t in self.inputs], self.out.shape)


class Recording(list):
    """The ops a :func:`recording` block ran, in order (:class:`OpRun` each)."""

    @property
    def names(self) -> list[str]:
        return [r.op.name for r in self]

    @property
    def multiply_adds(self) -> int:
        """The matrix products' multiply-adds (``Op.multiply_adds``), summed."""
        return sum(r.multiply_adds for r in self)


@contextmanager
def recording() -> Iterator[Recording]:
    """Record every op applied in this thread inside the block: the one forward recorder the explorer's
    counts, pictures and cost tables read (``with recording() as ops: ...; ops.names, ops.multiply_adds``)."""
    ops = Recording()
    with trace_ops(lambda op, inputs, params, out: ops.append(OpRun(op, inputs, params, out))):
        yield ops


_OPS_BY_NAME: dict[str, type["Op"]] = {}


class Op:
    """A primitive. Subclasses define ``forward`` and, when differentiable, ``vjp`` / ``jvp``.

    forward(ctx, *arrays) -> array   runs on the backend (ctx.backend) with raw arrays
    vjp(ctx, g, k) -> tuple          one gradient (or None) per input, written with ``k``'s operations
    jvp(ctx, *tangents) -> Tensor    tangent of the output from input tangents (None = zero)
    kernel(ctx, dtypes) -> callable  what a captured step's replay calls (default: forward)

    Everything else the engine knows about an op is said here too: ``formula`` (its VJP in the
    lecture's notation, for display: ȳ is the adjoint arriving at the output y, x̄ / ā / b̄ the
    contributions sent back), ``label`` (how a picture writes the op over its arguments' names,
    ``"{0} + {1}"``; empty: ``name(args)``), ``typed`` (typed programs may call it by its name),
    ``saves`` (the positions of the inputs its VJP and JVP read; ``needs_output``: they read the
    output too), ``random`` (draws from the backend's generator: never folded, always replayed) and
    ``scalar`` (the scalar fast path's kernel). A subclass that sets its own ``name`` is registered
    under it (``engine.ops.primitive(name)``). ``engine.ops`` holds the declarations.

    ``k``, the VJP's interpreter (``engine.ops.ArrayOps``), is the recorded one by default; ``chain_rule``
    passes the raw one where it may (:func:`_vjp_on_arrays`). A ``vjp`` without ``k`` always runs recorded.
    """

    name = "?"
    differentiable = True
    needs_output = False  # VJP/JVP uses the output tensor (kept through a weak reference)
    saves: tuple[int, ...] | None = None  # inputs the VJP/JVP read (None: all of them)
    random = False
    formula = ""
    label = ""
    typed = False
    scalar: Callable | None = None
    array_rule = False  # its vjp takes an interpreter ``k``: the raw one may run it (set from the signature)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "name" in cls.__dict__:
            _OPS_BY_NAME.setdefault(cls.name, cls)  # the first definition of a name keeps it
        cls.array_rule = "k" in inspect.signature(cls.vjp).parameters

    @staticmethod
    def forward(ctx: "History", *arrays):
        raise NotImplementedError

    @classmethod
    def kernel(cls, ctx: "History", dtypes: tuple = ()) -> Callable:
        """A callable computing ``forward`` from raw arrays for ``ctx``'s parameters, operands of
        ``dtypes``: the same bits as ``forward``. Ops whose forward is one backend call return
        the backend's own function where it has one (``Backend.kernel``: NumPy's ufunc)."""
        fwd = cls.forward
        return lambda *arrays: fwd(ctx, *arrays)

    @classmethod
    def _backend_kernel(cls, ctx: "History", dtypes: tuple, method: str, *args) -> Callable:
        direct = ctx.backend.kernel(method, *args, dtypes=dtypes)
        return direct if direct is not None else Op.kernel.__func__(cls, ctx, dtypes)

    @classmethod
    def multiply_adds(cls, in_shapes: Sequence[tuple], out_shape: tuple) -> int:
        """Multiply-adds the op makes beyond one per output number: a matrix product's k per output
        number, 0 for the others (what the cost tables count)."""
        return 0

    @classmethod
    def vjp(cls, ctx: "History", g: "Tensor"):
        raise NotImplementedError(f"no VJP rule for op '{cls.name}'")

    @classmethod
    def jvp(cls, ctx: "History", *tangents):
        raise NotImplementedError(f"no JVP rule for op '{cls.name}'")


def _vjp_on_arrays(node: "Tensor", g: "Tensor") -> tuple | None:
    """``node``'s VJP contributions from its op's rule run by the raw interpreter (:func:`_raw_vjp`), each made a
    Tensor once. None when the pass must see its engine ops (``create_graph``, a ``trace_ops`` hook, forward
    mode, a static graph's backend): then the rule runs on Tensors."""
    be = node.backend
    if _sees_engine_ops(be):
        return None
    return tuple([None if a is None else _make(a, be) for a in _raw_vjp(node, g._data)])


def _sees_engine_ops(be: Backend) -> bool:
    """Whether a VJP run now must make engine ops: recorded (grad mode: ``create_graph``), watched (a ``trace_ops``
    hook), in forward mode, or on a static graph's backend. Else the raw interpreter may run it."""
    st = _state
    return bool(st.grad_enabled or st.hooks or st.forward_mode or be.deferred)


def _raw_interpreter(be: Backend):
    """The backend's raw interpreter (``engine.ops.ArrayOps.raw``), made on its first backward pass and kept."""
    try:
        return be.raw_ops
    except AttributeError:
        k = be.raw_ops = _ops.ArrayOps.raw(be)
        return k


def _raw_sum(binary: Callable) -> Callable:
    """``autodiff.add_adjoints`` for backward()'s own pass, whose contributions are raw arrays: summed as the
    Tensors' ``+`` sums them (the scalar fast path's numbers with NumPy's scalar arithmetic, arrays with the
    backend's add)."""
    def add(total, contribution):
        if total is None:
            return contribution
        if type(total) is _F64 and type(contribution) is _F64:
            return total + contribution
        return binary("add", total, contribution)
    return add


def _raw_vjp(node: "Tensor", g) -> tuple:
    """``node``'s VJP contributions, raw arrays (or None), for the raw adjoint ``g``: its op's rule run by the raw
    interpreter (the backend's kernels on arrays; at a node the scalar fast path made, on its numbers:
    ``engine.ops.SCALAR``). A rule written on Tensors only, or a scalar ``g`` at another node, runs on Tensors."""
    op = node.op
    if op.array_rule:
        if type(g) is not _F64:
            return op.vjp(node, g, _raw_interpreter(node.backend))
        if type(node._data) is _F64 and op.scalar is not None:
            return op.vjp(node, g, _ops.SCALAR)
    return tuple([None if t is None else t._data for t in op.vjp(node, _make(g, node.backend))])


def _saved_inputs(op: type[Op], inputs: tuple) -> tuple:
    keep = op.saves
    return inputs if keep is None else tuple(inputs[i] for i in keep)


def _operands(rec) -> tuple:
    """The operands a History or a node keeps in its slots: one or two in ``_a`` / ``_b``, more as a
    tuple in ``_a``; ``_n`` counts them."""
    n = rec._n
    if n == 2:
        return rec._a, rec._b
    if n == 1:
        return (rec._a,)
    return rec._a


def _set_operands(rec, inputs) -> None:
    """Store ``inputs`` in ``rec``'s slots, as :func:`_operands` reads them."""
    n = rec._n = len(inputs)
    if n == 2:
        rec._a, rec._b = inputs
    elif n == 1:
        rec._a, rec._b = inputs[0], None
    else:
        rec._a, rec._b = tuple(inputs), None


class History:
    """How a tensor was made: op, inputs, parameters, and what its VJP needs. One or two inputs sit in
    slots of their own (no long-lived tuple per node for the garbage collector to walk)."""

    __slots__ = ("op", "_a", "_b", "_n", "params", "backend", "_out")

    def __init__(self, op, inputs, params, backend):
        self.op = op
        _set_operands(self, inputs)
        self.params = params
        self.backend = backend
        self._out = None

    # a VJP reads ``ctx.operands`` (a node's may hold a Python number: see Tensor.operands)
    inputs = operands = property(_operands)

    @property
    def saved(self) -> tuple["Tensor", ...]:
        """What this op keeps for its backward pass: the inputs its VJP reads (``Op.saves``) and, for
        an op whose VJP reads it, its output (held weakly, listed while alive)."""
        inputs = _saved_inputs(self.op, self.inputs)
        if self._out is not None:
            out = self._out()
            if out is not None:
                return inputs + (out,)
        return inputs

    @property
    def output(self) -> "Tensor":
        out = self._out() if self._out is not None else None
        if out is None:
            raise RuntimeError(f"the output of op '{self.op.name}' is no longer alive")
        return out


class Tensor:
    """An n-dimensional array that can record how it was computed."""

    # op / params / _a / _b / _n: how this tensor was made (op None: a leaf, or made with no gradient
    # to record); one or two inputs sit in _a / _b, more as a tuple in _a; _n counts them.
    # _released: 0 while the node's saved context is there, else the number of the backward() pass
    # that ran its VJP and released it (set on nodes only: a leaf has no VJP)
    __slots__ = ("_data", "backend", "requires_grad", "grad", "unique_id", "tangent", "name",
                 "op", "params", "_a", "_b", "_n", "_released", "__weakref__")
    __array_priority__ = 1000  # numpy scalars defer to Tensor's reflected operators

    def __init__(self, data, requires_grad: bool = False, dtype=None, backend: "str | Backend" = "numpy",
                 name: str | None = None):
        be = get_backend(backend)
        if isinstance(data, Tensor):
            data = data.numpy()
        if dtype is None:
            dtype = _infer_dtype(data)
        else:
            dtype = as_dtype(dtype)
        if requires_grad and not dtype.is_floating:
            raise TypeError(f"only floating-point tensors can require gradients (got {dtype.name})")
        self._data = be.array(data, dtype)
        self.backend = be
        self.requires_grad = bool(requires_grad)
        self.grad = None
        self.op = None
        self.unique_id = next(_ids)
        self.tangent = None
        self.name = name

    @staticmethod
    def _make(data, backend: Backend, requires_grad: bool = False) -> "Tensor":
        """The engine's one constructor (``Tensor(...)`` checks and converts user data, then sets the same
        fields): a leaf holding the backend array ``data`` (a node sets its ``_history`` next)."""
        t = _new(Tensor)
        t._data = data
        t.backend = backend
        t.requires_grad = requires_grad
        t.grad = None
        t.op = None
        t.unique_id = next(_ids)
        t.tangent = None
        t.name = None
        return t

    # --- the history this tensor carries ----------------------------------------
    @property
    def _history(self) -> "Tensor | None":
        """How this tensor was made: the tensor itself (op, inputs, params), or None for a leaf."""
        return self if self.op is not None else None

    @_history.setter
    def _history(self, h: "History | Tensor | None") -> None:
        if h is None:
            self.op = self.params = self._a = self._b = None
            self._n = 0
        else:
            self.op, self.params, self._a, self._b, self._n = h.op, h.params, h._a, h._b, h._n
            self._released = 0

    operands = property(_operands, doc="""The op's operands as recorded: tensors, and any Python number
        the op was given (``y * 1.5`` keeps ``1.5`` as a number, as PyTorch keeps a scalar operand; it
        becomes a constant tensor only when something asks for :attr:`inputs`). What a VJP reads.""")

    @property
    def inputs(self) -> tuple["Tensor", ...]:
        """The op's inputs, every one a tensor: a number operand becomes a constant tensor here
        (made once, then kept)."""
        if self.op is None:
            return ()
        if self._n == 2:
            a, b = self._a, self._b
            if type(a) is float:
                self._a = as_tensor_like(a, b)
            elif type(b) is float:
                self._b = as_tensor_like(b, a)
        return _operands(self)

    @property
    def saved(self) -> tuple["Tensor", ...]:
        """What this op keeps for its backward pass: the inputs its VJP reads (``Op.saves``; the graph
        reaches the others through edges that keep no value, see :class:`_Unsaved`) and, for an op
        whose VJP reads it, its output: this tensor. Empty once a ``backward()`` released the node."""
        if self._released:
            return ()
        inputs = _saved_inputs(self.op, self.inputs)
        return inputs + (self,) if self.op.needs_output else inputs

    @property
    def output(self) -> "Tensor":
        return self

    # --- basic properties ---------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self._data.shape  # every backend's array carries its shape tuple (Backend.shape is this)

    @property
    def dtype(self) -> DType:
        return self.backend.dtype(self._data)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    def size(self, dim: int | None = None) -> "tuple[int, ...] | int":
        """The shape (``x.size()``, a tuple as PyTorch's ``torch.Size`` is), or the length of one
        dimension (``x.size(dim)``, an int; negative dims count from the end). ``numel()`` counts elements.

        Raises:
            IndexError: ``dim`` is out of range.
            TypeError: ``dim`` is not an integer.
        """
        shape = self.shape
        if dim is None:
            return shape
        d = operator.index(dim)
        n = len(shape)
        if not -n <= d < n:
            have = f"a tensor of {n} dims (dims {-n} to {n - 1})" if n else "a 0-d tensor (it has no dims)"
            raise IndexError(f"dimension {d} out of range for {have}")
        return shape[d]

    @property
    def data(self):
        """The raw backend array (for backends and optimisers; not for autodiff code)."""
        return self._data

    def strides(self) -> tuple[int, ...]:
        return self.backend.strides(self._data)

    def is_contiguous(self) -> bool:
        return self.backend.is_contiguous(self._data)

    @property
    def history(self) -> History | None:
        return self._history

    @property
    def op_name(self) -> str:
        return self._history.op.name if self._history is not None else "leaf"

    def item(self) -> float:
        return self.backend.item(self._data)

    def numpy(self) -> np.ndarray:
        return np.asarray(self.backend.to_numpy(self._data))

    def tolist(self):
        return self.numpy().tolist()

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __float__(self) -> float:
        return float(self.item())

    def __bool__(self) -> bool:
        if self.numel() != 1:
            raise ValueError("the truth value of a tensor with more than one element is ambiguous")
        return bool(self.item())

    def __repr__(self) -> str:
        if self.backend.deferred:  # a static-graph tensor has no value until a Session runs it
            return self.backend.describe(self)
        arr = np.array2string(self.numpy(), precision=6, separator=", ", prefix="tensor(")
        extra = ""
        if self.backend.name != "numpy":
            extra += f", backend='{self.backend.name}'"
        if self.dtype != float64:
            extra += f", dtype={self.dtype.name}"
        if self._history is not None:
            extra += f", op={self._history.op.name}"
        elif self.requires_grad:
            extra += ", requires_grad=True"
        return f"tensor({arr}{extra})"

    __hash__ = object.__hash__

    # --- autodiff protocol (see engine.autodiff) ------------------------------
    @property
    def parents(self) -> tuple["Tensor", ...]:
        # the tensors this one was computed from (a number operand is no node: it takes no gradient)
        if self.op is None:
            return ()
        if _state.freeing and (type(self) is not Tensor or type(self._data) is not _F64):
            return _handles(self)  # the sort of a backward() that frees as it goes (a scalar's 8 bytes: not worth it)
        n = self._n
        if n == 2:
            a, b = self._a, self._b
            if type(b) is float:
                return (a,)
            return (b,) if type(a) is float else (a, b)
        return (self._a,) if n == 1 else self._a

    def is_leaf(self) -> bool:
        return self.op is None

    def is_constant(self) -> bool:
        return not self.requires_grad

    def chain_rule(self, d_output: "Tensor"):
        # (input, its VJP contribution) for each input the VJP gave one: HW2's protocol hands out
        # Variables with Tensor derivatives only, never a number operand (``1.5`` in ``1.5 * x1``)
        releasing = _state.releasing  # nonzero while a backward() without retain_graph runs
        released = self._released
        if released and released != releasing:
            raise _released(self)  # an earlier backward() ran this VJP and released the node
        if type(d_output) is not Tensor:  # a raw array: backward()'s own pass, contributions raw too
            grads = _raw_vjp(self, d_output)
        else:
            grads = _vjp_on_arrays(self, d_output)  # None: a pass that records or is watched
            if grads is None:
                grads = self.op.vjp(self, d_output)
        if releasing:
            self._released = releasing  # after the VJP ran (this pass may run it again: path recursion)
            # ...and if its strategy runs each VJP once, free what it saved now (not a scalar's 8 bytes)
            if _state.freeing and (type(self) is not Tensor or type(self._data) is not _F64):
                _drop_saved(self)
        if self._n == 2:  # most nodes: no zip, no filtering loop (the scalar chain's backward, per node)
            da, db = grads
            if da is None:
                return () if db is None else ((self._b, db),)
            return ((self._a, da),) if db is None else ((self._a, da), (self._b, db))
        if self._n == 1:
            da = grads[0]
            return () if da is None else ((self._a, da),)
        return [(x, d) for x, d in zip(_operands(self), grads) if d is not None]

    def accumulate_derivative(self, x: "Tensor") -> None:
        if type(x) is not Tensor:  # a raw array from backward()'s own pass
            x = _make(x, self.backend)
        if x.dtype is not self.dtype:  # a mixed-dtype op promoted the adjoint: .grad keeps the leaf's dtype
            x = _ops.cast(x, self.dtype)
        if not self.backend.is_contiguous(x._data):
            x = x.contiguous()  # through the op, so trace_ops (graph capture) sees where .grad came from
        self.grad = x if self.grad is None else self.grad + x

    def backward(self, grad: "Tensor | None" = None, retain_graph: bool | None = None, create_graph: bool = False,
                 strategy: "str | autodiff.TraversalStrategy" = "topological", observer=None) -> None:
        """Backpropagate from this tensor and accumulate into the leaves' ``.grad``.

        As PyTorch: each node whose VJP ran releases what it saved for backward (a second
        ``backward()`` through it raises :class:`GraphReleasedError` unless the earlier call passed
        ``retain_graph=True``), and frees it during the pass: right after a node's VJP its input slots
        become edges that keep no value, so a saved buffer nothing else holds goes once the last VJP
        that read it has run (``path_recursion``, which runs VJPs again, only marks the nodes). Values
        a caller holds stay. ``engine.grad`` / ``engine.vjp`` and ``chain_rule`` release nothing.

        Args:
            grad: d(something)/d(self); defaults to 1 for a one-element tensor.
            retain_graph: keep the graph for another backward pass (default: ``create_graph``).
            create_graph: record the backward pass as a graph (for higher-order derivatives).
            strategy: traversal strategy (see ``engine.autodiff``).
            observer: receives every backward event.

        Raises:
            RuntimeError: when the tensor does not require grad, or ``grad`` is missing
                for a tensor with more than one element.
            GraphReleasedError: the pass reached a node an earlier ``backward()`` released.
        """
        if not self.requires_grad:
            raise RuntimeError("backward() on a tensor that does not require grad "
                               "(no input had requires_grad=True, or it was computed under no_grad)")
        if grad is None:
            if self.numel() != 1:
                raise RuntimeError(f"grad can be implicitly created only for one-element outputs; "
                                   f"this output has shape {self.shape}: pass backward(grad=...)")
            grad = _ops.ones_like(self)
        else:
            grad = as_tensor_like(grad, self)
            if grad.shape != self.shape:
                raise RuntimeError(f"grad of shape {grad.shape} does not match output shape {self.shape}")
        if retain_graph is None:
            retain_graph = create_graph
        # an observer's events hold every node and contribution anyway: an observed pass only marks
        walk = autodiff.get_strategy(strategy)
        free = not retain_graph and observer is None and walk.once_per_node and _holds_large_values(self)
        st = _state  # (an unknown strategy raised above, before any state changed)
        outer, grad_mode = (st.releasing, st.freeing, st.copies), st.grad_enabled
        st.releasing = 0 if retain_graph else next(_backward_passes)
        st.freeing, st.copies = free, {}
        st.grad_enabled = bool(create_graph)  # set_grad_enabled's work, without a generator per pass
        raw = observer is None and type(walk) is autodiff.Topological and not _sees_engine_ops(self.backend)
        try:
            if raw:  # nobody records or watches this pass: adjoints travel as the backend's raw arrays
                walk.run(self, grad._data, add=_raw_sum(self.backend.binary))
            else:
                autodiff.backpropagate(self, grad, strategy=walk, observer=observer)
        finally:
            (st.releasing, st.freeing, st.copies), st.grad_enabled = outer, grad_mode

    def detach(self) -> "Tensor":
        return Tensor._make(self._data, self.backend)

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        if self._history is not None:
            raise RuntimeError("requires_grad can only be changed on leaf tensors")
        if requires_grad and not self.dtype.is_floating:
            raise TypeError("only floating-point tensors can require gradients")
        self.requires_grad = requires_grad
        return self

    def zero_grad(self) -> None:
        self.grad = None

    def to(self, backend: "str | Backend | None" = None, dtype=None) -> "Tensor":
        """This tensor in another dtype and/or on another backend.

        Same backend: a cast, which is differentiable (``self`` when the dtype is already
        ``dtype``). Another backend: a copy, a new leaf (it keeps ``requires_grad`` only when
        ``self`` is a leaf; gradients do not flow between backends).
        """
        be = get_backend(backend) if backend is not None else self.backend
        dt = as_dtype(dtype) if dtype is not None else self.dtype
        if be is self.backend and dt == self.dtype:
            return self
        if be is self.backend:
            return _ops.cast(self, dt)
        out = Tensor._make(be.array(self.numpy(), dt), be, self.requires_grad and self._history is None)
        return out

    def float(self) -> "Tensor":
        return self.to(dtype="float32")

    def double(self) -> "Tensor":
        return self.to(dtype="float64")

    # --- operators (defined in engine.ops / engine.functional) ----------------
    # + * / (and their reflected forms) are made below the class from one template, _arithmetic
    def __sub__(self, other): return _ops.sub(self, other)
    def __rsub__(self, other): return _ops.sub(other, self, like=self)
    def __neg__(self):
        return apply(_ops.Neg, (self,))
    def __pos__(self): return self
    def __pow__(self, exponent): return _ops.pow(self, exponent)
    def __rpow__(self, base): return _ops.rpow(base, self)
    def __matmul__(self, other): return _ops.matmul(self, other)
    def __rmatmul__(self, other): return _ops.matmul(as_tensor_like(other, self), self)
    def __lt__(self, other): return _ops.compare("lt", self, other)
    def __le__(self, other): return _ops.compare("le", self, other)
    def __gt__(self, other): return _ops.compare("gt", self, other)
    def __ge__(self, other): return _ops.compare("ge", self, other)
    def __eq__(self, other): return _ops.compare("eq", self, other)  # type: ignore[override]
    def __ne__(self, other): return _ops.compare("ne", self, other)  # type: ignore[override]
    def __getitem__(self, key): return _ops.getitem(self, key)

    # exp, log, sin, cos, tan, neg, reciprocal, relu, sigmoid: each elementwise primitive's declaration adds its
    # method (engine.ops.Unary)
    def add(self, other): return self + other
    def sub(self, other): return self - other
    def mul(self, other): return self * other
    def div(self, other): return self / other
    def pow(self, exponent): return _ops.pow(self, exponent)
    def matmul(self, other): return _ops.matmul(self, other)
    def where(self, condition, other): return _ops.where(condition, self, other)   # PyTorch's x.where(c, y)
    def clamp(self, min=None, max=None): return _F.clamp(self, min, max)  # noqa: A002  (PyTorch's names)
    def sqrt(self): return _ops.pow(self, 0.5)
    def abs(self): return _F.abs(self)
    def tanh(self): return _F.tanh(self)
    def sum(self, dim=None, keepdim=False): return _ops.sum(self, dim, keepdim)
    def mean(self, dim=None, keepdim=False): return _F.mean(self, dim, keepdim)
    def max(self, dim=None, keepdim=False): return _F.max(self, dim, keepdim)
    def amax(self, dim=None, keepdim=False): return _F.amax(self, dim, keepdim)
    def argmax(self, dim=None): return _ops.argmax(self, dim)
    def softmax(self, dim=-1): return _F.softmax(self, dim)
    def log_softmax(self, dim=-1): return _F.log_softmax(self, dim)
    def logsumexp(self, dim=None, keepdim=False): return _F.logsumexp(self, dim, keepdim)
    def permute(self, *order): return _ops.permute(self, _dims_arg(order))
    def transpose(self, d0=-2, d1=-1): return _ops.transpose(self, d0, d1)

    @property
    def T(self):
        return _ops.permute(self, tuple(reversed(range(self.ndim))))

    def view(self, *shape): return _ops.view(self, _dims_arg(shape))
    def reshape(self, *shape): return _ops.reshape(self, _dims_arg(shape))
    def expand(self, *shape): return _ops.expand(self, _dims_arg(shape))
    def contiguous(self): return _ops.contiguous(self)
    def unsqueeze(self, dim): return _ops.unsqueeze(self, dim)
    def squeeze(self, dim=None): return _ops.squeeze(self, dim)
    def flatten(self): return _ops.reshape(self, (-1,))


_make = Tensor._make


def _dims_arg(args) -> tuple[int, ...]:
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        return tuple(args[0])
    return tuple(args)


def _infer_dtype(data) -> DType:
    """PyTorch's rule: integer data (Python ints, NumPy integer arrays) gives int64; bool data (``True``,
    lists of bools, NumPy bool arrays) gives bool; float32 arrays stay float32; any other number is
    float64 (a teaching tool compares with central differences)."""
    if isinstance(data, float):
        return float64
    if isinstance(data, bool):
        return bool_
    if isinstance(data, int):
        return int64
    arr = data if isinstance(data, (np.ndarray, np.generic)) else np.asarray(data)
    kind = arr.dtype.kind
    if kind == "f":
        return float32 if arr.dtype == np.float32 else float64
    if kind in "iu":
        return int64
    if kind == "b":
        return bool_
    raise TypeError(f"cannot make a tensor from data of NumPy dtype {arr.dtype}")


def tensor(data, requires_grad: bool = False, dtype=None, backend: "str | Backend" = "numpy",
           name: str | None = None) -> Tensor:
    """Create a leaf tensor.

    Args:
        data: a number, (nested) list, NumPy array or Tensor.
        requires_grad: whether gradients should be accumulated into ``.grad``.
        dtype: ``engine.float64`` / ``engine.float32`` / ``engine.int64`` or their names; by default
            PyTorch's rule, but float64 for Python floats (see :func:`_infer_dtype`).
        backend: ``"numpy"`` (default), ``"python"`` or ``"cuda"``.
        name: an optional label (the explorer shows it).

    Raises:
        TypeError: ``requires_grad`` on integer or bool data (only floating-point tensors take gradients).
    """
    return Tensor(data, requires_grad=requires_grad, dtype=dtype, backend=backend, name=name)


def _graph_tensors(output: Tensor) -> Iterator[Tensor]:
    """Each tensor of the graph of ``output`` once, leaves included (depth first, from the output)."""
    seen: set[int] = set()
    stack = [output]
    while stack:
        t = stack.pop()
        if t.unique_id not in seen:
            seen.add(t.unique_id)
            yield t
            if t.op is not None:
                stack.extend(t.inputs)


def saved_for_backward(output: Tensor) -> list[tuple[Tensor, Tensor]]:
    """Every (op node, tensor it saves) pair in the graph of ``output``: what the ops' VJPs will read,
    as the graph really holds it (a tensor two ops save appears twice; parameters included)."""
    return [(t, s) for t in _graph_tensors(output) if t.op is not None for s in t.saved]


def kept_for_backward(output: Tensor) -> list[Tensor]:
    """The tensors the graph of ``output`` keeps alive for the backward pass, each once: every op's
    ``saved``, except leaves that require grad (parameters exist anyway). Empty for a tensor
    computed under ``no_grad``."""
    kept: dict[int, Tensor] = {}
    for _, s in saved_for_backward(output):
        if not (s.op is None and s.requires_grad):
            kept.setdefault(s.unique_id, s)
    return list(kept.values())


def kept_bytes(output: Tensor, exclude=()) -> int:
    """Bytes of the distinct buffers behind :func:`kept_for_backward` (views of one buffer count once),
    leaving out buffers shared with the graph's parameters (leaves requiring grad) or with ``exclude``."""
    tensors = kept_for_backward(output)
    if not tensors:
        return 0
    skip = {t.backend.buffer(t._data)[0] for t in _graph_tensors(output) if t.op is None and t.requires_grad}
    skip.update(t.backend.buffer(t._data)[0] for t in exclude)
    total = 0
    for t in tensors:
        key, nbytes = t.backend.buffer(t._data)
        if key not in skip:
            skip.add(key)
            total += nbytes
    return total


class _Unsaved(Tensor):
    """A graph edge to a tensor whose value no backward rule reads (the consuming op's ``saves``
    leaves it out, and its own op does not read its output): it carries that tensor's history, id,
    shape and dtype, and reaches the value only while the tensor is alive elsewhere. So the graph
    keeps no buffer for it (PyTorch's keeps none either): ``z = h @ W + b`` is freed once the caller
    drops it, though ``relu(z)``'s backward walk still goes through z's node."""

    __slots__ = ("_ref", "_shape", "_dtype", "_own_released")

    @property
    def _released(self) -> int:   # one flag per node: the tensor's own while it is alive (see chain_rule)
        t = self._ref()
        return t._released if t is not None else self._own_released

    @_released.setter
    def _released(self, value: int) -> None:
        t = self._ref()
        if t is not None:
            t._released = value
        self._own_released = value

    @property
    def _data(self):
        t = self._ref()
        if t is None:
            what = f"{self.op.name} result" if self.op is not None else "constant"
            raise RuntimeError(f"this {what} was not saved for backward (no backward rule reads it, or a "
                               "backward() without retain_graph=True released it) and is no longer alive; "
                               "keep a reference to read its value")
        return t._data

    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    @property
    def dtype(self) -> DType:
        return self._dtype


def value_kept(t: Tensor) -> bool:
    """Whether ``t``'s value can still be read: False only for a graph edge (reached by walking a graph's
    inputs) to a result no backward rule reads once nothing else holds it (see :class:`_Unsaved`)."""
    return type(t) is not _Unsaved or t._ref() is not None


def _unsaved(t: Tensor) -> Tensor:
    """``t`` as the graph holds an input no rule reads: itself when its value must stay (a leaf, a
    result whose own VJP reads it, already an edge) or is too small to be worth an edge
    (``FREE_MIN_BYTES``), else an :class:`_Unsaved` edge."""
    if t.op is None or t.op.needs_output or type(t) is not Tensor or not _worth_freeing(t):
        return t
    return _edge(t)


def _edge(t: Tensor) -> _Unsaved:
    """An edge to ``t`` that keeps no value (see :class:`_Unsaved`): its history, id, shape and dtype."""
    e = _new(_Unsaved)
    e._ref, e._shape, e._dtype = weakref.ref(t), t.shape, t.dtype
    e.backend, e.requires_grad, e.grad, e.tangent, e.name = t.backend, t.requires_grad, None, None, t.name
    e.unique_id, e.op = t.unique_id, t.op
    if t.op is None:  # a constant
        e._own_released = 0
    else:
        e.params, e._a, e._b, e._n, e._own_released = t.params, t._a, t._b, t._n, t._released
    return e


#: a buffer smaller than this is not worth freeing early (in the forward pass or during backward): the edge
#: that would let go of it costs ~1 µs and ~200 bytes; it is freed with the graph instead
FREE_MIN_BYTES = 16384


def _worth_freeing(t: Tensor) -> bool:
    return getattr(t._data, "nbytes", FREE_MIN_BYTES) >= FREE_MIN_BYTES


def _holds_large_values(root: Tensor, limit: int = 32) -> bool:
    """Whether freeing during ``root``'s backward can pay: an op result of at least ``FREE_MIN_BYTES``
    among the first ``limit`` nodes of its graph (leaves are the caller's). A graph of small buffers
    (HW2's step at batch 10: every one under 3 kB) is freed with the graph instead."""
    stack, seen = [root], 0
    while stack and seen < limit:
        t = stack.pop()
        seen += 1
        kind = type(t)
        if (kind is not Tensor and kind is not _Unsaved) or t.op is None:
            continue
        # an edge that keeps no value has no bytes to free, but the same history (its slots)
        if kind is Tensor and getattr(t._data, "nbytes", 0) >= FREE_MIN_BYTES:
            return True
        stack.extend(_operands(t))
    return False


def _released_edge(t):
    """``t`` as a released node holds its input: an edge that keeps no value (see :class:`_Unsaved`),
    except for a parameter (a leaf that takes a gradient: it lives anyway), a number operand and a buffer
    under ``FREE_MIN_BYTES``."""
    if type(t) is not Tensor or (t.op is None and t.requires_grad) or not _worth_freeing(t):
        return t
    e = _edge(t)  # a node (a needs_output one too: its VJP has read it by now) or a constant
    if t.op is not None and t._released != _state.releasing:
        # t's own VJP is still to run: the edge copied t's slots, and must let go of them when t does
        _state.copies.setdefault(t.unique_id, []).append(e)
    return e


def _handles(node: Tensor) -> tuple[Tensor, ...]:
    """``node``'s parents as the sort of a freeing ``backward()`` holds them: a node whose own VJP does
    not read its value as an edge that keeps none (see :class:`_Unsaved`), so the pass's order does not
    keep that value alive until the node's turn (PyTorch's graph holds no outputs either: a Linear's
    input is freed when the Linear's backward has run, before the backward of the op that made it)."""
    _state.freeing = False
    try:
        parents = node.parents
    finally:
        _state.freeing = True
    return tuple(_edge(p) if type(p) is Tensor and p.op is not None and not p.op.needs_output
                 and _worth_freeing(p) else p for p in parents)


def _drop_saved(node: Tensor) -> None:
    """Free what ``node`` saved for backward, right after its VJP ran in a releasing pass: every input
    slot becomes an edge that keeps no value: in the node, in its edge's target when that is alive, and in
    the edges its consumers made to it when they were released (they copied its slots)."""
    edges = [_released_edge(t) for t in _operands(node)]
    # one node, several objects holding its slots: each gets the same edges (new copies of copies would
    # multiply along a chain)
    released = node._released
    for c in (node, node._ref() if type(node) is _Unsaved else None, *_state.copies.pop(node.unique_id, ())):
        if c is not None:
            _set_operands(c, edges)
            c._released = released


def _release_unsaved(out: Tensor, keep: tuple[int, ...]) -> None:
    """Replace, in ``out``'s input slots, each input its op's VJP does not read by an edge that keeps
    no value (see :class:`_Unsaved`)."""
    n = out._n
    if n == 1:
        if 0 not in keep:
            out._a = _unsaved(out._a)
    elif n == 2:
        if 0 not in keep:
            out._a = _unsaved(out._a)
        if 1 not in keep:
            out._b = _unsaved(out._b)
    else:
        out._a = tuple([t if i in keep else _unsaved(t) for i, t in enumerate(out._a)])


def as_tensor_like(x, like: Tensor) -> Tensor:
    """``x`` as a constant on ``like``'s backend; Python numbers take ``like``'s dtype."""
    if isinstance(x, Tensor):
        return x
    be = like.backend
    if type(x) is float and type(like._data) is _F64:  # the scalar fast path: a float64 constant
        return _make(_F64(x), be)
    if isinstance(x, (int, float, bool)):
        # a Python number joins the tensor's dtype, as in PyTorch: float data stays float, a bool joins
        # anything, an int joins an int tensor and makes a bool one int64, a float makes any other float64
        ld = like.dtype
        if ld.is_floating or type(x) is bool:
            dt = ld
        elif type(x) is int:
            dt = int64 if ld is bool_ else ld
        else:
            dt = float64
        return Tensor._make(be.array(x, dt), be)
    if isinstance(x, np.ndarray) and x.dtype.kind in "iu":
        return Tensor._make(be.array(x, int64), be)
    # float data (lists, arrays) joins the tensor's own float dtype, as a Python number does
    dt = like.dtype if like.dtype.is_floating else _infer_dtype(np.asarray(x))
    return Tensor._make(be.array(x, dt), be)


def apply(op: type[Op], inputs: tuple, params: Any = None, backend: Backend | None = None) -> Tensor:
    """Run one primitive: forward on the backend, history when needed, tangents, hooks.

    The output is made first and is the op's context (``ctx``): forward reads the backend and the
    parameters from it, and when a gradient is needed it keeps the op, its inputs and parameters
    as the tensor's history (otherwise they are dropped once forward and any JVP have run).

    The scalar fast path: an op with a ``scalar`` kernel whose one or two inputs are 0-d float64
    tensors on the NumPy backend (their data is a NumPy float64 scalar) runs that kernel on the
    values directly: no backend dispatch, no array boxing, the same bits (NumPy's own scalar
    arithmetic). Everything else about the op is unchanged: the same history, the same VJP and
    JVP, so such a program is an ordinary graph. Tracing hooks and forward mode take the full path.
    """
    kernel = op.scalar
    if kernel is not None:
        st = _state
        a = inputs[0]
        if type(a._data) is _F64 and not st.hooks and not st.forward_mode:
            if len(inputs) == 1:
                return _scalar_node(op, a.backend, kernel(a._data), a, None, 1, a.requires_grad, params)
            b = inputs[1]
            if type(b._data) is _F64:
                return _scalar_node(op, a.backend, kernel(a._data, b._data), a, b, 2, a.requires_grad or b.requires_grad,
                                    params)
    be = backend if backend is not None else inputs[0].backend
    requires_grad = False
    for t in inputs:
        if t.backend is not be:
            raise RuntimeError(f"op '{op.name}' got tensors on different backends "
                               f"({be.name} and {t.backend.name}); move them with .to(backend)")
        if t.requires_grad:
            requires_grad = True
    if be.deferred:  # a static graph's symbolic backend records the op instead of running it
        return be.record(op, inputs, params)
    st = _state
    out = ctx = _make(None, be)   # the op's context while forward runs: it reads the backend and params
    out.op, out.params = op, params
    out._released = 0
    n = out._n = len(inputs)
    if n == 1:
        out._a, out._b = inputs[0], None
        data = op.forward(ctx, inputs[0]._data)
    elif n == 2:
        out._a, out._b = inputs
        data = op.forward(ctx, inputs[0]._data, inputs[1]._data)
    else:
        out._a, out._b = tuple(inputs), None
        data = op.forward(ctx, *[t._data for t in inputs])
    out._data = data
    requires_grad = requires_grad and op.differentiable and st.grad_enabled
    out.requires_grad = requires_grad
    forward_mode = st.forward_mode
    if forward_mode and op.differentiable:
        tangents = [t.tangent for t in inputs]
        if any(t is not None for t in tangents):
            st.forward_mode -= 1  # the JVP rule itself must not propagate tangents
            try:
                out.tangent = op.jvp(ctx, *tangents)
            finally:
                st.forward_mode += 1
    if not requires_grad:  # no gradient to record: keep no inputs alive
        out.op = out.params = out._a = out._b = None
        out._n = 0
    elif op.saves is not None and n:  # keep only what the VJP reads (Op.saves)
        _release_unsaved(out, op.saves)
    hooks = st.hooks
    if hooks:
        for hook in list(hooks):
            hook(op, inputs, params, out)
    return out


def _scalar_node(op, be: Backend, data, a, b, n: int, rg: bool, params=None) -> Tensor:
    """The scalar fast path's output: a 0-d tensor holding ``data`` (a NumPy float64 scalar), which
    records ``op`` on operands ``a`` / ``b`` when one of them takes a gradient."""
    t = _make(data, be)
    if rg and _state.grad_enabled:
        t.op, t.params, t._a, t._b, t._n = op, params, a, b, n
        t._released = 0
        t.requires_grad = True
    return t


def _with_number(op: type[Op], t: Tensor, c: float, reflected: bool) -> Tensor:
    """``op(t, c)`` (``op(c, t)`` when ``reflected``) for a Python float ``c``: on the scalar fast
    path the number stays a number in the history (no constant tensor is made until something asks
    for the op's ``inputs``); anywhere else it becomes a constant tensor first, as always."""
    st = _state
    if type(t._data) is not _F64 or st.hooks or st.forward_mode:
        k = as_tensor_like(c, t)
        return apply(op, (k, t) if reflected else (t, k))
    # NumPy's scalar arithmetic reads the float as a float64: the bits a constant tensor would give
    if reflected:
        return _scalar_node(op, t.backend, op.scalar(c, t._data), c, t, 2, t.requires_grad)
    return _scalar_node(op, t.backend, op.scalar(t._data, c), t, c, 2, t.requires_grad)


from . import functional as _F  # noqa: E402  (methods above resolve these at call time)
from . import ops as _ops  # noqa: E402


def _arithmetic(op: type[Op], reflected: bool) -> Callable:
    """``Tensor.__add__`` and its kin: straight to ``apply`` (a scalar program spends most of its time here),
    a Python float kept as a number on the scalar path (:func:`_with_number`)."""
    if reflected:
        def method(self, other):
            if type(other) is float:
                return _with_number(op, self, other, True)
            return apply(op, (as_tensor_like(other, self), self))
    else:
        def method(self, other):
            if type(other) is float:
                return _with_number(op, self, other, False)
            return apply(op, (self, other if isinstance(other, Tensor) else as_tensor_like(other, self)))
    return method


for _name, _op in (("add", _ops.Add), ("mul", _ops.Mul), ("truediv", _ops.Div)):
    setattr(Tensor, f"__{_name}__", _arithmetic(_op, False))
    setattr(Tensor, f"__r{_name}__", _arithmetic(_op, True))

