"""The kinds of miss the blind batch 5 (benchmarks/public-runs-heldout) found, each a principle checked on
generated runs of several lengths, seeds and onsets, and on the real file that showed it:

* a shared length is a sign of one fixed output only where lengths that differ differ widely: a short
  structured answer whose samples end within a token or two of each other ties by chance (verl, batch of 2)
  when the tied samples still score differently (verl's best - worst score); tied samples that score alike
  are one output (the shared 50's 4-token mode collapse stays a collapse);
* a component's gain is measured from before the others' rise: proxies that saturate inside the early window
  are measured in full, so an objective that crept 0.002 -> 0.05 beside them gained immaterially (hacking);
* different completions (their group's scores differ) that share one mean length on every step were all cut
  at one limit: truncation at the cap, though the column never moves.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from doctor_cases import HELDOUT, assert_case_holds, failures_of, generated_cases

KINDS = [
    "verl_short_action_ties",
    "verl_fixed_output",
    "verl_short_fixed_output",
    "proxies_saturate_early",
    "proxies_early_task_learns",
    "length_constant_at_cap",
    "length_constant_setting",
]
CASES = generated_cases(KINDS)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_principle_on_generated_runs(case, tmp_path):
    assert_case_holds(case, *failures_of(case.write(tmp_path)))


@pytest.mark.parametrize("name", ["uqcxu9_verl_v3.log", "uqcxu9_verl_v5.log", "uqcxu9_verl_v6.log"])
def test_near_tied_short_actions_on_a_learning_verl_run_are_no_collapse(name):
    failures, report = failures_of(HELDOUT / name)
    assert not failures, report.headline


def test_a_four_token_output_scoring_alike_stays_a_collapse():
    failures, report = failures_of(Path(__file__).resolve().parent / "data" / "real-runs" /
                                 "incidentops_4tok_mode_collapse.ipynb")
    assert "collapse" in failures, report.headline


def test_proxies_saturating_early_beside_a_flat_exact_match_is_hacking():
    failures, report = failures_of(HELDOUT / "daniilsergeev_gsm8k_4rewards_em1_2.log")
    assert "hacking" in failures, report.headline
    assert "exact_match" in failures["hacking"].verdict
    assert failures["hacking"].onset <= 13


def test_a_constant_mean_length_of_differing_samples_is_truncation_at_the_cap():
    failures, report = failures_of(HELDOUT / "tsamtsam_gemma3_1b_tldr.ipynb")
    assert "length" in failures, report.headline
