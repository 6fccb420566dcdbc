"""Op table on every backend: forward vs NumPy, gradients vs central differences (float64)."""
import importlib

import numpy as np
import pytest

import engine
from engine import tensor

from op_table import OP_TABLE


@pytest.mark.parametrize("case", OP_TABLE, ids=lambda c: c.name)
def test_forward_matches_numpy(case, backend):
    rng = np.random.default_rng(1)
    xs = case.inputs(rng)
    out = case.fn(*[tensor(x, backend=backend) for x in xs])
    np.testing.assert_allclose(out.numpy(), case.ref(*xs), rtol=1e-12, atol=1e-12)
    assert out.shape == np.shape(case.ref(*xs))


@pytest.mark.parametrize("case", OP_TABLE, ids=lambda c: c.name)
def test_gradient_matches_central_differences(case, backend):
    rng = np.random.default_rng(2)
    xs = [tensor(x, requires_grad=True, backend=backend) for x in case.inputs(rng)]
    tol = {"eps": 1e-6, "atol": 1e-7, "rtol": 1e-6, **case.gradcheck}
    report = engine.gradcheck(case.fn, xs, n_directions=2, seed=3, **tol)
    assert report.ok, str(report)


@pytest.mark.parametrize("case", OP_TABLE, ids=lambda c: c.name)
def test_second_order_matches_central_differences(case, backend):
    """Second order: the VJP (built with engine ops, create_graph) along a random cotangent is itself
    checked by gradcheck, h(x) = <grad <r, f(x)>, v>, on every row and backend. Every row has one: the
    kinks of relu / abs / max / clamp lie away from the rows' input domains."""
    rng = np.random.default_rng(6)
    xs = case.inputs(rng)
    out_shape = np.shape(case.ref(*xs))
    r = tensor(rng.standard_normal(out_shape), backend=backend)
    vs = [tensor(rng.standard_normal(x.shape), backend=backend) for x in xs]
    argnums = tuple(range(len(xs)))

    def h(*ts):
        grads = engine.grad(lambda *us: (case.fn(*us) * r).sum(), argnums=argnums)(*ts)
        return sum(((g * v).sum() for g, v in zip(grads, vs)), tensor(0.0, backend=backend))

    leaves = [tensor(x, requires_grad=True, backend=backend) for x in xs]
    tol = {"eps": 1e-5, "atol": 1e-6, "rtol": 1e-5, **case.gradcheck}
    report = engine.gradcheck(h, leaves, n_directions=2, seed=7, **tol)
    assert report.ok, str(report)


def _grads_both_ways(case, backend, dtype, seed=8):
    """The row's gradients along a random cotangent from one graph, twice: with each op's VJP rule run by
    the recorded interpreter (engine ops: a ``trace_ops`` hook watches the pass, as graph capture and the
    explain tools do) and by the raw one (the backend's kernels on arrays: nobody watches). Also which ops
    the raw interpreter ran."""
    T = importlib.import_module("engine.tensor")   # the module (engine.tensor is also the function)
    rng = np.random.default_rng(seed)
    xs = [tensor(x.astype(dtype), requires_grad=True, backend=backend) for x in case.inputs(rng)]
    out = case.fn(*xs)
    r = tensor(rng.standard_normal(out.shape).astype(dtype), backend=backend)
    with engine.trace_ops(lambda *_: None):
        out.backward(r, retain_graph=True)
    watched = [x.grad.numpy().copy() for x in xs]
    for x in xs:
        x.grad = None
    took, real = set(), T._raw_vjp

    def spy(node, g):   # the real function; records which ops' rules ran on arrays
        if node.op.array_rule:
            took.add(node.op.name)
        return real(node, g)

    T._raw_vjp = spy
    try:
        with engine.trace_ops(lambda *_: None):   # watched: never the raw interpreter
            out.backward(r, retain_graph=True)
        assert not took, took
        for x in xs:
            x.grad = None
        out.backward(r)
    finally:
        T._raw_vjp = real
    return watched, [x.grad.numpy() for x in xs], took


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("case", OP_TABLE, ids=lambda c: c.name)
def test_one_rule_gives_the_same_bits_under_both_interpreters(case, backend, dtype):
    """Each op's single VJP rule gives exactly the same bits run by the raw interpreter (the backward pass
    nobody watches and nothing records) as by the recorded one (engine ops: what create_graph, graph
    capture and the explain tools run): the eager and the compiled training step stay bit-identical."""
    watched, fast, _ = _grads_both_ways(case, backend, dtype)
    for w, f in zip(watched, fast):
        assert w.dtype == f.dtype
        np.testing.assert_array_equal(f, w)


