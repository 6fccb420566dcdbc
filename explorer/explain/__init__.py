"""The explain layer: the engine's own execution as plain data for pictures (no UI code here).

The traversal strategies it animates (bfs_first_touch, path_recursion, recursive_dfs) live in
``engine.strategies`` and are registered by ``import engine``.

parser (typed text -> engine ops), graph + trace (what ran, as events), harness
(random DAGs, strategy comparison), costs (forward vs reverse, finite differences, activation
memory), dual (forward mode step by step), text (tables for the command-line examples).
Pictures (layout, frames, figures, DOT) are drawn from these by the explorer's page kit.
"""
from .graph import Graph, GraphEdge, GraphNode, graph_from_output, plain_value  # noqa: F401
from .numbers import fmt  # noqa: F401
from .parser import (ALLOWED_FUNCTIONS, CostEstimate, ExpressionError, Program, check_deadline, deadline,  # noqa: F401
                     estimate_cost, parse_inputs, parse_program)
from engine.strategies import STRATEGY_NAMES, ContributionLost, WorkLimitExceeded  # noqa: F401
from .trace import (BackwardEvent, ForwardRun, ForwardStep, Trace, bar, gradient_graph,  # noqa: F401
                    record_backward, record_execution, run_forward)
from .trace import record_tensor  # noqa: F401,E402
from .harness import (StrategyRow, deep_chain, doubling_chain_costs, doubling_chain_program, random_dag_tensors,  # noqa: F401,E402,E501
                      random_dag_program, random_tree_program, recursion_demo, strategy_comparison)
from .costs import (HSweep, HSweepRow, JacobianCosts, MemoryReport, activation_memory,  # noqa: F401,E402
                    central_differences, h_sweep, jacobian_costs, op_counts)
