"""The kind of miss the blind batch 7 (benchmarks/public-runs-heldout) found, as a principle checked on generated
runs of several lengths, seeds, noise levels and onsets, and on the real file that showed it:

* "converged" needs evidence. A reward that gained only in the first ``EARLY_GAIN_SPAN`` of a run and then,
  for the rest, moved by less than its own step-to-step noise (or by no significant trend), with no spread
  within groups logged (nothing shows the groups agree) and a noise that did not vanish (so not a reward at a
  ceiling), did not converge: it stalled after an early gain;
* the mirror: an early gain to a ceiling whose noise vanished is learning, not a stall, though the gain lies
  inside the "early" window the early-vs-late comparison reads.
"""

from __future__ import annotations

import numpy as np
import pytest
from doctor_cases import HELDOUT, assert_case_holds, failures_of, generated_cases

from agentgrpo.doctor import thresholds as th
from agentgrpo.doctor.diagnose import diagnose
from agentgrpo.doctor.finding import CONVERGED
from agentgrpo.doctor.table import MetricTable
from benchmarks import doctor_synthetic as synthetic

KINDS = ["early_gain_then_flat", "early_ceiling_total_only", "early_gain_then_climb", "slow_learner_total_only"]
CASES = generated_cases(KINDS)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_principle_on_generated_runs(case, tmp_path):
    assert_case_holds(case, *failures_of(case.write(tmp_path)))


def _step_run(n: int, gain: float, noise: float, settle: int, seed: int, spread: bool = False) -> MetricTable:
    """A reward that ramps up by ``gain`` over steps 3..``settle`` and then holds, with iid noise."""
    rng = np.random.default_rng(seed)
    steps = np.arange(1, n + 1)
    level = gain * np.clip((steps - 3) / max(settle - 3, 1), 0.0, 1.0)
    cols = {"reward": 1.0 + level + rng.normal(0.0, noise, n)}
    if spread:
        cols["reward_std"] = np.full(n, 1.0)
    return MetricTable(steps, cols, {})


def _oracle(n: int, gain: float, noise: float, settle: int, spread: bool) -> bool:
    """Plain reading of the principle for a step-shaped run with a flat plateau: an early gain (settled within
    the span), a long plateau, a noise kept against the gain, no spread logged. The noises the test draws lie
    well clear of the ``PLATEAU_NOISE_KEPT`` bound (5x under it or 4x over it), so the estimate's error cannot
    cross it, and a rise of 5 noise-widths is always significant."""
    early = settle - 1 <= th.EARLY_GAIN_SPAN * (n - 1)
    return early and n - settle >= th.PLATEAU_MIN_POINTS and noise >= th.PLATEAU_NOISE_KEPT * gain and not spread


@pytest.mark.parametrize("n", [120, 400, 1500])
@pytest.mark.parametrize("noise", [0.01, 0.2])
@pytest.mark.parametrize("settle_frac", [0.04, 0.3])
@pytest.mark.parametrize("spread", [False, True])
def test_the_stall_after_an_early_gain_matches_its_oracle(n, noise, settle_frac, spread):
    settle = max(6, int(settle_frac * n))
    for seed in (0, 1):
        table = _step_run(n, 1.0, noise, settle, seed, spread)
        stall = diagnose(table).get("stall")
        named = stall.is_failure and "early gain" in stall.verdict
        assert named == _oracle(n, 1.0, noise, settle, spread), (n, noise, settle, spread, seed, stall.verdict)


@pytest.mark.parametrize("n", [120, 400, 1500])
def test_an_early_gain_to_a_quiet_ceiling_is_learning(n):
    """Noise 1% of the gain: at a ceiling. No failure, whatever the early window holds."""
    for seed in (0, 1, 2):
        report = diagnose(_step_run(n, 1.0, 0.01, max(6, int(0.04 * n)), seed))
        assert not report.failures, report.headline
        assert report.get("stall").verdict.startswith("learning"), report.get("stall").verdict


def test_the_spread_logged_beside_the_early_gain_is_not_judged_by_this_rule(tmp_path):
    case = synthetic.make("early_gain_then_flat", 300, 1, 0.35)
    for rec in case.records:
        rec["reward_std"] = 3.0
    failures, report = failures_of(case.write(tmp_path))
    assert "early gain" not in report.get("stall").verdict, report.headline


def test_the_smollm2_gsm8k_plateau_is_a_stall_not_convergence():
    failures, report = failures_of(HELDOUT / "tripathysagar_smollm2_135m_grpo_gsm8k.ipynb")
    assert "stall" in failures, report.headline
    assert failures["stall"].verdict == "stall: stalled after an early gain"
    assert failures["stall"].onset <= 0.1 * (report.last_step - report.first_step) + report.first_step
    convergence = report.get("convergence")
    assert convergence.state != CONVERGED and convergence.verdict.startswith("not converged"), convergence.verdict


@pytest.mark.parametrize("name", ["uqcxu9_verl_v5.log", "recgrpo_lambda0_log.jsonl"])
def test_the_healthy_runs_that_plateau_early_stay_clean(name):
    """The nearest healthy shapes: verl's rise settles at 13% of the run; the recommender logs reward_std."""
    failures, report = failures_of(HELDOUT / name)
    assert not failures, report.headline