def test_every_rule_runs_under_the_raw_interpreter_in_the_op_table():
    """Every differentiable primitive's rule is written for both interpreters, and each runs under the raw
    one in some row (so the test above compares it); a watched pass never does."""
    from engine.ops import PRIMITIVES
    differentiable = {op.name for op in PRIMITIVES if op.differentiable}
    assert {op.name for op in PRIMITIVES if op.array_rule} == differentiable
    took = set()
    for case in OP_TABLE:
        took |= _grads_both_ways(case, "numpy", np.float64)[2]
    assert took == differentiable


def test_the_two_interpreters_offer_the_same_operations(backend):
    """A rule may call any operation of either interpreter: both have the same names."""
    from engine.backends import get_backend
    from engine.ops import RECORDED, ArrayOps
    raw = ArrayOps.raw(get_backend(backend))
    assert set(vars(raw)) == set(vars(RECORDED))
    assert {"value", "output", "mul", "sum_to_shape", "matmul", "apply"} <= set(vars(raw))


def test_a_watched_hw2_backward_pass_still_runs_every_engine_op():
    """The explain tools and graph capture watch the backward pass with ``trace_ops``: they still see the
    VJPs' engine ops, one by one (the array path is for passes nobody watches), and the gradients of the
    watched and the unwatched pass of HW2's step are the same bits."""
    from sentiment.model import SentimentNet
    rng = np.random.default_rng(0)
    net = SentimentNet(50, 8, dropout=0.5, dtype="float32", seed=0)
    x = tensor(rng.standard_normal((4, 6, 50)).astype(np.float32))
    y = tensor(np.array([1.0, 0.0, 1.0, 1.0], np.float32))
    engine.manual_seed(3)
    loss, _ = net.loss(x, None, y)
    ran = []
    with engine.trace_ops(lambda op, *_: ran.append(op.name)):
        loss.backward(retain_graph=True)
    # BCE with its mean (ȳ/n, reshape, expand; then ȳ ⊙ bce_grad), sigmoid, the flatten, fc2 (ȳ W2, ȳᵀ h and
    # the bias's sum), dropout, ReLU, fc1 (ȳᵀ x and the bias's sum: x takes no gradient)
    assert ran == ["mul", "reshape", "expand", "bce_grad", "mul", "neg", "add", "mul", "mul", "reshape",
                   "matmul", "permute", "matmul", "sum", "reshape", "dropout", "compare", "where",
                   "permute", "matmul", "sum", "reshape"]
    watched = [p.grad.numpy().copy() for p in net.parameters()]
    net.zero_grad()
    loss.backward()
    for w, p in zip(watched, net.parameters()):
        np.testing.assert_array_equal(p.grad.numpy(), w)


def test_every_primitive_has_an_op_table_row():
    """Each primitive runs in the forward pass of some row, so the table checks its forward, VJP,
    JVP and second order (a VJP-only primitive such as bce_grad gets a row of its own)."""
    from engine.ops import PRIMITIVES
    ran = {}
    rng = np.random.default_rng(0)
    for case in OP_TABLE:
        xs = [tensor(x) for x in case.inputs(rng)]
        with engine.trace_ops(lambda op, *_: ran.setdefault(op.name, case.name)):
            case.fn(*xs)
    missing = sorted(op.name for op in PRIMITIVES if op.name not in ran)
    assert not missing, f"primitives without an op-table row: {missing}"


def test_backends_have_exactly_the_declared_kernels():
    """engine.ops declares every elementwise kernel (an op's own, named after it, or a helper a fused op
    or Adam calls); each backend has those and no other (a kernel no declaration uses is dead code)."""
    import re
    from engine.backends import base, numpy_backend, python_backend
    from engine.backends.cuda_backend import KERNEL_DIR, functor_name
    assert {"exp", "relu", "sqrt"} <= base.UNARY_OPS and {"add", "pow", "sub", "lt"} <= base.BINARY_OPS
    for mod in (numpy_backend, python_backend):
        assert set(mod._UNARY) == base.UNARY_OPS, mod.__name__
        assert set(mod._BINARY) == base.BINARY_OPS, mod.__name__
    structs = set(re.findall(r"^struct (Op\w+)", (KERNEL_DIR / "elementwise.cu").read_text(), re.M))
    assert structs == {functor_name(k) for k in base.UNARY_OPS | base.BINARY_OPS} | {"OpIdentity"}
    with pytest.raises(ValueError, match="both unary and binary"):
        base.declare_kernel("binary", "exp")


