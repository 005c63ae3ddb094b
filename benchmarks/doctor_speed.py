"""How long `agentgrpo doctor` takes on long logs (issue 20: 100,000 steps in 2 s through the CLI).

    python benchmarks/doctor_speed.py --steps 100000 [--repeat 3] [--budget 2] [--strict]

Builds a TRL 1.x-style trainer_state.json (every GRPO metric TRL logs, one record per step, indent=2 as
the Trainer writes it; about 110 MB at 100,000 steps), the same records as our metrics.jsonl, as a console
log (the Trainer's printed dicts behind a tqdm bar) and as a Jupyter notebook (the progress callback's HTML
table), with ``--trackers`` also as a W&B run logged offline by wandb and an MLflow file store, then times
the CLI, ``python -m agentgrpo.cli doctor FILE --out DIR`` in a fresh process
(interpreter start, imports, reading, diagnosis, report.html), on each: wall seconds and the process's CPU
seconds (user + system; on a shared machine the wall time also counts waiting for a core), best of
``--repeat``, with the ratios of the wall and of the CPU time to the budget (on a loaded machine the CPU
ratio is the closer estimate of a quiet machine's wall time). ``--in-process`` adds the same work timed
inside this process. The load average is printed: the budget is about a quiet machine.
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np

BUDGET_S = 2.0


def build_state(path: Path, steps: int) -> Path:
    """A trainer_state.json of ``steps`` GRPO records (a synthetic healthy run plus tool and clip metrics)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from benchmarks import doctor_synthetic as synthetic

    records = synthetic.make("healthy", steps, seed=0).records
    rng = np.random.default_rng(0)
    for r in records:
        r.update(
            {
                "num_tokens": 1000.0 * r["step"],
                "completions/min_length": 20.0,
                "completions/max_length": 300.0,
                "completions/mean_terminated_length": r["completions/mean_length"],
                "clip_ratio/low_mean": 0.0,
                "clip_ratio/high_mean": float(rng.uniform(0, 0.01)),
                "clip_ratio/region_mean": 0.0,
                "tools/call_frequency": float(rng.uniform(0.9, 1.1)),
                "tools/failure_frequency": float(rng.uniform(0.0, 0.1)),
                "step_time": 3.0,
            }
        )
    state = {"global_step": steps, "max_steps": steps, "log_history": records, "logging_steps": 1}
    path.write_text(json.dumps(state, indent=2), encoding="utf-8")
    return path


def build_console(path: Path, state: Path) -> Path:
    """The records of ``state`` as console output: a tqdm counter, then the printed dict, per step."""
    records = json.loads(state.read_text(encoding="utf-8"))["log_history"]
    total = len(records)
    lines = []
    for r in records:
        lines.append(f"{100 * r['step'] // total:3d}%|#   | {r['step']}/{total} [00:01<00:10,  1.00it/s]")
        lines.append(repr({k: v for k, v in r.items() if k != "step"}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def build_notebook(path: Path, state: Path) -> Path:
    """The records of ``state`` as a notebook whose training cell shows the progress callback's HTML table."""
    records = json.loads(state.read_text(encoding="utf-8"))["log_history"]
    keys = [k for k in records[0] if k not in ("step", "loss")]
    header = ["Step", "Training Loss"] + [k.replace("/", " / ") for k in keys]
    head = "".join(f"<th>{h}</th>" for h in header)
    rows = "".join(
        "<tr>"
        + "".join(
            f"<td>{v:.6f}</td>" if isinstance(v, float) else f"<td>{v}</td>"
            for v in [r["step"], r.get("loss", 0.0)] + [r[k] for k in keys]
        )
        + "</tr>\n"
        for r in records
    )
    html = f'<table border="1" class="dataframe"><thead><tr>{head}</tr></thead><tbody>\n{rows}</tbody></table>'
    cell = {
        "cell_type": "code",
        "execution_count": 1,
        "id": "train",
        "metadata": {},
        "source": ["trainer.train()"],
        "outputs": [{"output_type": "display_data", "metadata": {}, "data": {"text/html": html, "text/plain": "x"}}],
    }
    nb = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(nb), encoding="utf-8")
    return path


def build_jsonl(path: Path, state: Path) -> Path:
    """The records of ``state`` as metrics.jsonl (one JSON object per line)."""
    records = json.loads(state.read_text(encoding="utf-8"))["log_history"]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


WANDB_SCRIPT = """
import json, sys, wandb
records = json.load(open(sys.argv[1]))["log_history"]
run = wandb.init(mode="offline", project="doctor-speed", dir=sys.argv[2], config={"max_completion_length": 300})
for r in records:
    wandb.log({"train/" + k: v for k, v in r.items() if k != "step"} | {"train/global_step": r["step"]}, step=r["step"])
run.finish()
"""


def build_wandb(path: Path, state: Path) -> Path | None:
    """The records of ``state`` logged offline by wandb itself as TRL's WandbCallback names them (``train/``),
    one ``wandb.log`` per step; the run's folder, or None when wandb is not installed (a minute or more at
    100,000 steps: wandb's own logging)."""
    if importlib.util.find_spec("wandb") is None:
        print("  (wandb not installed: no W&B run timed; pip install 'agentgrpo[wandb]')")
        return None
    path.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, WANDB_MODE="offline", WANDB_SILENT="true", WANDB_DISABLE_GIT="true")
    subprocess.run([sys.executable, "-c", WANDB_SCRIPT, str(state), str(path)], check=True, env=env)
    return next(path.glob("wandb/offline-run-*"))


