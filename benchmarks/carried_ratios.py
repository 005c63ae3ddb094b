"""How far carried groups are off-policy: importance ratios of carried vs fresh rows under ``refill_carry``.

    OMP_NUM_THREADS=1 python benchmarks/carried_ratios.py --task calculator-hard --steps 40 --seed 42

Trains the demo recipe (configs/demo.yaml) with ``dynamic_sampling: refill`` and ``refill_carry: true`` for
``--steps`` steps and, at every micro-step that holds carried rows, recomputes the current policy's
log-probabilities of the kept rows (TRL's own forward) against the sampling log-probabilities the loss
uses. Prints, over the completion tokens of carried and of fresh rows: the mean |log ratio| and the share of
tokens PPO's clip cuts off (ratio beyond 1 - epsilon or 1 + epsilon_high on the side the advantage pushes).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")


def main(argv=None) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from benchmarks import provenance

    env = provenance.environment()  # recorded with the results: versions, CPU, threads, commit
    print(provenance.line(env), flush=True)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", default="calculator-hard")
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--max_steps", type=int, default=400, help="the learning-rate horizon (as the benchmark)")
    args = parser.parse_args(argv)

    import torch
    from transformers import TrainerCallback

    from agentgrpo.config import config_path
    from agentgrpo.plan import resolve_plan
    from agentgrpo.tiny.build import SHIPPED_SFT
    from agentgrpo.training import dynamic_sampling as ds
    from agentgrpo.training.grpo import build_grpo_trainer

    torch.set_num_threads(1)
    totals = {"carried": [0, 0.0, 0.0], "fresh": [0, 0.0, 0.0]}  # tokens, sum |log ratio|, clipped tokens
    with tempfile.TemporaryDirectory() as tmp:
        cfg = resolve_plan(config_path("demo"), [
            "--task", args.task, "--dynamic_sampling", "refill", "--refill_carry", "true", "--seed", str(args.seed),
            "--max_steps", str(args.max_steps), "--save_strategy", "no", "--disable_tqdm", "true", "--doctor_every",
            "0", "--output_dir", tmp])
        trainer = build_grpo_trainer(cfg, str(SHIPPED_SFT))
        compute = trainer.compute_loss

        def compute_loss(model, inputs, **kwargs):
            batch = ds.rows_for_loss(inputs)
            carried = inputs[ds.CARRIED][inputs[ds.KEEP]]
            if carried.any():
                _tally(trainer, model, batch, carried, totals)
            return compute(model, inputs, **kwargs)

        class Stop(TrainerCallback):
            def on_step_end(self, a, state, control, **kwargs):
                control.should_training_stop = state.global_step >= args.steps

        trainer.compute_loss = compute_loss
        trainer.add_callback(Stop())
        trainer.train()
    result = {"task": args.task, "seed": args.seed, "steps": args.steps}
    for name, (tokens, log_ratio, clipped) in totals.items():
        result[name] = {"tokens": tokens, "mean_abs_log_ratio": round(log_ratio / max(1, tokens), 4),
                        "clipped_share": round(clipped / max(1, tokens), 4)}
    print(json.dumps(provenance.stamp(result, env)))
    return 0


def _tally(trainer, model, batch, carried, totals) -> None:
    import torch

    ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], dim=1)
    mask = torch.cat([batch["prompt_mask"], batch["completion_mask"]], dim=1)
    with torch.no_grad():
        logps, _, _ = trainer._get_per_token_logps_and_entropies(model, ids, mask, batch["completion_ids"].size(1))
    log_ratio = logps - batch["old_per_token_logps"]
    loss_mask = batch["completion_mask"].bool()
    if batch.get("tool_mask") is not None:
        loss_mask &= batch["tool_mask"].bool()
    adv = batch["advantages"].unsqueeze(1).expand_as(log_ratio)
    ratio = log_ratio.exp()
    clipped = ((ratio > 1 + trainer.epsilon_high) & (adv > 0)) | ((ratio < 1 - trainer.epsilon_low) & (adv < 0))
    for name, rows in (("carried", carried), ("fresh", ~carried)):
        m = loss_mask & rows.unsqueeze(1)
        totals[name][0] += int(m.sum())
        totals[name][1] += float(log_ratio[m].abs().sum())
        totals[name][2] += float(clipped[m].sum())


if __name__ == "__main__":
    sys.exit(main())
