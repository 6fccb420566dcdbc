"""Autodiff Explorer's engine: tensors, reverse and forward mode, nn, optim, backends.

>>> from engine import tensor
>>> x1 = tensor(3.0, requires_grad=True); x2 = tensor(0.5, requires_grad=True)
>>> f = x1 + (1.5 * x1 + 2.0 * x2).exp()
>>> f.backward()
"""
from . import autodiff, backends, checkpoint, functional, nn, ops, optim, strategies  # noqa: F401
from .api import (GradcheckError, GradcheckReport, full, grad, gradcheck, jvp, manual_seed, ones, randn,  # noqa: F401
                  vjp, zeros)
from .autodiff import backpropagate, topological_sort  # noqa: F401
from .backends import BackendUnavailable, available as available_backends  # noqa: F401
from .dtypes import DType, bool_, float32, float64, int64  # noqa: F401
from .functional import (MaxResult, amax, binary_cross_entropy, binary_cross_entropy_with_logits,  # noqa: F401
                         cross_entropy, dropout, linear, log_softmax, logsumexp, mean, softmax, tanh)
from .functional import max as max  # noqa: F401,A004  (PyTorch's: values and indices with a dim)
from .ops import matmul, where  # noqa: F401
from .ops import sum as sum  # noqa: F401,A004
from .tensor import (GraphReleasedError, OpRun, Recording, Tensor, is_grad_enabled, no_grad,  # noqa: F401
                     recording, set_grad_enabled, tensor, trace_ops)
from .tensor_data import BroadcastError  # noqa: F401

__all__ = [
    "Tensor", "tensor", "GraphReleasedError", "no_grad", "set_grad_enabled", "is_grad_enabled", "trace_ops",
    "recording", "Recording", "OpRun",
    "float32", "float64", "int64", "bool_", "DType",
    "grad", "vjp", "jvp", "gradcheck", "GradcheckError", "GradcheckReport",
    "zeros", "ones", "full", "randn", "manual_seed",
    "backpropagate", "topological_sort", "available_backends", "BackendUnavailable", "BroadcastError",
    "tanh", "matmul", "where", "sum", "max", "amax", "MaxResult", "mean", "softmax",
    "log_softmax",
    "logsumexp", "linear", "dropout", "binary_cross_entropy", "binary_cross_entropy_with_logits", "cross_entropy",
    "autodiff", "backends", "checkpoint", "functional", "nn", "ops", "optim",
]

# each elementwise primitive's public function (engine.exp, engine.sin, engine.tan, ...), from its declaration
_ELEMENTWISE = {op.name: op.function for op in ops.PRIMITIVES if issubclass(op, ops.Unary) and op.tensor_method}
globals().update(_ELEMENTWISE)
__all__ += list(_ELEMENTWISE)

# static graphs and captured steps (engine.static builds on everything above)
from . import static  # noqa: E402
from .static import compile  # noqa: E402,A004  (engine.compile(step_fn): capture once, replay)

__all__ += ["static", "compile"]
