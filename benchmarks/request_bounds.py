"""The worst one request can cost, on every page: adversarial inputs at the edges of each page's budget.

    python benchmarks/request_bounds.py               # every page (about seven minutes on two cores)
    python benchmarks/request_bounds.py --pages 5,6   # some pages only

Each row runs what one page computes for one request (its model function, as the page calls it) in a
fresh child process, after the imports and the data a server already holds (GloVe, SST-2) are loaded,
under the page's deadline. It reports the request's CPU time (all threads of the child, and the programs it
started, such as Graphviz's ``dot``), the growth of
its peak resident memory (the kernel's high-water mark, reset just before the request: NumPy buffers and
Python objects alike), the size of the result a page cache keeps, and — where the page steps through a
cached result — the CPU time of one click (a Step) on it. Rows are attacks found earlier (which
must be refused) and the largest requests each page allows (which must stay within 2 s of CPU and
100 MB). The last table is each page's worst request.
"""
from __future__ import annotations

import json
import multiprocessing
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script (and in its spawned children): this checkout's code, not an install's
    sys.path.insert(0, str(ROOT))

LIMIT_CPU_S, LIMIT_MB = 2.0, 100.0
ALL_ORDERS = ("topological", "bfs_first_touch", "path_recursion", "recursive_dfs")


def values(**arrays) -> str:
    return ", ".join(f"{k} = {np.asarray(v).tolist()}" for k, v in arrays.items())


HALF = 0.5
NAMES = [a + b for a in "ABCDEFGHIJ" for b in "ABCDEFGHIJ"]  # short names, so that 80 lines fit 2,000 characters


def chain(lines: int) -> str:
    """``lines`` lines of 6 engine ops each, every line using the one before."""
    return "\n".join([f"{NAMES[0]}=exp(x)*x+x-x/x"] + [f"{c}=exp({p})*x+x-{p}/x"
                                                      for p, c in zip(NAMES, NAMES[1:lines])])


OUTER = values(a=np.full((1000, 1), HALF), b=np.full((1, 999), HALF))
FAN = "\n".join(["y1 = x * x"] + [f"y{k + 1} = y{k} * y{k} * x" for k in range(1, 75)])   # 149 ops, fan-out
# the worst requests found: a 496-op program's SVG download; 148 ops on all four orders (path recursion's walk a
# frame per visit: 1,821 frames on 64-element values; 8x8 matmuls); the gradient check of a 10x10 W @ W at index 5
SVG_496 = (chain(80) + "\nf=HB*x+x-x/x*x+x-x/x*x+x-x/x*x", values(x=np.full(20, 0.01)))
DOUBLING_148 = ("\n".join(["A0=x*x"] + [f"A{k}=A{k - 1}*A{k - 1}" for k in range(1, 9)]
                          + [f"{NAMES[k]}=(({NAMES[k - 1] if k else 'A8'}*0.999+0.001)*0.999+0.001)*0.999+0.001"
                             for k in range(23)] + [f"f=sum({NAMES[22]})"]), values(x=np.full(64, 0.999)))
MATMULS_148 = ("\n".join([f"{NAMES[0]}=W@W"] + [f"{NAMES[k]}={NAMES[k - 1]}@W@W" for k in range(1, 74)]
                         + [f"f=sum({NAMES[73]})"]), values(W=np.full((8, 8), 0.1)))
W_AT_W = ("f = sum(W @ W)", values(W=np.arange(100).reshape(10, 10) / 100))
LAYERS_60x256 = ", ".join(["linear 256"] * 60)
LAYERS_20x96 = ", ".join(["linear 96, relu"] * 20)

