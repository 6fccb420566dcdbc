"""The Network explorer page's tables and notes, as plain rows (the page only hands them to Streamlit)."""
from __future__ import annotations

from .analysis import fan_out_sum, format_shape
from .recording import Summary, is_zero
from explorer.explain.numbers import count


def note_levels(notes: list[str]) -> list[tuple[str, str]]:
    """Each preset note with how loudly the page shows it: ``"warning"`` for seeded randomness
    (dropout: a re-run differs unless seeded), ``"caption"`` for the rest."""
    return [("warning" if "SEEDED RANDOM" in note else "caption", note) for note in notes]


def inspect_labels(rec) -> dict[int, str]:
    """Node id -> "label (shape) [layer]" for every node but constants (the Inspect picker)."""
    return {n.id: f"{n.label} {format_shape(n.shape)} [{n.layer}]" for n in rec.nodes if n.kind != "constant"}


def _norm(v) -> float:
    if isinstance(v, Summary):
        return v.stats["norm"]
    return float((v ** 2).sum() ** 0.5)


def zero_reason(rec, source: int, target: int, value) -> str:
    """Why a contribution is exactly zero, when the recording shows it: the VJP of a product multiplies
    the adjoint by the *other* factor, so an all-zero factor (an RNN's h0 = 0) sends zero."""
    if value.size and not is_zero(value):
        return ""
    src = rec.node(source)
    # a Linear (x Wᵀ + b) multiplies by the other factor for x and W; its bias receives ȳ summed
    factors = src.parents[:2] if src.op == "linear" else src.parents
    others = [rec.node(p) for p in factors if p != target] if target in factors else []
    zeros = [o.label for o in others if o.value.size and is_zero(o.value)]
    if src.op in ("matmul", "matmul_t", "linear", "mul") and zeros:
        return f"0: the other factor {zeros[0]} is all zeros, and this VJP multiplies by it"
    if src.adjoint is not None and is_zero(src.adjoint):
        return f"0: the adjoint of {src.label} is all zeros"
    return "0"


def fan_out_rows(rec, node_id: int, arrived: int | None = None) -> list[dict]:
    """One row per contribution a fan-out node received (with the backward step that sent it and, for a
    zero contribution, why it is zero), then the sum; only the first ``arrived`` contributions (those the walk
    has sent so far) and their running sum when given."""
    parts = rec.contributions_to(node_id)
    shown = parts if arrived is None else parts[:arrived]
    rows = [{"from": rec.node(c.source).label, "backward step": str(c.step + 1), "‖contribution‖": _norm(c.value),
             "note": zero_reason(rec, c.source, node_id, c.value)} for c in shown]
    if arrived is None or arrived >= len(parts):
        rows.append({"from": "= sum", "backward step": "", "‖contribution‖": _norm(fan_out_sum(rec, node_id).total),
                     "note": ""})
    elif shown:
        rows.append({"from": f"= sum so far ({len(shown)} of {len(parts)})", "backward step": "",
                     "‖contribution‖": _norm(shown[-1].total), "note": ""})
    return rows


def memory_rows(mem) -> list[dict]:
    """The tensors the graph keeps for backward, and which VJPs read them (a tensor none read: why)."""
    return [{"tensor": r.label, "kind": r.kind, "shape": format_shape(r.shape), "bytes": r.nbytes,
             "read by the VJP of": ", ".join(r.read_by) or f"none: {r.unread_because}"} for r in mem.rows]


def memory_caption(mem) -> str:
    """What the memory table shows, in words that agree with its rows: each op keeps what its VJP *may* read;
    when some kept tensor was not read, the caption says so (and why) instead of claiming every one is read."""
    unread = [r for r in mem.rows if not r.read_by]
    head = ("Each op keeps what its VJP may read: its declared saved inputs, and its output where the rule reads "
            "it. The last column shows which VJPs really read each one (traced while they ran).")
    if not unread:
        return head + " Here every kept tensor was read."
    n = len(unread)
    return (head + f" {n} of the {len(mem.rows)} {'was' if n == 1 else 'were'} kept but not read: an op keeps "
            "its inputs for one another's gradients, and the gradient it kept "
            f"{'it' if n == 1 else 'them'} for was not wanted here ({count(mem.unread_bytes)} bytes).")


def gradcheck_rows(check) -> list[dict]:
    """Engine gradient vs central difference at each checked coordinate."""
    return [{"leaf": r.leaf, "index": str(list(r.index)), "engine": r.analytic, "central difference": r.numeric,
             "abs error": r.abs_error, "rel error": r.rel_error} for r in check.rows]


def gradcheck_scope(check, rec) -> str:
    """Which leaves the gradient check visited, in words: every leaf, or (a deep network) a few spread evenly."""
    checked, every = len({r.leaf for r in check.rows}), len(rec.network.leaves())
    if checked >= every:
        return "every leaf"
    return f"{checked} of the {every} leaves, spread evenly from the first layer to the last"


def layer_rows(rec) -> list[dict]:
    """Each layer with its primitive-op count and output shape."""
    return [{"layer": layer.name, "ops": sum(1 for i in layer.nodes if rec.node(i).kind == "op"),
             "output shape": format_shape(rec.node(layer.output).shape)} for layer in rec.layers]
