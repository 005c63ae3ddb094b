"""Healing in a Trainer: the learning rate a heal sets, and healing in a user's own TRL script.

`LearningRateFromArgs`: a resumed Trainer restores the optimizer and scheduler from the checkpoint, learning
rate included; a heal that lowers ``learning_rate`` would not take effect. On a resume it rescales the
optimizer and the scheduler to ``args.learning_rate`` (the schedule's shape and position are kept).

In your own script (`HealCallback` stops on a failure and writes the heal plan to ``<run_dir>/heal.jsonl``;
`resume_healed` is the one line that carries it out and trains on)::

    trainer = GRPOTrainer(..., callbacks=[Recorder("runs/mine"), HealCallback("runs/mine")])
    trainer.train()
    while resume_healed(trainer, "runs/mine"):   # roll back, apply the remedy, train on (heal_max times)
        pass
"""

from __future__ import annotations

import copy
import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from agentgrpo import rundir
from agentgrpo.config import RunConfig
from agentgrpo.doctor.live import History, LiveDoctorCallback
from agentgrpo.doctor.modes import MODES
from agentgrpo.heal import history, rollback
from agentgrpo.training.dynamic_sampling_options import DynamicSampling


class LearningRateFromArgs(TrainerCallback):
    """Set the optimizer's and scheduler's learning rate to ``args.learning_rate`` (a no-op on a fresh run; on a
    run resumed from a checkpoint, checkpoint-0 included, it undoes the restored rate)."""

    def on_train_begin(self, args, state, control, optimizer=None, lr_scheduler=None, **kwargs):
        if optimizer is None:
            return control
        rescale_learning_rate(optimizer, lr_scheduler, args.learning_rate)
        return control


def rescale_learning_rate(optimizer, lr_scheduler, learning_rate: float) -> float:
    """Scale every param group (and the scheduler's base rates) so the peak rate is ``learning_rate``; the
    factor applied (1.0 when it already is)."""
    base = list(getattr(lr_scheduler, "base_lrs", None) or [])
    peak = base[0] if base else optimizer.param_groups[0].get("initial_lr", optimizer.param_groups[0]["lr"])
    if not peak or not math.isfinite(peak) or math.isclose(peak, learning_rate, rel_tol=1e-9):
        return 1.0
    factor = learning_rate / peak
    for group in optimizer.param_groups:
        group["lr"] *= factor
        if "initial_lr" in group:
            group["initial_lr"] *= factor
    if base:
        lr_scheduler.base_lrs = [b * factor for b in base]
        if getattr(lr_scheduler, "_last_lr", None) is not None:
            lr_scheduler._last_lr = [group["lr"] for group in optimizer.param_groups]
    return factor


class StartCheckpoint(TrainerCallback):
    """Save the starting model as checkpoint-0 (weights, optimizer and scheduler at step 0, trainer_state with
    global_step 0) when a run starts from step 0, so a failure whose onset precedes the first periodic
    checkpoint can roll back to the start. An existing checkpoint-0 (a segment resumed from it) is kept.
    ``trainer.train(resume_from_checkpoint=".../checkpoint-0")`` resumes at step 0 with that state."""

    def __init__(self, trainer):
        self.trainer = trainer

    def on_train_begin(self, args, state, control, **kwargs):
        if state.global_step == 0 and not (Path(args.output_dir) / "checkpoint-0" / rundir.TRAINER_STATE).is_file():
            # the Trainer's own periodic save (private API: a transformers upgrade that renames it touches only here)
            self.trainer._save_checkpoint(self.trainer.model_wrapped, trial=None)
        return control


class HealCallback(LiveDoctorCallback):
    """The live doctor for your own TRL script, healing: on a failure (``stop_on``, default every mode) it saves
    a checkpoint, stops, and writes the heal plan to ``<run_dir>/heal.jsonl`` (the checkpoint before the onset,
    the remedy's settings, or a stop with the reason); `resume_healed` carries it out."""

    def __init__(self, run_dir: str | Path, every: int = RunConfig.doctor_every, stop_on=(),
                 heal_max: int = RunConfig.heal_max, **kwargs):
        super().__init__(every=every, stop_on=tuple(stop_on) or MODES, run_dir=run_dir, **kwargs)
        self.heal_max = heal_max
        self.planned: dict | None = None

    def on_train_begin(self, args, state, control, **kwargs):
        """A new segment: the history restarts from the lineage in metrics.jsonl."""
        self.history, self.report, self.stopped_by, self.stopped_finding = History(), None, None, None
        self.planned = None
        self._train_logs, self._seen, self._streak = 0, set(), {}
        return super().on_train_begin(args, state, control, **kwargs)

    def on_train_end(self, args, state, control, **kwargs):
        control = super().on_train_end(args, state, control, **kwargs)
        finding = self.stopped_finding
        if finding is None or self.run_dir is None:
            return control
        record = rollback.decide(self.run_dir, finding.to_dict(), step=int(state.global_step),
                                 config=_config(self.run_dir), setting=lambda k: getattr(args, k, None),
                                 heal_rewards=None, heal_max=self.heal_max,
                                 checkpoints_dir=Path(args.output_dir))
        rollback.plan(self.run_dir, record)
        self.planned = record
        if self.print_fn is not None:
            self.print_fn(f"[agentgrpo heal] {history.lines(self.run_dir)[-1]}\n    to carry it out and train on: "
                          f"resume_healed(trainer, {str(self.run_dir)!r})")
        return control