# (page number, page, label, request kind, arguments)
CASES = [
    (3, "Expression explorer", "six 10-element axes, 98 lines of c*c*c*c*c", "explorer",
     ("c = p*q*r*s*t*u\n" + "\n".join(f"d{k} = c*c*c*c*c" for k in range(97)) + "\nf = d96*c",
      values(**{n: np.full([10 if i == j else 1 for j in range(6)], HALF) for i, n in enumerate("pqrstu")}))),
    (3, "Expression explorer", "two outer products of 999,000 numbers (just inside)", "explorer",
     ("c = a*b\nd = b*a\nf = sum(c) + sum(d)", OUTER)),
    (3, "Expression explorer", "an 80-line program of 480 ops (the parser allows 500)", "explorer",
     (chain(80), values(x=np.full(20, 0.01)))),
    (3, "Expression explorer", "a vector output f = 2*x: backward twice (before: crashed)", "accumulation",
     ("f = 2*x", "x = [1, 2]")),
    (3, "Expression explorer", "the SVG download of a 496-op program (before: dot ran 20 s)", "svg", SVG_496),
    (3, "Expression explorer", "the SVG download of the largest graph drawn (22 lines, 111 nodes, dot's work 2,993)",
     "svg", (chain(22), values(x=np.full(3, 0.01)))),
    (5, "Backprop orders", "the outer products on all four orders", "orders",
     ("c = a*b\nd = b*a\nf = sum(c) + sum(d)", OUTER)),
    (5, "Backprop orders", "198 ops side by side (before: never cached)", "orders",
     (chain(33), values(x=np.full(20, 0.01)))),
    (5, "Backprop orders", "149 ops with fan-out at every node (the limit is 150)", "orders", (FAN, "x = 1.0001")),
    (5, "Backprop orders", "24 lines, 144 ops on a 20-vector (just inside)", "orders",
     (chain(24), values(x=np.full(20, 0.01)))),
    (5, "Backprop orders", "148 ops: 8 doublings then a chain, 64-vector; path recursion 1,821 frames",
     "orders", DOUBLING_148),
    (5, "Backprop orders", "148 ops of 8x8 matmuls W@W@W... (before: 2.5-4.7 s)", "orders", MATMULS_148),
    (5, "Backprop orders", "the recursive DFS on the deepest chain the box allows (20,000)", "deep", (20_000,)),
    (6, "Gradient check", "the outer products", "gradcheck", ("c = a*b\nd = b*a\nf = sum(c) + sum(d)", OUTER)),
    (6, "Gradient check", "10x10 W @ W, the sweep at flat index 5 (before: IndexError)", "gradcheck",
     (*W_AT_W, "W", 1e-6, 5)),
    (6, "Gradient check", "99 scalar ops (~300 runs)", "gradcheck",
     ("\n".join(["y1 = x * x"] + [f"y{k + 1} = y{k} * x" for k in range(1, 99)]), "x = 1.001")),
    (7, "Forward vs reverse", "the outer products, dual numbers", "dual",
     ("c = a*b\nd = b*a\nf = sum(c) + sum(d)", OUTER)),
    (7, "Forward vs reverse", "full Jacobians up to n = m = 16; memory kept at depth 32, batch 256, width 256",
     "series", ()),
    (10, "Network explorer", "60 x linear 256, batch 64 (before: 247 s, +1.5 GB)", "network",
     ("custom", {"layers": LAYERS_60x256, "batch": 64, "features": 16})),
    (10, "Network explorer", "20 x (linear 96, relu), batch 64", "network",
     ("custom", {"layers": LAYERS_20x96, "batch": 64, "features": 16})),
    (10, "Network explorer", "4 x linear 256, batch 64 (the largest allowed: a Linear "
     "records no transpose)", "network",
     ("custom", {"layers": "linear 256, relu, linear 256, relu, linear 256, relu, linear 256", "batch": 64,
                 "features": 16})),
    (10, "Network explorer", "60 layers: linear 8 then 59 tanh, batch 64 (303 ops)", "network",
     ("custom", {"layers": ", ".join(["linear 8"] + ["tanh"] * 59), "batch": 64, "features": 16})),
    (10, "Network explorer", "RNN, 30 steps, batch 32, hidden 16 (306 ops)", "network",
     ("rnn", {"steps": 30, "batch": 32, "hidden": 16})),
    (10, "Network explorer", "HW2 network on 64 SST-2 sentences", "network", ("hw2", {"batch": 64, "hidden": 32})),
    (10, "Network explorer", "the lecture's network on a 40-word sentence", "network",
     ("sentiment", {"sentence": " ".join(["a good good movie , never boring"] * 5 + ["it is a good film"]),
                    "hidden": 32})),
    (11, "Sentiment training", "a 16 MB sentence to the trained model (before: 8.7 s, +2 GB)", "sentence",
     ("good " * 3_300_000,)),
    (11, "Sentiment training", "a 20 MB paste (before: refused but kept)", "paste", ("a fine film,1\n" * 1_500_000,)),
    (11, "Sentiment training", "a 5 MB paste of 100,000 labelled sentences (the largest allowed)", "paste",
     ("a fine film , never boring,1\nthe plot is a mess,0\n" * 50_000,)),
    (11, "Sentiment training", "Start on full SST-2 (the server's part; the run trains in a worker)", "start",
     ("full",)),
    (9, "Static vs dynamic", "every example, with gradients and a training step; T = 12; compile", "static", ()),
    (2, "Learning problem", "descent at lr 1000 on both surfaces, every batch choice, and the grids", "learning", ()),
    (4, "Topological sort", "every preset, with a 1,000-name order from a link", "topo", ()),
    (8, "Tensors and storage", "the longest chain, and matmul 48 x 48 on every backend", "tensors", ()),
    (12, "Exercises", "every exercise built, every answer box given 200 characters", "exercises", ()),
    (1, "Cross-entropy on logits", "the stability rows in both dtypes (the batch example and the program checks "
     "are fixed figures: computed once per server process in the background, never in a request)", "xent", ()),
]
# Page 12 (Your HW2 code) runs a file the server's operator opted in, in a sandboxed process with its own time and
# memory limits (explorer/student_code); no browser input reaches it, so it has no row here.


