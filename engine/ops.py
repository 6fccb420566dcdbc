"""Primitive ops: one class per op with its forward, VJP and JVP together.

Forwards call the backend on raw arrays. Each VJP is one rule written with the operations of
:class:`ArrayOps`, which two interpreters run (engine ops on Tensors, the backend's kernels on arrays);
JVPs are written with engine ops. Broadcasting is undone in exactly one helper, :func:`sum_to_shape`.
Composites (tanh, softmax, cross-entropy, ...) live in ``engine.functional`` and need no rules of their
own. Sigmoid, binary cross-entropy, dropout, the mean and Linear are fused primitives (one node each, as
PyTorch records them): fewer dispatches per step.
"""
from __future__ import annotations

import builtins
import functools
import math
import numbers
import operator
import sys
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from .backends.base import declare_kernel
from .dtypes import as_dtype, bool_, float64
from .tensor import Op, Tensor, apply, as_tensor_like
from .tensor_data import check_size

# ---------------------------------------------------------------------------
# helpers


def _norm_dim(d: int, ndim: int) -> int:
    n = builtins.max(ndim, 1)
    if not -n <= d < n:
        raise IndexError(f"dimension {d} out of range for a tensor of {ndim} dims")
    return d % ndim if ndim else 0


def _norm_dims(dim, ndim: int) -> tuple[int, ...]:
    if dim is None:
        return tuple(range(ndim))
    if type(dim) is int and 0 <= dim < ndim:  # the common cases, without the checks below
        return (dim,)
    if type(dim) is tuple and len(dim) == 1 and type(dim[0]) is int and 0 <= dim[0] < ndim:
        return dim
    if isinstance(dim, numbers.Integral):  # NumPy integers too
        dim = (dim,)
    dims = tuple(sorted({int(_norm_dim(d, ndim)) for d in dim}))
    return dims if ndim else ()  # a 0-d tensor accepts dim 0 / -1 (as PyTorch) but has no axis to reduce


def sum_to_shape(g, shape: tuple[int, ...], backend=None):
    """Undo broadcasting: sum ``g`` over the dims that were broadcast to reach its shape.

    This is the only place in the engine where broadcasting is undone. ``g`` is a Tensor, or with
    ``backend`` given one of its raw arrays (the raw interpreter's ``sum_to_shape``: the same reduction the
    engine ops make, so the same bits; when only leading dims are summed, as for a bias, without the
    keepdim and the reshape that undoes it: one backend call instead of two).
    """
    gshape = g.shape  # a Tensor's, or a raw array's own (every backend's array carries its shape)
    if gshape == shape:
        return g
    lead = len(gshape) - len(shape)
    dims = tuple(range(lead)) + tuple(i + lead for i, s in enumerate(shape) if s == 1 and gshape[i + lead] != 1)
    if backend is not None:
        if dims and len(dims) == lead:
            return backend.reduce("sum", g, dims, False)
        out = backend.reduce("sum", g, dims, True) if dims else g
        return backend.reshape(out, shape) if out.shape != shape else out
    out = sum(g, dims, keepdim=True) if dims else g
    return reshape(out, shape) if out.shape != shape else out


def _takes_grad(x) -> bool:
    """Whether a VJP should compute a contribution for operand ``x`` (a Python number takes none)."""
    return type(x) is not float and x.requires_grad


def _pair(a, b, like: Tensor | None = None):
    if like is None:
        like = a if isinstance(a, Tensor) else b
    return as_tensor_like(a, like), as_tensor_like(b, like)


# ---------------------------------------------------------------------------
# the array operations derivative rules are written with, and their two interpreters


class ArrayOps:
    """The small set of array operations every ``vjp`` below is written with, as one interpreter runs them.

    An op's VJP is one rule, ``vjp(ctx, g, k)``: ``ctx`` is the node (its operands say the shapes and who
    takes a gradient), ``g`` the adjoint arriving at its output, ``k`` one of two interpreters of the same
    operations:

    * :data:`RECORDED` (the default): engine ops on Tensors. Each is an op like any other: recorded when
      grad mode is on (``create_graph``: higher-order derivatives), seen by ``trace_ops`` hooks (the
      explorer's trace, graph capture), recorded symbolically by a static graph.
    * ``ArrayOps.raw(backend)`` (made once per backend, kept on it): the backend's kernels on its raw arrays,
      for a backward pass that records nothing and that nobody watches (training, ``Tensor.chain_rule``):
      no Tensor and no dispatch per operation. Each raw operation makes the backend calls its engine op
      makes, in the same order, so a rule gives the same bits under both (tests/test_ops.py checks every
      row of the op table).

    The operations: ``value(x)`` (an operand's value: a Tensor, or its array), ``output(ctx)`` (the op's
    own result), ``add sub mul div neg exp log sin cos`` (elementwise; broadcasting), ``pow(x, c)`` and
    ``scale(x, c)`` (a Python number ``c``), ``const(c, like)`` and ``zeros_like(x)`` (of ``like``'s
    dtype), ``gt eq`` (bool masks), ``where(c, a, b)``, ``cast(x, dtype)``, ``sum(x, dims, keepdim)``,
    ``sum_to_shape(x, shape)`` (broadcasting undone), ``spread(g, shape, dims, keepdim)`` (a reduction's
    adjoint sent back to every reduced element), ``reshape permute swap_last matmul is_contiguous`` and
    ``apply(op, args, params)`` (another primitive: its forward, recorded or on the arrays).
    """

    @classmethod
    def raw(cls, be) -> "ArrayOps":
        """The raw interpreter on backend ``be``: its kernels on its arrays."""
        k = cls()
        binary, unary, array, dtype = be.binary, be.unary, be.array, be.dtype

        def value(x):   # a number operand (the scalar path keeps it) becomes the constant vjp would make
            return x._data if type(x) is not float else array(x, float64)

        def reshape(x, shape):
            return be.reshape(x, shape) if shape != x.shape else x

        def cast(x, dt):
            return be.astype(x, dt) if dtype(x) != dt else x

        def raw_apply(op, args, params=None):
            return op.forward(_RawCtx(be, params), *args)

        for name in ("add", "sub", "mul", "div", "gt", "eq"):
            setattr(k, name, functools.partial(binary, name))
        for name in ("neg", "exp", "log", "sin", "cos"):
            setattr(k, name, functools.partial(unary, name))
        k.value, k.output, k.reshape, k.cast, k.apply = value, operator.attrgetter("_data"), reshape, cast, raw_apply
        k.pow = lambda x, c: binary("pow", x, array(float(c), dtype(x)))
        k.scale = lambda x, c: binary("mul", x, array(c, dtype(x)))
        k.const = lambda c, like: be.kernels(dtype(like)).const(c)
        k.zeros_like = lambda x: be.full(x.shape, 0.0, dtype(x))
        k.where, k.matmul, k.is_contiguous, k.permute = be.where, be.matmul, be.is_contiguous, be.permute
        k.sum = functools.partial(be.reduce, "sum")
        k.sum_to_shape = functools.partial(sum_to_shape, backend=be)
        k.spread = functools.partial(_spread_arrays, be)
        k.swap_last = lambda x: be.permute(x, _swap_order(len(x.shape)))
        return k


def _scalar_interpreter() -> ArrayOps:
    """The raw interpreter on the scalar fast path's values (a NumPy float64 scalar: a 0-d tensor's data, of an op
    with a ``scalar`` kernel): Python's operators and NumPy's ufuncs on the numbers, the ops' scalar kernels, so
    the same bits as the recorded rule run on 0-d tensors, and no Tensor per operation."""
    k = ArrayOps()
    k.__dict__.update(
        value=lambda x: x if type(x) is float else x._data, output=operator.attrgetter("_data"),
        add=operator.add, sub=operator.sub, mul=operator.mul, div=operator.truediv, neg=operator.neg,
        exp=np.exp, log=np.log, sin=np.sin, cos=np.cos, const=lambda c, like: np.float64(c),
        sum_to_shape=lambda x, shape: x)   # every operand is 0-d: nothing was broadcast
    return k


