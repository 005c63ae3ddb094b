"""The kinds of miss the blind batch 10 (benchmarks/public-runs-heldout) found, each as a principle checked on
generated runs (several lengths, seeds and scales) and on the real file that showed it:

* KL drift is bought with nothing when the reward did not learn *or* gained less than ``MATERIAL_GROUP`` of
  the spread within groups (a significant 0.68 -> 0.69 beside KL 0.002 -> 2.5);
* a held-out task score (an evaluation's accuracy or success rate, `Curves.heldout`) is an objective: exactly 0
  on every evaluation once the trained reward's rise settled is hacking; still rising after an early gain of
  the reward, it denies "stalled after an early gain";
* a step whose largest advantage is 0 had every group identical (`tidy._no_signal_steps`); most late groups
  identical while the mean reward sits well below the best sample (`zero_variance.below_best`) is no signal
  before the task was solved, a failure, not saturation.
"""

from __future__ import annotations

import numpy as np
import pytest
from doctor_cases import HELDOUT

from agentgrpo.doctor.diagnose import diagnose
from agentgrpo.doctor.finding import FAILURE
from agentgrpo.doctor.readers import read_run
from agentgrpo.doctor.table import MetricTable


def _failed(table: MetricTable) -> set[str]:
    return {f.detector for f in diagnose(table).failures}


def _kl_drift(n: int, seed: int, gain: float, std: float) -> MetricTable:
    """KL from 0.002 climbing to ~2.5 over the first 15% of the run; the reward moves by ``gain`` with a
    within-group spread ``std`` (reward_std) and a small batch noise."""
    rng = np.random.default_rng(seed)
    steps = np.arange(1, n + 1)
    up = np.clip(steps / (0.15 * n), 0, 1)
    kl = 0.002 + 2.5 * up + rng.normal(0, 0.1, n).clip(-0.001)
    reward = 0.68 + gain * np.clip(steps / (0.5 * n), 0, 1) + rng.normal(0, 0.004, n)
    return MetricTable(steps, {"reward": reward, "reward_std": np.full(n, std) + rng.normal(0, 0.003, n),
                               "kl": np.abs(kl), "completions/mean_length": 105 + rng.normal(0, 1, n)}, {})


@pytest.mark.parametrize("n,seed", [(93, 0), (200, 1), (400, 2)])
def test_kl_drift_beside_an_immaterial_reward_gain_is_a_failure(n, seed):
    assert "kl" in _failed(_kl_drift(n, seed, gain=0.015, std=0.09))


@pytest.mark.parametrize("n,seed", [(93, 0), (200, 1)])
def test_kl_drift_beside_a_material_reward_gain_is_not_drift_bought_with_nothing(n, seed):
    report = diagnose(_kl_drift(n, seed, gain=0.2, std=0.09))
    assert "bought with nothing" not in " ".join(report.get("kl").evidence)


def _heldout(n: int, seed: int, every: int, heldout_after: float) -> MetricTable:
    """A trained reward rising 0.08 -> 0.8 over the first half; a held-out accuracy logged every ``every``
    steps, 0.004 at first and ``heldout_after`` on every later evaluation."""
    rng = np.random.default_rng(seed)
    steps = np.arange(1, n + 1)
    reward = 0.08 + 0.72 * np.clip((steps - 0.1 * n) / (0.4 * n), 0, 1) + rng.normal(0, 0.03, n)
    val = np.full(n, np.nan)
    val[every - 1 :: every] = heldout_after
    val[every - 1] = 0.004
    return MetricTable(steps, {"reward": reward, "val_accuracy": val}, {})


@pytest.mark.parametrize("n,seed,every", [(52, 0, 10), (200, 1, 20), (120, 2, 5)])
def test_a_held_out_score_at_zero_after_the_reward_rose_is_hacking(n, seed, every):
    found = diagnose(_heldout(n, seed, every, heldout_after=0.0)).get("hacking")
    assert found.status == FAILURE, found.verdict