def _request(kind: str, args: tuple):
    """What one request computes, and what one click on its cached result recomputes (or None)."""
    if kind == "explorer":
        from explorer.expression_explorer import explorer_model, step_view
        m = explorer_model(*args)
        return m, lambda: step_view(m, m.n_frames // 2, 16)
    if kind == "accumulation":
        from explorer.expression_explorer import accumulation_rows
        return accumulation_rows(*args, ["backward", "backward", "zero_grad", "backward"]), None
    if kind == "orders":
        from explorer.backprop_orders import orders_model
        from explorer.kit.widgets import still_graph
        m = orders_model(*args, ALL_ORDERS)
        return m, lambda: [still_graph(v.figure, m.n_frames // 2, title=False) for v in m.views.values() if v.figure]
    if kind == "deep":
        from explorer.backprop_orders import deep_chain_results
        return deep_chain_results(*args), None
    if kind == "series":
        from explorer.forward_vs_reverse import jacobian_cost_series, memory_series
        return [jacobian_cost_series(16, 16), memory_series(32, 256, 256)], None
    if kind == "gradcheck":
        from explorer.gradient_check import gradcheck_model
        return gradcheck_model(*(args if len(args) == 5 else (*args, "", 1e-6, 0))), None
    if kind == "svg":   # the page builds the model, then the download (Graphviz's CPU is a child's: counted below)
        from explorer.expression_explorer import explorer_model
        m = explorer_model(*args)
        svg, why = m.forward_svg()
        if svg is None:
            raise RuntimeError(why)
        return svg, None
    if kind == "dual":
        from explorer.forward_vs_reverse import dual_model
        return dual_model(*args, ""), None
    if kind == "network":
        from explorer.network_explorer.explore import explore, moment
        ex = explore(*args)

        def click():
            f = ex.n_frames // 2
            m = moment(ex, f)
            from explorer.network_explorer import analysis
            return m, ex.figure(ex.default_level, f, animate=False), analysis.look(m.value), analysis.look(m.adjoint)
        return ex, click
    if kind == "sentence":
        from explorer.sentiment_training.views import predict_sentence
        from sentiment.trainer import SentimentTrainer, TrainConfig
        from sentiment.data import builtin_split
        from sentiment.embeddings import load_glove
        train, val = builtin_split()
        trainer = SentimentTrainer(train, val, load_glove(), TrainConfig(epochs=1))
        return predict_sentence(trainer, *args), None
    if kind == "paste":
        from explorer.sentiment_training.views import own_data, too_large
        from sentiment.data import MAX_USER_BYTES, DataFormatError
        why = too_large(args[0], MAX_USER_BYTES)
        if why is not None:
            raise DataFormatError("pasted text", None, why)
        return own_data(args[0], "pasted text"), None
    if kind == "start":
        from explorer.sentiment_training.views import DataChoice, load_choice
        from sentiment.embeddings import load_glove
        from sentiment.trainer import PRESETS, SentimentTrainer
        train, val = load_choice(DataChoice(args[0], 450, 100))
        t = SentimentTrainer(train, val, load_glove(), PRESETS["full"].config)
        # what the session keeps beyond the process's shared data (GloVe; the encoding, kept once)
        return (t.model, t.optimizer, t._table, t._table_optimizer, t.encoded_train, t.encoded_val), None
    if kind == "static":
        from explorer import static_vs_dynamic as M
        out = []
        for example in M.EXAMPLES:
            for grads in (False, True):
                for train in (False, True):
                    ex = M.build_example(example, grads, train)
                    out.append((ex, M.counts_over_steps(ex), M.node_breakdown(ex.graph)))
        out += [M.rnn_static(12), M.rnn_figure(12, expand=True), M.unrolled_rnn_rows((3, 6, 12)), M.branch_demo(),
                M.folding_demo(), M.compile_demo(steps=20)]
        return out, None
    if kind == "learning":
        from explorer import learning_problem as L
        out = []
        for surface in L.SURFACES:
            out.append(L.loss_grid(surface))
            for batch in L.BATCH_CHOICES:
                out.append(L.descend(surface, (L.START_LIMIT, -L.START_LIMIT), 1e3, 40, batch=batch, seed=0))
        return out, None
    if kind == "topo":
        from explorer import topological_sort as T
        out = []
        for key in T.PRESETS:
            model = T.sort_model(key)
            order, _ = T.names_to_ids(model, [f"x{i}" for i in range(1000)])
            out.append((model, T.check_order(model, order)))
        return out, None
    if kind == "tensors":
        from explorer import tensors_and_storage as M
        longest = "x.permute(1, 0).contiguous().view(12).expand(4, 12).contiguous().view(6, 8).T.contiguous()"
        return [M.run_chain(longest[:M.MAX_CHAIN_CHARS]), M.time_backends("matmul", 48)], None
    if kind == "exercises":
        from explorer import exercises as E
        out = []
        for key in E.BUILDERS:
            ex = E.build(key)
            out.append([E.check(part, "1e308 * (2 ** 60) + [[" + "9" * 180 + "]]") for part in ex.parts])
        return out, None
    if kind == "xent":
        from explorer import cross_entropy as C
        return [C.stability_rows(dtype="float64"), C.stability_rows(dtype="float32")], None
    raise KeyError(kind)


def _children_cpu() -> float:
    """CPU time of the finished child processes (Graphviz's ``dot``, which a request starts)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")   # resets the resident high-water mark (VmHWM)
        return True
    except OSError:
        return False


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def run_case(kind: str, args: tuple, out) -> None:
    import warnings
    warnings.simplefilter("ignore")
    # what a server already holds: the modules and the shared data (loaded once per process)
    import importlib
    for module in ("explorer.expression_explorer", "explorer.backprop_orders", "explorer.gradient_check",
                   "explorer.forward_vs_reverse", "explorer.network_explorer.explore", "explorer.sentiment_training.views",
                   "sentiment.trainer", "explorer.static_vs_dynamic", "explorer.learning_problem",
                   "explorer.topological_sort", "explorer.tensors_and_storage", "explorer.exercises",
                   "explorer.cross_entropy", "explorer.kit.widgets"):
        importlib.import_module(module)
    from explorer.explain import deadline
    from explorer.kit.budget import REQUEST_SECONDS, estimate_bytes
    try:
        from sentiment.data import load_sst2
        from sentiment.embeddings import load_glove
        load_glove(), load_sst2()
    except Exception:  # noqa: BLE001 - no data here: the rows that need it say so
        pass
    exact = _reset_peak()
    base_kb = _status_kb("VmRSS") if exact else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.process_time() + _children_cpu()
    kept, outcome, click_s = 0, "ran", None
    result = None
    try:
        with deadline(REQUEST_SECONDS):   # as the pages' bounded_cache runs it
            result, click = _request(kind, args)
    except Exception as e:  # noqa: BLE001 - a refusal: its message is the outcome
        outcome, click = f"refused ({type(e).__name__}): " + str(getattr(e, "error", e))[:110], None
    cpu = time.process_time() + _children_cpu() - t0
    peak_kb = (_status_kb("VmHWM") if exact else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) - base_kb
    if result is not None:
        kept = estimate_bytes(result)   # after the measurement: walking the objects costs memory of its own
    if click is not None:
        t1 = time.process_time()
        click()
        click_s = time.process_time() - t1
    out.send({"cpu_s": cpu, "peak_mb": max(0, peak_kb) / 1024, "kept_mb": kept / 2**20, "click_s": click_s,
              "outcome": outcome.replace("|", "/").replace("\n", " ")})


def main() -> int:
    pages = None
    if "--pages" in sys.argv:
        pages = {int(p) for p in sys.argv[sys.argv.index("--pages") + 1].split(",")}
    ctx = multiprocessing.get_context("spawn")
    print("| page | request | CPU (s) | peak memory (MB) | result kept (MB) | one click (s) | outcome |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    rows = []
    for number, page, label, kind, args in CASES:
        if pages is not None and number not in pages:
            continue
        recv, send = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=run_case, args=(kind, args, send))
        proc.start()
        got = recv.recv() if recv.poll(300) else {"cpu_s": float("nan"), "peak_mb": float("nan"), "kept_mb": 0,
                                                  "click_s": None, "outcome": "no answer in 300 s"}
        proc.join(10)
        row = {"number": number, "page": page, "label": label, **got}
        rows.append(row)
        click = "" if row["click_s"] is None else f"{row['click_s']:.3f}"
        print(f"| {number}. {page} | {label} | {row['cpu_s']:.2f} | {row['peak_mb']:.0f} | {row['kept_mb']:.1f} | "
              f"{click} | {row['outcome']} |", flush=True)
    print()
    print(f"Each page's worst request (the most CPU, and the most memory; limits {LIMIT_CPU_S:g} s, {LIMIT_MB:g} MB):")
    print()
    print("| page | most CPU (s) | its request | most memory (MB) | its request | within limits |")
    print("| --- | --- | --- | --- | --- | --- |")
    worst_ok = True
    for number in sorted({r["number"] for r in rows}):
        mine = [r for r in rows if r["number"] == number]
        cpu = max(mine, key=lambda r: r["cpu_s"])
        mem = max(mine, key=lambda r: r["peak_mb"])
        ok = cpu["cpu_s"] <= LIMIT_CPU_S and mem["peak_mb"] <= LIMIT_MB
        worst_ok &= ok
        print(f"| {number}. {cpu['page']} | {cpu['cpu_s']:.2f} | {cpu['label']} | {mem['peak_mb']:.0f} | "
              f"{mem['label']} | {'yes' if ok else 'NO'} |")
    if "--json" in sys.argv:
        print(json.dumps(rows))
    return 0 if worst_ok else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    sys.exit(main())
