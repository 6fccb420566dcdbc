"""Run every command written in README.md, docs/*.md and benchmarks/README.md, each with its shortest flags.

    python tools/check_doc_commands.py            # run them all; exit 1 if any fails or is unknown
    python tools/check_doc_commands.py --list     # what the docs say, and what is run for each
    python tools/check_doc_commands.py -k explain # only the commands containing "explain"
    python tools/check_doc_commands.py --no-install   # all but those that install into the running environment

A command counts as written when it stands in a ``bash`` block or in inline code starting with a
program a reader would type (``python``, ``python3``, ``bash``, ``streamlit``, ``pip``, ``docker``, ...).
Every such command must have an entry in :data:`SHORT`: the same program and script with the flags that
make it quickest (a benchmark's ``--quick``, fewer nodes, seconds or epochs), or a reason it cannot run
on this machine (a GPU, a Docker engine, a host outside the package registries). A command in the docs
without an entry fails the check, so a new command cannot be documented without being run here.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# the README, every page of docs/ (new ones included without a change here), the benchmarks' figures
DOCS = ("README.md", *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md")),
        "benchmarks/README.md")
PROGRAMS = ("python ", "python3 ", "bash ", "streamlit ", "pip ", "docker ", "apt-get ", ".venv/bin/", ". .venv",
            "KEEP_VENV=", "CI=", "sudo ", "redis-server ", "AUTODIFF_CLASS_BROKER=")


@dataclass(frozen=True)
class Skip:
    """A command that is not run here, and why."""
    reason: str


@dataclass(frozen=True)
class Serve:
    """A command that starts the app: started, asked for ``path`` until it answers, then stopped."""
    command: str
    path: str = "/"


NO_GPU = "needs an NVIDIA GPU and CuPy (none here); CI has no GPU"
NO_DOCKER = "needs a Docker engine (none on this machine; only its client)"
OUTSIDE = "downloads from a host outside the package registries this machine reaches"
THE_SUITE = "the test suite itself: .ci/run runs it as the last step"
MIN_VERSIONS = "run by .ci/run on every CI run"
OWN_CSV = ('d=$(mktemp -d) && printf "sentence,label\\na good film,1\\na dull film,0\\nfine acting,1\\nbad plot,0\\n" '
           '> $d/my.csv && cp $d/my.csv $d/my_dev.csv && ')

# documented command -> what is run for it (a shell command, Serve or Skip)
SHORT: dict[str, str | Serve | Skip] = {
    # README: set up, run, test
    "python3 -m venv .venv && . .venv/bin/activate":
        'd=$(mktemp -d) && cd $d && python3 -m venv .venv && . .venv/bin/activate && python -c "import sys; '
        'assert sys.prefix.endswith(\'.venv\')"',
    "python3 -m pip install -r requirements.txt": "python3 -m pip install -q -r requirements.txt",
    "python3 -m pip install -r requirements-reference.txt": "python3 -m pip install -q -r requirements-reference.txt",
    "python3 -m pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu": Skip(OUTSIDE),
    "streamlit run app/Home.py": Serve("streamlit run app/Home.py"),
    ".venv/bin/python -m streamlit run app/Home.py": Serve("{python} -m streamlit run app/Home.py"),
    "python3 -m pytest -q": Skip(THE_SUITE),
    "python3 -m pytest -q -n 0 tests/test_page_rules.py": "python3 -m pytest -q -n 0 tests/test_page_rules.py",
    "bash tools/check_min_versions.sh": Skip(MIN_VERSIONS),
    "python tools/check_doc_commands.py": Skip("this script"),
    "apt-get install -y chromium": Skip("a Debian package; .ci/run installs it"),
    "apt-get install haproxy": Skip("a Debian package; .ci/run installs it"),
    "apt-get install graphviz": Skip("a Debian package (optional: graphviz-pure comes with requirements.txt)"),
    "pip install cupy-cuda12x": Skip(NO_GPU),
    "pip install cupy-cuda13x": Skip(NO_GPU),
    "pip install -e .": "python3 -m pip install -q -e .",
    'python3 -m pip install -e ".[notebook]"': 'python3 -m pip install -q -e ".[notebook]"',
    "python3 -m jupyter execute examples/stepper.ipynb": "python3 -m jupyter execute examples/stepper.ipynb",
    "docker build -t autodiff-explorer .": Skip(NO_DOCKER),
    "docker run --rm -p 8501:8501 autodiff-explorer": Skip(NO_DOCKER),
    "docker compose up --build -d": Skip(NO_DOCKER),
    "docker compose up --scale app=N": Skip(NO_DOCKER),
    "streamlit run app/Home.py --server.port 8501 &": Serve("streamlit run app/Home.py"),
    "streamlit run app/Home.py --server.port 8502 &": Serve("streamlit run app/Home.py"),
    "APP1_ADDR=127.0.0.1:8501 APP2_ADDR=127.0.0.1:8502 HAPROXY_BIND=127.0.0.1:8080 haproxy -f deploy/haproxy.cfg":
        "APP1_ADDR=127.0.0.1:8501 APP2_ADDR=127.0.0.1:8502 HAPROXY_BIND=127.0.0.1:8080 "
        "$(command -v haproxy || echo /usr/sbin/haproxy) -c -f deploy/haproxy.cfg",
    "docker compose up -d --scale app=6": Skip(NO_DOCKER),
    "apt-get install redis-server haproxy": Skip("Debian packages; .ci/run installs both"),
    # a class across replicas: Redis started on a free port, answered, stopped; the replicas served with it
    # (its append-only file goes into a folder of its own, removed after)
    'redis-server --port 6379 --appendonly yes --dir "$(mktemp -d)" &':
        'p=$(python3 -c "import socket; s=socket.socket(); s.bind((\'127.0.0.1\', 0)); print(s.getsockname()[1])") && '
        'd=$(mktemp -d) && { redis-server --port $p --appendonly yes --dir $d & } && r=$! && sleep 1 && '
        'python3 -c "import redis, sys; redis.Redis(port=int(sys.argv[1])).ping()" $p; s=$?; kill $r; wait $r; '
        'rm -rf $d; exit $s',
    "AUTODIFF_CLASS_BROKER=redis://127.0.0.1:6379/0 streamlit run app/Home.py --server.port 8501 &":
        Serve("AUTODIFF_CLASS_BROKER=redis://127.0.0.1:6379/0 streamlit run app/Home.py"),
    "AUTODIFF_CLASS_BROKER=redis://127.0.0.1:6379/0 streamlit run app/Home.py --server.port 8502 &":
        Serve("AUTODIFF_CLASS_BROKER=redis://127.0.0.1:6379/0 streamlit run app/Home.py"),
    "python benchmarks/class_load.py": "python benchmarks/class_load.py --students 2 --questions 2",
    "python benchmarks/class_load.py --students 5 --questions 3":
        "python benchmarks/class_load.py --students 2 --questions 2",
    "bash benchmarks/gpu_check.sh": Skip(NO_GPU),
    # README: examples
    "python examples/train_sentiment.py": "python examples/train_sentiment.py --epochs 2 --quiet",
    "python examples/train_sentiment.py --full":
        "python examples/train_sentiment.py --full --epochs 1 --train-size 300 --val-size 50 --quiet",
    "python examples/train_sentiment.py --train my.csv --valid my_dev.csv":
        OWN_CSV + "python examples/train_sentiment.py --train $d/my.csv --valid $d/my_dev.csv --epochs 2 --quiet",
    # README: your own HW2 code (the report exits 1 when the code is not right everywhere, as these are not)
    "python -m explorer.student_code PATH/TO/llmsys_hw2":
        "python -m explorer.student_code tests/student_solutions/hw2_starter --random 2 > /dev/null; [ $? -eq 1 ]",
    "python -m explorer.student_code explorer/student_code/samples/bfs_first_touch.py":
        "python -m explorer.student_code explorer/student_code/samples/bfs_first_touch.py --random 2 > /dev/null; "
        "[ $? -eq 1 ]",
    "streamlit run app/Home.py -- --student-code PATH/TO/llmsys_hw2":
        Serve("streamlit run app/Home.py -- --student-code tests/student_solutions/hw2_starter", "/Your_HW2_code"),
    "python examples/explain_trace.py": "python examples/explain_trace.py",
    "python examples/explain_trace.py --strategy bfs_first_touch":
        "python examples/explain_trace.py --strategy bfs_first_touch",
    "python examples/explain_orders.py": "python examples/explain_orders.py --graphs 5 --chain 50",
    "python examples/explain_costs.py": "python examples/explain_costs.py --depth 2 --width 8 --batch 4",
    "python examples/explain_h_sweep.py": "python examples/explain_h_sweep.py",
    "python examples/graph_pictures.py": "python examples/graph_pictures.py slide",
    "python tools/readme_picture.py": 'd=$(mktemp -d) && python tools/readme_picture.py --out $d/p.png; s=$?; rm -rf $d; '
                                      'exit $s',
    # benchmarks/README.md
    "python benchmarks/hw2_step.py": "python benchmarks/hw2_step.py --quick",
    "python benchmarks/hw2_step.py --quick": "python benchmarks/hw2_step.py --quick",
    "python benchmarks/step_memory.py": "python benchmarks/step_memory.py --quick",
    "python benchmarks/compiled_step.py": "python benchmarks/compiled_step.py --quick --small-only",
    "python benchmarks/compiled_step.py --quick": "python benchmarks/compiled_step.py --quick --small-only",
    "python benchmarks/scalar_chain.py": "python benchmarks/scalar_chain.py --nodes 2000 --repeats 1",
    "python benchmarks/scalar_chain.py --nodes 1000000 --repeats 1":
        "python benchmarks/scalar_chain.py --nodes 2000 --repeats 1",
    "python benchmarks/hw2_train.py": "python benchmarks/hw2_train.py --epochs 2",
    "python benchmarks/hw2_train.py --seeds 0 1 2 3 4": "python benchmarks/hw2_train.py --epochs 2 --seeds 0 1",
    "python benchmarks/hw2_train.py --seeds 0 1 2 3 4 --full --app":
        "python benchmarks/hw2_train.py --epochs 2 --seeds 0 1 --full --full-epochs 1 --app",
    "python benchmarks/hw2_train.py --seeds 0 1 2 3 4 --order file --no-torch --no-eager --no-step":
        "python benchmarks/hw2_train.py --epochs 2 --seeds 0 1 --order file --no-torch --no-eager --no-step",
    "python benchmarks/hw2_train.py --full": "python benchmarks/hw2_train.py --epochs 2 --full --full-epochs 1",
    "python benchmarks/hw2_train.py --full --app":
        "python benchmarks/hw2_train.py --epochs 2 --seeds 0 1 --full --full-epochs 1 --app",
    "python examples/train_sentiment.py --full --quiet":
        "python examples/train_sentiment.py --full --epochs 1 --train-size 300 --val-size 50 --quiet",
    "python benchmarks/app_rerun.py": "python benchmarks/app_rerun.py --quick",
    "python benchmarks/explain_frames.py": "python benchmarks/explain_frames.py",
    "python benchmarks/network_frames.py": "python benchmarks/network_frames.py --nodes 100 --repeat 1",
    "python benchmarks/app_latency.py": "python benchmarks/app_latency.py --page 4 --budget 5 --options 2",
    "python benchmarks/app_latency.py --budget 60": "python benchmarks/app_latency.py --page 4 --budget 5 --options 2",
    "python benchmarks/request_bounds.py": "python benchmarks/request_bounds.py --pages 3,4",
    "python benchmarks/request_bounds.py --pages 5,6": "python benchmarks/request_bounds.py --pages 4",
    "python benchmarks/request_bounds.py --pages 1": "python benchmarks/request_bounds.py --pages 1",
    "python benchmarks/request_bounds.py --pages 10": "python benchmarks/request_bounds.py --pages 10",
    "python benchmarks/request_bounds.py --pages 3,5,6": "python benchmarks/request_bounds.py --pages 4",
    "python benchmarks/load_test.py --students 1 --trainers 16 --seconds 15":
        "python benchmarks/load_test.py --students 1 --trainers 1 --seconds 4 --epochs 5",
    "python benchmarks/step_cost.py": "python benchmarks/step_cost.py --page 3 --reruns 3",
    "python benchmarks/step_cost.py [--page 3|11] [--warm S]": "python benchmarks/step_cost.py --page 11 --reruns 3",
    "python benchmarks/load_test.py": "python benchmarks/load_test.py --students 2 --trainers 0 --seconds 4",
    "python benchmarks/play_speed.py": "python benchmarks/play_speed.py --runs 1",
    "python benchmarks/under_load.py": "python benchmarks/under_load.py --quick --pages Topological_sort",
    "python benchmarks/under_load.py --load 4":
        "python benchmarks/under_load.py --quick --pages Topological_sort --load 4",
    "python benchmarks/under_load.py --quick --pages Topological_sort":
        "python benchmarks/under_load.py --quick --pages Topological_sort",
    "python benchmarks/click_to_paint.py":
        "python benchmarks/click_to_paint.py --students 2 --replicas 1 --clicks 1 --page Topological_sort",
    "python benchmarks/click_to_paint.py --clicks 6":
        "python benchmarks/click_to_paint.py --students 2 --replicas 1 --clicks 1 --page Topological_sort",
    "python benchmarks/click_to_paint.py --clicks 12":
        "python benchmarks/click_to_paint.py --students 2 --replicas 1 --clicks 1 --page Topological_sort",
    "python benchmarks/click_to_paint.py --clicks 6 --students 0 --replicas 1":
        "python benchmarks/click_to_paint.py --students 0 --replicas 1 --clicks 1 --page Topological_sort",
    "python benchmarks/click_to_paint.py --clicks 20":
        "python benchmarks/click_to_paint.py --students 2 --replicas 1 --clicks 1 --page Topological_sort",
    "python benchmarks/click_to_paint.py --clicks 20 --students 0":
        "python benchmarks/click_to_paint.py --students 0 --replicas 1 --clicks 1 --page Topological_sort",
    "python3 benchmarks/load_test.py --seconds 40":
        "python3 benchmarks/load_test.py --students 2 --trainers 0 --seconds 4",
    "python3 benchmarks/load_test.py --students 25 50 --trainers 0 5 --replicas 2 --seconds 40":
        "python3 benchmarks/load_test.py --students 2 --trainers 1 --replicas 2 --seconds 4 --epochs 5",
    "python3 benchmarks/load_test.py --students 50 --trainers 5 --replicas 2 --seconds 40":
        "python3 benchmarks/load_test.py --students 2 --trainers 1 --replicas 2 --seconds 4 --epochs 5",
}


def documented(text: str) -> list[str]:
    """The commands a Markdown text shows: lines of ``bash`` blocks (comments dropped) and inline code
    that starts with a program a reader types."""
    found: list[str] = []
    in_block = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("```"):
            in_block = stripped in ("```bash", "```sh", "```shell", "```console")
            continue
        if in_block:
            cmd = re.sub(r"\s+#.*$", "", stripped).strip()
            if cmd and not cmd.startswith("#"):
                found.append(" ".join(cmd.split()))
            continue
        for span in re.findall(r"`([^`\n]+)`", line):
            cmd = " ".join(span.split())
            if cmd.startswith(PROGRAMS) and len(cmd.split()) > 1:
                found.append(cmd)
    return found


def all_documented() -> dict[str, list[str]]:
    """Each documented command and the docs that show it."""
    out: dict[str, list[str]] = {}
    for doc in DOCS:
        for cmd in documented((ROOT / doc).read_text(encoding="utf-8")):
            out.setdefault(cmd, [])
            if doc not in out[cmd]:
                out[cmd].append(doc)
    return out


def _serve(cmd: str, path: str, timeout: float) -> tuple[int, str]:
    with socket_port() as port:
        pass
    flags = f" --server.port {port} --server.address 127.0.0.1 --server.headless true"
    base, sep, script_args = cmd.format(python=sys.executable).partition(" -- ")
    full = base + flags + (sep + script_args if sep else "")   # Streamlit's flags before the app's own "-- args"
    log = tempfile.NamedTemporaryFile(prefix="serve-", suffix=".log", delete=False)
    proc = subprocess.Popen(full, shell=True, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True, executable="/bin/bash")
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    status = 1
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r1, \
                        urllib.request.urlopen(url + path, timeout=5) as r2:
                    if r1.status == 200 and r2.status == 200:
                        status = 0
                        break
            except OSError:
                time.sleep(0.3)
    finally:
        try:
            os.killpg(proc.pid, 15)
            proc.wait(timeout=10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(proc.pid, 9)
    return status, Path(log.name).read_text(errors="replace")[-1500:]


class socket_port:
    """A free loopback port (closed again before the server binds it)."""

    def __enter__(self) -> int:
        import socket
        self.s = socket.socket()
        self.s.bind(("127.0.0.1", 0))
        return self.s.getsockname()[1]

    def __exit__(self, *exc) -> None:
        self.s.close()


def run(entry: str | Serve, timeout: float) -> tuple[int, str]:
    if isinstance(entry, Serve):
        return _serve(entry.command, entry.path, min(timeout, 120))
    env = dict(os.environ, MPLBACKEND="Agg")
    try:
        done = subprocess.run(entry, shell=True, cwd=ROOT, capture_output=True, text=True, timeout=timeout, env=env,
                              executable="/bin/bash")
    except subprocess.TimeoutExpired as e:
        return 124, f"timed out after {timeout:.0f} s\n{(e.stdout or '')[-800:]}"
    return done.returncode, (done.stdout + done.stderr)[-1500:]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--list", action="store_true", help="list the commands and what is run for each; run nothing")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds one command may take")
    ap.add_argument("-k", dest="only", default=None, help="run only commands containing this text")
    ap.add_argument("--no-install", action="store_true",
                    help="skip the commands that install packages into the running environment (pip install): for "
                         "a shared environment that another checkout's editable install must keep")
    args = ap.parse_args(argv)
    docs = all_documented()
    unknown = [c for c in docs if c not in SHORT]
    if unknown:
        print("Documented commands without an entry in tools/check_doc_commands.py SHORT (add each with its "
              "shortest flags, or a reason it cannot run here):")
        for c in unknown:
            print(f"  {c}    ({', '.join(docs[c])})")
    to_run: dict[str, list[str]] = {}
    for cmd in docs:
        entry = SHORT.get(cmd)
        if entry is None or (args.only and args.only not in cmd):
            continue
        if isinstance(entry, Skip):
            print(f"SKIP  {cmd}\n      {entry.reason}")
            continue
        if args.no_install and isinstance(entry, str) and "pip install" in entry:
            print(f"SKIP  {cmd}\n      --no-install: it installs into the running environment")
            continue
        key = entry.command if isinstance(entry, Serve) else entry
        to_run.setdefault(key, []).append(cmd)
    failures = 0
    for key, cmds in to_run.items():
        entry = SHORT[cmds[0]]
        if args.list:
            print(f"RUN   {' | '.join(cmds)}\n      as: {key}")
            continue
        t0 = time.monotonic()
        code, tail = run(entry, args.timeout)
        took = time.monotonic() - t0
        print(f"{'PASS' if code == 0 else 'FAIL'}  {' | '.join(cmds)}  ({took:.1f} s)\n      as: {key}", flush=True)
        if code != 0:
            failures += 1
            print("      exit status", code, "\n" + "\n".join("      | " + ln for ln in tail.splitlines()), flush=True)
    print(f"{len(to_run)} documented commands run, {failures} failed, {len(unknown)} without an entry")
    return 1 if failures or unknown else 0


if __name__ == "__main__":
    sys.exit(main())
