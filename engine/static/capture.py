"""Capture and replay: write a training step eagerly, run it as a graph.

``compile(step_fn, optimizer=opt)`` runs ``step_fn`` once, eagerly, under ``engine.trace_ops``:
every primitive that runs (forward, the backward pass's VJP ops, the accumulation into ``.grad``)
is recorded with its inputs, parameters and output. The trace becomes a flat program over array
slots; later calls replay it on new inputs, running each op's kernel on raw backend arrays: no
Tensor objects, no history, no autodiff traversal, no op dispatch. The real optimizer then steps
with the replayed gradients, so its state continues as in eager mode. Random ops are replayed too,
drawing from the backend's generator as eager mode would.

Replays are bit-identical to eager mode: the same kernels run on the same arrays in the same
order. Like every tracing compiler (``torch.jit.trace``, ``jax.jit``) the program is specialised
to the traced call: Python control flow is frozen, tensors made from numbers inside the step are
constants, and a call with other input shapes or dtypes is traced anew.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from .. import ops
from ..tensor import History, Op, Tensor, is_grad_enabled, next_unique_id, tensor, trace_ops
from .session import flatten


class CaptureError(RuntimeError):
    """The step function did something a trace cannot replay faithfully."""


@dataclass
class TraceStats:
    """What a capture recorded and what the replay program keeps."""

    traced_ops: int
    replayed_ops: int
    leaves: int
    capture_seconds: float


class _Program:
    """A straight-line list of (kernel, input slot a, input slot b, output slot) over an environment
    of arrays (b < 0: one input; a < 0 too: none; a == -2: the kernel reads its inputs from env)."""

    __slots__ = ("n_slots", "leaf_loads", "input_slots", "instrs", "grad_slots", "out_slots", "rebuild",
                 "backend", "stats", "kept", "meta")

    def run(self, arrays: Sequence[Any]) -> list:
        env: list = [None] * self.n_slots
        for slot, t in self.leaf_loads:
            env[slot] = t._data
        for slot, a in zip(self.input_slots, arrays):
            env[slot] = a
        _execute(self.instrs, env)
        return env


def _execute(instrs, env) -> None:
    for fn, a, b, out in instrs:
        if b >= 0:
            env[out] = fn(env[a], env[b])
        elif a >= 0:
            env[out] = fn(env[a])
        elif a == -1:
            env[out] = fn()
        else:
            env[out] = fn(env)


def _instruction(fn: Callable, ins: tuple, out: int) -> tuple:
    if len(ins) == 2:
        return fn, ins[0], ins[1], out
    if len(ins) == 1:
        return fn, ins[0], -1, out
    if not ins:
        return fn, -1, -1, out
    return (lambda env: fn(*[env[i] for i in ins])), -2, -1, out


class CompiledStep:
    """A traced step function; call it like the original (see :func:`compile`)."""

    def __init__(self, step_fn: Callable, optimizer=None, optimize: bool = True):
        self.step_fn = step_fn
        self.optimizer = optimizer
        self.optimize = optimize
        self._programs: dict[tuple, _Program] = {}
        self.last_program: _Program | None = None

    def __call__(self, *args):
        args = tuple(tensor(a) if isinstance(a, np.ndarray) else a for a in args)
        sig = _signature(args)
        prog = self._programs.get(sig)
        if prog is None:
            prog, result = self._capture(args)
            self._programs[sig] = prog
            self.last_program = prog
            return result
        self.last_program = prog
        env = prog.run([a._data for a in args if isinstance(a, Tensor)])
        be = prog.backend
        outs = [Tensor._make(_as_array(env[s]), be) for s in prog.out_slots]
        if self.optimizer is not None:
            for p, slot in prog.grad_slots:
                g = env[slot]
                p.grad = Tensor._make(g if type(g) is np.ndarray else _as_array(g), be)
            del env  # the step's intermediates go before the update allocates (NumPy reuses their memory)
            self.optimizer.step()
        return prog.rebuild(outs)

    @property
    def stats(self) -> TraceStats | None:
        return self.last_program.stats if self.last_program is not None else None

    def to_graph(self):
        """The last captured program as a static :class:`~engine.static.Graph` (to draw, count or run).

        Inputs become placeholders (``input0``, ...), parameters (leaves requiring grad) variables
        holding their current values, other leaves constants, and every replayed op an op node;
        ops that ran with gradients disabled (the backward pass) get the ``gradient`` role.
        ``graph.outputs`` lists the nodes the step returns, ``graph.gradients`` maps ``id(param)``
        to the node of its gradient.
        """
        from .graph import Graph, Node, VariableState
        prog = self.last_program
        if prog is None:
            raise RuntimeError("nothing captured yet: call the compiled step once first")
        g = Graph(backend=prog.backend, name="captured")
        node_of: dict[int, Node] = {}
        for s in prog.input_slots:
            shape, dtype, name = prog.meta[s]
            node_of[s] = g._append(Node(g, "placeholder", g._unique(name), shape, dtype))
        for s, t in prog.leaf_loads:
            shape, dtype, name = prog.meta[s]
            kind = "variable" if t.requires_grad else "constant"
            node = Node(g, kind, g._unique(name or ("param" if kind == "variable" else "Const")), shape, dtype)
            if kind == "variable":
                node.state, node.trainable = VariableState(t._data), True
            else:
                node.value = t._data
            node_of[s] = g._append(node)
        for op, params, in_slots, out in prog.kept:
            shape, dtype, role = prog.meta[out]
            node = Node(g, "op", g._unique(op.name), shape, dtype, [node_of[i] for i in in_slots], op, params, role)
            node.run_ctx = History(op, (), params, prog.backend)
            node_of[out] = g._append(node)
        g.outputs = [node_of[s] for s in prog.out_slots]
        g.gradients = {id(p): node_of[s] for p, s in prog.grad_slots}
        return g

    # --- capture ----------------------------------------------------------------------------------
    def _capture(self, args: tuple):
        records: list[tuple] = []

        def hook(op, inputs, params, out):
            records.append((op, inputs, tuple(t._data for t in inputs), params, out, is_grad_enabled()))

        t0 = time.perf_counter()
        first_new_id = next_unique_id()  # leaves made by the step itself (constants) get larger ids
        with trace_ops(hook):
            result = self.step_fn(*args)
        elapsed = time.perf_counter() - t0

        slot_of: dict[int, int] = {}   # tensor unique_id -> slot
        # a tensor no traced op produced may still hold a traced array: an input's, or an op output's
        # behind .detach() (logsumexp's max): by array identity it reads that slot, not a frozen copy
        slot_of_array: dict[int, int] = {}
        meta: dict[int, tuple] = {}     # slot -> (shape, dtype, name or role)
        prog = _Program()
        prog.input_slots = []
        for a in args:
            if isinstance(a, Tensor):
                n = len(prog.input_slots)
                slot_of[a.unique_id] = slot_of_array[id(a._data)] = n
                meta[n] = (a.shape, a.dtype, f"input{n}")
                prog.input_slots.append(n)
        n = len(prog.input_slots)
        leaf_loads: list[tuple[int, Tensor]] = []
        backend = None
        raw: list[tuple] = []
        outputs: list[Tensor] = []
        changed: list[Tensor] = []
        for op, inputs, arrays, params, out, grad_mode in records:
            in_slots = []
            for t, arr in zip(inputs, arrays):
                s = slot_of.get(t.unique_id)
                if s is None:
                    s = slot_of_array.get(id(arr))
                    if s is None:  # a leaf: parameter, buffer or constant; read live on each replay
                        s = n
                        n += 1
                        leaf_loads.append((s, t))
                        meta[s] = (t.shape, t.dtype, t.name)
                        if t._data is not arr:
                            changed.append(t)
                    slot_of[t.unique_id] = s
                in_slots.append(s)
            slot_of[out.unique_id] = n
            slot_of_array.setdefault(id(out._data), n)
            meta[n] = (out.shape, out.dtype, "forward" if grad_mode else "gradient")
            raw.append((op, params, tuple(in_slots), n))
            outputs.append(out)
            backend = out.backend
            n += 1
        if backend is None:
            raise CaptureError("the step function ran no engine ops: nothing to compile")

        out_tensors, rebuild = _flatten_result(result)
        out_slots = []
        for t in out_tensors:
            s = slot_of.get(t.unique_id, slot_of_array.get(id(t._data)))
            if s is None:
                raise CaptureError("the step returned a tensor that no traced op produced")
            out_slots.append(s)
        grad_slots = []
        if self.optimizer is not None:
            for p in self.optimizer.params:
                if p.grad is None:
                    continue
                s = slot_of.get(p.grad.unique_id)
                if s is None:
                    raise CaptureError("a parameter's .grad was not produced by a traced op")
                grad_slots.append((p, s))
        # every leaf the step changed must be a parameter of the optimizer (which replay re-applies)
        owned = {id(p) for p in self.optimizer.params} if self.optimizer is not None else set()
        foreign = [t for t in changed if id(t) not in owned]
        if foreign:
            raise CaptureError(f"the step changed {len(foreign)} tensor(s) outside traced ops (an optimizer "
                               "step?): pass that optimizer to compile(step_fn, optimizer=...)")
        if self.optimizer is not None and grad_slots and not changed:
            raise CaptureError("the step did not call optimizer.step(); compile() re-applies the "
                               "optimizer after each replay, so the step function must call it once")

        program = raw
        if self.optimize:
            step_constants = {s for s, t in leaf_loads if t.unique_id >= first_new_id}
            program, alias, folded = _simplify(raw, outputs, meta, step_constants)
            leaf_loads += folded
            out_slots = [alias.get(s, s) for s in out_slots]
            grad_slots = [(p, alias.get(s, s)) for p, s in grad_slots]
        needed = set(out_slots) | {s for _, s in grad_slots}
        instrs = []
        for op, params, in_slots, out in reversed(program):
            # random ops are always kept, in order: a replay draws from the generator as eager mode does
            if not self.optimize or out in needed or op.random:
                needed.update(in_slots)
                instrs.append((op, params, in_slots, out))
        instrs.reverse()
        # each op's own replay kernel (NumPy: the ufunc itself); optimize=False replays every op's forward
        kernels = [_replay_kernel(op, params, backend, tuple(meta[s][1] for s in in_slots), self.optimize)
                   for op, params, in_slots, out in instrs]
        prog.instrs = [_instruction(fn, in_slots, out) for fn, (_, _, in_slots, out) in zip(kernels, instrs)]
        prog.leaf_loads = [(s, t) for s, t in leaf_loads if s in needed]
        prog.n_slots = n
        prog.grad_slots = grad_slots
        prog.out_slots = out_slots
        prog.rebuild = rebuild
        prog.backend = backend
        prog.kept = instrs
        prog.meta = meta
        prog.stats = TraceStats(len(raw), len(prog.instrs), len(prog.leaf_loads), elapsed)
        return prog, result


def _simplify(raw: list, outputs: list, meta: dict, constants: set) -> tuple[list, dict, list]:
    """Rewrites that change no bit of any result, applied to the traced program in order:

    * an op whose inputs are all constants made by the step itself (the backward seed times the
      mean's 1/n, ...) becomes a constant: its traced output, loaded like a leaf;
    * a permute undoing the permute that produced its input (a transposed weight's gradient turned
      back) becomes an alias of that permute's input;
    * a reshape dropping the kept dims of a keepdim sum becomes that sum without keepdim.

    Returns the new program, the slot aliases and the folded constants as leaf loads.
    """
    alias: dict[int, int] = {}
    producer: dict[int, tuple] = {}
    folded: list[tuple[int, Tensor]] = []
    out_program = []
    constants = set(constants)
    for (op, params, in_slots, out), out_tensor in zip(raw, outputs):
        in_slots = tuple(alias.get(s, s) for s in in_slots)
        if in_slots and not op.random and all(s in constants for s in in_slots):
            constants.add(out)
            folded.append((out, out_tensor))
            continue
        src = producer.get(in_slots[0]) if in_slots else None
        if op is ops.Permute and src is not None and src[0] is ops.Permute:
            if tuple(src[1][j] for j in params) == tuple(range(len(params))):
                alias[out] = src[2][0]
                continue
        if op is ops.Reshape and src is not None and src[0] is ops.Sum and src[1][1]:
            dims = src[1][0]
            shape = meta[src[2][0]][0]
            if tuple(params) == tuple(s for i, s in enumerate(shape) if i not in dims):
                op, params, in_slots = ops.Sum, (dims, False), src[2]
        producer[out] = (op, params, in_slots)
        out_program.append((op, params, in_slots, out))
    return out_program, alias, folded


def _replay_kernel(op: type[Op], params, backend, dtypes: tuple, direct: bool) -> Callable:
    ctx = History(op, (), params, backend)
    return op.kernel(ctx, dtypes) if direct else Op.kernel.__func__(op, ctx, dtypes)


def _as_array(a):
    return a if isinstance(a, np.ndarray) or not isinstance(a, np.generic) else np.asarray(a)


def _signature(args: tuple) -> tuple:
    return tuple((a.backend.name, a.shape, a.dtype.name) if isinstance(a, Tensor) else ("py", a) for a in args)


def _flatten_result(result):
    if result is None:
        return [], lambda ts: None
    tensors, rebuild = flatten(result)
    if not all(isinstance(t, Tensor) for t in tensors):
        raise CaptureError(f"a compiled step may return a tensor, or lists / tuples / dicts of tensors, not "
                           f"this {type(result).__name__}")
    return tensors, rebuild


def compile(step_fn: Callable, optimizer=None, optimize: bool = True) -> CompiledStep:  # noqa: A001
    """Trace ``step_fn`` on its first call; replay the trace on later calls with inputs of the same shapes
    and dtypes (others trigger a new trace).

    Args:
        step_fn: a function of tensors (NumPy arrays become tensors), typically forward +
            ``loss.backward()`` + ``optimizer.step()``, returning the tensors to hand back (the loss).
        optimizer: the optimizer the step calls; its update is applied after each replay with the
            replayed gradients (required when the step updates parameters).
        optimize: simplify the program (``_simplify``), drop ops whose results nothing uses (random ops
            are kept) and call each op's own replay kernel (``Op.kernel``); ``False`` replays every
            traced op through its ``forward``.

    Raises:
        CaptureError: the step cannot be replayed faithfully.
    """
    return CompiledStep(step_fn, optimizer=optimizer, optimize=optimize)
