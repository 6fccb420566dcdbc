"""The lecture's opening line, loss = CrossEntropyLoss()(logits, labels), built from the engine's ops: its gradient softmax − one-hot, and why the loss takes logits.

The lecture's opening example: loss = CrossEntropyLoss()(logits, labels); loss.backward() built from the engine's ops (log_softmax, then the label's negative log-likelihood), its gradient softmax − one-hot checked, why the loss takes logits (naive softmax-then-log overflows, log_softmax does not), and slide 7's two questions answered by the pages that show them.
"""
from __future__ import annotations

import streamlit as st

from explorer import cross_entropy as C
from explorer.kit.budget import bounded_cache
from explorer.kit.deeplink import LinkField
from explorer.kit.labels import num
from explorer.kit.presentation import small_screen_css
from explorer.lecture_kit import md_escape, present_css
from explorer.kit.widgets import fixed_figure, presentation_toggle, publish_link, screen_break, show_table, start_page
from explorer.kit.formatting import fixed, sci

ctx = start_page("Cross-entropy on logits", "xent",
                 fields={"dtype": LinkField("str", "float64", choices=("float64", "float32"))},
                 defaults={"dtype": "float64"})
ns, look = ctx.ns, ctx.look
if look.presenting:
    st.html(present_css(True))
    st.html(small_screen_css())   # captions, code, tables: 16 px or more at 1366 x 768 too
for msg in ctx.link_problems:
    st.warning(msg)


@bounded_cache(1 << 20, spinner=None)
def cached_stability(dtype: str):
    return C.stability_rows(dtype=dtype)


head = st.columns([4, 1])
head[0].markdown("The lecture opens with the three lines every training loop runs, then asks two questions.")
with head[1]:
    presentation_toggle()
c = st.columns(2)
c[0].markdown("**Slide 7** (PyTorch)")
c[0].code(C.SLIDE_CODE, language="python", wrap_lines=True)
c[1].markdown("**The same with this engine**")
c[1].code(C.ENGINE_CODE, language="python", wrap_lines=True)
# the formula the engine's loss is: text the back row reads on a projector (a caption there was 14 px at 1366 x 768)
(st.markdown if look.presenting else st.caption)(C.ENGINE_FORMULA)

q = st.columns(2)
for col, (question, answer, links) in zip(q, C.QUESTIONS):
    with col.container(border=True):
        # the lecture asks the class first: on a projector the answer is folded, and so are the pages that show
        # it (their names say it: "each layer's VJP", "Topological sort: the order")
        if look.presenting:
            st.markdown(f"**{question}**")
            where = st.expander("The answer")
            where.markdown(answer)
        else:
            st.markdown(f"**{question}** {answer}")
            where = st.container()
        for url, label in links:
            where.link_button(label, url, icon=":material/open_in_new:")

st.subheader("A batch through the loss")
b = fixed_figure("cross_entropy.batch", "The batch through the loss")
if b is not None:
    left, right = st.columns([3, 2])
    with left:
        inputs_table, grad_table = C.batch_tables(b)
        show_table(inputs_table, look)
        if look.presenting:   # on a projector the caption under the table sat on the first screen's bottom edge
            screen_break()
        st.caption("Logits z = x·W + b from the engine (4 examples, 4 classes); p = softmax(z) only for reading: the "
                   "loss never forms p, it takes log_softmax(z) = z − logsumexp(z) and picks the label's entry.")
    with right:
        st.markdown(f"loss = mean over the batch of −log_softmax(z)[label] = **{num(b.loss)}**")
        st.markdown(f"∂loss/∂z = (softmax(z) − onehot(label)) / batch: the engine's backward differs from that "
                    f"formula by **{sci(b.formula_difference)}**.")
        if b.torch_loss_difference is None:
            st.caption("PyTorch is not installed here: the comparison with torch.nn.functional.cross_entropy is skipped.")
        else:
            st.markdown(f"Against `torch.nn.functional.cross_entropy` on the same logits: loss differs by "
                        f"**{sci(b.torch_loss_difference)}**, ∂loss/∂z by **{sci(b.torch_grad_difference)}**.")
    # on a projector the gradient sits under the logits it is taken of (4 columns across the whole page put each
    # number a screen's width from its row's label); on a laptop across the page
    with left if look.presenting else st.container():
        show_table(grad_table, look)
        st.caption(f"∂loss/∂z from the engine's backward, one row per example: (p − onehot(label)) / {len(b.labels)}, "
                   "so each row sums to 0.")

st.subheader("Why the loss takes logits: log_softmax is stable, softmax-then-log is not")
dtype = st.radio("dtype", ["float64", "float32"], key=ns.key("dtype"), horizontal=True)
st.markdown("The label is class 2, the smallest logit. Naively, `log(exp(z) / sum(exp(z)))` computes exp(z) first: "
            "once the largest logit passes log(max float) (709.8 in float64, 88.7 in float32) exp gives inf, "
            "inf/inf is nan, and the loss and every gradient are lost. `log_softmax(z) = z − logsumexp(z)`, with "
            "logsumexp(z) = m + log(Σ exp(z − m)) and m = max z, never exponentiates anything above 0.")
show_table(cached_stability(dtype), look, static=True)

st.subheader("Step through its graph")
st.markdown("For one example with three classes (logits z, label 1 as a one-hot y), the loss written with the "
            "engine's primitives: logsumexp with its max subtracted, minus the label's logit.")
st.code(C.STEP_PROGRAM, language="python")
checks = fixed_figure("cross_entropy.program_checks", "The program against engine.cross_entropy")
if checks is not None:
    st.caption(f"This program gives loss {fixed(checks['loss (program)'], 10)}; `engine.cross_entropy` on the same logits "
               f"{fixed(checks['loss (engine.cross_entropy)'], 10)}, and the same z̄ = softmax(z) − y = "
               f"[{', '.join(fixed(v, 4) for v in checks['z̄'])}] (max difference {sci(checks['max |Δz̄|'])}).")
st.link_button("Step it on the Expression explorer", C.QUESTIONS[0][2][0][0], type="primary",
               icon=":material/play_arrow:")
st.caption(md_escape("Inputs: " + C.STEP_INPUTS))
publish_link(ctx, {"dtype": dtype})
