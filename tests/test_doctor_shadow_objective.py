"""A shaped trained reward that rises weakly while the task's own success (a shadow reward, weight 0) rises
beyond noise is learning, not a stall (issue 38: a wordle-easy demo whose partial-credit reward hid the solves).
Generated runs, several lengths, seeds and noise levels; the rule's oracle is the shadow's own trend."""

from __future__ import annotations

import numpy as np
import pytest

from agentgrpo.doctor.diagnose import diagnose
from agentgrpo.doctor.finding import FAILURE
from agentgrpo.doctor.table import MetricTable


def _run(n: int, seed: int, solve_gain: float, noise: float) -> MetricTable:
    """Per step: a solve rate rising by ``solve_gain``; the trained (shaped) reward gains a quarter of that, in
    noise of 0.12, less than half its within-group spread (0.4), as partial credit given up offsets the solves
    (wordle's reward pays 0.3 for a solved game whose reply is not the word)."""
    rng = np.random.default_rng(seed)
    x = np.linspace(0, 1, n)
    solved = np.clip(0.4 + solve_gain * x + rng.normal(0, noise, n), 0, 1)
    trained = 0.5 + solve_gain / 4 * x + rng.normal(0, 0.12, n)
    records = [{"step": i + 1, "reward": float(trained[i]), "reward_std": 0.4,
                "rewards/wordle_reward/mean": float(trained[i]), "rewards/wordle_solved/mean": float(solved[i]),
                "frac_reward_zero_std": 0.0} for i in range(n)]
    return MetricTable.from_records(records, meta={"shadow": ["wordle_solved"]})


def _stall(table: MetricTable) -> bool:
    return any(str(getattr(f.detector, "value", f.detector)) == "stall" for f in diagnose(table).failures)


@pytest.mark.parametrize("n,seed,noise", [(80, 0, 0.05), (160, 1, 0.08), (300, 2, 0.06), (120, 3, 0.04)])
def test_a_rising_shadow_objective_is_learning_not_a_stall(n, seed, noise):
    table = _run(n, seed, solve_gain=0.25, noise=noise)
    report = diagnose(table)
    stall = next(f for f in report.findings if str(getattr(f.detector, "value", f.detector)) == "stall")
    assert stall.status != FAILURE, stall.verdict
    assert "task objective" in stall.verdict


@pytest.mark.parametrize("n,seed,noise", [(80, 0, 0.05), (160, 1, 0.08), (300, 2, 0.06)])
def test_a_flat_shadow_objective_leaves_the_stall(n, seed, noise):
    table = _run(n, seed, solve_gain=0.0, noise=noise)
    assert _stall(table)
