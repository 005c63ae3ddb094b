"""The patterns issue 7 saw on real runs the doctor had never seen, each built as a small table of curves."""

from __future__ import annotations

import numpy as np

from agentgrpo.doctor import detectors
from agentgrpo.doctor.diagnose import diagnose
from agentgrpo.doctor.finding import FAILURE, OK, WARNING, Finding, Status
from agentgrpo.doctor.table import MetricTable

RNG = np.random.default_rng(7)


def _table(n: int, **cols) -> MetricTable:
    return MetricTable(np.arange(1, n + 1), {k: np.asarray(v, float) for k, v in cols.items()}, {})


def _noisy(y, sd):
    return np.asarray(y, float) + RNG.normal(0, sd, len(y))


def _learn(n, start, end, until):
    t = np.arange(n)
    return start + (end - start) * np.clip(t / until, 0, 1)


def _within(finding, step, report):
    return abs(finding.onset - step) <= 0.2 * (report.last_step - report.first_step)


def test_entropy_explosion_after_learning_is_a_collapse_at_the_fall_not_a_stall():
    n, fall = 200, 120
    t = np.arange(n)
    reward = np.where(t < fall, _learn(n, 0.2, 0.97, 100), 0.97 * np.exp(-(t - fall) / 8.0))
    entropy = np.where(t < fall, 0.1, 0.1 + 6.0 * np.clip((t - fall) / 15, 0, 1))
    zero = np.where(t < fall, 0.3, 1.0)
    report = diagnose(_table(n, reward=_noisy(reward, 0.02), entropy=_noisy(entropy, 0.02), frac_reward_zero_std=zero))
    assert report.verdict == "failure"
    first = report.failures[0]
    assert first.mode in ("collapse", "regression") and _within(first, fall, report), report.headline
    assert "entropy exploded" in report.get("collapse").verdict
    assert report.get("stall").status != FAILURE  # the fall is explained, not averaged into "no trend"


def test_learned_then_crashed_is_a_regression_with_onset_at_the_fall():
    n, fall = 300, 180
    t = np.arange(n)
    reward = np.where(t < fall, _learn(n, 0.1, 0.8, 120), 0.8 - 0.7 * np.clip((t - fall) / 20, 0, 1))
    report = diagnose(_table(n, reward=_noisy(reward, 0.03)))
    found = report.get("regression")
    assert found.status == FAILURE and _within(found, fall, report), report.headline
    assert report.failures[0].detector == "regression"
    assert report.get("stall").status != FAILURE


def _clipped_run(n, reward):
    return _table(
        n,
        reward=reward,
        reward_std=np.full(n, 0.3),
        **{
            "completions/mean_length": np.full(n, 256.0),
            "completions/max_length": np.full(n, 256.0),
            "completions/clipped_ratio": np.ones(n),
            "completions/mean_terminated_length": np.zeros(n),
        },
    )


def test_every_completion_clipped_from_step_one_is_a_length_failure_even_with_a_rising_reward():
    n = 100
    report = diagnose(_clipped_run(n, _noisy(_learn(n, -2.9, 0.0, 80), 0.05)))
    found = report.get("length")
    assert found.status == FAILURE and found.onset == 1, report.headline
    assert report.verdict == "failure" and report.exit_code == 1
    assert report.get("convergence").state != "converged"
    assert any("never end" in e for e in found.evidence)


def test_penalty_reward_rising_to_zero_with_no_variance_and_capped_text_is_not_converged():
    n = 120
    reward = np.minimum(_learn(n, -2.5, 0.0, 60), 0.0)
    std = np.maximum(0.6 * (1 - np.arange(n) / 60), 0.0)
    table = _clipped_run(n, _noisy(reward, 0.01))
    table.columns["reward_std"] = std
    report = diagnose(table)
    assert report.verdict == "failure", report.headline
    conv = report.get("convergence")
    assert conv.state != "converged" and "not converged" in conv.verdict


def test_high_but_flat_kl_is_a_note_and_does_not_hide_the_stall():
    n = 160
    kl = np.abs(_noisy(np.ones(n), 0.25))
    report = diagnose(_table(n, reward=_noisy(np.full(n, 0.3), 0.05), kl=kl, reward_std=np.full(n, 0.3)))
    assert report.get("kl").status == WARNING and report.get("kl").state == "high_flat"
    assert [f.detector for f in report.failures] == ["stall"], report.headline


