"""Run each failure demo with two seeds and check the doctor names it, with its onset, in time.

    python benchmarks/failure_demos.py                     # hacking, length, collapse x seeds 1, 2
    python benchmarks/failure_demos.py --modes hacking --seeds 1 2 3 --out runs/failure-demos

Prints, per run: the mode the doctor named (or not), its onset against the planted step, the live
doctor's stop step if it stopped the run, and the wall time of `agentgrpo demo --failure MODE`.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path


def run_one(mode: str, seed: int, out: Path) -> dict:
    name = f"{mode}-s{seed}"
    cmd = [sys.executable, "-m", "agentgrpo.cli", "demo", "--failure", mode, "--seed", str(seed),
           "--runs_dir", str(out), "--run_name", name]
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    from agentgrpo.demos.failures import RECIPES
    from agentgrpo.doctor import diagnose, read_run

    run = read_run(out / name)
    report = diagnose(run.table)
    expected, planted = RECIPES[mode][1], RECIPES[mode][2]
    named = next((f for f in report.failures if f.detector == expected), None)
    live = out / name / "doctor_live.jsonl"
    stops = [json.loads(line) for line in live.read_text().splitlines()] if live.exists() else []
    stop = next((r.get("step") for r in stops if str(r.get("event", "")).startswith("stopping")), None)
    return {"run": name, "exit": done.returncode, "named": named is not None, "onset": named.onset if named else None,
            "planted": planted, "steps": report.last_step, "live_stop": stop, "seconds": round(seconds),
            "verdict": report.headline}


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from benchmarks import provenance

    env = provenance.environment()  # recorded with the results: versions, CPU, threads, commit
    print(provenance.line(env), flush=True)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--modes", nargs="*", default=["hacking", "length", "collapse"])
    parser.add_argument("--seeds", nargs="*", type=int, default=[1, 2])
    parser.add_argument("--out", default="runs/failure-demos")
    args = parser.parse_args()
    out = Path(args.out)
    rows = [run_one(mode, seed, out) for mode in args.modes for seed in args.seeds]
    print("| run | named | onset (planted) | live stop | steps | time | doctor |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['run']} | {'yes' if r['named'] else 'NO'} | {r['onset']} ({r['planted']}) | {r['live_stop']} | "
              f"{r['steps']} | {r['seconds']} s | {r['verdict']} |")
    provenance.write_json(out / "summary.json", rows, env)


if __name__ == "__main__":
    main()
