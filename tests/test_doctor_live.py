"""`LiveDoctorCallback` fed the logs a Trainer would send: warns, logs, and stops with a checkpoint."""

from __future__ import annotations

import json

import pytest

from benchmarks import doctor_synthetic as synthetic

transformers = pytest.importorskip("transformers")
from agentgrpo.doctor.live import LiveDoctorCallback  # noqa: E402


def _feed(callback, case, stop=True):
    state, control = transformers.TrainerState(), transformers.TrainerControl()
    for record in case.records:
        state.global_step = record["step"]
        callback.on_log(None, state, control, logs={k: v for k, v in record.items() if k != "step"})
        if stop and control.should_training_stop:
            return state.global_step, control
    callback.on_train_end(None, state, control)
    return None, control


def test_stops_on_collapse_after_saving(tmp_path):
    case = synthetic.make("collapse", 150, 0, 0.4)
    printed = []
    cb = LiveDoctorCallback(every=5, stop_on=["collapse"], run_dir=tmp_path, print_fn=printed.append)
    step, control = _feed(cb, case)
    assert step is not None and case.onset < step <= case.onset + 40
    assert control.should_save and control.should_training_stop and cb.stopped_by == "collapse"
    events = [json.loads(line) for line in (tmp_path / "doctor_live.jsonl").read_text().splitlines()]
    assert any(e["detector"] == "collapse" and e["event"].startswith("stopping") for e in events)
    assert any("collapse" in p for p in printed)


def test_healthy_run_is_not_stopped(tmp_path):
    case = synthetic.make("healthy", 120, 1)
    cb = LiveDoctorCallback(
        every=10,
        stop_on=["hacking", "collapse", "kl_blowup", "length_gaming"],
        run_dir=tmp_path,
        print_fn=None,
    )
    step, control = _feed(cb, case)
    assert step is None and not control.should_training_stop
    final = json.loads((tmp_path / "doctor_live.jsonl").read_text().splitlines()[-1])
    assert final["event"] == "final" and final["verdict"] in ("healthy", "converged")


def test_reads_shadow_rewards_from_the_run_config(tmp_path):
    case = synthetic.make("hacking", 120, 0, 0.3)
    run_dir = case.write(tmp_path)
    cb = LiveDoctorCallback(every=10, stop_on=["hacking"], run_dir=run_dir, print_fn=None)
    step, _ = _feed(cb, case)
    assert cb.meta["shadow"] == ["correct"] and cb.stopped_by == "hacking" and step > case.onset


def test_warns_without_stopping_when_not_asked():
    case = synthetic.make("kl_blowup", 100, 0, 0.4)
    printed = []
    cb = LiveDoctorCallback(every=5, print_fn=printed.append)
    step, control = _feed(cb, case)
    assert step is None and not control.should_training_stop
    assert any("FAILURE kl" in p for p in printed)


def test_unknown_stop_mode_is_rejected():
    with pytest.raises(ValueError, match="unknown failure mode"):
        LiveDoctorCallback(stop_on=["colapse"])