@pytest.mark.parametrize("n,seed,every", [(52, 0, 10), (200, 1, 20)])
def test_a_held_out_score_that_pays_is_no_hacking_by_this_rule(n, seed, every):
    assert "hacking" not in _failed(_heldout(n, seed, every, heldout_after=0.5))


def _early_gain_then_heldout(n: int, seed: int, heldout_rises: bool) -> MetricTable:
    """A success-rate reward that gains 0.15 in the first 8% of the run and then creeps (noise 0.075); a
    held-out accuracy every 10 steps, rising 0.60 -> 0.71 after the gain (or flat at 0.60)."""
    rng = np.random.default_rng(seed)
    steps = np.arange(1, n + 1)
    reward = 0.55 + 0.15 * np.clip(steps / (0.08 * n), 0, 1) + 0.03 * steps / n + rng.normal(0, 0.07, n)
    val = np.full(n, np.nan)
    evals = steps % 10 == 0
    val[evals] = (0.60 + (0.11 * steps[evals] / n if heldout_rises else 0.0)) + rng.normal(0, 0.005, evals.sum())
    return MetricTable(steps, {"reward": np.clip(reward, 0, 1), "entropy": np.linspace(0.8, 0.2, n),
                               "eval/rewards/acc/mean": val}, {})


@pytest.mark.parametrize("n,seed", [(200, 0), (300, 1), (200, 2)])
def test_a_held_out_score_that_keeps_rising_denies_a_stall_after_the_early_gain(n, seed):
    with_rise = diagnose(_early_gain_then_heldout(n, seed, heldout_rises=True))
    assert "stalled after an early gain" not in with_rise.get("stall").verdict


def _identical_groups(n: int, seed: int, mean_late: float) -> MetricTable:
    """verl-style columns: the largest advantage is 0 on 90% of the steps after the first fifth (every group
    identical); the batch's best sample earns 2.2, its worst 0.2; the mean reward rises to ``mean_late``."""
    rng = np.random.default_rng(seed)
    steps = np.arange(1, n + 1)
    reward = 1.0 + (mean_late - 1.0) * np.clip(steps / (0.2 * n), 0, 1) + rng.normal(0, 0.02, n)
    adv_max = np.full(n, 2.47)
    late = steps > 0.2 * n
    adv_max[late & (rng.uniform(size=n) < 0.96)] = 0.0
    return MetricTable(steps, {"reward": reward, "critic/advantages/max": adv_max,
                               "reward_max": np.full(n, 2.2), "reward_min": np.full(n, 0.2)}, {})


def _derived(table: MetricTable) -> MetricTable:
    from agentgrpo.doctor.readers.tidy import derive

    derive(table, [])
    return table


@pytest.mark.parametrize("n,seed", [(80, 0), (200, 1), (150, 2)])
def test_identical_groups_below_the_best_sample_are_no_signal(n, seed):
    report = diagnose(_derived(_identical_groups(n, seed, mean_late=1.68)))
    found = report.get("zero_variance")
    assert found.status == FAILURE, found.verdict
    assert abs(found.onset - 0.2 * n) <= 0.1 * n


@pytest.mark.parametrize("n,seed", [(80, 0), (200, 1)])
def test_identical_groups_at_the_best_sample_are_saturation_not_a_failure(n, seed):
    report = diagnose(_derived(_identical_groups(n, seed, mean_late=2.19)))
    assert report.get("zero_variance").status != FAILURE
    assert report.get("convergence").state == "saturated"


@pytest.mark.parametrize("name,mode", [
    ("ningguo_hotpotqa_qwen25_3b_sft_grpo_run1.log", "kl"),
    ("dequeueing_cs336_a5_grpo_gsm8k_question_only_reward_metrics.jsonl", "hacking"),
    ("miachen_news_classification_qwen25_verl_grpo_training.log", "zero_variance"),
])
def test_the_real_failures_are_named(name, mode):
    assert mode in _failed(read_run(HELDOUT / name).table)


def test_the_real_healthy_run_with_a_rising_held_out_score_is_clean():
    assert not _failed(read_run(HELDOUT / "tianshixu_cs336_a5_grpo_math_base.log").table)
