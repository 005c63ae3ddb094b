"""A compact progress bar: the step bar with the few numbers worth watching, not a metric dict per step."""

from __future__ import annotations

from transformers.trainer_callback import ProgressCallback

SHOWN = {"reward": "reward", "tools/call_frequency": "tools", "completions/mean_length": "len",
         "entropy": "entropy", "loss": "loss"}


class CompactProgress(ProgressCallback):
    """Shows reward, tool-call rate, length and entropy as the bar's postfix (every metric is in metrics.jsonl)."""

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not state.is_world_process_zero or self.training_bar is None or not logs:
            return
        shown = {label: f"{logs[key]:.3g}" for key, label in SHOWN.items() if isinstance(logs.get(key), float)}
        if shown:
            self.training_bar.set_postfix(shown, refresh=False)


def use_compact_progress(trainer) -> None:
    """Swap the trainer's default progress printer (which prints every log dict) for `CompactProgress`."""
    if trainer.pop_callback(ProgressCallback) is not None:
        trainer.add_callback(CompactProgress())
