"""Length growth that rising tool calls account for is not length gaming (issue 4: the healthy demo)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from agentgrpo.doctor import thresholds as th
from agentgrpo.doctor.diagnose import diagnose
from agentgrpo.doctor.finding import OK, WARNING
from agentgrpo.doctor.live import LiveDoctorCallback
from agentgrpo.doctor.readers import read_run
from benchmarks import doctor_synthetic as synthetic

DEMO = Path(__file__).parent / "data" / "doctor" / "demo_tool_adoption"


def test_real_demo_run_is_clean():
    """The tiny demo (calculator task): length 11 -> 18 tokens as the tool-call rate goes 0.5 -> 1."""
    run = read_run(DEMO)
    assert run.table.meta["max_completion_length"] == 64
    report = diagnose(run.table)
    assert report.verdict in ("healthy", "converged"), report.headline
    assert not report.failures and not report.warnings, report.headline
    length = report.get("length")
    assert length.status == OK and "tool calls" in length.verdict
    text = " ".join(length.evidence)
    assert "tool calls per completion rose" in text and "of max_completion_length (64)" in text


def test_real_demo_run_warns_when_tool_calls_are_not_logged():
    """Without the tool-call metric nothing explains the growth: the (warning-only) suspicion stands."""
    table = read_run(DEMO).table
    del table.columns["tools/call_frequency"]
    assert diagnose(table).get("length").status == WARNING


@pytest.mark.parametrize("n", [60, 200, 1000])
@pytest.mark.parametrize("seed", [0, 1])
def test_synthetic_tool_adoption_is_not_length_gaming(n, seed, tmp_path):
    report = diagnose(read_run(synthetic.make("tool_adoption", n, seed).write(tmp_path)).table)
    assert not report.failures and not report.warnings, report.headline
    assert report.get("length").status == OK
    assert "tool calls" in report.get("length").verdict


@pytest.mark.parametrize("n", [60, 200])
def test_padding_beyond_the_tool_calls_still_warns(n, tmp_path):
    """Tool calls rise, but completions grow much more than the calls account for."""
    case = synthetic.make("length_padding_with_tools", n, 0, 0.3)
    report = diagnose(read_run(case.write(tmp_path)).table)
    length = report.get("length")
    assert length.status == WARNING, report.headline
    assert abs(length.onset - case.onset) <= 0.2 * n


def test_coincidental_tool_rise_does_not_explain_length(tmp_path):
    """The healthy tool-adoption run with its call rates shuffled within short stretches: the same rising
    trend, but the length no longer follows the calls step by step, so they explain nothing."""
    case = synthetic.make("tool_adoption", 200, 1, 0.3)
    assert diagnose(read_run(case.write(tmp_path / "as_is")).table).get("length").status == OK
    rng = np.random.default_rng(3)
    calls = np.array([r["tools/call_frequency"] for r in case.records])
    order = np.arange(len(calls))
    for chunk in np.array_split(order, 20):  # shuffle within short stretches: same trend, unrelated noise
        calls[chunk] = calls[rng.permutation(chunk)]
    for record, value in zip(case.records, calls, strict=True):
        record["tools/call_frequency"] = float(value)
    assert diagnose(read_run(case.write(tmp_path / "shuffled")).table).get("length").status == WARNING


def test_tool_explanation_needs_the_threshold(tmp_path, monkeypatch):
    """The clean verdict comes from the tool-call check: with it disabled, the demo warns again."""
    monkeypatch.setattr(th, "LENGTH_TOOL_CORR", 1.01)
    assert diagnose(read_run(DEMO).table).get("length").status == WARNING


def test_shadow_reward_keeps_precedence(tmp_path):
    """With a shadow (correctness) reward, the shadow decides, tool calls or not."""
    case = synthetic.make("length_gaming_modest", 200, 0, 0.3)
    report = diagnose(read_run(case.write(tmp_path)).table)
    assert report.get("length").status == "failure"


def test_live_doctor_reads_the_length_cap(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "config.yaml").write_text((DEMO / "config.yaml").read_text())
    cb = LiveDoctorCallback(every=10, run_dir=run_dir, print_fn=None)
    cb._set_weights()
    assert cb.meta["max_completion_length"] == 64


def test_live_doctor_stays_silent_on_the_demo_run():
    """Replayed through the live doctor (checks every 10 steps), the healthy demo raises nothing at all.

    Before tool calls explained its growth, this run warned of length gaming at step 30."""
    import json
    from types import SimpleNamespace

    printed = []
    cb = LiveDoctorCallback(every=10, print_fn=printed.append)
    with open(DEMO / "metrics.jsonl", encoding="utf-8") as fh:
        for line in fh:
            logs = json.loads(line)
            step = logs.pop("step")
            cb.on_log(None, SimpleNamespace(global_step=step), SimpleNamespace(), logs=logs)
    cb.on_train_end(None, SimpleNamespace(global_step=step), SimpleNamespace())
    assert printed == [] and cb.report.verdict == "converged", printed
