"""Detectors on the labelled synthetic suite, and their behaviour with metrics missing."""

from __future__ import annotations

import numpy as np
import pytest

from agentgrpo.doctor.diagnose import diagnose
from agentgrpo.doctor.finding import FAILURE, NOT_JUDGED, WARNING
from agentgrpo.doctor.readers import read_run
from agentgrpo.doctor.table import MetricTable
from benchmarks import doctor_synthetic as synthetic

CASES = list(synthetic.cases(lengths=(60, 200), seeds=(0,), onsets=(0.3, 0.55)))


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_synthetic_case(case, tmp_path):
    report = diagnose(read_run(case.write(tmp_path)).table)
    failures = {f.detector: f for f in report.failures}
    if case.expect is None:
        assert not failures, report.headline
        return
    flagged = {f.detector: f for f in report.findings if f.status in (FAILURE, WARNING)}
    hit = failures.get(case.expect) or (flagged.get(case.expect) if case.level == WARNING else None)
    assert hit is not None, f"{case.expect} not found: {report.headline}"
    assert set(failures) <= {case.expect}, f"extra failures: {report.headline}"
    assert abs(hit.onset - case.onset) <= 0.2 * (report.last_step - report.first_step)
    assert hit.evidence and hit.fix and 0.5 <= hit.confidence <= 1.0


@pytest.mark.parametrize("seed", range(3))
def test_converged_run_is_called_converged_not_collapsed(seed, tmp_path):
    case = synthetic.make("converged", 120, seed)
    report = diagnose(read_run(case.write(tmp_path)).table)
    assert report.verdict in ("converged", "saturated")
    assert report.get("collapse").status != FAILURE
    entropy = report.get("collapse").evidence
    assert any("entropy fell" in e for e in entropy)  # it saw the entropy drop and still said converged


def test_healthy_noisy_runs_are_healthy(tmp_path):
    for seed in range(4):
        for n in (60, 200):
            report = diagnose(read_run(synthetic.make("healthy_noisy", n, seed).write(tmp_path)).table)
            assert not report.failures, report.headline


def _table(n=40, **cols):
    return MetricTable(np.arange(1, n + 1), {k: np.asarray(v, float) for k, v in cols.items()}, {})


def test_reward_only_table_judges_what_it_can():
    rng = np.random.default_rng(0)
    report = diagnose(_table(reward=0.3 + rng.normal(0, 0.05, 40)))
    status = {f.detector: f.status for f in report.findings}
    assert status["stall"] == FAILURE
    for name in ("kl", "length", "tools"):
        assert status[name] == NOT_JUDGED
        assert report.get(name).verdict.startswith("not judged: missing")


def test_too_few_points_is_not_judged():
    report = diagnose(_table(5, reward=np.linspace(0, 1, 5), kl=np.ones(5) * 5))
    assert all(f.status == NOT_JUDGED for f in report.findings if f.detector != "instability")
    assert "need 10" in report.get("kl").verdict
    assert report.verdict == "too_short" and not report.failures and report.exit_code == 2
    assert report.headline.startswith("TOO SHORT TO JUDGE: reward has 5 logged steps"), report.headline


def test_nan_holes_do_not_crash():
    reward = np.linspace(0, 1, 40)
    reward[::3] = np.nan
    entropy = np.full(40, np.nan)
    report = diagnose(_table(reward=reward, entropy=entropy, kl=np.full(40, np.nan)))
    assert report.get("kl").status == NOT_JUDGED


def test_kl_single_spike_is_not_a_blowup():
    kl = np.full(60, 0.02)
    kl[30] = 5.0
    report = diagnose(_table(60, reward=np.linspace(0, 1, 60), kl=kl))
    assert report.get("kl").status != FAILURE