class _RawCtx:
    """What an op's forward reads from its context (the backend, the parameters), for ``ArrayOps.apply``
    under the raw interpreter."""
    __slots__ = ("backend", "params")

    def __init__(self, backend, params):
        self.backend, self.params = backend, params


#: the recorded interpreter (engine ops on Tensors); its operations are the public functions defined below
RECORDED = ArrayOps()
#: the recorded interpreter reading the op's output as a constant: an elementwise VJP rule run as a JVP
TANGENT = ArrayOps()
#: the raw interpreter on the scalar fast path's numbers
SCALAR = _scalar_interpreter()


# ---------------------------------------------------------------------------
# declarations
#
# One primitive = one class below: its name, how backends find its forward kernel, its VJP and JVP,
# what it saves for backward (``saves``: input positions; ``needs_output``), its formula and picture
# label, and whether typed programs may call it (``typed``). What other parts of the engine and the
# app need is read from these classes: the backends' kernel names (``Unary`` / ``Binary`` /
# ``declare_kernel``), the parser's allowed functions and the program help (``typed_functions``),
# picture labels (``label_of``). Adding an elementwise op: a class here, its kernel in each backend
# (numpy and python tables, an ``Op<Name>`` functor in engine/kernels/elementwise.cu), a test row.


class Unary(Op):
    """An elementwise primitive of one input whose forward is the backend kernel named after it
    (``Backend.unary(name, a)``). Declaring the op declares the kernel, which each backend finds by
    that name in its own table, its public function in the declaring module (``engine.ops.sin``,
    exported as ``engine.sin``) and, with ``tensor_method``, the Tensor method (``x.sin()``) unless
    Tensor has one already. ``keeps_int``: an integer input keeps its dtype (else float64).

    Its JVP follows from its VJP rule: an elementwise op's Jacobian is diagonal, so the tangent ṫ maps
    to the same ``ṫ ⊙ f'(x)`` as an adjoint does (the rule run on ṫ, the output read as a constant)."""

    keeps_int = False
    tensor_method = True
    #: the backend kernel the forward runs: the first class of the chain to name itself declares it;
    #: a subclass that only renames itself (a test's spy) keeps its parent's kernel, declaring none
    kernel_name: str | None = None
    function: Callable   # the public function, ``function(a)``

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "name" in cls.__dict__ and cls.kernel_name is None:
            cls.kernel_name = cls.name
            declare_kernel("unary", cls.name, keeps_int=cls.keeps_int)
            cls.function = _elementwise_function(cls)
            vars(sys.modules[cls.__module__]).setdefault(cls.name, cls.function)
            if cls.tensor_method and not hasattr(Tensor, cls.name):
                setattr(Tensor, cls.name, cls.function)   # x.exp() is engine.exp(x)
            if cls.typed:
                _declare_typed(TypedFunction(cls.name, cls.function, 1, False))

    @classmethod
    def forward(cls, ctx, a):
        return ctx.backend.unary(cls.kernel_name, a)

    @classmethod
    def kernel(cls, ctx, dtypes=()):
        return cls._backend_kernel(ctx, dtypes, "unary", cls.kernel_name)

    @classmethod
    def jvp(cls, ctx, ta):
        return cls.vjp(ctx, ta, TANGENT)[0]


def _elementwise_function(op: type[Op]) -> Callable:
    def function(a: Tensor) -> Tensor:
        return apply(op, (a,))
    function.__name__ = function.__qualname__ = op.name
    function.__module__ = op.__module__
    function.__doc__ = f"{op.name}(a), elementwise (primitive {op.__name__}; VJP: {op.formula})"
    return function


class Binary(Op):
    """An elementwise, broadcasting primitive of two inputs whose forward is the backend kernel
    named after it (``Backend.binary(name, a, b)``)."""

    kernel_name: str | None = None  # as Unary's

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "name" in cls.__dict__ and cls.kernel_name is None:
            cls.kernel_name = cls.name
            declare_kernel("binary", cls.name)

    @classmethod
    def forward(cls, ctx, a, b):
        return ctx.backend.binary(cls.kernel_name, a, b)

    @classmethod
    def kernel(cls, ctx, dtypes=()):
        return cls._backend_kernel(ctx, dtypes, "binary", cls.kernel_name)


@dataclass(frozen=True)
class TypedFunction:
    """A function typed programs may call by ``name``: ``fn(*tensors)`` or ``fn(*tensors, dim)``."""
    name: str
    fn: Callable
    tensors: int        # how many tensor arguments
    takes_dim: bool     # an optional integer ``dim`` may follow them


_TYPED: dict[str, TypedFunction] = {}


def _declare_typed(t: TypedFunction) -> None:
    if _TYPED.setdefault(t.name, t) is not t:
        raise ValueError(f"typed function {t.name!r} declared twice")


def typed(tensors: int = 1, takes_dim: bool = False) -> Callable[[Callable], Callable]:
    """Decorator: typed programs may call this function (a composite, or a primitive's function that
    takes a ``dim``) by its name. Unary primitives declare it with ``typed = True`` instead."""
    def mark(fn: Callable) -> Callable:
        _declare_typed(TypedFunction(fn.__name__, fn, tensors, takes_dim))
        return fn
    return mark


def typed_functions() -> dict[str, TypedFunction]:
    """Every function typed programs may call, by name, in declaration order (primitives, then the
    composites of ``engine.functional``)."""
    from . import functional  # noqa: F401  (its composites declare themselves when imported)
    return dict(_TYPED)


def label_of(op_name: str) -> str:
    """The picture label template of primitive ``op_name`` (``"{0} + {1}"``), "" when it has none
    (pictures then write ``name(args)``) or no primitive has that name."""
    from .tensor import _OPS_BY_NAME
    op = _OPS_BY_NAME.get(op_name)
    return op.label if op is not None else ""


class _LinearInFirst:
    """The JVP of an op linear in its first input (any others are constants: indices, a mask): its Jacobian
    is the op itself, so the tangent ẋ maps to the same op on ẋ, with the same parameters and constants."""

    @classmethod
    def jvp(cls, ctx, t, *constants):
        return None if t is None else apply(cls, (t, *ctx.inputs[1:]), ctx.params)


# ---------------------------------------------------------------------------
# elementwise binary (broadcasting)


class Add(Binary):
    name = "add"
    saves = ()
    label = "{0} + {1}"
    formula = "ā = sum_to_shape(ȳ, a.shape),  b̄ = sum_to_shape(ȳ, b.shape)   (broadcast dims summed)"
    scalar = operator.add

    @classmethod
    def vjp(cls, ctx, g, k=RECORDED):
        a, b = ctx.operands  # either may be a Python number (no gradient)
        ga = k.sum_to_shape(g, a.shape) if _takes_grad(a) else None
        gb = k.sum_to_shape(g, b.shape) if _takes_grad(b) else None
        return ga, gb

    @classmethod
    def jvp(cls, ctx, ta, tb):
        if ta is None:
            return tb
        return ta if tb is None else ta + tb


def _bilinear_jvp(f, a, b, ta, tb):
    """The product rule for an op bilinear in its inputs (mul, matmul, matmul_t): f(ta, b) + f(a, tb),
    a term only for an input that carries a tangent."""
    parts = [f(ta, b)] if ta is not None else []
    if tb is not None:
        parts.append(f(a, tb))
    return parts[0] if len(parts) == 1 else parts[0] + parts[1]


def _product_multiply_adds(cls, in_shapes, out_shape) -> int:
    """A matrix product's multiply-adds: k (the first operand's last dim) per output number."""
    return math.prod(out_shape) * (in_shapes[0][-1] if in_shapes[0] else 1)


class Mul(Binary):
    name = "mul"
    saves = (0, 1)
    label = "{0}·{1}"
    formula = "ā = sum_to_shape(ȳ ⊙ b),  b̄ = sum_to_shape(ȳ ⊙ a)"
    scalar = operator.mul

    @classmethod
    def vjp(cls, ctx, g, k=RECORDED):
        a, b = ctx.operands  # either may be a Python number (no gradient)
        ga = k.sum_to_shape(k.mul(g, k.value(b)), a.shape) if _takes_grad(a) else None
        gb = k.sum_to_shape(k.mul(g, k.value(a)), b.shape) if _takes_grad(b) else None
        return ga, gb

    @classmethod
    def jvp(cls, ctx, ta, tb):
        return _bilinear_jvp(lambda x, y: x * y, *ctx.inputs, ta, tb)