def build_mlflow(path: Path, state: Path) -> Path:
    """The records of ``state`` as an MLflow file store (``mlruns/0/<run>/metrics/<name>``, one
    ``timestamp value step`` line per value, ``params/max_completion_length``), written here: mlflow's file
    store takes minutes for 100,000 steps of ``log_metrics`` (the reader is checked against mlflow itself in
    tests/test_doctor_readers_trackers.py)."""
    records = json.loads(state.read_text(encoding="utf-8"))["log_history"]
    run = path / "mlruns" / "0" / "speedrun"
    (run / "params").mkdir(parents=True, exist_ok=True)
    (run / "meta.yaml").write_text("run_id: speedrun\nexperiment_id: '0'\n", encoding="utf-8")
    (run / "params" / "max_completion_length").write_text("300", encoding="utf-8")
    lines: dict[str, list[str]] = {}
    for r in records:
        for k, v in r.items():
            if k != "step":
                lines.setdefault(k, []).append(f"{1700000000000 + r['step']} {v} {r['step']}")
    for k, rows in lines.items():
        file = run / "metrics" / k
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return run


def build_wandb_reused(tmp: Path) -> Path | None:
    """A W&B run folder a previous ``--dir`` run built, if any."""
    return next((tmp / "wandb-run").glob("wandb/offline-run-*"), None) if (tmp / "wandb-run").is_dir() else None


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else path.stat().st_size


def in_process(path: Path, out: Path) -> float:
    from agentgrpo.commands import doctor

    args = type("Args", (), {"path": str(path), "out": str(out), "json": False, "png": False, "no_report": False})()
    start = time.perf_counter()
    with redirect_stdout(io.StringIO()):
        doctor.run(args)
    return time.perf_counter() - start


def cli(path: Path, out: Path, *extra: str, src: str | None = None) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child) of one fresh `agentgrpo doctor` process (importing agentgrpo
    from ``src`` when given, else as this process would)."""
    env = _child_env(src)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "agentgrpo.cli", "doctor", str(path), "--out", str(out), *extra],
        capture_output=True,
        text=True,
        env=env,
    )
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        sys.exit(f"agentgrpo doctor failed ({done.returncode}):\n{done.stderr}")
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _child_env(src: str | None = None) -> dict:
    """The children's environment: bytecode cached (under a temporary prefix, written on the first run), as
    an installed package has it; this machine's PYTHONDONTWRITEBYTECODE would otherwise make every run
    compile the doctor's ~60 modules from source again (~0.1 s)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / "agentgrpo-doctor-speed-pycache")
    if src:
        env["PYTHONPATH"] = src
    return env


