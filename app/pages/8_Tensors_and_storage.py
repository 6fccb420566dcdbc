"""A tensor as flat storage read through shape, strides and offset: views that share it, broadcasting's and embedding's backward.

Tensors, storage and views: the engine's flat storage, shape, strides and offset drawn as boxes; permute shares storage, view of non-contiguous data raises the engine's ViewError and contiguous() copies; broadcasting's backward is a sum over the broadcast axes, embedding's a scatter-add; one op timed on every backend.
"""
from __future__ import annotations

import streamlit as st

from explorer import tensors_and_storage as M
from explorer.kit.budget import bounded_cache
from explorer.kit.deeplink import LinkField
from explorer.kit.formatting import nested, num
from explorer.kit.pages import available_backends
from explorer.kit.presentation import small_screen_css, small_screen_look
from explorer.lecture_kit import md_escape, present_css
from explorer.kit.widgets import presentation_toggle, publish_link, show_plot, show_table, start_page

OWN = "(your own chain)"
ctx = start_page(
    "Tensors and storage", "tensors",
    fields={"chain": LinkField("str", M.DEFAULT_CHAIN), "base": LinkField("str", "3x4", choices=tuple(M.BASE_SHAPES)),
            "bshape": LinkField("str", "(2,)", choices=tuple(M.B_SHAPES)), "ids": LinkField("str", "3, 1, 3"),
            "op": LinkField("str", "matmul", choices=tuple(M.BENCH_OPS)), "n": LinkField("int", 32, minimum=1),
            "decl": LinkField("str", "add", choices=tuple(M.SHOWN_DECLARATIONS)),
            "myop": LinkField("str", "softplus", choices=tuple(M.CUSTOM_OPS))},
    defaults={"chain": M.DEFAULT_CHAIN, "base": "3x4", "bshape": "(2,)", "ids": "3, 1, 3", "op": "matmul", "n": 32,
              "decl": "add", "myop": "softplus"})
ns, look = ctx.ns, ctx.look
if look.presenting:
    st.html(present_css(True))
    st.html(small_screen_css())   # labels, captions, code, tables: 16 px or more at 1366 x 768 too
fig_look = small_screen_look(look)   # the storage pictures' text too
for msg in ctx.link_problems:
    st.warning(msg)


@bounded_cache(8 << 20, spinner=None, refuse=M.ChainError)
def cached_chain(text: str, base: str):
    return M.run_chain(text, M.BASE_SHAPES[base])


@bounded_cache(1 << 20, spinner="Checking the op's gradient…")
def cached_custom_op(key: str):
    return M.check_custom_op(key)


@bounded_cache(1 << 20, spinner="Comparing the backends' kernels…")
def cached_agreement(backends: tuple[str, ...]):
    return M.backend_agreement(backends=list(backends))


@bounded_cache(1 << 20, spinner="Timing the op on every backend…")
def cached_timings(op: str, n: int, backends: tuple[str, ...]):
    return M.time_backends(op, n, list(backends))


def _pick_chain():
    choice = st.session_state[ns.key("chain_preset")]
    if choice != OWN:
        st.session_state[ns.key("chain")] = choice
        st.session_state[ns.key("base")] = "3x4"


head = st.columns([3, 1])
with head[1]:
    presentation_toggle()
head[0].markdown("A tensor is a **flat storage** buffer read through a **shape**, **strides** (how far to move in "
                 "storage for +1 along each dimension) and an **offset**: element [i, j] lives at "
                 "`offset + i·strides[0] + j·strides[1]`. Views change only shape, strides and offset.")

# --- storage, shape, strides, offset ----------------------------------------------------------------------
if not look.presenting:  # on a projector the boxes follow the formula above at once
    st.subheader("Storage, shape, strides and offset (the engine's TensorData)")
chain_now = st.session_state[ns.key("chain")]
st.session_state[ns.key("chain_preset")] = chain_now if chain_now in M.CHAIN_PRESETS and \
    st.session_state[ns.key("base")] == "3x4" else OWN
c = st.columns([2, 2, 1])
c[0].selectbox("Example", [OWN, *M.CHAIN_PRESETS], key=ns.key("chain_preset"), on_change=_pick_chain,
               format_func=lambda k: k if k == OWN else f"{k} — {M.CHAIN_PRESETS[k]}")