class Div(Binary):
    name = "div"
    saves = (1,)
    label = "{0} / {1}"
    formula = "ā = ȳ / b,  b̄ = −ȳ ⊙ y / b   (y = a / b kept; each summed back to its shape)"
    scalar = operator.truediv
    needs_output = True

    @classmethod
    def vjp(cls, ctx, g, k=RECORDED):
        a, b = ctx.operands  # either may be a Python number (no gradient)
        ga = k.sum_to_shape(k.div(g, k.value(b)), a.shape) if _takes_grad(a) else None
        if not _takes_grad(b):
            return ga, None
        gb = k.div(k.neg(k.mul(g, k.output(ctx))), k.value(b))  # a/b² = y/b
        return ga, k.sum_to_shape(gb, b.shape)

    @classmethod
    def jvp(cls, ctx, ta, tb):
        b = ctx.inputs[1]
        out = ctx.output.detach()
        if tb is None:
            return ta / b
        num = neg(out * tb) if ta is None else add(ta, neg(out * tb))
        return num / b


class Pow(Op):
    """``a ** c`` for a constant exponent ``c`` (a Python number)."""

    name = "pow"
    saves = (0,)
    label = "{0}^{1}"
    formula = "x̄ = ȳ ⊙ c·x^(c−1)"

    @staticmethod
    def forward(ctx, a):
        be = ctx.backend
        return be.binary("pow", a, be.array(ctx.params, be.dtype(a)))

    @classmethod
    def vjp(cls, ctx, g, k=RECORDED):
        c = ctx.params
        if c == 0:
            return (k.scale(g, 0.0),)
        return (k.mul(g, k.scale(k.pow(k.value(ctx.operands[0]), c - 1), c)),)

    @classmethod
    def jvp(cls, ctx, ta):
        (a,) = ctx.inputs
        c = ctx.params
        return ta * (c * pow(a, c - 1)) if c != 0 else ta * 0.0


declare_kernel("binary", "pow")  # Pow's forward: the exponent is a parameter, made an array of a's dtype


# ---------------------------------------------------------------------------
# elementwise unary


class Neg(Unary):
    name = "neg"
    saves = ()
    label = "−{0}"
    keeps_int = True
    formula = "x̄ = −ȳ"
    scalar = operator.neg

    @classmethod
    def vjp(cls, ctx, g, k=RECORDED):
        return (k.neg(g),)


class Reciprocal(Unary):
    name = "reciprocal"
    saves = ()
    label = "1 / {0}"
    formula = "x̄ = −ȳ ⊙ y²   (y = 1/x)"
    needs_output = True

    @classmethod
    def vjp(cls, ctx, g, k=RECORDED):
        y = k.output(ctx)
        return (k.mul(k.neg(g), k.mul(y, y)),)


class Exp(Unary):
    name = "exp"
    saves = ()
    typed = True
    formula = "x̄ = ȳ ⊙ y   (y = exp x, kept from the forward pass)"
    scalar = np.exp
    needs_output = True

    @classmethod
    def vjp(cls, ctx, g, k=RECORDED):
        return (k.mul(g, k.output(ctx)),)


class Log(Unary):
    name = "log"
    saves = (0,)
    typed = True
    formula = "x̄ = ȳ / x"
    scalar = np.log

    @classmethod
    def vjp(cls, ctx, g, k=RECORDED):
        return (k.div(g, k.value(ctx.operands[0])),)


class Sin(Unary):
    name = "sin"
    saves = (0,)
    typed = True
    formula = "x̄ = ȳ ⊙ cos x"
    scalar = np.sin

    @classmethod
    def vjp(cls, ctx, g, k=RECORDED):
        return (k.mul(g, k.cos(k.value(ctx.operands[0]))),)


class Cos(Unary):
    name = "cos"
    saves = (0,)
    typed = True
    formula = "x̄ = −ȳ ⊙ sin x"
    scalar = np.cos

    @classmethod
    def vjp(cls, ctx, g, k=RECORDED):
        return (k.mul(k.neg(g), k.sin(k.value(ctx.operands[0]))),)


class Tan(Unary):
    name = "tan"
    saves = ()
    typed = True
    formula = "x̄ = ȳ ⊙ (1 + y²)   (y = tan x, kept from the forward pass)"
    scalar = np.tan
    needs_output = True

    @classmethod
    def vjp(cls, ctx, g, k=RECORDED):
        y = k.output(ctx)
        return (k.mul(g, k.add(k.const(1.0, y), k.mul(y, y))),)


class Relu(Unary):
    name = "relu"
    saves = ()
    typed = True
    keeps_int = True
    formula = "x̄ = ȳ ⊙ 1[y > 0]   (the mask from the kept output y = relu x: y > 0 exactly where x > 0)"
    needs_output = True

    # where(y > 0, ȳ, 0): a bool mask, not a float one (a smaller buffer at the backward pass's peak)
    @classmethod
    def vjp(cls, ctx, g, k=RECORDED):
        y = k.output(ctx)
        zero = k.const(0.0, y)   # one constant for the comparison and the zeros
        return (k.where(k.gt(y, zero), g, zero),)


class Sigmoid(Unary):
    """1 / (1 + exp(-a)) as one node (the same numbers as neg, exp, add and reciprocal, one dispatch)."""

    name = "sigmoid"
    saves = ()
    typed = True
    formula = "x̄ = ȳ ⊙ y(1 − y)   (y = σ(x), kept from the forward pass)"
    scalar = staticmethod(lambda a: 1.0 / (1.0 + np.exp(-a)))  # the backend's sigmoid, same bits
    needs_output = True

    @classmethod
    def vjp(cls, ctx, g, k=RECORDED):
        y = k.output(ctx)
        return (k.mul(g, k.mul(y, k.sub(k.const(1.0, y), y))),)


class Cast(Op):
    name = "cast"
    saves = ()
    formula = "x̄ = cast(ȳ, x.dtype)"

    @staticmethod
    def forward(ctx, a):
        return ctx.backend.astype(a, ctx.params)

    @classmethod
    def kernel(cls, ctx, dtypes=()):
        return cls._backend_kernel(ctx, dtypes, "astype", ctx.params)

    @classmethod
    def vjp(cls, ctx, g, k=RECORDED):
        return (k.cast(g, ctx.operands[0].dtype),)

    @classmethod
    def jvp(cls, ctx, ta):
        # an integer result is piecewise constant: no tangent (as it takes no gradient)
        return cast(ta, ctx.params) if ctx.params.is_floating else None


# ---------------------------------------------------------------------------
# no-gradient ops (masks, comparisons, randomness)


class Compare(Op):
    """Elementwise comparison; ``params`` names the kernel (``lt le gt ge eq ne``), the result is bool."""

    name = "compare"
    differentiable = False
    kinds = ("lt", "le", "gt", "ge", "eq", "ne")

    @staticmethod
    def forward(ctx, a, b):
        return ctx.backend.binary(ctx.params, a, b)


for _kind in Compare.kinds:
    declare_kernel("binary", _kind, comparison=True)


class Step(Unary):
    """1 where a > 0 else 0, in a's dtype (the ReLU mask)."""

    name = "step"
    keeps_int = True
    differentiable = False
    tensor_method = False   # an internal mask (PyTorch's Tensor has no step)


class Uniform(Op):
    """Uniform [0, 1) samples from the backend's generator (dropout masks)."""

    name = "uniform"
    random = True
    differentiable = False

    @staticmethod
    def forward(ctx):
        shape, dtype = ctx.params
        return ctx.backend.uniform(shape, dtype)


class Argmax(Op):
    name = "argmax"
    differentiable = False

    @staticmethod
    def forward(ctx, a):
        be = ctx.backend
        if be.deferred:  # a static graph's abstract evaluation: the max's shape, in int64
            axes = tuple(range(len(a.shape))) if ctx.params is None else (ctx.params,)
            return be.astype(be.reduce("max", a, axes, False), as_dtype("int64"))
        arr = np.asarray(be.to_numpy(a))
        res = np.argmax(arr) if ctx.params is None else np.argmax(arr, axis=ctx.params)
        return be.array(res, as_dtype("int64"))


