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

from agentgrpo.doctor.diagnose import diagnose
from agentgrpo.doctor.readers import read_run
from benchmarks import doctor_synthetic as synthetic

HELDOUT = Path(__file__).resolve().parents[1] / "benchmarks" / "public-runs-heldout"
KINDS = [
    "verl_short_action_ties",
    "verl_fixed_output",
    "verl_short_fixed_output",
    "proxies_saturate_early",
    "proxies_early_task_learns",
    "length_constant_at_cap",
    "length_constant_setting",
]
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


@pytest.mark.parametrize("name", ["uqcxu9_verl_v3.log", "uqcxu9_verl_v5.log", "uqcxu9_verl_v6.log"])
def test_near_tied_short_actions_on_a_learning_verl_run_are_no_collapse(name):
    failures, report = _failures(HELDOUT / name)
    assert not failures, report.headline


def test_a_four_token_output_scoring_alike_stays_a_collapse():
    real = Path(__file__).resolve().parent / "data" / "real-runs" / "incidentops_4tok_mode_collapse.ipynb"
    if not real.exists():
        pytest.skip("the shared 50 are not copied into tests/data")
    failures, report = _failures(real)
    assert "collapse" in failures, report.headline


def test_proxies_saturating_early_beside_a_flat_exact_match_is_hacking():
    failures, report = _failures(HELDOUT / "daniilsergeev_gsm8k_4rewards_em1_2.log")
    assert "hacking" in failures, report.headline
    assert "exact_match" in failures["hacking"].verdict
    assert failures["hacking"].onset <= 13


def test_a_constant_mean_length_of_differing_samples_is_truncation_at_the_cap():
    failures, report = _failures(HELDOUT / "tsamtsam_gemma3_1b_tldr.ipynb")
    assert "length" in failures, report.headline