def startup(code: str, repeat: int) -> tuple[float, float]:
    """(wall, CPU) seconds of ``python -c CODE`` in a fresh process, best of ``repeat`` (by CPU): the baseline
    that says how loaded the machine is."""
    runs = []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, env=_child_env())
        elapsed = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        runs.append(((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), elapsed))
    cpu, wall = min(runs)
    return wall, cpu


def main() -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from benchmarks import provenance

    env = provenance.environment()  # recorded with the results: versions, CPU, threads, commit
    print(provenance.line(env), flush=True)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--budget", type=float, default=BUDGET_S, help="seconds allowed per CLI run (wall)")
    parser.add_argument("--in-process", action="store_true", help="also time the work inside this process")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a CLI run exceeds the budget")
    parser.add_argument(
        "--baseline-src",
        help="a src/ folder of another commit (git archive COMMIT src | tar -x -C DIR; then DIR/src): its CLI "
        "is timed on the same files, interleaved, and the CPU ratio new/baseline printed",
    )
    parser.add_argument("--dir", help="build the logs in DIR, reusing those already there (else a temporary folder)")
    parser.add_argument("--only", help="time only the logs whose file name contains this")
    parser.add_argument(
        "--trackers", action="store_true", help="also a W&B run written offline by wandb and an MLflow file store"
    )
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory() as scratch:
        tmp = Path(args.dir or scratch)
        tmp.mkdir(parents=True, exist_ok=True)
        reuse = args.dir is not None and (tmp / "trainer_state.json").exists()
        state = tmp / "trainer_state.json" if reuse else build_state(tmp / "trainer_state.json", args.steps)
        builders = {"metrics.jsonl": build_jsonl, "train.log": build_console, "train.ipynb": build_notebook}
        logs = [state] + [
            tmp / name if reuse and (tmp / name).exists() else build(tmp / name, state)
            for name, build in builders.items()
        ]
        if args.trackers:  # a W&B run folder and an MLflow run folder of the same records
            for name, build in (("wandb-run", build_wandb), ("mlflow-store", build_mlflow)):
                if not (args.only and args.only not in name):
                    found = build_wandb_reused(tmp) if name == "wandb-run" and reuse else None
                    built = found or build(tmp / name, state)
                    if built is not None:
                        logs.append(built)
        logs = [log for log in logs if not args.only or args.only in str(log.relative_to(tmp))]
        worst = 0.0
        cli(logs[0], tmp / "warm-up")  # bytecode written once, files in the page cache
        np_wall, np_cpu = startup("import numpy", max(args.repeat, 3))
        print(
            f"  baseline `python -c 'import numpy'`: {np_wall:.2f} s wall, {np_cpu:.2f} s CPU (ratios below "
            "are CLI / baseline; a quiet machine's CLI time is about the ratio x its own numpy start-up)"
        )
        for log in logs:
            runs = [cli(log, tmp / f"out-{log.stem}") for _ in range(args.repeat)]
            wall, cpu = min(runs)
            worst = max(worst, wall)
            line = (
                f"  CLI `agentgrpo doctor {log.name}` ({_size(log) / 1e6:.0f} MB): {wall:6.2f} s wall, "
                f"{cpu:6.2f} s CPU   {wall / args.budget:5.2f} x the {args.budget:g} s budget (wall), "
                f"{cpu / args.budget:5.2f} x (CPU); {wall / np_wall:4.1f} x the baseline (wall), "
                f"{cpu / np_cpu:4.1f} x (CPU)"
            )
            if args.baseline_src:
                base = [cli(log, tmp / f"base-{log.stem}", src=args.baseline_src) for _ in range(args.repeat)]
                base_wall, base_cpu = min(base, key=lambda r: r[1])
                line += f"; baseline {base_cpu:.2f} s CPU ({base_wall:.2f} s wall), CPU ratio {cpu / base_cpu:.2f}"
            if args.in_process:
                line += f"; in-process {min(in_process(log, tmp / 'ip') for _ in range(args.repeat)):.2f} s"
            print(line, flush=True)
    print("within budget" if worst <= args.budget else "OVER BUDGET")
    return 1 if args.strict and worst > args.budget else 0


if __name__ == "__main__":
    sys.exit(main())
