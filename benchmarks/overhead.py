"""Cost of agentgrpo's callbacks (recorder + live doctor) per GRPO step, against plain TRL.

Trains the same tiny config (same model, seed and data) with plain TRL `GRPOTrainer` and with agentgrpo's
callbacks, alternating A/B rounds (and their order) so machine noise hits both alike. Target: <= 1.05.

    python benchmarks/overhead.py --rounds 3 --steps 8

What is timed, so that nothing of ours escapes the clock:

* A step is the wall time from one ``on_step_begin`` to the next: generation, scoring, the update *and*
  the logging that follows the update, where the recorder writes and the live doctor checks (both run in
  ``on_log``, after ``on_step_end``). The first step (warm-up) and the last (no next begin) are not counted.
* The headline ratio is of **mean** step times: the doctor checks every ``doctor_every`` logged steps, and a
  median would hide those steps. The ratio of medians (a typical step) is printed too.
* The live doctor does not check before ``min_steps`` (20) logged steps, more than a short benchmark runs.
  So it starts with the history of a ``--history``-step run (synthetic, with the metrics a tool-using
  run logs), counted as logged, so its checks cost what they cost mid-run on a history of that size; and
  the count is set so that a check falls on the 4th timed step of every run. With 6 timed steps a run
  that is one check per 6 steps, more often than ``doctor_every`` (10) gives: the A/B ratio errs high.
* The time spent inside our callbacks' ``on_log`` is also measured directly (per step, and per doctor
  check), which says where any overhead comes from without the A/B noise; the doctor's cost at its real
  cadence is its time per check / ``doctor_every``.

``--doctor_every`` defaults to the config default (what a run gets); ``--doctor_every 1`` is the worst case.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")


def _timer():
    """A TrainerCallback recording the wall time of every ``on_step_begin``."""
    from transformers import TrainerCallback

    class _Timer(TrainerCallback):
        def __init__(self):
            self.begins = []

        def on_step_begin(self, args, state, control, **kw):
            self.begins.append(time.perf_counter())

    return _Timer()


class Clock:
    """Wraps a callback's ``on_log`` and adds up the time spent in it."""

    def __init__(self, callback):
        self.total, self.calls = 0.0, 0
        inner = callback.on_log

        def on_log(*args, **kwargs):
            t = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                self.total += time.perf_counter() - t
                self.calls += 1

        callback.on_log = on_log


CHECK_AT = 4  # the timed step of each run on which the live doctor checks


