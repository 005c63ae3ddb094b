"""How long `agentgrpo doctor` takes on a 10,000-step log (budget: 1 s).

    python benchmarks/doctor_speed.py [--steps 10000] [--repeat 3] [--strict]

Builds a TRL 1.x-style trainer_state.json (every GRPO metric TRL logs, one record per step, indent=2 as
the Trainer writes it; about 8 MB), the same records as a console log (the Trainer's printed dicts behind a
tqdm bar) and as a Jupyter notebook (the progress callback's HTML table), then times:
  * in-process: read + diagnose + terminal summary + report.html (everything the command does after
    Python has started), on each of the three logs;
  * the CLI: ``python -m agentgrpo.cli doctor FILE --out DIR`` in a fresh process (interpreter start,
    imports, reading, diagnosis, report.html), the number the 1 s budget is about;
  * for information, the CLI with ``--png`` (adds one matplotlib PNG per chart; not in the budget).
Each is the best of ``--repeat`` runs (the machine may be shared). Prints seconds and the ratio to 1 s.
"""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
import tempfile
import time
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np

BUDGET_S = 1.0


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


def in_process(path: Path, out: Path) -> float:
    from agentgrpo.commands import doctor

    args = type("Args", (), {"path": str(path), "out": str(out), "json": False, "png": False, "no_report": False})()
    start = time.perf_counter()
    with redirect_stdout(io.StringIO()):
        doctor.run(args)
    return time.perf_counter() - start


def cli(path: Path, out: Path, *extra: str) -> float:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "agentgrpo.cli", "doctor", str(path), "--out", str(out), *extra],
        capture_output=True,
        text=True,
    )
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):
        sys.exit(f"agentgrpo doctor failed ({done.returncode}):\n{done.stderr}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--strict", action="store_true", help="exit 1 when the CLI exceeds the budget")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        path = build_state(tmp / "trainer_state.json", args.steps)
        console = build_console(tmp / "train.log", path)
        notebook = build_notebook(tmp / "train.ipynb", path)
        for log in (path, console, notebook):
            print(f"{args.steps}-step {log.name}: {log.stat().st_size / 1e6:.1f} MB")
        timings = {
            "in-process, trainer_state.json (read, diagnose, summary, report.html)": min(
                in_process(path, tmp / "a") for _ in range(args.repeat)
            ),
            "in-process, console log with printed dicts": min(
                in_process(console, tmp / "d") for _ in range(args.repeat)
            ),
            "in-process, notebook with the training table": min(
                in_process(notebook, tmp / "e") for _ in range(args.repeat)
            ),
            "CLI `agentgrpo doctor` (fresh process, report.html)": min(
                cli(path, tmp / "b") for _ in range(args.repeat)
            ),
            "CLI with --png (information; not in the budget)": cli(path, tmp / "c", "--png"),
        }
    for name, seconds in timings.items():
        print(f"  {name:<72} {seconds:6.3f} s   {seconds / BUDGET_S:5.2f} x the {BUDGET_S:.0f} s budget")
    cli_time = timings["CLI `agentgrpo doctor` (fresh process, report.html)"]
    print("within budget" if cli_time <= BUDGET_S else "OVER BUDGET")
    return 1 if args.strict and cli_time > BUDGET_S else 0


if __name__ == "__main__":
    sys.exit(main())