# the fused ops' forwards, written once over a backend's KernelSet: methods in eager mode, raw
# kernels (NumPy's ufuncs, constants made once) in a replay; the same kernel calls either way
# (the helper kernels they call beyond the ops' own: sub, maximum; and Adam's sqrt, engine/optim.py)
declare_kernel("binary", "sub")
declare_kernel("binary", "maximum")
declare_kernel("unary", "sqrt")


def _bce(k, p, y):
    floor, one = k.const(-100.0), k.const(1.0)
    log_p = k.maximum(k.log(p), floor)
    log_1mp = k.maximum(k.log(k.sub(one, p)), floor)
    return k.neg(k.add(k.mul(y, log_p), k.mul(k.sub(one, y), log_1mp)))


def _bce_grad(k, p, y):
    denom = k.maximum(k.mul(p, k.sub(k.const(1.0), p)), k.const(1e-12))
    return k.div(k.sub(p, y), denom)


def _dropout_mask(k, shape, p):
    return k.ge(k.backend.uniform(shape, k.dtype), k.const(p))  # bool: which elements dropout keeps


def _dropout(k, x, keep, scale):
    # (x ⊙ keep) ⊙ scale: the bits of x ⊙ (keep ⊙ scale) (x · 1 is x, x · 0 is x · 0), from a bool mask
    out = k.mul(x, keep)
    if type(out) is np.ndarray:  # NumPy scales in place: no second batch-sized buffer
        return np.multiply(out, k.const(scale), out=out)
    return k.mul(out, k.const(scale))


def _fused_kernels(be, p, y):
    """The kernels an eager fused op runs on arrays ``p`` and ``y``: the backend's raw ones (the same bits,
    no dispatch per call) when the two share a dtype and ``p`` is not 0-d, else its methods (the engine's
    promotion rule; a 0-d result stays an array)."""
    dt = be.dtype(p)
    return be.kernels(dt, raw=len(p.shape) > 0 and be.dtype(y) == dt)


def _fused_kernel(body, ctx, dtypes):
    """A replay kernel running ``body`` on raw kernels when all operands share a dtype (else None)."""
    if len(set(dtypes)) != 1:
        return None  # mixed operands follow the engine's promotion rule: the backend's methods
    k = ctx.backend.kernels(dtypes[0], raw=True)
    return lambda p, y: body(k, p, y)


class BinaryCrossEntropy(Op):
    """-(y log p + (1 - y) log(1 - p)), logs clamped at -100 as in PyTorch: elementwise, or with its
    reduction (the mean or the sum over every element) in the same node, as PyTorch records
    ``F.binary_cross_entropy`` (one BinaryCrossEntropyBackward node).

    The reduction makes the backend calls ``mean`` / ``sum`` would make, so the same bits. The VJP is ℓ̄
    (spread back to every element, times 1/n for the mean) ⊙ BCEGrad(p, y), itself a primitive with a
    VJP, so higher-order derivatives still work.

    ``params``: None (elementwise) or ``(reduction, shape, scale)``: "mean" or "sum", the elementwise
    loss's shape and 1/n (the mean's; None for the sum).
    """

    name = "binary_cross_entropy"
    saves = (0, 1)
    formula = "p̄ = ℓ̄ ⊙ (p − y) / max(p(1 − p), 1e-12)   (ℓ = BCE, ℓ̄ / n to each element for the mean; bce_grad op)"

    @staticmethod
    def forward(ctx, p, y):
        be = ctx.backend
        return _bce_reduce(be, _bce(_fused_kernels(be, p, y), p, y), ctx.params)

    @classmethod
    def kernel(cls, ctx, dtypes=()):
        fused = _fused_kernel(_bce, ctx, dtypes)
        if fused is None:
            return super().kernel(ctx, dtypes)   # forward: the promotion rule, the reduction included
        r, be = ctx.params, ctx.backend
        return fused if r is None else (lambda p, y: _bce_reduce(be, fused(p, y), r))

    @classmethod
    def vjp(cls, ctx, g, k=RECORDED):
        p, y = ctx.operands
        vp, vy = k.value(p), k.value(y)
        r = ctx.params
        if r is not None:   # the reduction's VJP first, as mean / sum's node sent it: ȳ (/ n) to every element
            how, shape, scale = r
            g = k.spread(k.scale(g, scale) if how == "mean" else g, shape, tuple(range(len(shape))), False)
        gp = k.sum_to_shape(k.mul(g, k.apply(BCEGrad, (vp, vy))), p.shape) if p.requires_grad else None
        gy = None
        if y.requires_grad:   # log(1 − p) − log(p)
            gy = k.sum_to_shape(k.mul(g, k.sub(k.log(k.sub(k.const(1.0, vp), vp)), k.log(vp))), y.shape)
        return gp, gy

    @classmethod
    def jvp(cls, ctx, tp, ty):
        p, y = ctx.inputs
        out = None
        if tp is not None:
            out = tp * apply(BCEGrad, (p, y))
        if ty is not None:
            part = ty * (log(1.0 - p) - log(p))
            out = part if out is None else out + part
        r = ctx.params
        if r is None or out is None:
            return out
        how, shape, scale = r
        out = expand(out, shape) if out.shape != shape else out   # a tangent of one input may broadcast
        return mean(out) if how == "mean" else sum(out)


def _bce_reduce(be, loss, r):
    """The elementwise BCE ``loss`` (an array) reduced as ``r`` says (see :class:`BinaryCrossEntropy`): the
    backend calls of ``mean`` (:func:`_mean_arrays`) / ``sum`` over every dim, so the same bits as those ops."""
    if r is None:
        return loss
    how, shape, scale = r
    dims = tuple(range(len(shape)))
    return _mean_arrays(be, loss, dims, False, scale) if how == "mean" else be.reduce("sum", loss, dims, False)


class BCEGrad(Op):
    """d BCE / d p = (p - y) / max(p (1 - p), 1e-12) (PyTorch's clamp of the denominator)."""

    name = "bce_grad"
    saves = (0, 1)
    formula = "p̄ = d̄ ⊙ (p² − 2py + y) / (p(1 − p))²,  ȳ = −d̄ / (p(1 − p))   (d = ∂BCE/∂p)"

    @staticmethod
    def forward(ctx, p, y):
        return _bce_grad(_fused_kernels(ctx.backend, p, y), p, y)

    @classmethod
    def kernel(cls, ctx, dtypes=()):
        return _fused_kernel(_bce_grad, ctx, dtypes) or super().kernel(ctx, dtypes)

    @classmethod
    def vjp(cls, ctx, g, k=RECORDED):
        tp, ty = ctx.operands
        p, y = k.value(tp), k.value(ty)
        # d/dp (p - y) / (p (1 - p)) = (p^2 - 2 p y + y) / (p (1 - p))^2 ;  d/dy = -1 / (p (1 - p))
        q = k.mul(p, k.sub(k.const(1.0, p), p))
        gp = gy = None
        if tp.requires_grad:
            num = k.add(k.sub(k.mul(p, p), k.mul(k.scale(p, 2.0), y)), y)
            gp = k.sum_to_shape(k.mul(g, k.div(num, k.mul(q, q))), tp.shape)
        if ty.requires_grad:
            gy = k.sum_to_shape(k.div(k.neg(g), q), ty.shape)
        return gp, gy

    @classmethod
    def jvp(cls, ctx, tp, ty):
        p, y = ctx.inputs
        q = p * (1.0 - p)
        out = tp * ((p * p - 2.0 * p * y + y) / (q * q)) if tp is not None else None
        if ty is not None:
            part = neg(ty) / q
            out = part if out is None else out + part
        return out


class DropoutMask(Op):
    """Dropout's mask: True (keep) with probability 1-p, a bool tensor (a quarter of float32's bytes,
    what PyTorch's dropout keeps too); :class:`Dropout` applies it."""

    name = "dropout_mask"
    random = True
    differentiable = False

    @staticmethod
    def forward(ctx):
        shape, dtype, p = ctx.params
        return _dropout_mask(ctx.backend.kernels(dtype), shape, p)

    @classmethod
    def kernel(cls, ctx, dtypes=()):
        shape, dtype, p = ctx.params
        k = ctx.backend.kernels(dtype, raw=True)
        return lambda: _dropout_mask(k, shape, p)


