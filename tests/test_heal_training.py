"""Heals of real (tiny, few-step) training runs: `agentgrpo train --on_failure heal` rolls back and goes on with
the remedy; a run killed (SIGKILL) during the heal finishes it on --resume; a plain TRL script heals with
`HealCallback` + `resume_healed`. A stand-in live doctor names a planted failure at a chosen step, so the
runs are short; the real doctor's detections are measured by benchmarks/heal.py."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from transformers import TrainerCallback

from agentgrpo import rundir
from agentgrpo.doctor.finding import FAILURE, Finding
from agentgrpo.heal import history
from agentgrpo.heal.remedies import COLLAPSE_LR

SRC = Path(__file__).resolve().parent.parent / "src"
FAST = ["--model", "tiny", "--per_device_train_batch_size", "8", "--max_completion_length", "24",
        "--eval_before", "false", "--eval_after", "false", "--preflight", "false", "--save_steps", "1",
        "--disable_tqdm", "true", "--max_steps", "5", "--on_failure", "heal", "--doctor_every", "1",
        "--eval_size", "8"]  # eval_size: the held-out evals a healed run spends choosing its final model


class PlantedFailure(TrainerCallback):
    """Stands in for the live doctor: at ``stop_at`` it names ``mode`` with ``onset`` and stops the trainer (as
    `LiveDoctorCallback` does); records the step each segment starts from."""

    started: list[int] = []

    def __init__(self, stop_at: int | None, onset: int, mode: str = "collapse"):
        self.stop_at, self.onset, self.mode = stop_at, onset, mode
        self.stopped_finding, self.history = None, SimpleNamespace(last_step=None)

    def on_train_begin(self, args, state, control, **kwargs):
        PlantedFailure.started.append(int(state.global_step))

    def on_step_end(self, args, state, control, **kwargs):
        self.history.last_step = state.global_step
        if state.global_step == self.stop_at:
            control.should_save = control.should_training_stop = True
            self.stopped_finding = Finding(detector=self.mode, status=FAILURE, verdict="planted", onset=self.onset,
                                           evidence=["planted"])


def plant(monkeypatch, stop_at: int | None, onset: int, mode: str = "collapse", times: int = 1):
    """The pipeline's live doctor replaced: the first ``times`` segments fail at ``stop_at``."""
    from agentgrpo import pipeline

    made = []

    def live_doctor(cfg, run_dir):
        made.append(cfg)
        return [PlantedFailure(stop_at if len(made) <= times else None, onset, mode)]

    PlantedFailure.started = []
    monkeypatch.setattr(pipeline, "_live_doctor", live_doctor)
    return made


def _rows(path: Path) -> list[dict]:
    return rundir.read_jsonl(path)


def test_train_heals_from_the_checkpoint_before_the_onset_with_the_remedy(tmp_path, monkeypatch):
    from agentgrpo.cli import main

    plant(monkeypatch, stop_at=5, onset=5)
    assert main(["train", *FAST, "--runs_dir", str(tmp_path), "--run_name", "r", "--learning_rate", "0.001"]) == 0
    run = tmp_path / "r"
    assert PlantedFailure.started == [0, 1]  # checkpoint-1: 1 + 1 + ONSET_MARGIN < 5; never a later one
    (heal,) = history.heals(run)
    assert (heal["status"], heal["action"], heal["checkpoint_step"]) == ("done", "resume", 1)
    abandoned, lineage = _rows(run / "segments/1/metrics.jsonl"), _rows(run / "metrics.jsonl")
    # collapse: COLLAPSE_LR of the lowest rate the abandoned segment trained at after checkpoint-1, up to the onset
    broke_at = min(r["learning_rate"] for r in abandoned if 1 < r["step"] <= 5 and r["learning_rate"] > 0)
    new = float(f"{broke_at * COLLAPSE_LR:.3g}")
    assert heal["changes"] == {"learning_rate": [0.001, new], "beta": [0.0, 0.04]} and new < 1e-4
    assert yaml.safe_load((run / "config.yaml").read_text())["learning_rate"] == new
    assert [r["step"] for r in abandoned] == [1, 2, 3, 4, 5] and [r["step"] for r in lineage] == [1, 2, 3, 4, 5]
    assert lineage[:1] == abandoned[:1]  # the lineage keeps the rows before the rollback
    # the healed segment ran the same schedule, scaled to the new peak, from the same step
    for step in (2, 3, 4):
        assert lineage[step - 1]["learning_rate"] == pytest.approx(abandoned[step - 1]["learning_rate"] * new / 0.001,
                                                                    rel=1e-6)
    assert (run / "segments/1/checkpoints/checkpoint-3").is_dir()  # kept, out of checkpoints/
    assert sorted(p.name for p in (run / "checkpoints").glob("checkpoint-*")) == [f"checkpoint-{i}"
                                                                                   for i in range(0, 6)]
    assert (run / "final" / "config.json").is_file() and (run / "segments/1/final").is_dir()
    # healed, then finished: its final model is chosen among checkpoints 0-4 and its last model (checkpoint-5 is
    # that model) by held-out success (no shadow reward), and heal.jsonl says so
    choice = history.final_choice(run)
    assert choice["finished"] == 5 and choice["chosen_by"] == "held-out success"
    assert sorted(choice["scores"]) == sorted(["the last model", *(f"checkpoint-{i}" for i in range(5))])
    chosen = choice["checkpoint_step"]
    assert (chosen is None) == (not (run / "segments/last").exists())
    assert chosen is None or (run / "final" / "ROLLED_BACK_FROM").read_text().strip() == f"checkpoint-{chosen}"