def test_kl_growth_by_a_large_factor_is_a_blow_up_and_evidence_quotes_raw_and_smoothed():
    n = 60
    t = np.arange(n)
    kl = np.where(t < 30, 0.01, 0.01 * 10 ** np.clip((t - 30) / 5, 0, 3))
    kl[10] = 2.0  # one raw spike: quoted as raw, not as the smoothed peak
    report = diagnose(_table(n, reward=_noisy(np.full(n, 0.3), 0.05), kl=kl))
    found = report.get("kl")
    assert found.status == FAILURE and _within(found, 31, report), report.headline
    assert "raw kl peaked" in found.evidence[0] and "rolling median" in found.evidence[0]


def test_a_single_kl_spike_is_not_a_blow_up():
    n = 100
    kl = _learn(n, 0.001, 0.05, 50)
    kl[40] = 2.6
    report = diagnose(_table(n, reward=_noisy(_learn(n, 0.1, 0.8, 80), 0.03), kl=kl))
    assert report.get("kl").status == OK, report.get("kl").verdict


def test_saturated_format_component_while_the_task_regresses_is_a_shortcut_warning():
    n = 150
    fmt = np.minimum(_learn(n, 0.2, 1.0, 40), 1.0)
    task = _noisy(np.where(np.arange(n) < 50, 0.5, 0.5 - 0.35 * np.clip((np.arange(n) - 50) / 40, 0, 1)), 0.03)
    fmt_std = np.maximum(0.4 * (1 - np.arange(n) / 40), 0.0)
    report = diagnose(
        _table(
            n,
            reward=fmt + task,
            **{
                "rewards/format/mean": fmt,
                "rewards/format/std": fmt_std,
                "rewards/correct/mean": task,
                "rewards/correct/std": np.full(n, 0.4),
            },
        )
    )
    found = report.get("hacking")
    assert found.status == WARNING and "shortcut" in found.verdict, found.verdict


def test_nan_in_grad_norm_is_an_instability_failure_naming_the_step():
    records = [{"step": s, "reward": 0.1 + 0.005 * s, "grad_norm": 0.5, "loss": 0.01} for s in range(1, 61)]
    records[49]["grad_norm"] = "nan"
    records[50]["loss"] = float("inf")
    table = MetricTable.from_records(records)
    report = diagnose(table)
    found = report.get("instability")
    assert found.status == FAILURE and found.onset == 50, report.headline
    assert "step 50" in found.verdict and any("loss" in e for e in found.evidence)


def test_a_tool_failing_every_call_is_not_healthy():
    n = 25
    report = diagnose(
        _table(
            n,
            reward=_noisy(np.full(n, 0.2), 0.02),
            **{"tools/call_frequency": np.full(n, 1.0), "tools/failure_frequency": np.ones(n)},
        )
    )
    found = report.get("tools")
    assert found.status == FAILURE and "most tool calls fail" in found.verdict, found.verdict


def test_a_three_step_run_is_too_short_to_judge_and_not_healthy():
    report = diagnose(_table(3, reward=[0.1, 0.2, 0.3], kl=[0.0, 0.01, 0.02]))
    assert report.verdict == "too_short" and report.exit_code == 2
    assert report.headline.startswith("TOO SHORT TO JUDGE"), report.headline
    assert "missing reward" not in report.headline


def test_zero_variance_groups_throughout_are_a_no_signal_failure():
    n = 50
    report = diagnose(
        _table(
            n,
            reward=_noisy(np.full(n, 0.88), 0.01),
            frac_reward_zero_std=np.clip(_noisy(np.full(n, 0.99), 0.01), 0, 1),
            grad_norm=np.full(n, 0.002),
        )
    )
    found = report.get("zero_variance")
    assert found.status == FAILURE and found.onset == 1, report.headline
    assert report.get("stall").status != FAILURE  # the stall is its consequence


def test_saturating_healthy_run_keeps_its_signal():
    n = 100
    zero = _learn(n, 0.3, 0.85, 100)
    report = diagnose(_table(n, reward=_noisy(_learn(n, 0.1, 0.9, 60), 0.03), frac_reward_zero_std=zero))
    assert report.get("zero_variance").status == OK
    assert not report.failures, report.headline


def test_finding_is_structured():
    f = Finding(detector="length", status="failure", verdict="truncation", onset=3)
    assert f.status is Status.FAILURE and f.mode == "length" and f.to_dict()["status"] == "failure"


def test_every_reported_mode_is_accepted_by_stop_on():
    for name in detectors.NAMES:
        assert detectors.resolve(name) == name
    for alias in ("kl_blowup", "length_gaming", "tool_misuse", "nan", "no_signal", "truncation", "crash"):
        assert detectors.resolve(alias) in detectors.NAMES
