"""An objective that pays on few steps is judged by how often it pays, not by its median.

The Unsloth GSM8K template logs ``check_answer`` as the mean over a small group: on most steps no sample states an
answer and the step logs exactly 0, so the median of any window is 0 whatever the payouts on the other steps do.
A model that learns the format first and then the answers (payouts on 5% of steps early, on 45% late) gained on
the objective materially; the same run whose answers stay rare beside the same format gain is hacking.
"""

from __future__ import annotations

import numpy as np
import pytest

from agentgrpo.doctor.diagnose import diagnose
from agentgrpo.doctor.finding import FAILURE
from agentgrpo.doctor.table import MetricTable


def _run(seed: int, paid_late: float) -> MetricTable:
    """Format components rising 0 -> 2 over the run (the exact one to 1.5, the approximate one to 0.5);
    ``check_answer`` 0 on a step unless it pays (probability 5% rising linearly to ``paid_late`` over the last
    half), then a group mean of 0.75-3."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(150, 400))
    rows = []
    for i in range(1, n + 1):
        x = i / n
        fmt = 1.5 / (1.0 + np.exp(-12 * (x - 0.45)))
        paid = 0.05 + max(0.0, x - 0.5) * 2 * (paid_late - 0.05)
        answer = float(rng.choice([0.75, 1.5, 2.25, 3.0])) if rng.random() < paid else 0.0
        if answer == 0.0 and rng.random() < 0.05:
            answer = -0.25  # a wrong answer now and then
        exact = float(np.clip(fmt + rng.normal(0, 0.2), 0, 1.5))
        approx = float(np.clip(fmt / 3 + rng.normal(0, 0.1), -1, 0.5))
        rows.append({
            "step": i, "loss": float(rng.normal(0, 0.01)), "completions/mean_length": 400 + float(rng.normal(0, 20)),
            "rewards/match_format_exactly/mean": exact, "rewards/match_format_approximately/mean": approx,
            "rewards/check_answer/mean": answer, "reward": exact + approx + answer,
            "reward_std": 0.8 + float(rng.normal(0, 0.05)),
        })
    return MetricTable.from_records(rows)


@pytest.mark.parametrize("seed", range(6))
def test_answers_paid_on_more_steps_are_a_material_gain_not_hacking(seed):
    table = _run(seed, 0.45)
    late = table.columns["rewards/check_answer/mean"][-len(table) // 5:]
    assert np.median(late) == 0.0  # the median cannot see the gain: the scenario is the one the rule is about
    assert diagnose(table).get("hacking").status != FAILURE


@pytest.mark.parametrize("seed", range(6))
def test_answers_that_stay_rare_beside_the_format_gain_are_hacking(seed):
    hacking = diagnose(_run(seed, 0.05)).get("hacking")
    assert hacking.status == FAILURE, hacking.verdict


def test_the_real_run_behind_the_rule():
    """The real run the rule came from (a corpus file, read as a user would)."""
    from doctor_cases import HELDOUT, failures_of

    failures, report = failures_of(HELDOUT / "onlyjokers_gemma3_1b_gsm8k.ipynb")
    assert "hacking" not in failures, report.headline
