"""Issue 20's principles, each on generated runs of several lengths, seeds (noise) and onsets: severity
(most completions truncated is a failure, a minority a warning), a true objective that never pays or rises
immaterially next to a rising proxy is hacking, an isolated huge KL spike is an event (a 30x bump is not),
a fixed output without entropy is a collapse, and onsets date the change of regime (a KL take-off after a
creep; a cause never explains an effect that began before it). Also: names that say nothing leave the
curves to say which component is the objective (one that almost never pays while the rest rise), a task
component at one positive value throughout is no hacking evidence, a weak rise of a success rate is judged
against the pass/fail spread when reward_std is not logged, and a mean length repeated exactly with every
score alike is a fixed output. Healthy runs stay clean throughout."""

from __future__ import annotations

import numpy as np
import pytest
from doctor_cases import generated_cases

from agentgrpo.doctor.diagnose import diagnose
from agentgrpo.doctor.finding import FAILURE, WARNING
from agentgrpo.doctor.readers import read_run
from agentgrpo.doctor.table import MetricTable
from benchmarks import doctor_synthetic as synthetic

PRINCIPLES = [
    "truncation_most",
    "truncation_some",
    "objective_never_pays",
    "objective_immaterial",
    "kl_spike",
    "kl_bump",
    "kl_lone_spike",
    "kl_creep_takeoff",
    "fixed_output",
    "objective_unnamed_floor",
    "fixed_output_mean_only",
]
CASES = generated_cases(PRINCIPLES)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_principle_on_generated_runs(case, tmp_path):
    report = diagnose(read_run(case.write(tmp_path)).table)
    failures = {str(f.detector): f for f in report.failures}
    if case.expect is None:
        assert not failures, report.headline
        return
    if case.level == WARNING:
        assert case.expect not in failures, report.headline
        assert report.get(case.expect).status == WARNING, report.headline
        return
    assert case.expect in failures, report.headline
    error = abs(failures[case.expect].onset - case.onset) / (report.last_step - report.first_step)
    assert error <= 0.12, (failures[case.expect].onset, case.onset, report.headline)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("n", [60, 300, 1000])
@pytest.mark.parametrize(
    "scenario",
    ["healthy", "healthy_noisy", "converged", "tool_adoption", "bonus_at_ceiling_unnamed", "task_always_paid"],
)
def test_healthy_runs_stay_clean(scenario, n, seed, tmp_path):
    report = diagnose(read_run(synthetic.make(scenario, n, seed).write(tmp_path)).table)
    assert not report.failures, report.headline


def test_the_spike_is_reported_with_its_step_and_size(tmp_path):
    case = synthetic.make("kl_spike", 400, 3, 0.7)
    kl = report = diagnose(read_run(case.write(tmp_path)).table).get("kl")
    assert kl.status == FAILURE and kl.onset == case.onset, report.verdict
    text = " ".join(kl.evidence)
    assert f"at step {case.onset}" in text and "the run's median kl" in text and "loss" in text


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("n, nan_at", [(150, 88), (400, 300)])
def test_stall_from_the_start_is_not_a_consequence_of_a_later_nan(seed, n, nan_at):
    rng = np.random.default_rng(seed)
    records = [
        {"step": i, "reward": 0.47 + rng.normal(0, 0.03), "reward_std": 0.3, "grad_norm": 0.2 + rng.normal(0, 0.02)}
        for i in range(1, n + 1)
    ]
    records[nan_at - 1]["grad_norm"] = float("nan")
    report = diagnose(MetricTable.from_records(records))
    assert {str(f.detector) for f in report.failures} == {"stall", "instability"}, report.headline
    assert report.get("stall").onset == 1 and not report.get("stall").explained_by


