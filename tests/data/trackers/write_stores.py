"""Writes the committed tracker stores of this folder (see README.md); not a test."""

import random
import sys

rng = random.Random(36)
rows = []
for step in range(1, 41):
    p = min(0.85, 0.1 + 0.02 * step)
    rows.append(
        {
            "train/reward": 2 * p + 0.5 + rng.gauss(0, 0.05),
            "train/reward_std": 0.3 + rng.gauss(0, 0.02),
            "train/kl": 0.002 * step + abs(rng.gauss(0, 0.002)),
            "train/completions/mean_length": 180 + rng.gauss(0, 5),
            "train/rewards/correctness_reward_func/mean": 2 * p + rng.gauss(0, 0.05),
            "train/rewards/format_reward_func/mean": 0.5,
            "train/global_step": step,
        }
    )
if sys.argv[1] == "wandb":
    import wandb

    run = wandb.init(mode="offline", project="agentgrpo-fixture", dir=".", config={"max_completion_length": 256})
    for r in rows:
        wandb.log(r, step=r["train/global_step"])
    run.finish()
else:
    import mlflow

    mlflow.set_tracking_uri("file:./mlruns")
    mlflow.set_experiment("grpo-fixture")
    with mlflow.start_run(run_name="fixture"):
        mlflow.log_params({"max_completion_length": 256})
        for r in rows:
            metrics = {k: v for k, v in r.items() if k != "train/global_step"}
            mlflow.log_metrics(metrics, step=r["train/global_step"])
