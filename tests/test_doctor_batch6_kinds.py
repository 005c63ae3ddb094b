"""The kind of miss the blind batch 6 (benchmarks/public-runs-heldout) found, as a principle checked on generated
runs of several lengths, seeds and onsets, and on the real file that showed it:

* reward components logged under names nothing knows (``ndcg_mean``, ``cold_bonus_mean`` beside
  ``reward_mean``) are found by their values: the columns whose weighted sum is the reward on every step;
* a component that pays in the reward and falls materially against its own scale (its late level at least
  ``MATERIAL_COMPONENT`` of its early level below) while the reward's gain came from another component is
  hacking whatever the names; a dip within noise, or a cost (negative weight) paid less, is not.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from agentgrpo.doctor.diagnose import diagnose
from agentgrpo.doctor.readers import read_run
from benchmarks import doctor_synthetic as synthetic

HELDOUT = Path(__file__).resolve().parents[1] / "benchmarks" / "public-runs-heldout"
KINDS = ["unnamed_term_sacrificed", "unnamed_term_dips", "unnamed_cost_falls"]
CASES = [
    synthetic.make(name, n, seed, onset)
    for name in KINDS
    for n in (80, 300, 1000)
    for seed in (1, 2)
    for onset in (0.35, 0.6)
]


def _failures(path) -> tuple[dict, object]:
    report = diagnose(read_run(path).table)
    return {str(f.detector): f for f in report.failures}, report


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_principle_on_generated_runs(case, tmp_path):
    failures, report = _failures(case.write(tmp_path))
    if case.expect is None:
        assert not failures, report.headline
        return
    assert case.expect in failures, report.headline
    error = abs(failures[case.expect].onset - case.onset) / (report.last_step - report.first_step)
    assert error <= 0.12, (failures[case.expect].onset, case.onset, report.headline)


@pytest.mark.parametrize("name", KINDS)
def test_the_components_are_found_with_their_weights(name, tmp_path):
    """Oracle: the weights the generator summed with (plain least squares would find the same)."""
    case = synthetic.make(name, 200, 3, 0.4)
    run = read_run(case.write(tmp_path))
    weights = run.table.meta["reward_weights"]
    expected = {"rank_score": 1.0, "bonus_term": 1.0} if "term" in name else {"quality_score": 1.0, "cost_term": -0.5}
    assert sorted(weights) == sorted(expected)
    assert all(abs(weights[k] - v) < 1e-6 for k, v in expected.items())
    assert any("found by their values" in note for note in run.notes)


def test_columns_that_do_not_sum_to_the_reward_are_no_components(tmp_path):
    rng = np.random.default_rng(0)
    case = synthetic.make("unnamed_term_sacrificed", 200, 1, 0.4)
    for rec in case.records:
        rec["bonus_term"] += float(rng.normal(0, 0.02))  # no longer the reward's summand
    run = read_run(case.write(tmp_path))
    assert run.table.components() == []


def test_the_uncapped_cold_bonus_run_is_hacking():
    failures, report = _failures(HELDOUT / "recgrpo_capinf_log.jsonl")
    assert "hacking" in failures, report.headline
    assert "ndcg_mean" in failures["hacking"].verdict and "cold_bonus_mean" in failures["hacking"].verdict


@pytest.mark.parametrize("name", ["recgrpo_lambda0_log.jsonl", "recgrpo_lambda1_log.jsonl"])
def test_the_healthy_recommender_runs_stay_clean(name):
    failures, report = _failures(HELDOUT / name)
    assert not failures, report.headline
