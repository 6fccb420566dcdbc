"""The graphs a student's ``topological_sort`` / ``backpropagate`` are run on, built by the engine.

Plain engine code (no Streamlit, no student code): the sandboxed child builds these graphs to hand them
to the student's functions, and the app builds the very same ones (same programs, same node ids) to
compute the correct order and adjoints with the engine itself.
"""
from __future__ import annotations

from dataclasses import dataclass
from engine import Tensor
from explorer.explain import harness
from explorer.explain.trace import ForwardRun, run_forward
from explorer.explain.numbers import count, plain


@dataclass(frozen=True)
class GraphSpec:
    """One graph of the catalogue: ``key`` (stable, used in links), a title, and a program with its inputs
    (None for graphs the engine builds directly: the deep chain)."""
    key: str
    title: str
    program: str | None = None
    inputs: str | None = None
    family: str = "lecture"      # 'lecture' | 'random' | 'deep' | 'doubling'


@dataclass
class BuiltGraph:
    """A graph as the engine built it: output, leaves by name, and node id / name for every tensor
    (``node_of``: Tensor.unique_id -> node id; ``names``: node id -> name; ``kinds``: node id ->
    'input' | 'constant' | 'op'). ``parents``: node id -> parent node ids (constants included), in the
    order ``Tensor.parents`` lists them."""
    spec: GraphSpec
    output: Tensor
    leaves: dict[str, Tensor]
    node_of: dict[int, int]
    names: dict[int, str]
    kinds: dict[int, str]
    parents: dict[int, list[int]]
    forward: ForwardRun | None = None


SLIDE = GraphSpec("slide", "Slide example: x7 = x1 + exp(1.5·x1 + 2·x2)",
                  "x3 = 1.5 * x1\nx4 = 2 * x2\nx5 = x3 + x4\nx6 = exp(x5)\nx7 = x1 + x6", "x1 = 3, x2 = 0.5")
CUBE = GraphSpec("cube", "x·x·x", "f = x * x * x", "x = 2")
CONSTANT = GraphSpec("constant", "A constant: f = x1 − 5", "f = x1 - 5", "x1 = 3")
DIAMOND = GraphSpec("diamond", "A diamond: a = 2x feeds b = exp(a) and c = a·a, f = b + c",
                    "a = 2 * x\nb = exp(a)\nc = a * a\nf = b + c", "x = 0.5")
AFFINE = GraphSpec("affine", "W @ x + b (tensors)", "y = W @ x + b\nf = sum(tanh(y))",
                   "W = [[1, 2, 0.5], [-1, 0, 3]], x = [0.5, -1, 2], b = [0.1, -0.2]")
LECTURE_GRAPHS: tuple[GraphSpec, ...] = (SLIDE, CUBE, CONSTANT, DIAMOND, AFFINE)

N_RANDOM = harness.RANDOM_GRAPHS   # random DAGs: the lecture's statistic, the same graphs as Backprop orders
RANDOM_OPS = harness.RANDOM_OPS    # ops per random DAG (Backprop orders' default)
DEEP_CHAIN_DEPTH = 3000   # the notes' chain h <- h * 1.0002
DOUBLING_DEPTHS = tuple(range(1, 11))   # v_k = v_{k-1} * v_{k-1}: 2^k paths (path recursion: 2^k - 1 VJPs)


def random_spec(i: int) -> GraphSpec:
    text, inputs = harness.random_dag_program(RANDOM_OPS, i)
    return GraphSpec(f"random-{i}", f"Random graph #{i}", text, ", ".join(f"{k} = {v}" for k, v in inputs.items()),
                     "random")


def doubling_spec(depth: int) -> GraphSpec:
    text, inputs = harness.doubling_chain_program(depth)
    return GraphSpec(f"doubling-{depth}", f"Doubling chain, depth {depth}", text,
                     ", ".join(f"{k} = {v}" for k, v in inputs.items()), "doubling")


DEEP = GraphSpec("deep", f"The notes' {count(DEEP_CHAIN_DEPTH)}-deep chain h ← h·1.0002", family="deep")


def spec_for(key: str) -> GraphSpec:
    """The catalogue entry with this key (``slide``, ``random-17``, ``doubling-4``, ``deep``, ...).

    Raises:
        KeyError: an unknown key.
    """
    for s in LECTURE_GRAPHS + (DEEP,):
        if s.key == key:
            return s
    family, _, n = key.partition("-")
    if n.isdigit():
        if family == "random" and int(n) < N_RANDOM:
            return random_spec(int(n))
        if family == "doubling" and int(n) in DOUBLING_DEPTHS:
            return doubling_spec(int(n))
    raise KeyError(f"no graph {key!r}")


def all_keys(n_random: int = N_RANDOM) -> list[str]:
    """Every graph's key, in the order a report lists them."""
    return ([s.key for s in LECTURE_GRAPHS] + [f"random-{i}" for i in range(n_random)] + ["deep"]
            + [f"doubling-{d}" for d in DOUBLING_DEPTHS])


def build(spec: GraphSpec) -> BuiltGraph:
    """Build ``spec`` with the engine: fresh leaves, forward pass run, nothing backpropagated yet."""
    if spec.program is None:
        return _deep_chain(spec)
    fw = run_forward(spec.program, spec.inputs)
    names = {n.id: n.name for n in fw.graph.nodes}
    kinds = {n.id: n.kind for n in fw.graph.nodes}
    node_of = dict(fw.id_of)
    parents = {nid: [node_of[p.unique_id] for p in t.parents] for nid, t in fw.tensor_of.items()}
    return BuiltGraph(spec, fw.output, dict(fw.leaves), node_of, names, kinds, parents, fw)


def _deep_chain(spec: GraphSpec) -> BuiltGraph:
    out, x = harness.deep_chain(DEEP_CHAIN_DEPTH)
    chain = []
    t = out
    while not t.is_leaf():
        chain.append(t)
        t = next(p for p in t.parents if not p.is_constant())
    chain.append(t)
    chain.reverse()                       # x1, h1, ..., h3000; then each op's constant factor
    node_of = {t.unique_id: k for k, t in enumerate(chain)}
    names = {k: ("x1" if k == 0 else f"h{k}") for k in range(len(chain))}
    kinds = {k: ("input" if k == 0 else "op") for k in range(len(chain))}
    parents: dict[int, list[int]] = {}
    for k, t in enumerate(chain):
        parents[k] = []
        for p in t.parents:
            if p.unique_id not in node_of:
                c = node_of[p.unique_id] = len(names)
                names[c], kinds[c], parents[c] = plain(p.item()), "constant", []
            parents[k].append(node_of[p.unique_id])
    return BuiltGraph(spec, out, {"x1": x}, node_of, names, kinds, parents)