def resume_healed(trainer, run_dir: str | Path) -> bool:
    """Carry out the heal `HealCallback` planned in ``run_dir`` and train on from its checkpoint with the
    changed settings; False (nothing trained) when there is none, or it is a stop (then final model = the
    checkpoint before the onset, in ``<run_dir>/final``).

    The remedy goes through `agentgrpo.heal.apply`, as in ``agentgrpo train``: the trainer is seen as a
    `ScriptPlan`, the remedy applied to it, and the trainer retuned to the new plan (`retune`)."""
    from agentgrpo.heal.apply import apply

    run_dir = Path(run_dir)
    record = history.pending(run_dir)
    if record is None:
        return False
    rollback.carry_out(run_dir, record)
    if record.get("action") != "resume":
        return False
    plan = apply(ScriptPlan.of(trainer, run_dir), record)
    retune(trainer, plan)
    if not any(isinstance(c, LearningRateFromArgs) for c in trainer.callback_handler.callbacks):
        trainer.add_callback(LearningRateFromArgs())
    trainer.train(resume_from_checkpoint=plan.checkpoint)
    return True


# TRL's GRPOTrainer copies some GRPOConfig fields into its generation settings under other names.
GENERATION_NAMES = {"max_completion_length": "max_new_tokens"}


@dataclass(frozen=True)
class ScriptPlan:
    """A user's own trainer seen as a plan, for `agentgrpo.heal.apply`: its GRPOConfig (``args``, a copy) and,
    for a `DynamicSamplingTrainer`, its `DynamicSampling`. ``changed``: the GRPOConfig fields a heal changed;
    ``not_applied``: the changes a trainer built by a script cannot take, each with the reason."""

    run_dir: Path
    args: Any
    dynamic_sampling: DynamicSampling | None
    has_ref_model: bool
    checkpoint: str | None = None
    changed: tuple[str, ...] = ()
    not_applied: tuple[str, ...] = ()

    @classmethod
    def of(cls, trainer, run_dir: str | Path) -> ScriptPlan:
        return cls(run_dir=Path(run_dir), args=trainer.args,
                   dynamic_sampling=getattr(trainer, "dynamic_sampling_settings", None),
                   has_ref_model=getattr(trainer, "ref_model", None) is not None)

    def with_changes(self, changes: dict[str, Any], checkpoint: str | Path) -> ScriptPlan:
        """This plan with ``changes`` (option -> new value) applied, resuming from ``checkpoint`` (relative to
        the run directory): GRPOConfig fields into a copy of ``args``, dynamic sampling options into a new
        `DynamicSampling` (checked as it is made)."""
        args, changed, skipped = copy.copy(self.args), [], []
        own = {k: v for k, v in changes.items() if k in DynamicSampling.names()}
        for key, new in changes.items():
            if key in own:
                continue
            if key == "rewards":
                skipped.append("rewards not applied: a script's reward functions are its own (heal_rewards apply "
                               "to agentgrpo runs)")
            elif key == "beta" and not getattr(self.args, "beta", None) and not self.has_ref_model:
                skipped.append(f"beta {new} not applied: this trainer was built with beta 0 and holds no reference "
                               f"model; build it with GRPOConfig(beta={new}) to add the KL term")
            elif not hasattr(args, key):
                skipped.append(f"{key} not applied: not a field of this trainer's {type(args).__name__}")
            else:
                setattr(args, key, new)
                changed.append(key)
        sampling = self.dynamic_sampling
        if own and sampling is None:
            skipped.append(f"{', '.join(own)} not applied: this trainer is not a DynamicSamplingTrainer")
        elif own:
            sampling = dataclasses.replace(sampling, **own)
        return dataclasses.replace(self, args=args, dynamic_sampling=sampling,
                                   checkpoint=str(self.run_dir / checkpoint), changed=tuple(changed),
                                   not_applied=tuple(skipped))


def retune(trainer, plan: ScriptPlan) -> None:
    """Make ``trainer`` train as a trainer built from ``plan`` would: each changed GRPOConfig field set in its
    ``args``, in the attribute TRL copied it to at build time, and in its generation settings (under TRL's
    name there: `GENERATION_NAMES`); its `DynamicSampling` replaced. What it cannot take is said."""
    for key in plan.changed:
        value = getattr(plan.args, key)
        setattr(trainer.args, key, value)
        if hasattr(trainer, key):
            setattr(trainer, key, value)
        name = GENERATION_NAMES.get(key, key)
        generation = getattr(trainer, "generation_config", None)
        if generation is not None and hasattr(generation, name):
            setattr(generation, name, value)
        kwargs = getattr(trainer, "generation_kwargs", None)
        if isinstance(kwargs, dict) and name in kwargs:
            kwargs[name] = value
    if plan.dynamic_sampling is not None and hasattr(trainer, "dynamic_sampling_settings"):
        trainer.dynamic_sampling_settings = plan.dynamic_sampling
    for note in plan.not_applied:
        print(f"[agentgrpo heal] {note}", flush=True)


def _config(run_dir: Path) -> dict:
    """The run directory's config.yaml (the Recorder writes one for a plain TRL script: rewards, length cap)."""
    return rundir.read_config(run_dir)