def test_a_renamed_subclass_keeps_its_parents_kernel_and_declares_none():
    """A subclass that only renames an op (a test's spy, a user's instrumented op) runs its parent's
    kernel: it adds no kernel every backend would then lack (CI found the CUDA kernels, the emulator
    and the exact-kernels check above failing after such a spy ran earlier in the same session)."""
    from engine.backends import base
    from engine.ops import Exp, Mul
    from engine.tensor import apply

    class RenamedMul(Mul):
        name = "renamed_mul_for_test"

    class RenamedExp(Exp):
        name = "renamed_exp_for_test"

    assert RenamedMul.kernel_name == "mul" and RenamedExp.kernel_name == "exp"
    assert "renamed_mul_for_test" not in base.BINARY_OPS | base.UNARY_OPS
    assert "renamed_exp_for_test" not in base.BINARY_OPS | base.UNARY_OPS
    a = tensor([1.0, 2.0], requires_grad=True)
    y = apply(RenamedMul, (a, apply(RenamedExp, (a,))))
    np.testing.assert_array_equal(y.numpy(), np.array([1.0, 2.0]) * np.exp([1.0, 2.0]))


def test_typed_programs_parser_and_help_read_the_declarations():
    """The parser's allowed functions, the program help and the pictures' labels come from the
    declarations (a primitive's ``typed`` / ``label``, ``@typed`` on a composite), not from lists."""
    from explorer.explain.parser import ALLOWED_FUNCTIONS
    from engine.ops import PRIMITIVES, typed_functions
    from explorer.kit.labels import formula
    from explorer.kit.widgets import PROGRAM_HELP
    declared = typed_functions()
    assert list(ALLOWED_FUNCTIONS) == list(declared)
    assert {op.name for op in PRIMITIVES if op.typed} <= set(declared)
    assert {"exp", "relu", "sum", "max", "tanh", "softmax", "maximum", "minimum", "sqrt"} <= set(declared)
    words = PROGRAM_HELP.replace(".", " ").split()
    assert all(name in words for name in declared), PROGRAM_HELP
    assert ALLOWED_FUNCTIONS["maximum"][1:] == (2, False) and ALLOWED_FUNCTIONS["softmax"][1:] == (1, True)
    for op in PRIMITIVES:
        if op.label:
            assert formula(op.name, ["a", "b", "c"][:op.label.count("{")]) == op.label.format("a", "b", "c")
    assert formula("exp", ["x"]) == "exp(x)"


@pytest.mark.parametrize("case", OP_TABLE, ids=lambda c: c.name)
def test_float32_forward(case, backend):
    rng = np.random.default_rng(4)
    xs = [x.astype(np.float32) for x in case.inputs(rng)]
    out = case.fn(*[tensor(x, backend=backend) for x in xs])
    assert out.dtype == engine.float32
    np.testing.assert_allclose(out.numpy(), case.ref(*[x.astype(np.float64) for x in xs]), rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("case", OP_TABLE, ids=lambda c: c.name)
def test_jvp_matches_vjp(case, backend):
    """Forward mode (dual numbers) and reverse mode agree: <J v, r> == <v, J^T r>."""
    rng = np.random.default_rng(5)
    xs = case.inputs(rng)
    vs = [rng.standard_normal(x.shape) for x in xs]
    out, tangent = engine.jvp(case.fn, [tensor(x, backend=backend) for x in xs],
                              [tensor(v, backend=backend) for v in vs])
    r = rng.standard_normal(out.shape)
    _, vjp_fn = engine.vjp(case.fn, *[tensor(x, backend=backend) for x in xs])
    grads = vjp_fn(tensor(r, backend=backend))
    lhs = float(np.sum(tangent.numpy() * r))
    rhs = sum(float(np.sum(g.numpy() * v)) for g, v in zip(grads, vs))
    tol = max(1e-9, case.gradcheck.get("rtol", 0.0))  # a row through float32 rounds the tangent too
    assert lhs == pytest.approx(rhs, rel=tol, abs=tol)


def test_gradcheck_catches_a_wrong_rule():
    """A VJP that squares the upstream gradient passes a sum() check but not gradcheck."""
    from engine.ops import Op
    from engine.tensor import apply

    class BadExp(Op):
        name = "bad_exp"

        @staticmethod
        def forward(ctx, a):
            return ctx.backend.unary("exp", a)

        @classmethod
        def vjp(cls, ctx, g):
            return (g * g * ctx.inputs[0].exp(),)

    x = tensor([0.3, -0.2], requires_grad=True)
    # sum() gives upstream 1, so 1*1*exp(x) looks right...
    apply(BadExp, (x,)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp([0.3, -0.2]))
    # ...but a random cotangent exposes it.
    with pytest.raises(engine.GradcheckError, match="worst"):
        engine.gradcheck(lambda t: apply(BadExp, (t,)), [tensor([0.3, -0.2], requires_grad=True)])


def test_float32_with_int64_stays_float32(backend):
    # the engine's promotion rule (dtypes.result_dtype): float32 > int64, on every backend
    # (NumPy's own rule would give float64)
    p = tensor(np.array([0.25, 0.75], dtype=np.float32), backend=backend)
    k = tensor(np.array([1, 2]), dtype="int64", backend=backend)
    assert engine.dtypes.result_dtype(p.dtype, k.dtype) == engine.float32
    for out in (p * k, k - p, p / k, p @ k, engine.where(p > 0.5, p, k), p + np.array([1, 2]),
                engine.binary_cross_entropy(p, np.array([0, 1]))):
        assert out.dtype == engine.float32
    np.testing.assert_allclose((p @ k).item(), 1.75)


def test_numpy_integers_index_like_python_integers(backend):
    a = np.arange(6.0).reshape(2, 3)
    x = tensor(a, requires_grad=True, backend=backend)
    y = x[np.int64(1)] * 2.0 + x[np.int32(0), np.int64(0):]
    np.testing.assert_array_equal(y.numpy(), a[1] * 2.0 + a[0, 0:])
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]])
    with pytest.raises(IndexError, match="unsupported index"):
        x[np.bool_(True)]
    for d in (np.int64(1), np.int32(-1)):  # and as dims
        np.testing.assert_allclose(x.sum(d).numpy(), a.sum(1))
        np.testing.assert_allclose(x.softmax(d).numpy().sum(1), [1.0, 1.0])


