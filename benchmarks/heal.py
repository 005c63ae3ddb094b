"""The failure demos healed (`agentgrpo demo --failure MODE --heal`) against the healthy demo, in one script.

    OMP_NUM_THREADS=1 python benchmarks/heal.py                          # collapse, length, hacking x seeds 1-3
    python benchmarks/heal.py --modes collapse --seeds 1 --out runs/heal-bench

Runs, one process at a time: `agentgrpo demo --seed S` (healthy, the baseline) and `agentgrpo demo --failure MODE
--heal --seed S`. Per healed run it prints the heals (mode, onset, rollback checkpoint, action), what the doctor
names in the final segment, held-out sampled success of the final model, and its wall time over the healthy
demo's of the same seed. For hacking, the shadow correct_answer of the checkpoint the run ended at against its
pre-onset value, two ways: held-out (the final model and the abandoned segment's checkpoint at the onset - 1,
the last weights before the onset, evaluated on the same 200 held-out problems with the same sampling seed:
correct_answer there is the task's success), and as logged in training (the checkpoint's logged steps s-1 to
s+1, step s+1 being the first sampled from its weights, against the 10 logged steps before the onset), with
the abandoned segment's last logged value. Acceptance (issue 23): collapse and length end with no failure
named and >= 90% sampled success; hacking ends at a checkpoint before the onset whose held-out shadow is not
below the pre-onset checkpoint's; wall time <= 2x the healthy demo.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

SHADOW = "rewards/correct_answer/mean"


def run(cmd: list[str], log: Path) -> tuple[int, float]:
    start = time.perf_counter()
    with open(log, "w") as fh:
        done = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT)
    return done.returncode, time.perf_counter() - start


def demo(out: Path, name: str, seed: int, *extra: str) -> tuple[int, float]:
    cmd = [sys.executable, "-m", "agentgrpo.cli", "demo", *extra, "--seed", str(seed), "--runs_dir", str(out),
           "--run_name", name]
    return run(cmd, out / f"{name}.log")


def _mean(rows: list[dict], key: str) -> float | None:
    values = [r[key] for r in rows if isinstance(r.get(key), int | float)]
    return round(sum(values) / len(values), 3) if values else None


def heldout(model: Path, seed: int, out: Path) -> float | None:
    """Sampled success (the task's correct_answer) of ``model`` on the demo's 200 held-out problems, seed
    ``seed``: the same problems and sampling for every model of a run."""
    cmd = [sys.executable, "-m", "agentgrpo.cli", "eval", "--model", str(model), "--task", "calculator",
           "--eval_modes", "sampled", "--eval_size", "200", "--seed", str(seed), "--out", str(out)]
    if subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode != 0:
        return None
    return json.loads(out.read_text())["sampled"]["success_rate"]


def judge(run_dir: Path, mode: str, seed: int) -> dict:
    from agentgrpo import rundir
    from agentgrpo.doctor import read_run
    from agentgrpo.heal import history
    from agentgrpo.heal.judge import diagnose_healed

    heals = history.heals(run_dir)
    report = diagnose_healed(read_run(run_dir))[1]
    sampled = rundir.read_eval(run_dir).get("after", {}).get("sampled", {})
    row = {"heals": "; ".join(f"{h['mode']}@{h['onset']}->ckpt-{h.get('checkpoint_step')} {h['action']}"
                              for h in heals) or "none",
           "failures": [f.detector for f in report.failures], "success": sampled.get("success_rate"),
           "ended": heals[-1]["action"] if heals else "trained"}
    if mode == "hacking" and heals and heals[-1].get("checkpoint_step") is not None:
        last = heals[-1]
        lineage = rundir.read_jsonl(run_dir / rundir.METRICS)
        abandoned = rundir.read_jsonl(history.segment_dir(run_dir, int(last["heal"])) / rundir.METRICS)
        ckpt, onset = last["checkpoint_step"], last["onset"]
        logged = {r["step"]: r for r in lineage + abandoned}  # the lineage and the abandoned segment agree to ckpt
        row["shadow_ckpt"] = _mean([logged[s] for s in (ckpt - 1, ckpt, ckpt + 1) if s in logged], SHADOW)
        row["shadow_pre_onset"] = _mean([r for r in abandoned if onset - 10 <= r["step"] < onset], SHADOW)
        row["shadow_abandoned_end"] = _mean(abandoned[-3:], SHADOW)
        row["ckpt_before_onset"] = ckpt < onset
        pre = history.segment_dir(run_dir, int(last["heal"])) / "checkpoints" / f"checkpoint-{onset - 1}"
        row["heldout_pre_onset_ckpt"] = pre.name if pre.is_dir() else None
        row["heldout_final"] = heldout(run_dir / "final", seed, run_dir / "eval-final.json")
        row["heldout_pre_onset"] = heldout(pre, seed, run_dir / "eval-pre-onset.json") if pre.is_dir() else None
    return row


def ok(mode: str, row: dict, ratio: float) -> bool:
    if mode == "hacking":
        good = (row.get("ckpt_before_onset") and row["ended"] == "stop" and row.get("heldout_final") is not None
                and row.get("heldout_pre_onset") is not None and row["heldout_final"] >= row["heldout_pre_onset"])
    else:
        good = not row["failures"] and row["ended"] != "stop" and (row["success"] or 0) >= 0.9
    return bool(good and ratio <= 2.0)


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from benchmarks import provenance

    env = provenance.environment()  # recorded with the results: versions, CPU, threads, commit
    print(provenance.line(env), flush=True)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--modes", nargs="*", default=["collapse", "length", "hacking"])
    parser.add_argument("--seeds", nargs="*", type=int, default=[1, 2, 3])
    parser.add_argument("--out", default="runs/heal-bench")
    args = parser.parse_args()
    out = Path(args.out)
    planned = [f"healthy-s{s}" for s in args.seeds] + [f"{m}-heal-s{s}" for s in args.seeds for m in args.modes]
    taken = [name for name in planned if (out / name).exists()]
    if taken:  # `demo` refuses an existing run dir in seconds: its time would make every ratio meaningless
        sys.exit(f"{out}: already holds {', '.join(taken)}; pass a fresh --out (or remove them)")
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for seed in args.seeds:
        code, healthy = demo(out, f"healthy-s{seed}", seed)
        print(f"healthy demo seed {seed}: {healthy:.0f} s (exit {code})", flush=True)
        if code not in (0, 1):  # 1: it ran, and the doctor named a failure; anything else: it did not run
            sys.exit(f"the healthy demo of seed {seed} failed (exit {code}; {out / f'healthy-s{seed}.log'}): "
                     "no baseline to time the heals against")
        for mode in args.modes:
            name = f"{mode}-heal-s{seed}"
            code, seconds = demo(out, name, seed, "--failure", mode, "--heal")
            row = {"run": name, "mode": mode, "seed": seed, "exit": code, "seconds": round(seconds),
                   "healthy_seconds": round(healthy), "ratio": round(seconds / healthy, 2),
                   **judge(out / name, mode, seed)}
            row["ok"] = ok(mode, row, row["ratio"])
            rows.append(row)
            print(json.dumps(row), flush=True)
            provenance.write_json(out / "summary.json", rows, env)
    print("| run | heals | doctor on the final segment | sampled success | hacking: held-out success final / "
          "pre-onset checkpoint; logged shadow at ckpt / pre-onset / abandoned end | time (healthy) | ratio | ok |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        shadow = (f"{r.get('heldout_final')} / {r.get('heldout_pre_onset')} ({r.get('heldout_pre_onset_ckpt')}); "
                  f"{r.get('shadow_ckpt')} / {r.get('shadow_pre_onset')} / {r.get('shadow_abandoned_end')}"
                  if r["mode"] == "hacking" and "shadow_ckpt" in r else "")
        success = f"{r['success']:.1%}" if r["success"] is not None else "-"
        print(f"| {r['run']} | {r['heals']} | {', '.join(r['failures']) or 'no failure'} | {success} | {shadow} | "
              f"{r['seconds']} s ({r['healthy_seconds']} s) | {r['ratio']} | {'yes' if r['ok'] else 'NO'} |")


if __name__ == "__main__":
    main()
