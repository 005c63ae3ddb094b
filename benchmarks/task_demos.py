"""Run every task's CPU demo over several seeds and print the table of docs/tasks.md ("The tiny model").

    python benchmarks/task_demos.py                                   # every demo task x seeds 1 2 3
    python benchmarks/task_demos.py --tasks wordle-easy --seeds 1 2 3 --out runs/task-demos

Each run is `agentgrpo demo --task T --seed S` (preflight, eval before, GRPO, eval after, curves, the doctor).
Per run: held-out sampled success before -> after with Wilson 95% CIs (disjoint = accepted), tool calls and
turns per episode after, the doctor's verdict (`agentgrpo doctor RUN_DIR`: failures named or none), the
preflight signal check's verdict, and the demo's wall time.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path


def run_one(task: str, seed: int, out: Path) -> dict:
    name = f"{task}-s{seed}"
    cmd = [sys.executable, "-m", "agentgrpo.cli", "demo", "--task", task, "--seed", str(seed),
           "--output_dir", str(out / name)]
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if not (out / name / "eval.json").is_file():
        return {"run": name, "exit": done.returncode, "seconds": round(seconds), "error": done.stderr[-500:]}
    from agentgrpo.doctor import diagnose, read_run

    evals = json.loads((out / name / "eval.json").read_text())
    before, after = evals["before"]["sampled"], evals["after"]["sampled"]
    preflight = json.loads((out / name / "preflight.json").read_text())
    report = diagnose(read_run(out / name).table)
    return {"run": name, "exit": done.returncode, "seconds": round(seconds),
            "before": before["success_rate"], "before_ci": before["ci95"],
            "after": after["success_rate"], "after_ci": after["ci95"],
            "disjoint": after["ci95"][0] > before["ci95"][1],
            "tool_calls": after["mean_tool_calls"], "turns": after["mean_turns"],
            "tool_calls_before": before["mean_tool_calls"], "turns_before": before["mean_turns"],
            "failures": [str(getattr(f.detector, "value", f.detector)) for f in report.failures],
            "signal": _verdict(preflight)}


def _verdict(preflight: dict) -> str:
    verdict = (preflight.get("signal") or {}).get("verdict") or {}
    return str(verdict.get("verdict", "?")) if isinstance(verdict, dict) else str(verdict)


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from benchmarks import provenance

    env = provenance.environment()  # recorded with the results: versions, CPU, threads, commit
    print(provenance.line(env), flush=True)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", nargs="*", default=None, help="default: every task with a demo")
    parser.add_argument("--seeds", nargs="*", type=int, default=[1, 2, 3])
    parser.add_argument("--out", default="runs/task-demos")
    args = parser.parse_args()
    from agentgrpo.commands.demo import demo_tasks

    out = Path(args.out)
    rows = []
    for task in args.tasks or demo_tasks():
        for seed in args.seeds:
            row = run_one(task, seed, out)
            rows.append(row)
            print(row, flush=True)
    print("| run | sampled success before -> after [95% CI] | disjoint | tool calls / turns per episode "
          "(after) | doctor | signal check | time |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        if "error" in r:
            print(f"| {r['run']} | failed (exit {r['exit']}) | | | | | {r['seconds']} s |")
            continue
        lo, hi = r["before_ci"]
        alo, ahi = r["after_ci"]
        print(f"| {r['run']} | {_pct(r['before'])} [{_pct(lo)}, {_pct(hi)}] -> {_pct(r['after'])} "
              f"[{_pct(alo)}, {_pct(ahi)}] | {'yes' if r['disjoint'] else 'NO'} | {r['tool_calls']:.2f} / "
              f"{r['turns']:.2f} | {', '.join(r['failures']) or 'no failure'} | {r['signal']} | {r['seconds']} s |")
    provenance.write_json(out / "summary.json", rows, env)


if __name__ == "__main__":
    main()