def test_integer_unary_ops_keep_integers(backend):
    k = tensor(np.array([-2, 0, 3]), dtype="int64", backend=backend)
    # the same rule on every backend: neg / relu / step (and abs, sign) keep int64, exp and log give float64
    for name, fn, ref in [("neg", lambda t: -t, [2, 0, -3]), ("relu", lambda t: t.relu(), [0, 0, 3]),
                          ("step", engine.ops.step, [0, 0, 1])]:
        out = fn(k)
        assert out.dtype == engine.int64, name
        np.testing.assert_array_equal(out.numpy(), ref)
    assert k.exp().dtype == engine.float64


@pytest.mark.parametrize("data", [3, [3, 1, 3], [[3, 1, 3]], np.array([3, 1]), np.array([3, 1], dtype=np.int32),
                                  np.int64(2)])
def test_integer_data_makes_int64_tensors_as_in_pytorch(data, backend):
    t = tensor(data, backend=backend)
    assert t.dtype == engine.int64
    np.testing.assert_array_equal(t.numpy(), np.asarray(data))
    with pytest.raises(TypeError, match="floating-point"):
        tensor(data, requires_grad=True, backend=backend)
    # mixed or float data stays float64; an explicit dtype wins
    assert tensor([1, 2.5], backend=backend).dtype == engine.float64
    assert tensor(3.0, backend=backend).dtype == engine.float64
    assert tensor(data, dtype="float64", requires_grad=True, backend=backend).dtype == engine.float64


def test_integer_tensors_mix_with_float_tensors(backend):
    x = tensor([0.5, 1.5], requires_grad=True, backend=backend)
    k = tensor([2, 3], backend=backend)
    y = (x * k + k).sum() / tensor(4, backend=backend)
    assert y.dtype == engine.float64
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.5, 0.75])
    # functional transforms and gradcheck take Python integers as float inputs
    assert engine.grad(lambda t: t * t)(3).item() == 6.0
    assert engine.gradcheck(lambda t: t * t, [3]).ok


@pytest.mark.parametrize("shapes", [((3,), (2,)), ((2, 3), (3, 2)), ((4, 1, 3), (2, 2))])
def test_broadcast_mismatch_is_one_error_type_on_every_backend(shapes, backend):
    a = tensor(np.ones(shapes[0]), backend=backend)
    b = tensor(np.ones(shapes[1]), backend=backend)
    for fn in (lambda: a + b, lambda: a * b, lambda: a / b, lambda: a < b, lambda: engine.where(a > 0, a, b)):
        with pytest.raises(engine.BroadcastError, match="cannot be broadcast") as info:
            fn()
        assert isinstance(info.value, ValueError)


def test_broadcast_mismatch_in_a_static_graph_is_the_same_error():
    from engine import static as tf
    g = tf.Graph()
    with g.as_default():
        a, b = tf.placeholder((3,)), tf.placeholder((2,))
        with pytest.raises(engine.BroadcastError, match="cannot be broadcast"):
            a + b


@pytest.mark.parametrize("fill", [-np.inf, np.inf])
def test_logsumexp_of_all_infinite_values_is_that_infinity(fill, backend):
    x = tensor(np.array([[fill, fill, fill], [0.0, 1.0, 1.0], [fill, 0.0, 1.0]]), backend=backend)
    out = x.logsumexp(1).numpy()
    assert out[0] == fill
    assert out[1] == pytest.approx(np.log(1.0 + 2 * np.e))
    assert out[2] == (np.inf if fill > 0 else pytest.approx(np.log(1.0 + np.e)))
    assert tensor(np.full(4, fill), backend=backend).logsumexp().item() == fill