def test_a_failure_before_the_first_checkpoint_rolls_back_to_the_start(tmp_path, monkeypatch):
    from agentgrpo.cli import main

    plant(monkeypatch, stop_at=2, onset=1)
    assert main(["train", *FAST, "--runs_dir", str(tmp_path), "--run_name", "r", "--learning_rate", "0.001"]) == 0
    run = tmp_path / "r"
    (heal,) = history.heals(run)
    assert (heal["action"], heal["checkpoint_step"], heal["checkpoint"]) == ("resume", 0, "checkpoints/checkpoint-0")
    assert PlantedFailure.started == [0, 0]  # the healed segment starts from the starting model, at step 0
    state = json.loads((run / "checkpoints/checkpoint-0/trainer_state.json").read_text())
    assert state["global_step"] == 0 and (run / "checkpoints/checkpoint-0/optimizer.pt").is_file()
    abandoned, lineage = _rows(run / "segments/1/metrics.jsonl"), _rows(run / "metrics.jsonl")
    assert [r["step"] for r in abandoned] == [1, 2] and [r["step"] for r in lineage] == [1, 2, 3, 4, 5]
    new = heal["changes"]["learning_rate"][1]
    assert new < 0.001 and yaml.safe_load((run / "config.yaml").read_text())["learning_rate"] == new
    # checkpoint-0's optimizer held the old rate: the healed steps run the schedule scaled to the new one
    assert lineage[0]["learning_rate"] == pytest.approx(abandoned[0]["learning_rate"] * new / 0.001, rel=1e-6)
    assert sorted(p.name for p in (run / "segments/1/checkpoints").glob("checkpoint-*")) == ["checkpoint-1",
                                                                                            "checkpoint-2"]
    assert (run / "final" / "config.json").is_file()


def test_heal_max_reached_stops_at_the_checkpoint_before_the_onset(tmp_path, monkeypatch):
    from agentgrpo.cli import main

    plant(monkeypatch, stop_at=5, onset=5, times=2)
    assert main(["train", *FAST, "--runs_dir", str(tmp_path), "--run_name", "r", "--heal_max", "1"]) == 0
    run = tmp_path / "r"
    first, second = history.heals(run)
    assert first["action"] == "resume" and second["action"] == "stop"
    assert "heal_max (1) reached" in second["reason"] and second["checkpoint_step"] == 1
    assert (run / "final" / "ROLLED_BACK_FROM").read_text().strip() == "checkpoint-1"
    assert [r["step"] for r in _rows(run / "metrics.jsonl")] == [1]
    assert [[r["step"] for r in _rows(run / f"segments/{n}/metrics.jsonl")] for n in (1, 2)] == [[1, 2, 3, 4, 5]] * 2


