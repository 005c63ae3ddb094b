"""Does the signal check predict the learning signal GRPO actually gets? Demo task, tiny model.

Predicts, from the shipped tiny checkpoint with the demo config, the share of groups of ``num_generations``
(8) whose trained reward is mixed (non-zero std), then trains the same config for ``--steps`` GRPO steps and
measures ``1 - frac_reward_zero_std`` (TRL's own metric) over those steps. Target: |predicted - measured|
<= 0.15. Also times the preflight as `agentgrpo train` runs it (audit + 16 prompts x 8 samples).

    python benchmarks/preflight_signal.py --prompts 64 --k 16 --steps 10 --seeds 42 7
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")


def predicted(seed: int, prompts: int, k: int) -> tuple[float, dict]:
    from agentgrpo.preflight.signal import signal_check
    from agentgrpo.preflight.target import resolve

    target = resolve("demo", ["--seed", str(seed)])
    report = signal_check(target, n_prompts=prompts, k=k, fidelity=False, progress=False)
    g = str(target.num_generations)
    return report["mixed_fraction"][g]["mixed"], report


def measured(seed: int, steps: int, out: Path) -> tuple[float, list[float], float]:
    import dataclasses

    import torch

    from agentgrpo import rundir
    from agentgrpo.pipeline import _grpo
    from agentgrpo.plan import resolve_plan
    from agentgrpo.tasks import get_task
    from agentgrpo.training.models import resolve_model
    from agentgrpo.training.reward_specs import normalize_specs

    cfg = resolve_plan(
        "src/agentgrpo/configs/demo.yaml",
        {
            "max_steps": steps,
            "seed": seed,
            "save_steps": 10_000,
            "doctor_every": 0,
            "preflight": False,
            "runs_dir": str(out),
            "run_name": f"seed{seed}",
        },
    )
    task = get_task(cfg.run.task)
    cfg.run.rewards = [dataclasses.asdict(s) for s in normalize_specs(cfg.run.rewards, task)]
    run_dir = rundir.new_run_dir(cfg.run.runs_dir, cfg.run.run_name, task.name, resume=False)
    torch.manual_seed(seed)
    start = time.perf_counter()
    _grpo(cfg, task, resolve_model(cfg.run.model, task), run_dir)
    seconds = time.perf_counter() - start
    zero = [
        r["frac_reward_zero_std"] for r in rundir.read_jsonl(run_dir / rundir.METRICS) if "frac_reward_zero_std" in r
    ][:steps]
    return 1 - sum(zero) / len(zero), zero, seconds


def preflight_seconds(out: Path) -> float:
    from agentgrpo.plan import resolve_plan
    from agentgrpo.preflight.run import run_preflight
    from agentgrpo.tasks import get_task
    from agentgrpo.training.models import resolve_model

    cfg = resolve_plan("src/agentgrpo/configs/demo.yaml")
    task = get_task("calculator")
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    run_preflight(cfg, task, resolve_model("tiny", task), out, say=lambda _: None)
    return time.perf_counter() - start


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from benchmarks import provenance

    env = provenance.environment()  # recorded with the results: versions, CPU, threads, commit
    print(provenance.line(env), flush=True)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=64)
    parser.add_argument("--k", type=int, default=16)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--seeds", type=int, nargs="+", default=[42])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        print(f"preflight inside `agentgrpo train` (demo): {preflight_seconds(Path(tmp) / 'pf'):.1f} s")
        worst = 0.0
        for seed in args.seeds:
            pred, report = predicted(seed, args.prompts, args.k)
            meas, zero, seconds = measured(seed, args.steps, Path(tmp))
            worst = max(worst, abs(pred - meas))
            print(
                f"seed {seed}: predicted mixed groups at g=8 {pred:.3f} ({args.prompts} prompts x {args.k}, "
                f"{report['seconds']:.0f} s; binary formula {report['mixed_fraction']['8']['binary_formula']:.3f}, "
                f"mean pass rate {report['verdict']['mean_pass_rate']:.3f}) | measured 1 - frac_reward_zero_std "
                f"over {len(zero)} steps {meas:.3f} (per step {[round(1 - z, 2) for z in zero]}, "
                f"GRPO {seconds:.0f} s)"
                f" | |diff| {abs(pred - meas):.3f}"
            )
        print(f"worst |predicted - measured| = {worst:.3f} (target <= 0.15): {'PASS' if worst <= 0.15 else 'FAIL'}")


if __name__ == "__main__":
    main()