@pytest.mark.parametrize("dim", [None, 0, 1])
def test_max_splits_ties_with_engine_ops_to_any_order(dim, backend):
    """max's VJP: the gradient is shared evenly by tied maxima, computed by engine ops (traced, differentiable)."""
    a = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, -1.0]])
    x = tensor(a, requires_grad=True, backend=backend)
    m = x.amax(dim)
    seen = []
    with engine.trace_ops(lambda op, *_: seen.append(op.name)):
        m.sum().backward(create_graph=True)
    assert {"compare", "cast", "sum", "div"} <= set(seen)  # the tie mask is a graph, not raw kernel calls
    ref = {None: [[0, 0.5, 0.5], [0, 0, 0]], 0: [[0, 1, 1], [1, 0, 0]], 1: [[0, 0.5, 0.5], [0.5, 0.5, 0]]}[dim]
    np.testing.assert_allclose(x.grad.numpy(), ref)
    # second order: h(t) = <grad of sum(max^2), t> = sum 2 max^2, so dh/dt = 4 max at each argmax
    b = a + np.arange(6.0).reshape(2, 3) * 0.01  # no ties
    g2 = engine.grad(lambda t: (engine.grad(lambda u: (u.amax(dim) * u.amax(dim)).sum())(t) * t).sum())(
        tensor(b, backend=backend))
    hit = b == (b.max() if dim is None else b.max(dim, keepdims=True))
    np.testing.assert_allclose(g2.numpy(), np.where(hit, 4 * b, 0.0))


def test_every_primitive_carries_its_own_knowledge():
    """PRIMITIVES is collected from the Op subclasses themselves; each says its VJP in the lecture's
    notation (for display), whether it draws random numbers, and how a replay runs it."""
    from engine.ops import PRIMITIVES, Op
    classes = {v for v in vars(engine.ops).values() if isinstance(v, type) and issubclass(v, Op) and v is not Op}
    defined = {v for v in classes if "name" in vars(v)}
    assert classes - defined == {engine.ops.Unary, engine.ops.Binary}   # the bases that find kernels by name
    assert set(PRIMITIVES) == defined and len(PRIMITIVES) == len(defined)
    for op in PRIMITIVES:
        assert engine.ops.primitive(op.name) is op
        assert isinstance(op.random, bool)
        if op.differentiable:
            assert op.formula and ("=" in op.formula), op.name
        else:
            assert op.formula == "", op.name
    assert {op.name for op in PRIMITIVES if op.random} == {"uniform", "dropout_mask"}
    assert "ȳ" in engine.ops.Exp.formula
    with pytest.raises(KeyError, match="no primitive named 'conv9d'"):
        engine.ops.primitive("conv9d")


def test_compile_replays_with_the_ops_own_kernel_and_random_flag():
    """engine.compile asks each op for its replay kernel and keeps every random op (even a dead one)."""
    from engine import static
    from engine.tensor import apply
    calls = []

    class Twice(engine.ops.Op):
        name = "test_twice"
        formula = "x̄ = 2 ȳ"

        @staticmethod
        def forward(ctx, a):
            return ctx.backend.binary("add", a, a)

        @classmethod
        def kernel(cls, ctx, dtypes=()):
            def run(a):
                calls.append(1)
                return a + a
            return run

    class Noise(engine.ops.Op):
        name = "test_noise"
        random = True
        differentiable = False

        @staticmethod
        def forward(ctx, a):
            return ctx.backend.binary("add", a, ctx.backend.uniform(a.shape, ctx.backend.dtype(a)))

    def step(x):
        apply(Noise, (x,))  # dead, but it draws from the generator: a replay must draw too
        _ = x * 3.0  # dead and not random: dropped
        return apply(Twice, (x,)) * apply(Noise, (x,))

    compiled = static.compile(step)
    x = tensor([1.0, 2.0])
    engine.manual_seed(4)
    eager = [step(x).numpy() for _ in range(3)]
    engine.manual_seed(4)
    replay = [compiled(x).numpy() for _ in range(3)]
    assert all(np.array_equal(a, b) for a, b in zip(eager, replay))
    assert len(calls) == 2  # the two replays ran Twice's own kernel
    assert (compiled.stats.traced_ops, compiled.stats.replayed_ops) == (5, 4)


