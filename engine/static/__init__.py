"""Static graphs (TensorFlow 1 style) and captured training steps.

Build a graph of placeholders, variables, constants and ops, then run parts of it::

    from engine import static as tf
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder((4, 3), name="x")
        W = tf.Variable(np.ones((3, 2)), name="W")
        b = tf.Variable(np.zeros(2), name="b")
        h = tf.relu(x @ W + b)          # nodes are added; nothing is computed
    tf.Session(g).run(h, {x: data})     # now only the nodes h needs are evaluated

The ops are the eager engine's own (``engine.ops`` primitives and ``engine.functional``
composites): a graph's tensors live on a symbolic backend that records each op instead of
running it. ``compile(step_fn)`` goes the other way: it traces one eager call of a training
step and replays it as a flat program.
"""
from ..functional import (binary_cross_entropy, binary_cross_entropy_with_logits, cross_entropy, dropout,  # noqa: F401
                          linear, log_softmax, mean, mse_loss, softmax, tanh)
from ..ops import (add, div, exp, log, matmul, mul, neg, relu, reshape, sigmoid, sub, sum,  # noqa: F401,A004
                   transpose, where)
from .gradients import GradientDescentOptimizer, gradients  # noqa: F401
from .graph import (KINDS, Graph, Node, NodeCounts, Variable, constant, get_default_graph, placeholder,  # noqa: F401
                    reset_default_graph, tensor_to_node)
from .passes import PassResult, fold_constants, node_count_report, prune  # noqa: F401
from .session import Session, TrainOp, UnfedPlaceholderError, evaluated_names  # noqa: F401
from .symbolic import Abstract, SymbolicBackend, SymbolicValueError  # noqa: F401
from .capture import CaptureError, CompiledStep, TraceStats, compile  # noqa: F401,A004