c[1].text_input("Chain of calls on x", key=ns.key("chain"), max_chars=M.MAX_CHAIN_CHARS,
                help="Start with x; allowed: " + ", ".join(sorted(M.METHODS)) + ", .T and indexing like x[1:, ::2]. "
                     "Nothing is evaluated: the text is read with a whitelist and run as engine calls.")
c[2].selectbox("x's shape", list(M.BASE_SHAPES), key=ns.key("base"),
               format_func=lambda k: str(M.BASE_SHAPES[k]))
chain_text, base = st.session_state[ns.key("chain")], st.session_state[ns.key("base")]
try:
    run = cached_chain(chain_text, base)
except M.ChainError as e:
    st.error(f"**Chain not accepted** — {md_escape(str(e))}", icon=":material/block:")
    run = None
if run is not None:
    show_table(M.chain_rows(run), look, static=True)
    if run.error:
        st.error(f"The engine raised **{md_escape(run.error_type)}** at `{run.error_at}`:\n\n"
                 f"{md_escape(run.error)}", icon=":material/error:")
    last = run.last
    if run.steps:   # the lesson first, above the pictures (under them it was below a projector's first screen)
        st.markdown(M.storage_sentence(last))
    pics = st.columns(2)
    with pics[0]:
        show_plot(M.layout_figure(run.base, fig_look, title=f"x: shape {run.base.shape}, strides {run.base.strides}"),
                  fig_look, key=ns.key("fig_x"), config={"staticPlot": True})
    with pics[1]:
        if run.steps:
            show_plot(M.layout_figure(last, fig_look, title=f"{last.expr}: shape {last.shape}, strides "
                                      f"{last.strides}, offset {last.offset}"),
                      fig_look, key=ns.key("fig_last"), config={"staticPlot": True})
    st.caption(M.picture_caption(run))

# --- broadcasting's backward -------------------------------------------------------------------------------
st.subheader("Broadcasting's backward is a sum over the broadcast axes (exercise 8)")
st.radio("shape of b", list(M.B_SHAPES), key=ns.key("bshape"), horizontal=True)
br = M.broadcast_backward(M.B_SHAPES[st.session_state[ns.key("bshape")]])
axes = M.axes_words(br.summed_axes)
st.markdown(f"y = x + b with x of shape (3, 2) and b of shape {br.b_shape or '()'}: b is stretched along "
            f"{axes} of y. Backward with upstream G: each copy of b sent its share back, so "
            f"b̄ = G summed over {axes} (`sum_to_shape`; the engine ran {', '.join(br.backward_ops)}).")
bc = st.columns(3)
bc[0].markdown("**G = ȳ** (upstream)")
show_table(M.matrix_frame(br.g), look, where=bc[0], static=True, hide_header=True)
bc[1].markdown("**x̄ = G** (same shape, nothing to sum)")
show_table(M.matrix_frame(br.x_grad), look, where=bc[1], static=True, hide_header=True)
bc[2].markdown(f"**b̄** from the engine: `{nested(br.b_grad)}`")
show_table(M.matrix_frame(br.b_grad), look, where=bc[2], static=True, hide_header=True)

# --- embedding's backward ----------------------------------------------------------------------------------
st.subheader("An embedding's backward is a scatter-add (exercise 12)")
e = st.columns([1, 2])
e[0].text_input(f"word ids (0 … {M.VOCAB - 1})", key=ns.key("ids"), max_chars=80)
try:
    ids = M.parse_ids(st.session_state[ns.key("ids")])
except ValueError as err:
    e[0].error(md_escape(str(err)), icon=":material/block:")
    ids = None
if ids is not None:
    er = M.embedding_backward(ids)
    e[1].markdown(f"`nn.Embedding({M.VOCAB}, {M.DIM})` looks up rows {ids} (forward op **{er.forward_op}**). "
                  "Upstream rows: "
                  + ", ".join(f"g{k} = {nested(row)}" for k, row in enumerate(er.upstream))
                  + f". Backward the engine ran **{', '.join(er.backward_ops)}**: every g_k is *added* into the row "
                  "it was read from; a repeated word collects the sum, rows never read get 0.")
    show_table(M.embedding_rows(er), look, where=e[1], static=True)