def preload(doctor, steps: int) -> None:
    """Give the live doctor the logged history of a ``steps``-step run, counted as logged training steps
    (fewer by less than ``doctor.every``, so that its next check falls on step ``CHECK_AT + 1``)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from benchmarks import doctor_synthetic as synthetic

    for record in synthetic.make("tool_adoption", steps, 0).records:
        doctor.history.add(record["step"] - steps, record)  # steps -steps+1 .. 0, before the real ones
    doctor._train_logs = steps - (steps + CHECK_AT + 1) % doctor.every


def one_run(with_callbacks: bool, steps: int, model: str, every: int | None, history: int) -> dict:
    from agentgrpo.pipeline import _live_doctor
    from agentgrpo.plan import resolve_plan
    from agentgrpo.training.grpo import build_grpo_trainer

    overrides = ["--model", "tiny", "--max_steps", str(steps),
                 "--per_device_train_batch_size", "16", "--num_generations", "8",
                 "--max_completion_length", "48", "--logging_steps", "1", "--save_strategy", "no",
                 "--disable_tqdm", "true", "--seed", "0"]
    if every is not None:
        overrides += ["--doctor_every", str(every)]
    timer = _timer()
    with tempfile.TemporaryDirectory() as tmp:
        cfg = resolve_plan(None, [*overrides, "--task", "calculator", "--output_dir", tmp])
        ours = _live_doctor(cfg, Path(tmp)) if with_callbacks else []
        for cb in ours:
            cb.print_fn = None
            preload(cb, history)
        trainer = build_grpo_trainer(cfg, model, callbacks=[timer, *ours], record=with_callbacks)
        mine = [
            cb for cb in trainer.callback_handler.callbacks if type(cb).__name__ in ("Recorder", "LiveDoctorCallback")
        ]
        clocks = {type(cb).__name__: Clock(cb) for cb in mine}
        doctor_checks = _count_checks(ours)
        trainer.train()
    b = timer.begins
    return {
        "times": [b[i + 1] - b[i] for i in range(1, len(b) - 1)],  # skip the warm-up step; last has no end
        "steps": len(b),
        "callbacks": {name: c.total for name, c in clocks.items()},
        "checks": doctor_checks(),
    }


def _count_checks(doctors):
    """Count the doctor's checks during training (not the final one at the end) and their time."""
    state = {"n": 0, "time": 0.0}
    for doctor in doctors:
        inner = doctor.check

        def check(*args, _inner=inner, **kwargs):
            t = time.perf_counter()
            try:
                return _inner(*args, **kwargs)
            finally:
                if not kwargs.get("final", args[2] if len(args) > 2 else False):
                    state["n"] += 1
                    state["time"] += time.perf_counter() - t

        doctor.check = check
    return lambda: dict(state)


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from benchmarks import provenance

    env = provenance.environment()  # recorded with the results: versions, CPU, threads, commit
    print(provenance.line(env), flush=True)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument(
        "--doctor_every",
        type=int,
        default=None,
        help="live doctor cadence (default: the config default, what a run gets)",
    )
    parser.add_argument(
        "--history", type=int, default=200, help="logged steps the live doctor already holds when the timed steps start"
    )
    parser.add_argument("--model", default=None, help="model directory (default: the shipped tiny checkpoint)")
    args = parser.parse_args()
    from agentgrpo.config import RunConfig
    from agentgrpo.tiny.build import SHIPPED_SFT

    every = args.doctor_every or RunConfig().doctor_every
    if args.history < 20 + every:
        parser.error("--history must be at least 20 (the doctor's min_steps) + doctor_every")
    model = args.model or str(SHIPPED_SFT)
    plain, ours, spent, checks = [], [], {}, {"n": 0, "time": 0.0}
    n_ours_steps = 0
    for r in range(args.rounds):
        first_ours = r % 2 == 1  # alternate the order too
        for with_cb in (True, False) if first_ours else (False, True):
            out = one_run(with_cb, args.steps, model, every, args.history)
            times = out["times"]
            (ours if with_cb else plain).extend(times)
            if with_cb:
                n_ours_steps += out["steps"]
                for name, t in out["callbacks"].items():
                    spent[name] = spent.get(name, 0.0) + t
                checks["n"] += out["checks"]["n"]
                checks["time"] += out["checks"]["time"]
            print(
                f"round {r + 1} {'agentgrpo' if with_cb else 'plain TRL'}: mean step "
                f"{statistics.mean(times):.3f}s, median {statistics.median(times):.3f}s over {len(times)} "
                f"steps",
                flush=True,
            )
    mean_plain, mean_ours = statistics.mean(plain), statistics.mean(ours)
    print(f"\nlive doctor every {every} logged steps, holding a {args.history}-step history")
    print(f"plain TRL step : mean {mean_plain:.3f}s, median {statistics.median(plain):.3f}s ({len(plain)} steps)")
    print(f"agentgrpo step : mean {mean_ours:.3f}s, median {statistics.median(ours):.3f}s ({len(ours)} steps)")
    for name, t in sorted(spent.items()):
        per_step = t / max(n_ours_steps, 1)
        print(f"  in {name}.on_log: {1000 * per_step:.1f} ms per step ({per_step / mean_plain:.2%} of a plain step)")
    if checks["n"]:
        per_check = checks["time"] / checks["n"]
        print(
            f"  doctor checks during training: {checks['n']}, {1000 * per_check:.0f} ms each; every {every} "
            f"steps that is {1000 * per_check / every:.1f} ms per step ({per_check / every / mean_plain:.2%} "
            f"of a plain step)"
        )
    print(f"median ratio (typical step)        : {statistics.median(ours) / statistics.median(plain):.3f}")
    print(f"overhead ratio (agentgrpo / plain) : {mean_ours / mean_plain:.3f}  (mean step times; target <= 1.05)")


if __name__ == "__main__":
    main()
