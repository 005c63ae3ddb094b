"""Resuming: the live doctor sees the whole history, overrides are honoured or refused, a chosen checkpoint."""

from __future__ import annotations

import json

import pytest

from agentgrpo import rundir
from agentgrpo.cli import main

FAST = [
    "--model",
    "tiny",
    "--per_device_train_batch_size",
    "8",
    "--max_completion_length",
    "24",
    "--eval_before",
    "false",
    "--eval_after",
    "false",
    "--save_steps",
    "1",
    "--disable_tqdm",
    "true",
]


@pytest.fixture(scope="module")
def stopped_run(tmp_path_factory):
    """A run stopped after 2 of its steps (checkpoints 1 and 2 saved)."""
    runs = tmp_path_factory.mktemp("runs")
    assert (
        main(["train", *FAST, "--runs_dir", str(runs), "--run_name", "r", "--max_steps", "2", "--doctor_every", "1"])
        == 0
    )
    return runs


def _resume(runs, max_steps: str, *extra: str) -> int:
    """``agentgrpo train`` resuming run ``r`` under ``runs`` up to ``max_steps``."""
    args = ["--runs_dir", str(runs), "--run_name", "r", "--max_steps", max_steps, "--doctor_every", "1"]
    return main(["train", *FAST, *args, "--resume", "true", *extra])


def _final_live(run):
    events = [json.loads(line) for line in (run / "doctor_live.jsonl").read_text().splitlines()]
    return [e for e in events if e["event"] == "final"][-1]


def test_the_live_doctor_after_resume_sees_every_step(stopped_run, monkeypatch):
    import transformers.trainer

    warned = []
    monkeypatch.setattr(transformers.trainer.logger, "warning", lambda msg, *a, **k: warned.append(str(msg)))
    run = stopped_run / "r"
    assert _final_live(run)["steps_seen"] == 2
    assert _resume(stopped_run, "3") == 0
    final = _final_live(run)
    assert final["steps_seen"] == 3 and final["first_step"] == 1  # steps 1-2 from metrics.jsonl, then 3
    assert [r["step"] for r in rundir.read_jsonl(run / rundir.METRICS)] == [1, 2, 3]
    assert not [w for w in warned if "missing keys" in w], warned  # the tied lm_head is re-tied quietly
    card = (run / rundir.CHECKPOINTS / "README.md").read_text()
    assert "[None]" not in card and "fine-tuned version of the local model" in card


def test_an_override_a_resume_would_ignore_is_refused(stopped_run, capsys):
    run = stopped_run / "r"
    before = (run / rundir.CONFIG).read_text()
    assert _resume(stopped_run, "4", "--learning_rate", "0.5") == 2
    err = capsys.readouterr().err
    assert "learning_rate: 1e-06 when the run began, 0.5 now" in err and "--run_name NEW" in err
    assert (run / rundir.CONFIG).read_text() == before  # nothing written, nothing trained


def test_resume_from_a_chosen_checkpoint(stopped_run):
    run = stopped_run / "r"
    checkpoint = run / rundir.CHECKPOINTS / "checkpoint-1"
    assert (
        main(["train", *FAST, "--max_steps", "2", "--doctor_every", "1", "--resume_from_checkpoint", str(checkpoint)])
        == 0
    )  # names the run through its checkpoint
    records = rundir.read_jsonl(run / rundir.METRICS)
    assert [r["step"] for r in records] == [1, 2]  # step 2 retrained from checkpoint 1, history kept one per step
    state = json.loads((run / rundir.CHECKPOINTS / "checkpoint-2" / "trainer_state.json").read_text())
    assert state["global_step"] == 2


def test_resume_without_naming_the_run_is_refused_before_anything_runs(capsys):
    assert main(["train", *FAST, "--max_steps", "2", "--resume", "true"]) == 2
    assert "resume: which run? Name it with --run_name NAME" in capsys.readouterr().err