# --- backends ----------------------------------------------------------------------------------------------
st.subheader("The same op on every backend")
available = available_backends()
b = st.columns([2, 1, 1])
b[0].selectbox("Op", list(M.BENCH_OPS), key=ns.key("op"), format_func=lambda k: M.BENCH_OPS[k][0])
sizes = M.BENCH_OPS[st.session_state[ns.key("op")]][1]
if st.session_state[ns.key("n")] not in sizes:
    st.session_state[ns.key("n")] = sizes[len(sizes) // 2]
b[1].selectbox("n", sizes, key=ns.key("n"))
go_run = b[2].button("Run on every backend", key=ns.key("run"), type="primary", width="stretch")
op, n = st.session_state[ns.key("op")], int(st.session_state[ns.key("n")])
st.caption(f"Backends on this machine: {', '.join(available)}"
           + ("" if "cuda" in available else " (no `cuda`: it needs CuPy and an NVIDIA GPU)")
           + ". `python` runs plain loops over the strided storage; `numpy` calls NumPy; `cuda` runs our own "
             "kernels. Each time includes copying the result back to NumPy; sizes are small so `python` "
             "finishes in about a second.")
if go_run:
    timings = cached_timings(op, n, tuple(available))
    show_table(M.timing_rows(timings), look, static=True)
    st.caption(M.timing_caption(timings, op, n))
if len(available) > 1:
    st.markdown("**Do the backends agree bit for bit?** Each kernel kind on the same data, against `numpy`:")
    agreement = cached_agreement(tuple(available))
    show_table(agreement, look, static=True)
    st.caption(M.backend_note(agreement))

# --- the layer stack ---------------------------------------------------------------------------------------
st.subheader("The layer stack: one Linear call, followed down through the engine")
st.markdown("HW1 and HW2 build MiniTorch in layers, and the engine keeps them: each box is a layer with the "
            "engine's module for it, and in italics what one `nn.Linear(3, 2)` call on a 4 × 3 input did there "
            "just now (the ops traced, the backend's kernel calls counted on the pure-Python backend, the "
            "result's own TensorData).")
show_plot(M.layer_stack_figure(M.layer_walk(), look), look, key=ns.key("layer_stack"))

# --- how an op is defined ----------------------------------------------------------------------------------
st.subheader("How an op is defined: forward and backward side by side (slide 42)")
st.markdown("The Function layer above is a list of declarations in `engine/ops.py`, one class per primitive: "
            "its forward runs the backend's kernel, its `vjp` is the backward rule (ȳ in, one x̄ per input out), "
            "written with the small set of operations `k` that the backward pass interprets. The source below is "
            "read from the engine itself with `inspect.getsource`.")
decl = st.radio("Declaration", list(M.SHOWN_DECLARATIONS), key=ns.key("decl"), horizontal=True)
src = M.declaration_source(M.SHOWN_DECLARATIONS[decl])
fwd_col, bwd_col = st.columns(2)
fwd_col.markdown(f"**Forward** (`{src.forward_owner}.forward`)")
fwd_col.code(src.forward, language="python")
bwd_col.markdown("**Backward** (`vjp`)")
bwd_col.code(src.backward, language="python")
with st.expander(f"The whole declaration of `{decl}`"):
    st.code(src.whole, language="python")

st.markdown("**Add your own op.** Each op below is declared here the engine's way (an `Op` class: forward on "
            "the backend's kernels, `vjp` with `k`), applied with `engine.tensor.apply`, and kept out of the "
            "engine's registry, so no other session sees it. Its gradient is checked in float64 against "
            "central differences, and against PyTorch where it is installed.")
myop = st.selectbox("Your op", list(M.CUSTOM_OPS), key=ns.key("myop"), format_func=lambda k: M.CUSTOM_OPS[k][1])
mine = cached_custom_op(myop)
st.code(mine.source, language="python")
show_table(M.custom_op_rows(mine), look, static=True)
verdict = (f"max |autodiff − central difference| = {num(mine.max_error, 3)}"
           + (f"; max |autodiff − PyTorch| = {num(mine.torch_error, 3)}" if mine.torch_error is not None else ""))
if mine.ok:
    st.success(f"Gradient check passed: {verdict}.", icon=":material/check_circle:")
else:
    st.error(f"Gradient check failed: {verdict}. The backward rule does not match the forward.",
             icon=":material/cancel:")
if mine.torch_note:
    st.caption(md_escape(mine.torch_note))

publish_link(ctx, {"chain": chain_text, "base": base, "bshape": st.session_state[ns.key("bshape")],
                   "ids": st.session_state[ns.key("ids")], "op": op, "n": n, "decl": decl, "myop": myop})