SCALAR_PROGRAMS = {
    "slide": lambda a, b: a + (1.5 * a + 2.0 * b).exp(),
    "arith": lambda a, b: (a * b - 3.0 / a) / (b + 0.25) - (-a),
    "transcendental": lambda a, b: (a * a + 1.0).log() * (b * 0.5).sigmoid() + a.tanh() / b.exp(),
    "fan_out": lambda a, b: a * a * b + a * (a - b) + 1.0 / (a * b),
}


@pytest.mark.parametrize("name", sorted(SCALAR_PROGRAMS))
def test_scalar_fast_path_gives_the_array_paths_bits(name):
    """0-d float64 tensors run each op's scalar kernel (no backend dispatch): values, gradients and
    second derivatives are bit-identical to the same program on 0-d arrays (the backend's path)."""
    fn = SCALAR_PROGRAMS[name]
    from engine.backends import get_backend
    be = get_backend("numpy")

    def run(make):
        a, b = make(0.7), make(-1.3)
        out = fn(a, b)
        (ga, gb) = engine.grad(lambda u, v: fn(u, v), argnums=(0, 1))(a, b)
        h = engine.grad(lambda u: engine.grad(lambda w: fn(w, b))(u))(a)
        return [out.item(), ga.item(), gb.item(), h.item()], type(out.data)

    fast, fast_type = run(lambda v: tensor(v))
    slow, slow_type = run(lambda v: engine.Tensor._make(np.array(v), be))  # a 0-d array: the backend's path
    assert fast_type is np.float64 and slow_type is np.ndarray
    assert fast == slow  # exact

    def backward(make, watched=False):   # backward(): the rules run raw (on the numbers, or on arrays)
        a, b = make(0.7), make(-1.3)
        a.requires_grad = b.requires_grad = True
        out = fn(a, b)
        if watched:   # a watched pass runs the rules on Tensors (the recorded interpreter)
            with engine.trace_ops(lambda *_: None):
                out.backward()
        else:
            out.backward()
        return [a.grad.item(), b.grad.item()]

    on_numbers = backward(lambda v: tensor(v))
    assert on_numbers == backward(lambda v: engine.Tensor._make(np.array(v), be)) == backward(
        lambda v: tensor(v), watched=True) == fast[1:3]


def test_scalar_fast_path_skips_the_backend_and_keeps_the_graph(monkeypatch):
    from engine.backends.numpy_backend import NumpyBackend
    calls = []
    for method in ("binary", "unary", "array"):
        def counting(self, *args, _real=getattr(NumpyBackend, method), _name=method):
            calls.append(_name)
            return _real(self, *args)
        monkeypatch.setattr(NumpyBackend, method, counting)
    on_numbers = []   # the backward pass runs the rules on the numbers (ops.SCALAR): no Tensor per operation
    monkeypatch.setattr(engine.ops.SCALAR, "mul", lambda u, v: on_numbers.append(type(u)) or u * v)
    x = tensor(1.5, requires_grad=True)
    calls.clear()
    y = x
    for _ in range(50):
        y = (y * 1.01 + 0.5).exp().log() / 1.02 - 0.1
    y.backward()
    assert calls == []  # not one backend call, forward or backward
    assert len(on_numbers) == 100 and set(on_numbers) == {np.float64}   # mul's and exp's rules, 50 times each
    assert len(engine.topological_sort(y)) > 250 and y.op_name == "add"
    ref = 1.5
    deriv = 1.0
    for _ in range(50):
        ref = float(np.log(np.exp(ref * 1.01 + 0.5))) / 1.02 - 0.1
        deriv *= 1.01 / 1.02
    assert y.item() == pytest.approx(ref, rel=1e-12) and x.grad.item() == pytest.approx(deriv, rel=1e-12)
    # tracing (the explorer) and forward mode take the full path, with the same numbers
    seen = []
    with engine.trace_ops(lambda op, *a: seen.append(op.name)):
        z = x * 2.0 + 1.0
    assert seen == ["mul", "add"] and z.item() == 4.0
    _, t = engine.jvp(lambda u: (u * u).exp(), [tensor(0.5)], [tensor(1.0)])
    assert t.item() == pytest.approx(np.exp(0.25))


