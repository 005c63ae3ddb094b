"""The kinds of miss of blind batches 11 and 12, as generated scenarios (each fails on the doctor before its fix).

- A weak rise whose typical step never moved: the reward is exactly 0 (every group identical) on most steps and a
  few early steps sit below it. The fitted trend rises, the medians of the early and late windows do not: no
  rise, so a stall, and the identical groups are named as a failure, its cause (before: on some such runs
  "inconclusive", no failure).
- Completions of one length whose groups still score differently (a fixed-format JSON action whose fields vary
  in value, not in token count): ``frac_reward_zero_std`` below 1 on those steps says a group held different
  completions, so equal lengths are no fixed output, however much the other steps' lengths differ (before: "one
  fixed output", a false collapse, when the steps that differ differ by more than two tokens).
- Guard: one repeated completion (one length, every group identical) is still a collapse.
- (batch 12) Length that grew 50% or more and ran into the cap (a third of late completions truncated, more
  than early) is a length failure whatever the reward did (before: a truncation warning when the reward did
  not move with the length); a shadow correctness reward rising with it leaves it to the gaming rule.
"""

from __future__ import annotations

import numpy as np
import pytest

from agentgrpo.doctor.diagnose import diagnose
from agentgrpo.doctor.table import MetricTable


def _failures(table: MetricTable) -> list[str]:
    return [f.detector for f in diagnose(table).failures]


def _silent_zero_run(seed: int) -> MetricTable:
    """Groups of 8 on one prompt a step; the reward is exactly 0 (all identical) on most steps, and on a few
    (more often early, never on most early steps) one sample earns a penalty: -0.125 or -0.25."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(50, 200))
    t = np.arange(n)
    penalised = rng.random(n) < np.where(t < 0.25 * n, rng.uniform(0.15, 0.3), rng.uniform(0.03, 0.1))
    reward = np.where(penalised, -rng.choice([0.125, 0.25], n), 0.0)
    std = np.where(penalised, np.where(reward < -0.2, 0.463, 0.354), 0.0)
    return MetricTable(np.arange(1, n + 1), {
        "reward": reward,
        "reward_std": std,
        "frac_reward_zero_std": np.where(penalised, 0.0, 1.0),
        "grad_norm": np.where(penalised, rng.uniform(0.1, 0.3, n), rng.uniform(0.0, 0.003, n)),
        "kl": rng.uniform(0.02, 0.04, n),
        "entropy": rng.normal(0.6, 0.03, n),
        "completions/mean_length": rng.normal(500, 10, n),
    }, {})


@pytest.mark.parametrize("seed", range(10))
def test_a_reward_stuck_at_zero_with_identical_groups_is_a_stall_and_its_cause_is_named(seed):
    table = _silent_zero_run(seed)
    failures = _failures(table)
    assert "zero_variance" in failures, diagnose(table).headline


def _fixed_format_run(seed: int, groups: int) -> MetricTable:
    """A JSON action of one token count on most steps (fields vary in value, sometimes a 9-token field more or
    less); the groups' samples score differently on most steps; the reward does not improve."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(100, 250))
    differ = rng.random(n) < rng.uniform(0.15, 0.3)
    lo = np.full(n, 94.0)
    hi = lo + np.where(differ, 9.0 * rng.integers(1, 6, n), 0.0)
    zero = np.clip(rng.binomial(groups, 0.3, n) / groups, 0, 1)  # a share of groups alike, most differ
    if groups == 1:
        zero = (rng.random(n) < 0.3).astype(float)
    reward = rng.normal(1.0, 0.4, n)
    return MetricTable(np.arange(1, n + 1), {
        "reward": reward,
        "reward_std": np.where(zero >= 1.0, 0.0, rng.uniform(0.05, 0.6, n)),
        "frac_reward_zero_std": zero,
        "completions/min_length": lo,
        "completions/max_length": hi,
        "completions/mean_length": (lo + hi) / 2,
        "completions/clipped_ratio": np.zeros(n),
        "kl": rng.uniform(0.001, 0.006, n),
    }, {})


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("groups", [1, 4])
def test_one_length_whose_groups_score_differently_is_a_format_not_one_output(seed, groups):
    assert "collapse" not in _failures(_fixed_format_run(seed, groups))


@pytest.mark.parametrize("seed", range(6))
def test_one_repeated_completion_whose_groups_are_identical_is_still_a_collapse(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(100, 250))
    onset = n // 3
    after = np.arange(n) >= onset
    lo = np.where(after, 94.0, rng.integers(40, 90, n))
    hi = np.where(after, 94.0, lo + rng.integers(20, 120, n))
    table = MetricTable(np.arange(1, n + 1), {
        "reward": np.where(after, 0.9 + rng.normal(0, 0.02, n), rng.normal(1.0, 0.4, n)),
        "reward_std": np.where(after, 0.0, rng.uniform(0.2, 0.6, n)),
        "frac_reward_zero_std": np.where(after, 1.0, rng.uniform(0.0, 0.3, n)),
        "completions/min_length": lo,
        "completions/max_length": hi,
        "completions/mean_length": (lo + hi) / 2,
        "completions/clipped_ratio": np.zeros(n),
    }, {})
    assert "collapse" in _failures(table), diagnose(table).headline


# batch 12 (scored blind at ce5a893): a run whose completions grew 4.5x into the length cap, a third of them cut
# there at the end, beside a score that rose a little and did not move with the length (r < 0.6): only a
# truncation warning before. Growth of 50% or more that runs into the cap (late truncated share >= 0.3, above
# its early level) is a length failure whatever the reward did, unless a shadow correctness reward rose with it.


def _runaway_run(seed: int, shadow_follows: bool | None = None) -> MetricTable:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(100, 250))
    t = np.arange(n) / n
    length = 1000 + 3800 * np.clip(t * rng.uniform(1.1, 1.5), 0, 1) + rng.normal(0, 60, n)
    clipped = np.clip(0.35 * np.clip((t - 0.2) / 0.7, 0, 1) + rng.normal(0, 0.01, n), 0, 1)
    reward = -0.58 + 0.2 * t + 0.08 * np.sin(7 * t + seed) + rng.normal(0, 0.03, n)  # a slow rise, out of step
    columns = {"reward": reward, "reward_std": np.full(n, 0.4), "completions/mean_length": length,
               "completions/clipped_ratio": clipped, "entropy": np.linspace(0.25, 0.17, n)}
    if shadow_follows is not None:
        columns["rewards/correct/mean"] = 0.2 + (0.5 * t if shadow_follows else 0.0) + rng.normal(0, 0.02, n)
        columns["rewards/fmt/mean"] = reward - columns["rewards/correct/mean"]
    meta = {"shadow": ["correct"]} if shadow_follows is not None else {}
    return MetricTable(np.arange(1, n + 1), columns, meta)


@pytest.mark.parametrize("seed", range(8))
def test_length_that_runs_into_the_cap_is_a_failure_whatever_the_reward_did(seed):
    table = _runaway_run(seed)
    assert "length" in _failures(table), diagnose(table).headline


@pytest.mark.parametrize("seed", range(4))
def test_length_that_runs_into_the_cap_while_correctness_rises_with_it_is_left_to_the_gaming_rule(seed):
    report = diagnose(_runaway_run(seed, shadow_follows=True))
    assert "runaway" not in (report.get("length").verdict or "")
