"""Cost of agentgrpo's callbacks (recorder + live doctor) per GRPO step, against plain TRL.

Trains the same tiny config (same model, seed and data) with plain TRL `GRPOTrainer` and with agentgrpo's
callbacks, alternating A/B rounds so machine noise hits both alike, and prints the ratio of median step
times. Target: <= 1.05.

    python benchmarks/overhead.py --rounds 3 --steps 8
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")


class StepTimer:
    """Wall time of each optimizer step (generation + scoring + update), as a TrainerCallback."""

    def __new__(cls):
        from transformers import TrainerCallback

        class _Timer(TrainerCallback):
            def __init__(self):
                self.times, self._t = [], None

            def on_step_begin(self, args, state, control, **kw):
                self._t = time.perf_counter()

            def on_step_end(self, args, state, control, **kw):
                self.times.append(time.perf_counter() - self._t)

        return _Timer()


def one_run(with_callbacks: bool, steps: int, model: str) -> list[float]:
    from agentgrpo.config import load_config
    from agentgrpo.pipeline import _live_doctor
    from agentgrpo.tasks import get_task
    from agentgrpo.training.grpo import build_grpo_trainer

    cfg = load_config(None, ["--max_steps", str(steps), "--per_device_train_batch_size", "16",
                             "--num_generations", "8", "--max_completion_length", "48", "--logging_steps", "1",
                             "--save_strategy", "no", "--disable_tqdm", "true", "--seed", "0",
                             "--doctor_every", "1"])
    timer = StepTimer()
    with tempfile.TemporaryDirectory() as tmp:
        callbacks = [timer, *(_live_doctor(cfg, Path(tmp)) if with_callbacks else [])]
        trainer = build_grpo_trainer(cfg, get_task("calculator"), model, Path(tmp), callbacks=callbacks,
                                     record=with_callbacks)
        trainer.train()
    return timer.times[1:]  # the first step warms caches


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--model", default=None, help="model directory (default: the shipped tiny checkpoint)")
    args = parser.parse_args()
    from agentgrpo.tiny.build import SHIPPED_SFT

    model = args.model or str(SHIPPED_SFT)
    plain, ours = [], []
    for r in range(args.rounds):
        first_ours = r % 2 == 1  # alternate the order too
        for with_cb in ((True, False) if first_ours else (False, True)):
            times = one_run(with_cb, args.steps, model)
            (ours if with_cb else plain).extend(times)
            print(f"round {r + 1} {'agentgrpo' if with_cb else 'plain TRL'}: "
                  f"median step {statistics.median(times):.3f}s over {len(times)} steps", flush=True)
    ratio = statistics.median(ours) / statistics.median(plain)
    print(f"plain TRL median step: {statistics.median(plain):.3f}s ({len(plain)} steps)")
    print(f"agentgrpo callbacks  : {statistics.median(ours):.3f}s ({len(ours)} steps)")
    print(f"overhead ratio (agentgrpo / plain): {ratio:.3f}  (target <= 1.05)")


if __name__ == "__main__":
    main()
