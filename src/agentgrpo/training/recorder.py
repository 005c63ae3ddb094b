"""The flight recorder: a `TrainerCallback` that writes every logged step to the run directory.

It only appends plain files (metrics.jsonl, completions.jsonl), so it runs alongside any `report_to`
tracker (trackio, wandb, tensorboard) and the doctor can read a run while it is still going.
"""

from __future__ import annotations

import json
import time
import warnings
from pathlib import Path

from transformers import TrainerCallback

from agentgrpo import rundir

SUMMARY_KEYS = {"train_runtime", "train_samples_per_second", "train_steps_per_second", "train_loss"}


class Recorder(TrainerCallback):
    """Append each log to ``metrics.jsonl``; every ``sample_every`` logs, a few completions with rewards."""

    def __init__(self, run_dir: str | Path, sample_every: int = 10, samples: int = 4):
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.sample_every = sample_every
        self.samples = samples
        self._trainer = None
        self._n_logs = 0

    def attach(self, trainer) -> None:
        """Give the recorder the trainer whose rollouts it samples (GRPOTrainer keeps them in ``_logs``);
        without it, metrics.jsonl is written and completions.jsonl is not."""
        self._trainer = trainer

    def on_train_begin(self, args, state, control, **kwargs):
        if state.is_world_process_zero and state.global_step > 0:
            _truncate_after(self.run_dir / rundir.METRICS, state.global_step)  # resumed: drop replayed steps
        if state.is_world_process_zero and not (self.run_dir / rundir.CONFIG).exists():
            rundir.write_config(self.run_dir, self._describe(args))  # a plain TRL script: say what the doctor needs

    def _describe(self, args) -> dict:
        """The config the doctor reads beside metrics.jsonl: reward names and weights (weight 0 = shadow),
        the completion length cap. Written only when the run directory has no config.yaml of its own."""
        names = list(getattr(self._trainer, "reward_func_names", None) or [])
        weights = getattr(self._trainer, "reward_weights", None)
        weights = [float(w) for w in weights.tolist()] if weights is not None else [1.0] * len(names)
        config = {"max_completion_length": getattr(args, "max_completion_length", None)}
        if names and len(weights) == len(names):
            config["rewards"] = [{"name": n, "weight": w} for n, w in zip(names, weights, strict=True)]
        return config

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not state.is_world_process_zero or not logs:
            return
        if SUMMARY_KEYS & set(logs):
            (self.run_dir / rundir.SUMMARY).write_text(json.dumps(logs, indent=1))
            return
        record = {"step": state.global_step, "epoch": state.epoch, "time": time.time(), **logs}
        rundir.append_jsonl(self.run_dir / rundir.METRICS, record)
        self._n_logs += 1
        if self.sample_every and self._n_logs % self.sample_every == 1:
            self._record_samples(state.global_step)

    def _record_samples(self, step: int) -> None:
        logs = getattr(self._trainer, "_logs", None)  # TRL internal; absent -> no samples, said once
        if not logs or not logs.get("completion"):
            if self._trainer is not None and logs is None:
                warnings.warn("this TRL version keeps no rollout log; completions.jsonl stays empty", stacklevel=2)
                self._trainer = None
            return
        prompts, completions = list(logs["prompt"]), list(logs["completion"])
        rewards = {name: list(values) for name, values in logs["rewards"].items()}
        for i in range(max(0, len(completions) - self.samples), len(completions)):
            rundir.append_jsonl(self.run_dir / rundir.COMPLETIONS, {
                "step": step, "prompt": prompts[i][-1] if isinstance(prompts[i], list) else prompts[i],
                "completion": completions[i],
                "rewards": {name: values[i] for name, values in rewards.items() if i < len(values)},
            })


def _truncate_after(path: Path, step: int) -> None:
    """Keep only records at or before ``step`` (the steps a resumed run replays are logged again)."""
    records = [r for r in rundir.read_jsonl(path) if r.get("step", 0) <= step]
    if path.exists():
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
