"""The layer stack (Tensors and storage): nn/optim -> Tensor -> Function -> backend ops -> TensorData, each with the
engine's module, and what one nn.Linear call did at each layer, measured."""
from __future__ import annotations

import importlib
from pathlib import Path

from explorer import tensors_and_storage as M
from explorer.kit.presentation import NORMAL, PRESENTING

ROOT = Path(__file__).resolve().parents[1]


def test_every_layer_names_a_module_that_exists_and_the_class_it_describes():
    assert [layer for layer, _, _ in M.LAYERS] == ["nn / optim", "Tensor", "Function (ops)", "backend ops",
                                                     "TensorData"]
    for layer, modules, what in M.LAYERS:
        for path in (m.strip() for m in modules.split(",")):
            assert (ROOT / path).exists(), path
        first_class = what.split(":")[0].split(",")[0].strip()
        module = {"Module": "engine.nn", "Tensor": "engine.tensor", "Op": "engine.tensor",
                  "Backend": "engine.backends.base", "TensorData": "engine.tensor_data"}[first_class]
        assert hasattr(importlib.import_module(module), first_class)


def test_one_linear_call_is_one_op_three_kernel_calls_and_a_fresh_contiguous_storage():
    w = M.layer_walk()
    assert w.ops == ("linear",) and w.tensors_made == 1        # fused: one node
    assert w.kernel_calls == {"permute": 1, "matmul": 1, "binary": 1}   # Wᵀ as a view, x @ Wᵀ, + b
    assert w.out_shape == (4, 2) and w.out_strides == (2, 1) and w.out_storage == 8
    lines = w.per_layer()
    assert len(lines) == len(M.LAYERS) and "binary ×1, matmul ×1, permute ×1" in lines[3]


def test_the_figure_draws_each_layer_escaped_at_the_looks_size():
    w = M.layer_walk()
    for look in (NORMAL, PRESENTING):
        fig = M.layer_stack_figure(w, look)
        texts = [a.text for a in fig.layout.annotations if a.text]
        for layer, module, _ in M.LAYERS:
            assert any(f"<b>{layer}</b>" in t and module in t for t in texts), layer
        assert any("strides (2, 1)" in t for t in texts)
        assert len(fig.layout.shapes) == len(M.LAYERS)
        assert {a.font.size for a in fig.layout.annotations if a.text and "<b>" in a.text} == {look.figure_font}


def test_the_page_draws_the_stack():
    from tests.test_app_pages import no_exceptions, page
    at = page("8_Tensors_and_storage.py").run()
    no_exceptions(at)
    assert any(s.value.startswith("The layer stack") for s in at.subheader)
    import json
    specs = [json.loads(el.proto.spec) for el in at.get("plotly_chart")]
    assert any(any("engine/tensor_data.py" in (a.get("text") or "") for a in s["layout"].get("annotations", []))
               for s in specs)