class Dropout(_LinearInFirst, Op):
    """Inverted dropout, x ⊙ keep / (1 − p), from a bool mask (``DropoutMask``): it saves the mask only
    (``x * mask`` would save x and a float mask). Linear in x: its VJP and JVP are the same op on ȳ / ẋ."""

    name = "dropout"
    saves = (1,)
    formula = "x̄ = ȳ ⊙ keep / (1 − p)   (keep: the bool mask, saved)"

    @staticmethod
    def forward(ctx, x, keep):
        return _dropout(ctx.backend.kernels(ctx.backend.dtype(x)), x, keep, ctx.params)

    @classmethod
    def vjp(cls, ctx, g, k=RECORDED):
        x, keep = ctx.operands
        return (k.apply(Dropout, (g, k.value(keep)), ctx.params) if x.requires_grad else None), None


# ---------------------------------------------------------------------------
# reductions


def _spread(g, shape, dims, keepdim):
    """A reduction's adjoint ``g`` sent back to every reduced element: the reduced dims put back (when
    not kept) and broadcast to the input's ``shape`` (engine ops: recorded when the pass records)."""
    if not keepdim:
        g = reshape(g, _kept_shape(shape, dims))
    return expand(g, shape)


def _spread_arrays(be, g, shape, dims, keepdim):
    """:func:`_spread` on the backend's arrays (the raw interpreter's ``spread``), skipping a reshape or
    broadcast that would change nothing."""
    if not keepdim:
        kept = _kept_shape(shape, dims)
        g = be.reshape(g, kept) if kept != g.shape else g
    return be.expand(g, shape) if shape != g.shape else g


def _mean_arrays(be, a, dims, keepdim, scale):
    """The mean of array ``a`` over ``dims`` as :class:`Mean` computes it: the sum, times ``scale`` (1/n)."""
    s = be.reduce("sum", a, dims, keepdim)
    dt = be.dtype(s)
    return be.binary("mul", s, be.array(scale, dt if dt.is_floating else float64))


class Sum(_LinearInFirst, Op):
    name = "sum"
    saves = ()
    formula = "x̄ = expand(ȳ, x.shape)   (every summed element receives ȳ)"

    @staticmethod
    def forward(ctx, a):
        dims, keepdim = ctx.params
        return ctx.backend.reduce("sum", a, dims, keepdim)

    @classmethod
    def kernel(cls, ctx, dtypes=()):
        dims, keepdim = ctx.params
        return cls._backend_kernel(ctx, dtypes, "reduce", "sum", dims, keepdim)

    @classmethod
    def vjp(cls, ctx, g, k=RECORDED):
        dims, keepdim = ctx.params
        return (k.spread(g, ctx.operands[0].shape, dims, keepdim),)


class Mean(_LinearInFirst, Op):
    """The mean over dims: the sum times 1/n as one node (PyTorch's MeanBackward), the same bits as
    ``sum(x) * (1/n)``."""

    name = "mean"
    saves = ()
    formula = "x̄ = expand(ȳ / n, x.shape)   (every averaged element receives ȳ / n)"

    @staticmethod
    def forward(ctx, a):
        return _mean_arrays(ctx.backend, a, *ctx.params)

    @classmethod
    def vjp(cls, ctx, g, k=RECORDED):
        dims, keepdim, scale = ctx.params
        return (k.spread(k.scale(g, scale), ctx.operands[0].shape, dims, keepdim),)


class Max(Op):
    """Max over dims. The gradient is split evenly between tied maxima (as ``torch.amax``)."""

    name = "max"
    saves = (0,)
    formula = "x̄ = ȳ ⊙ (x == max) / (number of ties)"
    needs_output = True

    @staticmethod
    def forward(ctx, a):
        dims, keepdim = ctx.params
        return ctx.backend.reduce("max", a, dims, keepdim)

    @staticmethod
    def _share(ctx, k) -> Tensor:
        """1/(number of ties) where an element equals its max, else 0 (the comparison ends its gradient:
        the share is piecewise constant)."""
        (a,) = ctx.operands
        dims, keepdim = ctx.params
        m = k.output(ctx)
        if not keepdim:
            m = k.reshape(m, _kept_shape(a.shape, dims))
        mask = k.cast(k.eq(k.value(a), m), a.dtype)
        return k.div(mask, k.sum(mask, dims, True))

    @classmethod
    def vjp(cls, ctx, g, k=RECORDED):
        (a,) = ctx.operands
        dims, keepdim = ctx.params
        if not keepdim:
            g = k.reshape(g, _kept_shape(a.shape, dims))
        return (k.mul(g, cls._share(ctx, k)),)

    @classmethod
    def jvp(cls, ctx, ta):
        dims, keepdim = ctx.params
        return sum(ta * cls._share(ctx, RECORDED), dims, keepdim)


def _kept_shape(shape: tuple[int, ...], dims: tuple[int, ...]) -> tuple[int, ...]:
    """``shape`` reduced over ``dims`` with keepdim=True."""
    return tuple(1 if i in dims else s for i, s in enumerate(shape))


# ---------------------------------------------------------------------------
# matmul


def _swap_last(t: Tensor) -> Tensor:
    return transpose(t, -1, -2)


def _swap_order(ndim: int) -> tuple[int, ...]:
    """The permutation :func:`_swap_last` applies to a tensor of ``ndim`` (≥ 2) dims."""
    return tuple(range(ndim - 2)) + (ndim - 1, ndim - 2)


class MatMul(Op):
    """Matrix product with NumPy's rules (1-D operands, batched and broadcast batch dims)."""

    name = "matmul"
    saves = (0, 1)
    label = "{0} @ {1}"
    formula = "Ā = Ȳ Bᵀ,  B̄ = Aᵀ Ȳ   (batch dims summed back)"
    multiply_adds = classmethod(_product_multiply_adds)

    @staticmethod
    def forward(ctx, a, b):
        return ctx.backend.matmul(a, b)

    @classmethod
    def kernel(cls, ctx, dtypes=()):
        return cls._backend_kernel(ctx, dtypes, "matmul")

    @classmethod
    def vjp(cls, ctx, g, k=RECORDED):
        a, b = ctx.operands
        a_shape, b_shape = a.shape, b.shape
        a_vec, b_vec = len(a_shape) == 1, len(b_shape) == 1
        # 1-D operands are promoted to matrices (as in the forward), then the results squeezed back
        a2 = k.reshape(k.value(a), (1,) + a_shape) if a_vec else k.value(a)
        b2 = k.reshape(k.value(b), b_shape + (1,)) if b_vec else k.value(b)
        g2 = g
        if a_vec:
            g2 = k.reshape(g2, _unsqueezed(g2.shape, 0 if b_vec else -2))
        if b_vec:
            g2 = k.reshape(g2, _unsqueezed(g2.shape, -1))
        ga = gb = None
        if a.requires_grad:  # ā = ȳ bᵀ
            ga = k.sum_to_shape(k.matmul(g2, k.swap_last(b2)), a2.shape)
            ga = k.reshape(ga, a_shape) if a_vec else ga
        if b.requires_grad:  # b̄ = aᵀ ȳ
            if len(b2.shape) == 2 and len(g2.shape) == 2 and not k.is_contiguous(b2):
                # b is a transposed view (x @ W.T in Linear): compute (ȳᵀ a)ᵀ instead, so the
                # gradient lands in W's own row-major layout with no copy (same dot products)
                gb = k.swap_last(k.matmul(k.swap_last(g2), a2))
            else:
                gb = k.matmul(k.swap_last(a2), g2)
            gb = k.sum_to_shape(gb, b2.shape)
            gb = k.reshape(gb, b_shape) if b_vec else gb
        return ga, gb

    @classmethod
    def jvp(cls, ctx, ta, tb):
        return _bilinear_jvp(matmul, *ctx.inputs, ta, tb)


