"""The kind of false failure the blind batch 9 (benchmarks/public-runs-heldout) found, as a principle checked on
generated runs (several lengths, seeds and weights) and on the real files that showed it:

* when several components are named as the task, the objective is their (weighted) sum: one part of it that
  falls while another part rises (a fallback parser's bonus that shrinks as the main parser learns to succeed)
  is not a hacked objective. The objective as a whole falling while a form component rises still is.
"""

from __future__ import annotations

import numpy as np
import pytest
from doctor_cases import HELDOUT

from agentgrpo.doctor.diagnose import diagnose
from agentgrpo.doctor.finding import FAILURE
from agentgrpo.doctor.readers import read_run
from agentgrpo.doctor.table import MetricTable


def _two_task_parts(n: int, seed: int, main_gain: float, fallback_weight: float,
                    form_weight: float = 0.1) -> MetricTable:
    """A form bonus (``boxed_format``, paid at ``form_weight``) rising 0.3 → 0.85; the main task part
    (``exact_match_boxed``) rising by
    ``main_gain``; the fallback task part (``exact_match_relaxed_only``, paid at ``fallback_weight``) falling
    0.25 → 0.02 as answers move from the fallback parser to the main one. The total is their weighted sum."""
    rng = np.random.default_rng(seed)
    steps = np.arange(1, n + 1)
    ramp = np.clip(steps / (0.5 * n), 0, 1)
    form = np.clip(0.3 + 0.55 * ramp + rng.normal(0, 0.04, n), 0, 1)
    main = np.clip(0.1 + main_gain * ramp + rng.normal(0, 0.03, n), 0, 1)
    fallback = np.clip(0.25 - 0.23 * ramp + rng.normal(0, 0.02, n), 0, 1)
    weights = {"boxed_format": form_weight, "exact_match_boxed": 1.0, "exact_match_relaxed_only": fallback_weight}
    reward = form_weight * form + main + fallback_weight * fallback
    columns = {"reward": reward, "rewards/boxed_format/mean": form, "rewards/exact_match_boxed/mean": main,
               "rewards/exact_match_relaxed_only/mean": fallback}
    return MetricTable(steps, columns, {"reward_weights": weights})


@pytest.mark.parametrize("n,seed,main_gain,fallback_weight",
                         [(200, 0, 0.2, 0.1), (500, 1, 0.15, 0.1), (120, 2, 0.3, 0.5), (300, 3, 0.5, 1.0)])
def test_a_task_part_giving_way_to_another_task_part_is_not_hacking(n, seed, main_gain, fallback_weight):
    report = diagnose(_two_task_parts(n, seed, main_gain, fallback_weight))
    assert report.get("hacking").status != FAILURE, report.get("hacking").verdict


@pytest.mark.parametrize("n,seed", [(200, 0), (400, 1), (150, 2)])
def test_the_whole_objective_falling_while_the_form_rises_is_still_hacking(n, seed):
    """Both task parts fall, the form bonus (paid in full) rises: the total reward rises on the form alone."""
    report = diagnose(_two_task_parts(n, seed, main_gain=-0.08, fallback_weight=0.5, form_weight=1.0))
    found = report.get("hacking")
    assert found.status == FAILURE, found.verdict


@pytest.mark.parametrize("name", ["luyi_cs285_hw4_math_grpo_metrics.jsonl",
                                  "preyneyv_cs285_hw4_math_hard_grpo_metrics.jsonl",
                                  "cylee_cs285_hw4_math_hard_grpo_metrics.jsonl"])
def test_the_real_runs_with_a_fallback_parser_bonus_are_not_hacking(name):
    path = HELDOUT / name
    if not path.exists():
        pytest.skip(f"{path} not in this checkout")
    report = diagnose(read_run(path).table)
    assert report.get("hacking").status != FAILURE, report.get("hacking").verdict


def _success_beside_a_penalty(n: int, seed: int, success_late: float) -> MetricTable:
    """A verl-agent-style run: the logged score is an invalid-action penalty that rises -0.06 -> -0.008 as
    actions become valid; the episode success rate is 0 throughout (or rises to ``success_late``)."""
    rng = np.random.default_rng(seed)
    steps = np.arange(1, n + 1)
    ramp = np.clip(steps / (0.6 * n), 0, 1)
    score = -0.06 + 0.052 * ramp + rng.normal(0, 0.004, n)
    success = np.clip(success_late * ramp + (rng.normal(0, 0.02, n) if success_late else 0.0), 0, 1)
    return MetricTable(steps, {"reward": score, "episode/success_rate": success}, {})


@pytest.mark.parametrize("n,seed", [(32, 0), (100, 1), (300, 2)])
def test_a_task_success_rate_at_zero_throughout_beside_a_rising_score_is_a_stall(n, seed):
    found = diagnose(_success_beside_a_penalty(n, seed, success_late=0.0)).get("stall")
    assert found.status == FAILURE, found.verdict
    assert "never pays" in found.verdict


@pytest.mark.parametrize("n,seed", [(32, 0), (100, 1)])
def test_a_task_success_rate_that_rises_is_not_a_never_paying_objective(n, seed):
    found = diagnose(_success_beside_a_penalty(n, seed, success_late=0.6)).get("stall")
    assert "never pays" not in found.verdict


def test_the_real_webshop_run_whose_success_never_paid_is_a_stall():
    report = diagnose(read_run(HELDOUT / "xiaoman654_webshop_qwen15b_gigpo_direct.log").table)
    assert "stall" in {f.detector for f in report.failures}