def test_sigkill_during_a_heal_and_resume_lose_nothing(tmp_path):
    """The training process is killed (SIGKILL) in the middle of its heal (checkpoints moved, logs not yet
    cut); `agentgrpo train --resume` finishes the heal and trains on: the same end as an uninterrupted heal."""
    script = textwrap.dedent(f"""
        import os, signal, sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from test_heal_training import PlantedFailure
        from agentgrpo import pipeline
        from agentgrpo.heal import rollback
        pipeline._live_doctor = lambda cfg, run_dir: [PlantedFailure(5, 5)]
        carry_out = rollback.carry_out
        def killed(run_dir, record, between=None):
            def at(name):
                if name == "checkpoints moved":
                    print("killed during the heal", flush=True)
                    os.kill(os.getpid(), signal.SIGKILL)
            carry_out(run_dir, record, between=at)
        rollback.carry_out = killed
        from agentgrpo.cli import main
        main(["train", *{FAST!r}, "--runs_dir", {str(tmp_path)!r}, "--run_name", "r"])
        """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(SRC)})
    assert done.returncode == -signal.SIGKILL and "killed during the heal" in done.stdout, done.stderr[-3000:]
    run = tmp_path / "r"
    assert history.pending(run)["status"] == "planned"
    assert [r["step"] for r in _rows(run / "metrics.jsonl")] == [1, 2, 3, 4, 5]  # not cut yet
    resumed = subprocess.run([sys.executable, "-c", textwrap.dedent(f"""
        from agentgrpo import pipeline
        pipeline._live_doctor = lambda cfg, run_dir: []
        from agentgrpo.cli import main
        raise SystemExit(main(["train", *{FAST!r}, "--runs_dir", {str(tmp_path)!r}, "--run_name", "r",
                               "--resume", "true"]))
        """)], capture_output=True, text=True, timeout=600, env={**os.environ, "PYTHONPATH": str(SRC)})
    assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr[-3000:]
    assert "finishing heal 1" in resumed.stdout
    (heal,) = history.heals(run)
    assert heal["status"] == "done" and yaml.safe_load((run / "config.yaml").read_text())["learning_rate"] == \
        pytest.approx(heal["changes"]["learning_rate"][1])
    abandoned, lineage = _rows(run / "segments/1/metrics.jsonl"), _rows(run / "metrics.jsonl")
    assert [r["step"] for r in abandoned] == [1, 2, 3, 4, 5] and [r["step"] for r in lineage] == [1, 2, 3, 4, 5]
    ratio = heal["changes"]["learning_rate"][1] / heal["changes"]["learning_rate"][0]
    assert lineage[2]["learning_rate"] == pytest.approx(abandoned[2]["learning_rate"] * ratio, rel=1e-6)
    assert (run / "segments/1/checkpoints/checkpoint-3").is_dir() and (run / "final" / "config.json").is_file()


def test_a_plain_trl_script_heals_with_the_callback_and_one_line(tiny_sft_dir, tmp_path):
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from agentgrpo import Recorder
    from agentgrpo.tasks.calculator import CalculatorEnv, correct_answer, train_problems
    from agentgrpo.training.heal_callbacks import HealCallback, resume_healed
    from agentgrpo.training.models import load_tokenizer

    run_dir = tmp_path / "mine"

    class Planted(HealCallback):  # the doctor's check replaced by a planted collapse at step 5, onset 5
        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step == 5 and not history.heals(self.run_dir):
                control.should_save = control.should_training_stop = True
                self.stopped_by = "collapse"
                self.stopped_finding = Finding(detector="collapse", status=FAILURE, verdict="planted", onset=5)
            return control

    trainer = GRPOTrainer(
        model=str(tiny_sft_dir), reward_funcs=[correct_answer],
        args=GRPOConfig(output_dir=str(tmp_path / "out"), max_steps=5, per_device_train_batch_size=8,
                        num_generations=8, max_completion_length=24, logging_steps=1, save_steps=1,
                        learning_rate=1e-3, use_cpu=True, report_to="none", disable_tqdm=True),
        train_dataset=Dataset.from_list(train_problems(16, seed=1)),
        processing_class=load_tokenizer(str(tiny_sft_dir)), environment_factory=CalculatorEnv,
        callbacks=[Recorder(run_dir), Planted(run_dir, every=1, min_steps=1, print_fn=None)],
    )
    trainer.train()
    assert history.pending(run_dir)["checkpoint"] == str((tmp_path / "out" / "checkpoint-1").resolve())
    assert resume_healed(trainer, run_dir) is True  # the documented one line
    assert resume_healed(trainer, run_dir) is False  # nothing pending any more
    (heal,) = history.heals(run_dir)
    assert heal["status"] == "done" and trainer.args.learning_rate == heal["changes"]["learning_rate"][1] < 1e-4
    lineage = _rows(run_dir / "metrics.jsonl")
    assert [r["step"] for r in lineage] == [1, 2, 3, 4, 5]
    assert (tmp_path / "out" / "checkpoint-5").is_dir() and (run_dir / "segments/1/checkpoints/checkpoint-3").is_dir()
    json.dumps(heal)  # the record is plain JSON