def _unsqueezed(shape: tuple[int, ...], dim: int) -> tuple[int, ...]:
    """``shape`` with a dim of 1 inserted at ``dim`` (what :func:`unsqueeze` gives)."""
    d = _norm_dim(dim, len(shape) + 1)
    return shape[:d] + (1,) + shape[d:]


def _rows(x, reshape_fn):
    """``x`` (a Tensor or a raw array) as a matrix of rows: its last dim the columns, every other dim
    (none for a vector) flattened into the rows; ``reshape_fn`` is ``reshape`` or a backend's."""
    shape = x.shape
    if len(shape) == 2:
        return x
    rows = 1
    for s in shape[:-1]:
        rows *= s
    return reshape_fn(x, (rows, shape[-1]))


class MatMulT(Op):
    """``a @ bᵀ`` for a matrix ``b`` (n, k) and ``a`` (..., k): a Linear without a bias, as one node (the
    same bits as ``matmul(x, transpose(W))``, without the transpose's node)."""

    name = "matmul_t"
    saves = (0, 1)
    label = "{0} @ {1}ᵀ"
    formula = "Ā = Ȳ B,  B̄ = Ȳᵀ A   (y = A Bᵀ; A's leading dims flattened into the rows for B̄)"
    multiply_adds = classmethod(_product_multiply_adds)

    @staticmethod
    def forward(ctx, a, b):
        be = ctx.backend
        return be.matmul(a, be.permute(b, (1, 0)))

    @classmethod
    def vjp(cls, ctx, g, k=RECORDED):
        a, b = ctx.operands[:2]   # (Linear's rule too: its bias is the third operand)
        ga = k.matmul(g, k.value(b)) if a.requires_grad else None   # ā = ȳ b
        gb = None
        if b.requires_grad:   # b̄ = ȳᵀ a, every leading dim of a (a vector: none) one more row
            gb = k.matmul(k.swap_last(_rows(g, k.reshape)), _rows(k.value(a), k.reshape))
        return ga, gb

    @classmethod
    def jvp(cls, ctx, ta, tb):
        a, b = ctx.inputs[:2]
        return _bilinear_jvp(lambda x, y: apply(MatMulT, (x, y)), a, b, ta, tb)


class Linear(Op):
    """``x @ Wᵀ + b`` for a matrix ``W`` (n, k), ``x`` (..., k) and a bias ``b`` (n,): ``nn.Linear`` as one
    node, as PyTorch records it (AddmmBackward), the same bits as ``matmul_t`` then the add."""

    name = "linear"
    saves = (0, 1)   # the bias's contribution needs only its shape (an edge keeps it)
    label = "{0} @ {1}ᵀ + {2}"
    formula = "x̄ = Ȳ W,  W̄ = Ȳᵀ x,  b̄ = Σ_rows Ȳ   (y = x Wᵀ + b; x's leading dims flattened into the rows)"
    multiply_adds = classmethod(_product_multiply_adds)

    @staticmethod
    def forward(ctx, x, w, b):
        be = ctx.backend
        return be.binary("add", be.matmul(x, be.permute(w, (1, 0))), b)

    @classmethod
    def vjp(cls, ctx, g, k=RECORDED):   # x̄ and W̄ as MatMulT's rule sends them, plus the bias's
        b = ctx.operands[2]
        return (*MatMulT.vjp(ctx, g, k), k.sum_to_shape(g, b.shape) if b.requires_grad else None)

    @classmethod
    def jvp(cls, ctx, tx, tw, tb):
        out = MatMulT.jvp(ctx, tx, tw) if tx is not None or tw is not None else None
        if tb is None:
            return out
        x, w = ctx.inputs[:2]
        return tb + out if out is not None else expand(tb, x.shape[:-1] + w.shape[:1])


# ---------------------------------------------------------------------------
# layout


class Permute(_LinearInFirst, Op):
    name = "permute"
    saves = ()
    formula = "x̄ = permute(ȳ, inverse order)"

    @staticmethod
    def forward(ctx, a):
        return ctx.backend.permute(a, ctx.params)

    @classmethod
    def kernel(cls, ctx, dtypes=()):
        return cls._backend_kernel(ctx, dtypes, "permute", ctx.params)

    @classmethod
    def vjp(cls, ctx, g, k=RECORDED):
        order = ctx.params
        inverse = [0] * len(order)
        for i, o in enumerate(order):
            inverse[o] = i
        return (k.permute(g, tuple(inverse)),)


class _NewShape:
    """The derivative rules of an op that only gives its input a new shape (View, Reshape): the adjoint
    takes the input's shape back, the tangent the new one."""

    @classmethod
    def vjp(cls, ctx, g, k=RECORDED):
        return (k.reshape(g, ctx.operands[0].shape),)

    @classmethod
    def jvp(cls, ctx, ta):
        return reshape(ta, ctx.params)


class View(_NewShape, Op):
    """Reshape without copying; fails on non-contiguous data (as PyTorch's ``view``)."""

    name = "view"
    saves = ()
    formula = "x̄ = reshape(ȳ, x.shape)"

    @staticmethod
    def forward(ctx, a):
        return ctx.backend.view(a, ctx.params)


class Reshape(_NewShape, Op):
    """Reshape: a view when the layout allows it, else a copy."""

    name = "reshape"
    saves = ()
    formula = "x̄ = reshape(ȳ, x.shape)"

    @staticmethod
    def forward(ctx, a):
        return ctx.backend.reshape(a, ctx.params)

    @classmethod
    def kernel(cls, ctx, dtypes=()):
        return cls._backend_kernel(ctx, dtypes, "reshape", ctx.params)


class Expand(_LinearInFirst, Op):
    """Broadcast to a larger shape (stride-0 view). Its VJP is ``sum_to_shape``."""

    name = "expand"
    saves = ()
    formula = "x̄ = sum_to_shape(ȳ, x.shape)   (the broadcast copies add up)"

    @staticmethod
    def forward(ctx, a):
        return ctx.backend.expand(a, ctx.params)

    @classmethod
    def kernel(cls, ctx, dtypes=()):
        return cls._backend_kernel(ctx, dtypes, "expand", ctx.params)

    @classmethod
    def vjp(cls, ctx, g, k=RECORDED):
        return (k.sum_to_shape(g, ctx.operands[0].shape),)


class Contiguous(Op):
    name = "contiguous"
    saves = ()
    formula = "x̄ = ȳ"

    @staticmethod
    def forward(ctx, a):
        return ctx.backend.contiguous(a)

    @classmethod
    def vjp(cls, ctx, g, k=RECORDED):
        return (g,)

    @classmethod
    def jvp(cls, ctx, ta):
        return ta


class GetItem(_LinearInFirst, Op):
    """Basic indexing (ints and slices) as a view. VJP: add into zeros at the same place."""

    name = "getitem"
    saves = ()
    formula = "x̄ = zeros(x.shape) with ȳ added at the indexed place (index_add)"

    @staticmethod
    def forward(ctx, a):
        return ctx.backend.index(a, ctx.params)

    @classmethod
    def vjp(cls, ctx, g, k=RECORDED):
        return (k.apply(IndexAdd, (g,), (ctx.operands[0].shape, ctx.params)),)


class IndexAdd(_LinearInFirst, Op):
    name = "index_add"
    saves = ()
    formula = "s̄ = ȳ[key]"

    @staticmethod
    def forward(ctx, src):
        shape, key = ctx.params
        return ctx.backend.index_add(shape, key, src)

    @classmethod
    def vjp(cls, ctx, g, k=RECORDED):
        return (k.apply(GetItem, (g,), ctx.params[1]),)


# ---------------------------------------------------------------------------
# selection


class Where(Op):
    name = "where"
    saves = (0,)
    formula = "ā = where(c, ȳ, 0),  b̄ = where(c, 0, ȳ)"

    @staticmethod
    def forward(ctx, cond, a, b):
        return ctx.backend.where(cond, a, b)

    @classmethod
    def vjp(cls, ctx, g, k=RECORDED):
        cond, a, b = ctx.operands
        c, zero = k.value(cond), k.zeros_like(g)
        ga = k.sum_to_shape(k.where(c, g, zero), a.shape) if a.requires_grad else None
        gb = k.sum_to_shape(k.where(c, zero, g), b.shape) if b.requires_grad else None
        return None, ga, gb

    @classmethod
    def jvp(cls, ctx, tc, ta, tb):
        cond, a, b = ctx.inputs
        ta = ta if ta is not None else zeros_like(a)
        tb = tb if tb is not None else zeros_like(b)
        return where(cond, ta, tb)