def test_a_number_operand_stays_a_number_until_asked_for():
    """On the scalar fast path ``y * 1.5`` keeps 1.5 as a number in y's history (as PyTorch keeps a
    scalar operand): no constant tensor per node. ``parents`` (the autodiff protocol) lists the
    tensors only; ``inputs`` makes the constant tensor once, with the bits the eager path gives it."""
    x = tensor(0.7, requires_grad=True)
    for y, where in ((x * 1.5, 1), (1.5 * x, 0), (x / 1.5, 1), (1.5 / x, 0), (x + 1.5, 1), (1.5 + x, 0)):
        assert y.history is y and type(y.operands[where]) is float
        assert y.parents == (x,)
        k = y.inputs[where]
        assert isinstance(k, engine.Tensor) and not k.requires_grad and k.item() == 1.5
        assert y.inputs[where] is k and y.operands[where] is k  # made once, then kept
        assert y.parents == y.inputs  # now a constant tensor, a parent as any constant tensor operand is
    # the same bits, values and gradients as with an explicit constant tensor
    for make in (lambda u: ((u * 1.0000001) / 3.0 + 0.25) * (2.0 / u), ):
        a = tensor(0.7, requires_grad=True)
        b = tensor(0.7, requires_grad=True)
        out_num = make(a)
        c = lambda v: tensor(v)
        out_ten = ((b * c(1.0000001)) / c(3.0) + c(0.25)) * (c(2.0) / b)
        assert out_num.item() == out_ten.item()
        out_num.backward()
        out_ten.backward()
        assert a.grad.item() == b.grad.item()
        # second derivatives through number operands (create_graph records them as numbers too)
        h_num = engine.grad(lambda u: engine.grad(make)(u))(tensor(0.7))
        h_ten = engine.grad(lambda u: engine.grad(lambda w: ((w * c(1.0000001)) / c(3.0) + c(0.25))
                                                  * (c(2.0) / w))(u))(tensor(0.7))
        assert h_num.item() == h_ten.item()


def test_a_node_is_its_own_history_and_a_no_grad_result_keeps_no_inputs():
    x = tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    assert y.history is y and y.history.op.name == "sum" and y.history.inputs[0].history.op.name == "mul"
    assert x.history is None and x.is_leaf() and not y.is_leaf()
    with engine.no_grad():
        z = x * x
    assert z.history is None and z.parents == () and z.inputs == ()
    assert z._a is None and z._b is None  # the inputs are not kept alive by a result without history
    e = x.exp()  # exp's VJP reads its output: the output is the node itself, listed in ``saved``
    assert e.history.saved[-1] is e and e.history.output is e
    from engine.tensor import kept_bytes
    assert kept_bytes(e.sum()) == e.numpy().nbytes


def test_matmul_with_an_inner_dimension_of_one_is_the_outer_product():
    """The NumPy backend computes (m, 1) @ (1, n) (and batched) as a broadcast multiply: the same
    numbers as np.matmul, shape and dtype included, and its gradients too."""
    rng = np.random.default_rng(0)
    for sa, sb, dt in (((5, 1), (1, 7), np.float32), ((3, 4, 1), (1, 6), np.float64), ((2, 3, 1), (2, 1, 4), np.float64)):
        a, b = rng.standard_normal(sa).astype(dt), rng.standard_normal(sb).astype(dt)
        out = engine.tensor(a) @ engine.tensor(b)
        want = np.matmul(a, b)
        assert out.shape == want.shape and out.numpy().dtype == want.dtype
        np.testing.assert_array_equal(out.numpy(), want)
    a = tensor(rng.standard_normal((4, 1)), requires_grad=True)
    b = tensor(rng.standard_normal((1, 3)), requires_grad=True)
    w = rng.standard_normal((4, 3))
    ((a @ b) * tensor(w)).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), w @ b.numpy().T)
    np.testing.assert_allclose(b.grad.numpy(), a.numpy().T @ w)


def test_numpy_expand_is_broadcast_to():
    """The NumPy backend's expand builds broadcast_to's view itself for contiguous arrays (cheaper per call):
    the same shape, strides, values and read-only flag, and broadcast_to's answer everywhere else."""
    from engine.backends import get_backend
    be = get_backend("numpy")
    rng = np.random.default_rng(0)
    cases = [((), (10,)), ((1,), (3, 4)), ((3, 1), (2, 3, 5)), ((2, 3), (2, 3)), ((1, 1), (4, 1)), ((1, 3), (2, 1, 3)),
             ((), ()), ((2, 0), (3, 2, 0))]
    arrays = [(np.asarray(rng.standard_normal(src), np.float32), shape) for src, shape in cases]
    arrays += [(rng.standard_normal((3, 1)).T, (4, 3)), (rng.standard_normal((4, 6))[:, ::2], (2, 4, 3))]  # strided
    for arr, shape in arrays:
        got, want = be.expand(arr, shape), np.broadcast_to(arr, shape)
        assert got.shape == want.shape and got.strides == want.strides and not got.flags.writeable
        np.testing.assert_array_equal(got, want)
    with pytest.raises(Exception, match="cannot expand"):
        be.expand(np.ones((2, 3)), (4, 3))


