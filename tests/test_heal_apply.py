"""One heal, two paths (issue 37, item 5): the same remedy, applied by ``agentgrpo train --on_failure heal``
(`agentgrpo.heal.loop`) and by `resume_healed` in a user's own script, leaves the trainer with the same
effective settings: TRL's generation settings (the length cap is ``max_new_tokens`` there), its own copies of
GRPOConfig fields, and agentgrpo's dynamic sampling. Both paths train a few tiny steps; the planted remedy
changes fields of each kind."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest
from transformers import TrainerCallback

from agentgrpo import rundir
from agentgrpo.doctor.finding import FAILURE, Finding
from agentgrpo.heal import history, remedies, rollback

SETTINGS = ["--model", "tiny", "--per_device_train_batch_size", "8", "--max_completion_length", "24",
            "--eval_before", "false", "--eval_after", "false", "--preflight", "false", "--save_steps", "1",
            "--disable_tqdm", "true", "--max_steps", "4", "--doctor_every", "1", "--eval_size", "4",
            "--eval_modes", "sampled", "--learning_rate", "1e-3", "--seed", "3"]
STOP_AT = 3  # the planted failure's step and onset: the heal rolls back to checkpoint-0
# Fields of each kind: one TRL copies under another name into its generation settings (max_completion_length
# -> max_new_tokens), one it copies under its own name (temperature), one only TrainingArguments holds
# (learning_rate), and one of agentgrpo's own (dynamic_sampling).
REMEDY = {"max_completion_length": 12, "temperature": 0.7, "learning_rate": 5e-4, "dynamic_sampling": "filter"}


@pytest.fixture
def planted_remedy(monkeypatch):
    monkeypatch.setattr(rollback, "remedy_for", lambda mode: remedies.Remedy("planted", lambda s: dict(REMEDY)))


def effective(trainer) -> dict:
    """What the trainer will generate and train with."""
    generation, kwargs = trainer.generation_config, trainer.generation_kwargs
    return {"max_completion_length": (trainer.max_completion_length, trainer.args.max_completion_length,
                                      generation.max_new_tokens, kwargs["max_new_tokens"]),
            "temperature": (trainer.temperature, trainer.args.temperature, generation.temperature,
                            kwargs["temperature"]),
            "learning_rate": trainer.args.learning_rate,
            "dynamic_sampling": dataclasses.asdict(trainer.dynamic_sampling_settings)}


class PlantedFailure(TrainerCallback):
    """Stands in for the live doctor of ``agentgrpo train``: names a failure at `STOP_AT` once, and stops."""

    def __init__(self):
        self.stopped_finding, self.history = None, SimpleNamespace(last_step=None)

    def on_step_end(self, args, state, control, **kwargs):
        self.history.last_step = state.global_step
        if state.global_step == STOP_AT:
            control.should_save = control.should_training_stop = True
            self.stopped_finding = Finding(detector="collapse", status=FAILURE, verdict="planted", onset=STOP_AT)


def _healed_rows(run_dir) -> list[dict]:
    """The metrics rows of the segment after the heal (the lineage rolled back to step 0)."""
    return [r for r in rundir.read_jsonl(run_dir / rundir.METRICS) if "completions/max_length" in r]


def test_a_remedy_has_the_same_effect_in_train_and_in_a_users_script(tiny_sft_dir, tmp_path, monkeypatch,
                                                                       planted_remedy):
    from agentgrpo import pipeline
    from agentgrpo.cli import main
    from agentgrpo.plan import resolve_plan
    from agentgrpo.training import grpo
    from agentgrpo.training.heal_callbacks import HealCallback, StartCheckpoint, resume_healed

    # agentgrpo train --on_failure heal: the loop builds a trainer per segment from the healed plan
    built, build = [], grpo.build_grpo_trainer
    monkeypatch.setattr(grpo, "build_grpo_trainer", lambda *a, **k: built.append(build(*a, **k)) or built[-1])
    fails = iter([True, False])
    monkeypatch.setattr(pipeline, "_live_doctor", lambda plan, run_dir: [PlantedFailure()] if next(fails) else [])
    assert main(["train", *SETTINGS, "--on_failure", "heal", "--output_dir", str(tmp_path / "train")]) == 0
    (heal,) = history.heals(tmp_path / "train")
    assert heal["action"] == "resume" and heal["checkpoint_step"] == 0
    assert {k: new for k, (_old, new) in heal["changes"].items()} == REMEDY
    loop_trainer = built[-1]

    # a user's own script: the same trainer settings, HealCallback + resume_healed
    script_dir = tmp_path / "script"
    plan = resolve_plan(None, [*SETTINGS, "--output_dir", str(script_dir)], cuda_available=False)

    class Planted(HealCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step == STOP_AT and not history.heals(self.run_dir):
                control.should_save = control.should_training_stop = True
                self.stopped_by = "collapse"
                self.stopped_finding = Finding(detector="collapse", status=FAILURE, verdict="planted", onset=STOP_AT)
            return control

    trainer = grpo.build_grpo_trainer(plan, str(tiny_sft_dir),
                                      callbacks=[Planted(script_dir, every=1, min_steps=1, print_fn=None)])
    trainer.add_callback(StartCheckpoint(trainer))
    trainer.train()
    before = effective(trainer)
    assert resume_healed(trainer, script_dir) is True
    (script_heal,) = history.heals(script_dir)
    assert script_heal["checkpoint_step"] == 0 and script_heal["status"] == "done"

    # the same effective settings, and they are the remedy's (not what the run began with)
    assert effective(trainer) == effective(loop_trainer)
    after = effective(trainer)
    assert after["max_completion_length"] == (12,) * 4 and after["temperature"] == (0.7,) * 4
    assert after["learning_rate"] == 5e-4 and after["dynamic_sampling"]["dynamic_sampling"] == "filter"
    assert before["max_completion_length"] == (24,) * 4 and before["dynamic_sampling"]["dynamic_sampling"] == "off"
    # ... and the same behaviour: the healed segments generate within the new cap
    for run_dir in (tmp_path / "train", script_dir):
        healed = _healed_rows(run_dir)
        assert [r["step"] for r in healed] == [1, 2, 3, 4]
        assert all(r["completions/max_length"] <= 12 for r in healed), [r["completions/max_length"] for r in healed]
    abandoned = rundir.read_jsonl(tmp_path / "train" / "segments" / "1" / rundir.METRICS)
    assert max(r["completions/max_length"] for r in abandoned) > 12  # the cap was not already met