class Gather(_LinearInFirst, Op):
    """Embedding lookup: rows of ``table`` at integer ``indices``. VJP: scatter-add."""

    name = "gather"
    saves = (1,)
    formula = "T̄ = scatter_add(zeros(T.shape), idx, ȳ): row idx[i] += ȳ[i]  (a repeated index adds twice)"

    @staticmethod
    def forward(ctx, table, indices):
        return ctx.backend.gather(table, indices)

    @classmethod
    def vjp(cls, ctx, g, k=RECORDED):
        table, indices = ctx.operands
        return k.apply(ScatterAdd, (g, k.value(indices)), table.shape), None


class ScatterAdd(_LinearInFirst, Op):
    """Zeros of a shape with rows of ``src`` added at ``indices`` (repeated rows add up)."""

    name = "scatter_add"
    saves = (1,)
    formula = "s̄ = gather(ȳ, idx)"

    @staticmethod
    def forward(ctx, src, indices):
        return ctx.backend.scatter_add(ctx.params, indices, src)

    @classmethod
    def vjp(cls, ctx, g, k=RECORDED):
        return k.apply(Gather, (g, k.value(ctx.operands[1]))), None


# ---------------------------------------------------------------------------
# public functions


def add(a, b, like=None) -> Tensor:
    return apply(Add, _pair(a, b, like))


def sub(a, b, like=None) -> Tensor:
    """Composite: a + (-b)."""
    a, b = _pair(a, b, like)
    return add(a, neg(b))


def mul(a, b, like=None) -> Tensor:
    return apply(Mul, _pair(a, b, like))


def div(a, b, like=None) -> Tensor:
    return apply(Div, _pair(a, b, like))


def pow(a: Tensor, exponent) -> Tensor:
    """``a ** exponent``; a tensor exponent is written as exp(exponent * log(a))."""
    if isinstance(exponent, Tensor):
        return exp(mul(exponent, log(a)))
    if not isinstance(exponent, (int, float)):
        raise TypeError(f"exponent must be a number or a Tensor, got {type(exponent).__name__}")
    return apply(Pow, (a,), float(exponent))


def rpow(base, exponent: Tensor) -> Tensor:
    """``base ** exponent`` for a constant base: exp(exponent * log(base))."""
    b = as_tensor_like(base, exponent)
    return exp(mul(exponent, log(b)))


def cast(a: Tensor, dtype) -> Tensor:
    dt = as_dtype(dtype)
    if a.dtype == dt:
        return a
    out = apply(Cast, (a,), dt)
    if not dt.is_floating:  # integer / bool results carry no gradient
        out.requires_grad, out._history = False, None
    return out


def compare(kind: str, a, b) -> Tensor:
    """Elementwise comparison (``lt le gt ge eq ne``); a bool tensor with no gradient."""
    return apply(Compare, _pair(a, b), kind)


def uniform(shape: Sequence[int], like: Tensor) -> Tensor:
    """Uniform [0, 1) samples on ``like``'s backend and dtype."""
    return apply(Uniform, (), (tuple(shape), like.dtype), backend=like.backend)


def dropout_mask(like: Tensor, p: float) -> Tensor:
    """A bool mask of ``like``'s shape: True with probability 1 - p (drawn in ``like``'s dtype)."""
    return apply(DropoutMask, (), (like.shape, like.dtype, float(p)), backend=like.backend)


def dropout(x: Tensor, p: float) -> Tensor:
    """Inverted dropout of ``x``: each element kept with probability 1 - p and scaled by 1/(1 - p)."""
    return apply(Dropout, (x, dropout_mask(x, p)), 1.0 / (1.0 - float(p)))