def test_linear_is_one_node_with_a_bias_and_says_what_is_wrong_with_its_shapes():
    """nn.Linear's x @ Wᵀ + b is one node (PyTorch's addmm); without a bias it is matmul_t, and a bias that
    only broadcasts takes matmul_t and the add. Mismatched shapes raise a ValueError naming them."""
    from engine import functional as F
    from engine import ops
    rng = np.random.default_rng(0)
    x, w = tensor(rng.standard_normal((4, 3))), tensor(rng.standard_normal((2, 3)), requires_grad=True)
    b = tensor(rng.standard_normal(2), requires_grad=True)
    assert F.linear(x, w, b).op.name == "linear" and F.linear(x, w).op.name == "matmul_t"
    assert F.linear(x, w, tensor(rng.standard_normal((4, 1)))).op.name == "add"
    with pytest.raises(ValueError, match=r"linear shape mismatch: \(4, 3\) @ \(3, 2\)ᵀ"):
        ops.linear(x, tensor(rng.standard_normal((3, 2))), b)
    with pytest.raises(ValueError, match=r"bias of shape \(2,\)"):
        ops.linear(x, w, tensor(rng.standard_normal(3)))
    with pytest.raises(ValueError, match="reduction must be"):
        F.binary_cross_entropy(ops.sigmoid(x), np.ones((4, 3)), reduction="max")


# PyTorch's Tensor methods (``torch.Tensor``) named as an op or a row of the op table, with the same meaning
TORCH_TENSOR_METHODS = {
    "abs", "add", "argmax", "contiguous", "cos", "div", "exp", "expand", "log", "log_softmax", "logsumexp",
    "matmul", "max", "mean", "mul", "neg", "permute", "pow", "reciprocal", "relu", "reshape", "sigmoid", "sin",
    "softmax", "sum", "tan", "tanh", "transpose", "view", "where", "clamp",
}
# named alike, another op in PyTorch: its gather / scatter_add / index_add take a dim (ours are rows and
# basic indexing, engine-internal names of embedding lookups and of indexing's VJP)
NOT_PYTORCHS = {"gather", "scatter_add", "index_add"}


def test_every_op_has_its_tensor_method_where_pytorch_has_one():
    from engine.ops import PRIMITIVES
    names = {op.name for op in PRIMITIVES} | {case.name for case in OP_TABLE}
    assert {"tan", "sin", "cos", "exp", "matmul", "sum"} <= names & TORCH_TENSOR_METHODS
    missing = sorted(n for n in names & TORCH_TENSOR_METHODS if not callable(getattr(engine.Tensor, n, None)))
    assert not missing, missing
    torch = pytest.importorskip("torch")   # the list is PyTorch's: check it against PyTorch where installed
    assert all(hasattr(torch.Tensor, n) for n in TORCH_TENSOR_METHODS | NOT_PYTORCHS)
    assert not sorted(n for n in names - TORCH_TENSOR_METHODS - NOT_PYTORCHS if hasattr(torch.Tensor, n))


def test_an_elementwise_declaration_gives_the_function_the_method_and_the_typed_name():
    """``Tan``'s declaration is all there is of tan: engine.tan, x.tan(), its JVP (from its VJP rule), and
    the name typed programs may call."""
    from engine.ops import Tan, typed_functions
    x = tensor([0.1, 0.4, -0.7], requires_grad=True)
    assert engine.tan is engine.ops.tan is Tan.function and engine.Tensor.tan(x).op_name == "tan"
    np.testing.assert_array_equal(x.tan().numpy(), np.tan(x.numpy()))
    _, t = engine.jvp(engine.tan, [x], [tensor([1.0, 1.0, 1.0])])
    np.testing.assert_allclose(t.numpy(), 1 / np.cos(x.numpy()) ** 2, rtol=1e-12)
    d2 = engine.grad(lambda u: engine.grad(lambda v: v.tan())(u))(tensor(0.3))   # (tan)'' = 2 tan / cos²
    assert d2.item() == pytest.approx(2 * np.tan(0.3) / np.cos(0.3) ** 2)
    assert typed_functions()["tan"].fn is engine.tan


def test_a_number_operand_under_the_raw_interpreter_gives_the_recorded_bits():
    """The scalar path keeps ``x * 1.5``'s number as a number; a backward pass seeded with an array (not a
    scalar-path value) runs the rules raw, which make the constant the recorded pass makes."""
    x = tensor(3.0, requires_grad=True)
    z = 2.0 / ((x * 1.5) / 2.5 + 0.5)
    assert type(z.operands[0]) is float
    z.backward(tensor(np.array(2.0)), retain_graph=True)
    raw = x.grad.item()
    x.grad = None
    with engine.trace_ops(lambda *_: None):
        z.backward(tensor(np.array(2.0)))
    assert raw == x.grad.item() == pytest.approx(-2.0 * 2.0 * 0.6 / (3.0 * 0.6 + 0.5) ** 2)
