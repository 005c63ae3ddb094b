"""The kind of miss the blind batch 6 (benchmarks/public-runs-heldout) found, as a principle checked on generated
runs of several lengths, seeds and onsets, and on the real file that showed it:

* reward components logged under names nothing knows (``ndcg_mean``, ``cold_bonus_mean`` beside
  ``reward_mean``) are found by their values: the columns whose weighted sum is the reward on every step;
* a component that pays in the reward and falls materially against its own scale (its late level at least
  ``MATERIAL_COMPONENT`` of its early level below) while the reward's gain came from another component is
  hacking whatever the names; a dip within noise, or a cost (negative weight) paid less, is not.
"""

from __future__ import annotations

import numpy as np
import pytest
from doctor_cases import HELDOUT, assert_case_holds, failures_of, generated_cases

from agentgrpo.doctor.readers import read_run
from benchmarks import doctor_synthetic as synthetic

KINDS = ["unnamed_term_sacrificed", "unnamed_term_dips", "unnamed_cost_falls"]
CASES = generated_cases(KINDS)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_principle_on_generated_runs(case, tmp_path):
    assert_case_holds(case, *failures_of(case.write(tmp_path)))


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
    failures, report = failures_of(HELDOUT / "recgrpo_capinf_log.jsonl")
    assert "hacking" in failures, report.headline
    assert "ndcg_mean" in failures["hacking"].verdict and "cold_bonus_mean" in failures["hacking"].verdict


@pytest.mark.parametrize("name", ["recgrpo_lambda0_log.jsonl", "recgrpo_lambda1_log.jsonl"])
def test_the_healthy_recommender_runs_stay_clean(name):
    failures, report = failures_of(HELDOUT / name)
    assert not failures, report.headline