@pytest.mark.parametrize("seed", range(3))
def test_a_format_reward_saturating_beside_a_flat_unnamed_objective_is_hacking(seed):
    """By elimination: components named as form are proxies; the others (here an environment's score that
    never moves) are the objective."""
    rng = np.random.default_rng(seed)
    n = 190
    x = np.arange(n)
    fmt = np.clip(0.1 + 0.9 * (x - 35) / 55, 0.1, 1.0) + rng.normal(0, 0.02, n)
    env = 0.962 + rng.normal(0, 0.001, n)
    records = [
        {
            "step": int(i + 1),
            "reward": float(fmt[i] + env[i]),
            "reward_std": 0.3 if i < 90 else 0.003,
            "rewards/env_reward/mean": float(env[i]),
            "rewards/json_format_reward/mean": float(fmt[i]),
        }
        for i in range(n)
    ]
    hacking = diagnose(MetricTable.from_records(records)).get("hacking")
    assert hacking.status == FAILURE and "elimination" in " ".join(hacking.evidence), hacking.verdict


def _rate_run(rng, n, batch, p0, rise):
    """A success rate (mean of ``batch`` pass/fail samples per step) rising linearly by ``rise``; no reward_std."""
    p = np.clip(p0 + rise * np.arange(n) / max(n - 1, 1), 0.0, 1.0)
    return MetricTable.from_records(
        [{"step": i + 1, "reward": float(rng.binomial(batch, p[i]) / batch)} for i in range(n)]
    )


def test_a_weak_rise_of_a_rate_without_reward_std_is_judged_against_the_pass_fail_spread():
    """Oracle: whenever the stall detector sees a weak rise (neither flat nor a significant ramp), it is a
    stall exactly when the change is under MATERIAL_GROUP x sqrt(p(1-p)) at the median rate p or the typical
    step did not move (the late window's median not above the early one's) and the late window's mean is not
    materially above the early one's (`stall.late_above_early`), and an inconclusive warning otherwise. Both
    outcomes must occur over the generated runs."""
    from agentgrpo.doctor import stats
    from agentgrpo.doctor import thresholds as th
    from agentgrpo.doctor.curves import Curves
    from agentgrpo.doctor.detectors.stall import late_above_early

    rng = np.random.default_rng(7)
    seen = {FAILURE: 0, WARNING: 0}
    for _ in range(400):
        n, batch = int(rng.choice([20, 30, 60, 120])), int(rng.choice([2, 4, 16, 64]))
        table = _rate_run(rng, n, batch, float(rng.uniform(0.02, 0.6)), float(rng.uniform(0.0, 0.4)))
        curves = Curves(table)
        facts = curves.reward
        if facts is None or facts.learned:
            continue
        trend = facts.curve.trend
        if trend.t < th.T_FLAT or trend.change < th.MATERIAL_RISE * stats.noise(facts.curve.y):
            continue
        _, y = table.series("reward")
        p = float(np.median(y))
        immaterial = trend.change < th.MATERIAL_GROUP * (p * (1 - p)) ** 0.5
        early, late = (float(np.median(w)) for w in stats.windows(y, th.EDGE_FRAC))
        immaterial = (immaterial or not late > early) and not late_above_early(curves, facts)
        stall = diagnose(table).get("stall")
        assert stall.status == (FAILURE if immaterial else WARNING), (stall.verdict, trend, p)
        seen[stall.status] += 1
    assert seen[FAILURE] >= 3 and seen[WARNING] >= 3, seen


def test_a_weak_rise_without_any_spread_scale_stays_inconclusive():
    """A reward outside [0, 1] with no reward_std has no within-group scale: a weak rise is a warning."""
    rng = np.random.default_rng(3)
    for _ in range(200):
        n = int(rng.choice([20, 40]))
        y = -3.0 + 0.6 * np.arange(n) / n + rng.normal(0, 0.5, n)
        table = MetricTable.from_records([{"step": i + 1, "reward": float(v)} for i, v in enumerate(y)])
        report = diagnose(table)
        if "inconclusive" in report.get("stall").verdict:
            assert report.get("stall").status == WARNING
            return
    raise AssertionError("no inconclusive run generated")


def test_a_mean_length_repeated_at_the_cap_is_not_a_fixed_output(tmp_path):
    """The repeated mean length must lie below the longest logged mean: pinned at the cap is truncation."""
    case = synthetic.make("fixed_output_mean_only", 200, 1, 0.4)
    for r in case.records:
        if r["completions/mean_length"] == 9.0:
            r["completions/mean_length"] = 256.0
    report = diagnose(read_run(case.write(tmp_path)).table)
    assert report.get("collapse").status != FAILURE, report.headline
