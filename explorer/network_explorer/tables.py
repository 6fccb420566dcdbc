"""The Network explorer page's tables and notes, as plain rows (the page only hands them to Streamlit)."""
from __future__ import annotations

from .analysis import fan_out_sum, format_shape


def note_levels(notes: list[str]) -> list[tuple[str, str]]:
    """Each preset note with how loudly the page shows it: ``"warning"`` for seeded randomness
    (dropout: a re-run differs unless seeded), ``"caption"`` for the rest."""
    return [("warning" if "SEEDED RANDOM" in note else "caption", note) for note in notes]


def inspect_labels(rec) -> dict[int, str]:
    """Node id -> "label (shape) [layer]" for every node but constants (the Inspect picker)."""
    return {n.id: f"{n.label} {format_shape(n.shape)} [{n.layer}]" for n in rec.nodes if n.kind != "constant"}


def _norm(v) -> float:
    return float((v ** 2).sum() ** 0.5)


def fan_out_rows(rec, node_id: int) -> list[dict]:
    """One row per contribution a fan-out node received (with the backward step that sent it), then the sum."""
    fs = fan_out_sum(rec, node_id)
    rows = [{"from": src, "backward step": str(stp + 1), "‖contribution‖": _norm(v)} for src, stp, v in fs.parts]
    rows.append({"from": "= sum", "backward step": "", "‖contribution‖": _norm(fs.total)})
    return rows


def memory_rows(mem) -> list[dict]:
    """The tensors the graph keeps for backward, and which VJPs read them."""
    return [{"tensor": r.label, "kind": r.kind, "shape": format_shape(r.shape), "bytes": r.nbytes,
             "read by VJP of": ", ".join(r.read_by) or "— (not read)"} for r in mem.rows]


def gradcheck_rows(check) -> list[dict]:
    """Engine gradient vs central difference at each checked coordinate."""
    return [{"leaf": r.leaf, "index": str(list(r.index)), "engine": r.analytic, "central difference": r.numeric,
             "abs error": r.abs_error, "rel error": r.rel_error} for r in check.rows]


def layer_rows(rec) -> list[dict]:
    """Each layer with its primitive-op count and output shape."""
    return [{"layer": layer.name, "ops": sum(1 for i in layer.nodes if rec.node(i).kind == "op"),
             "output shape": format_shape(rec.node(layer.output).shape)} for layer in rec.layers]
