"""One fixed output judged the same whether a run logged every step or averaged k steps per log.

TRL averages every metric over its ``logging_steps`` window, the batch's shortest and longest completion length
included: a log of k steps where one step's lengths differed by a token shows a fraction of a token between
them. Such a log is neither "one length" nor "lengths that differ": at least 1 - spread of its steps had one
length (`collapse.one_length_share`), and a log of one length shows ``reward_std`` 0 only when all k steps did
(k read from the lengths' fractions, `collapse.steps_per_log`). Generated runs, each judged at k = 1, 2, 3, 4, 8:

- a short-answer task (4 tokens) that collapses onto one output: after the onset nearly every step has one
  length, most score alike (``reward_std`` 0: some one-length steps are different 4-token answers), the odd
  step differs by a token and scores differently. Named a
  collapse at every k (before, averaging 2 steps mixed those odd steps into the "tied" logs, whose samples then
  seemed to score differently: a tie, not one output);
- a label task (3-token answers) whose lengths differ by a token on half the steps and whose samples keep scoring
  differently while the reward rises: no collapse at any k.
"""

from __future__ import annotations

import numpy as np
import pytest

from agentgrpo.doctor.detectors.collapse import one_length_share, steps_per_log
from agentgrpo.doctor.diagnose import diagnose
from agentgrpo.doctor.table import MetricTable


def _averaged(columns: dict[str, np.ndarray], k: int) -> MetricTable:
    """The per-step columns as a logger with ``logging_steps=k`` writes them: window means, the last step."""
    n = len(next(iter(columns.values()))) // k * k
    steps = np.arange(1, n + 1).reshape(-1, k)[:, -1]
    return MetricTable(steps, {name: col[:n].reshape(-1, k).mean(axis=1) for name, col in columns.items()}, {})


def _collapse_run(seed: int, n: int = 240) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    onset = int(rng.integers(n // 5, n // 3))
    lo = np.full(n, 4.0)
    differ = rng.random(n) < np.where(np.arange(n) < onset, 0.6, 0.06)  # differing steps: before, and the odd one
    hi = lo + np.where(differ, rng.integers(1, 3, n), 0)
    # after the onset most steps score alike; a share of them (different 4-token answers) and every step that
    # differs in length do not
    alike = (np.arange(n) >= onset) & (rng.random(n) < 0.7) & ~differ
    std = np.where(alike, 0.0, rng.uniform(0.4, 1.8, n))
    reward = np.where(np.arange(n) < onset, rng.uniform(1.5, 2.8, n), 2.2 + rng.normal(0, 0.05, n))
    return {"reward": reward, "reward_std": std, "completions/min_length": lo, "completions/max_length": hi,
            "completions/mean_length": (lo + hi) / 2}


def _label_task_run(seed: int, n: int = 240) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    lo = np.where(rng.random(n) < 0.5, 2.0, 3.0)
    hi = np.full(n, 3.0)
    p = np.linspace(0.35, 0.75, n)
    reward = np.clip(p + rng.normal(0, 0.06, n), 0, 1)
    std = np.sqrt(p * (1 - p)) + rng.normal(0, 0.03, n)
    return {"reward": reward, "reward_std": std, "completions/min_length": lo, "completions/max_length": hi,
            "completions/mean_length": (lo + 2 * hi) / 3}


def test_one_length_share_is_exact_on_single_steps_and_a_bound_on_averaged_logs():
    rng = np.random.default_rng(0)
    for _ in range(50):
        k = int(rng.integers(1, 9))
        per_step = np.where(rng.random(k) < 0.5, 0.0, rng.integers(1, 40, k).astype(float))
        truth = float(np.mean(per_step == 0))
        share = float(one_length_share(np.array([per_step.mean()]))[0])
        assert share <= truth + 1e-12  # never more steps of one length than there were
        if k == 1:
            assert share == truth


def test_steps_per_log_never_exceeds_the_logging_interval_and_finds_it_on_a_varied_run():
    rng = np.random.default_rng(1)
    for _ in range(40):
        k = int(rng.integers(1, 17))
        per_step = rng.integers(1, 400, size=(120, k)).astype(float)  # whole-token lengths, k steps a log
        logged = np.round(per_step.mean(axis=1), 4)  # as a log prints them
        found = steps_per_log(logged)
        assert found <= k and np.allclose(logged * found, np.round(logged * found), atol=2e-3 * found)
        assert found == k  # 120 varied logs leave no smaller denominator
    assert steps_per_log(np.array([0.1234, 7.77777])) == 1  # lengths that were never whole tokens


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("k", [1, 2, 3, 4, 8])
def test_a_collapse_onto_one_short_output_is_named_however_often_it_was_logged(seed, k):
    report = diagnose(_averaged(_collapse_run(seed), k))
    assert "collapse" in [f.detector for f in report.failures], report.headline


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("k", [1, 2, 3, 4, 8])
def test_a_label_task_whose_answers_tie_in_length_is_no_collapse_at_any_interval(seed, k):
    report = diagnose(_averaged(_label_task_run(seed), k))
    assert "collapse" not in [f.detector for f in report.failures], report.headline