def binary_cross_entropy(p: Tensor, y, reduction: str = "none") -> Tensor:
    """BCE, elementwise (``reduction="none"``) or its mean or sum in the same node; see
    :class:`BinaryCrossEntropy`.

    Raises:
        ValueError: a probability or a target outside [0, 1] (PyTorch refuses them too; the logs would give
            NaN silently). NaN itself passes and gives a NaN loss: it comes from upstream (a NaN weight or word
            vector), and the trainer's check of the loss says where it appeared.
    """
    y = as_tensor_like(y, p)
    for what, t in (("input", p), ("target", y)):
        if t.op is Sigmoid or t.backend.deferred or not t.numel():
            continue  # a sigmoid's values lie in [0, 1] (or are NaN)
        v = t.numpy()
        # the smallest and largest non-NaN values (fmin / fmax skip NaN): two reductions, no mask per call
        if np.fmin.reduce(v, axis=None) < 0 or np.fmax.reduce(v, axis=None) > 1:
            bad = v[(v < 0) | (v > 1)].flat[0]
            raise ValueError(f"binary_cross_entropy: every {what} element must be between 0 and 1, got {bad}")
    if reduction == "none":
        return apply(BinaryCrossEntropy, (p, y))
    if reduction not in ("mean", "sum"):
        raise ValueError(f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
    shape = p.shape if p.shape == y.shape else tuple(np.broadcast_shapes(p.shape, y.shape))
    n = math.prod(shape)
    scale = (1.0 / n if n else float("nan")) if reduction == "mean" else None
    return apply(BinaryCrossEntropy, (p, y), (reduction, shape, scale))


def argmax(a: Tensor, dim: int | None = None) -> Tensor:
    return apply(Argmax, (a,), None if dim is None or a.ndim == 0 else _norm_dim(dim, a.ndim))


@typed(takes_dim=True)
def sum(a: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    return apply(Sum, (a,), (_norm_dims(dim, a.ndim), bool(keepdim)))


@typed(takes_dim=True)
def mean(a: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """The mean over ``dim`` (all dims when None); of nothing: NaN (as NumPy, PyTorch)."""
    dims = _norm_dims(dim, a.ndim)
    n = math.prod(a.shape[d] for d in dims)
    return apply(Mean, (a,), (dims, bool(keepdim), 1.0 / n if n else float("nan")))


@typed(takes_dim=True)
def max(a: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """Maximum over ``dim`` (all dims when None); values only."""
    return apply(Max, (a,), (_norm_dims(dim, a.ndim), bool(keepdim)))


def matmul(a: Tensor, b) -> Tensor:
    b = as_tensor_like(b, a)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("matmul needs tensors with at least one dimension; use * for scalars")
    ka = a.shape[-1]
    kb = b.shape[-2] if b.ndim > 1 else b.shape[0]
    if ka != kb:
        raise ValueError(f"matmul shape mismatch: {a.shape} @ {b.shape} ({ka} != {kb})")
    return apply(MatMul, (a, b))


def linear(x: Tensor, w: Tensor, b: Tensor) -> Tensor:
    """``x @ wᵀ + b`` for a matrix ``w`` (n, k), ``x`` (..., k) of at least one dim and a bias ``b`` of shape
    (n,), as one op (:class:`Linear`).

    Raises:
        ValueError: ``w`` is not a matrix, ``x`` is 0-d, the inner dimensions differ or ``b`` is not (n,).
    """
    sx, sw = x.shape, w.shape
    if len(sw) != 2 or not sx:
        raise ValueError(f"linear needs a matrix weight and an input of at least one dim, got {sx} @ {sw}ᵀ")
    if sx[-1] != sw[1]:
        raise ValueError(f"linear shape mismatch: {sx} @ {sw}ᵀ ({sx[-1]} != {sw[1]})")
    if b.shape != (sw[0],):
        raise ValueError(f"linear needs a bias of shape ({sw[0]},) for a weight {sw}, got {b.shape}")
    return apply(Linear, (x, w, b))


def matmul_t(a: Tensor, b: Tensor) -> Tensor:
    """``a @ bᵀ`` for a matrix ``b`` (n, k) and ``a`` (..., k) of at least one dim, as one op (Linear's
    ``x @ weightᵀ``: :class:`MatMulT`).

    Raises:
        ValueError: ``b`` is not a matrix, ``a`` is 0-d, or the inner dimensions differ.
    """
    sa, sb = a.shape, b.shape
    if len(sb) != 2 or not sa:
        raise ValueError(f"matmul_t needs a matrix on the right and at least one dim on the left, got {sa} @ {sb}ᵀ")
    if sa[-1] != sb[1]:
        raise ValueError(f"matmul_t shape mismatch: {sa} @ {sb}ᵀ ({sa[-1]} != {sb[1]})")
    return apply(MatMulT, (a, b))


def permute(a: Tensor, order: Sequence[int]) -> Tensor:
    order = tuple(_norm_dim(d, a.ndim) for d in order)
    if sorted(order) != list(range(a.ndim)):
        raise ValueError(f"permute order {order} is not a permutation of {a.ndim} dims")
    return apply(Permute, (a,), order)


@typed()
def transpose(a: Tensor, d0: int = -2, d1: int = -1) -> Tensor:
    nd = a.ndim
    order = list(range(nd))
    d0, d1 = _norm_dim(d0, nd), _norm_dim(d1, nd)
    order[d0], order[d1] = order[d1], order[d0]
    return apply(Permute, (a,), tuple(order))  # a swap is always a valid permutation


def _resolve_shape(shape: Sequence[int], numel: int) -> tuple[int, ...]:
    if len(shape) == 1 and type(shape[0]) is int and (shape[0] == -1 or shape[0] == numel):
        return (numel,)  # a flatten (``reshape(-1)``), without the general checks below
    shape = tuple(int(s) for s in shape)
    check_size([s for s in shape if s != -1])   # before any -1 is inferred from a wrapped product
    if shape.count(-1) > 1:
        raise ValueError("only one dimension can be -1")
    if -1 in shape:
        known = math.prod(s for s in shape if s != -1)
        if known == 0 or numel % known:
            raise ValueError(f"cannot infer -1 in shape {shape} for {numel} elements")
        shape = tuple(numel // known if s == -1 else s for s in shape)
    if math.prod(shape) != numel:
        raise ValueError(f"shape {shape} does not hold {numel} elements")
    return shape


def view(a: Tensor, shape: Sequence[int]) -> Tensor:
    return apply(View, (a,), _resolve_shape(shape, a.numel()))


def reshape(a: Tensor, shape: Sequence[int]) -> Tensor:
    shape = _resolve_shape(shape, a.numel())
    if shape == a.shape:
        return a
    return apply(Reshape, (a,), shape)


def expand(a: Tensor, shape: Sequence[int]) -> Tensor:
    shape = tuple(shape)
    check_size(shape)
    if shape == a.shape:
        return a
    return apply(Expand, (a,), shape)


def contiguous(a: Tensor) -> Tensor:
    if a.is_contiguous():
        return a
    return apply(Contiguous, (a,))


def unsqueeze(a: Tensor, dim: int) -> Tensor:
    nd = a.ndim + 1
    d = _norm_dim(dim, nd)
    shape = list(a.shape)
    shape.insert(d, 1)
    return reshape(a, shape)


def squeeze(a: Tensor, dim=None) -> Tensor:
    if dim is None:
        shape = [s for s in a.shape if s != 1]
    else:
        d = _norm_dim(dim, a.ndim)
        shape = [s for i, s in enumerate(a.shape) if not (i == d and s == 1)]
    return reshape(a, shape)


def getitem(a: Tensor, key) -> Tensor:
    if isinstance(key, Tensor):
        if not key.dtype.is_floating and key.dtype != bool_:
            return gather(a, key)
        raise IndexError("tensor indices must be integer tensors")
    norm = key if isinstance(key, tuple) else (key,)
    # NumPy integers (x[np.int64(1)], loop variables over np.arange) are integers too
    norm = tuple(int(k) if isinstance(k, numbers.Integral) and not isinstance(k, bool) else k for k in norm)
    for k in norm:
        if isinstance(k, bool) or not isinstance(k, (int, slice)):
            raise IndexError(f"unsupported index {k!r}: use integers and slices (or an int tensor for rows)")
    return apply(GetItem, (a,), norm if isinstance(key, tuple) else norm[0])


def where(cond: Tensor, a, b) -> Tensor:
    like = a if isinstance(a, Tensor) else b if isinstance(b, Tensor) else cond
    if not isinstance(like, Tensor):
        raise TypeError("where needs at least one tensor")
    if like is cond:
        like = Tensor._make(cond.backend.full((), 0.0, float64), cond.backend)
    a, b = as_tensor_like(a, like), as_tensor_like(b, like)
    return apply(Where, (as_tensor_like(cond, like), a, b))


def gather(table: Tensor, indices) -> Tensor:
    """Rows of ``table`` picked by integer ``indices`` (embedding lookup)."""
    if not isinstance(indices, Tensor):
        if isinstance(indices, (list, tuple, np.ndarray, np.generic, float)):
            kind = np.asarray(indices).dtype.kind
            if np.size(indices) and kind not in "iu":   # as PyTorch: 1.5 is not a row (it used to be row 1)
                raise TypeError(f"embedding ids must be integers, got {np.asarray(indices).dtype} values")
        indices = Tensor._make(table.backend.array(indices, as_dtype("int64")), table.backend)
    if indices.dtype.is_floating or indices.dtype.name == "bool":
        raise TypeError(f"embedding ids must be an integer tensor, got {indices.dtype.name}")
    if not indices.backend.deferred and indices.numel():
        ids = indices.numpy()   # a few ids per sentence: checking them costs microseconds
        low, high = int(ids.min()), int(ids.max())
        if low < 0 or high >= table.shape[0]:   # -1 used to be the last row (NumPy's negative indexing)
            raise IndexError(f"embedding ids must be in [0, {table.shape[0]}), got {low if low < 0 else high}")
    return apply(Gather, (table, indices))


def zeros_like(a: Tensor) -> Tensor:
    """A constant of ``a``'s shape, dtype and backend holding zeros (a missing gradient or tangent)."""
    return Tensor._make(a.backend.full(a.shape, 0.0, a.dtype), a.backend)


def ones_like(a: Tensor) -> Tensor:
    """A constant of ``a``'s shape, dtype and backend holding ones (the seed of a backward pass): the one
    place the engine, its explain tools and the student sandbox make it."""
    return Tensor._make(a.backend.full(a.shape, 1.0, a.dtype), a.backend)


def primitive(name: str) -> type[Op]:
    """The primitive registered under ``name`` (every ``Op`` subclass that sets its own name).

    Raises:
        KeyError: no op has that name.
    """
    from .tensor import _OPS_BY_NAME
    try:
        return _OPS_BY_NAME[name]
    except KeyError:
        raise KeyError(f"no primitive named {name!r}") from None


def _collect_primitives() -> tuple[type[Op], ...]:
    from .tensor import _OPS_BY_NAME
    return tuple(op for op in _OPS_BY_NAME.values() if op.__module__ == __name__)


#: the engine's primitives: every Op defined in this module, as ``Op.__init_subclass__`` registered them
PRIMITIVES: tuple[type[Op], ...] = _collect_primitives()


# the recorded interpreter's operations: the engine's own ops (see ArrayOps)
RECORDED.__dict__.update(
    value=lambda x: x, output=operator.attrgetter("output"),
    add=operator.add, sub=sub, mul=operator.mul, div=operator.truediv, neg=operator.neg,
    exp=exp, log=log, sin=sin, cos=cos, pow=pow, scale=operator.mul, const=as_tensor_like, zeros_like=zeros_like,
    gt=functools.partial(compare, "gt"), eq=functools.partial(compare, "eq"), where=where, cast=cast, sum=sum,
    sum_to_shape=sum_to_shape, spread=_spread, reshape=reshape, permute=permute, swap_last=_swap_last,
    matmul=lambda a, b: apply(MatMul, (a, b)), is_contiguous=Tensor.is_contiguous, apply=apply)
TANGENT.__dict__.update(vars(RECORDED), output=lambda ctx: ctx.output.detach())
