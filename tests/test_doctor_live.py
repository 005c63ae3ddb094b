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


@pytest.mark.parametrize("n", [60, 600])
def test_a_check_parses_no_rows_and_the_rows_between_checks_are_bounded(n):
    """The live doctor's cost per check does not grow with the run: each log is parsed once, when it
    arrives; a check parses nothing (the history's columns are views)."""
    case = synthetic.make("healthy", n, 0)
    cb = LiveDoctorCallback(every=10, print_fn=None)
    parsed_at_checks = []
    real_check = cb.check

    def counting_check(*args, **kwargs):
        before = cb.history.rows_parsed
        report = real_check(*args, **kwargs)
        assert cb.history.rows_parsed == before  # a check parses no row
        parsed_at_checks.append(before)
        return report

    cb.check = counting_check
    _feed(cb, case, stop=False)
    between = {b - a for a, b in zip(parsed_at_checks, parsed_at_checks[1:-1])}
    assert between == {10}, between  # the same 10 new rows per check at step 60 as at step 600
    assert cb.history.rows_parsed == n


def test_follow_reads_each_appended_byte_once(tmp_path):
    """Watching a run's metrics.jsonl from outside: each poll reads only what was appended."""
    case = synthetic.make("collapse", 150, 0, 0.4)
    path = tmp_path / "metrics.jsonl"
    path.write_text("")
    cb = LiveDoctorCallback(every=10, print_fn=None)
    reports = []
    lines = [json.dumps(r) + "\n" for r in case.records]
    for i in range(0, len(lines), 7):
        chunk = "".join(lines[i : i + 7])
        cut = len(chunk) // 2 if i % 2 else len(chunk)  # sometimes a line is still being written
        with open(path, "a") as fh:
            fh.write(chunk[:cut])
        reports.append(cb.follow(path))
        with open(path, "a") as fh:
            fh.write(chunk[cut:])
    reports.append(cb.follow(path))
    assert cb._tail.bytes_read == path.stat().st_size  # every byte read once, none twice
    assert cb._tail.records_parsed == cb.history.rows_parsed == len(case.records)
    checks = [r for r in reports if r is not None]
    assert len(checks) >= 10 and checks[-1].verdict == "failure"
    assert "collapse" in {f.detector for f in checks[-1].failures}
