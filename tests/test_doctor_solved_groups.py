"""Groups that stop differing because their prompts are solved, with no entropy logged (the doctor invariance
benchmark's "no entropy" perturbation of two healthy real runs): while the reward rises and does not fall, a rising
share of identical groups and a falling reward_std are what solving prompts looks like, not a collapse (4 of the 8
generated runs were a collapse before). Guard: the same signs beside a flat reward are still a failure (no signal,
stall, or collapse).
"""

from __future__ import annotations

import numpy as np
import pytest

from agentgrpo.doctor.diagnose import diagnose
from agentgrpo.doctor.table import MetricTable


def _run(seed: int, rises: bool) -> MetricTable:
    """Groups of 8 samples on 8 prompts a step; each prompt's success rate climbs towards 1 (``rises``) or stays,
    while its samples become identical (every sample of a prompt right, or every one wrong) from mid-run."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(24, 200))
    rows = []
    for i in range(n):
        t = i / n
        p = 0.35 + (0.5 * t if rises else 0.0)
        same = min(0.45 + 0.45 * max(t - 0.3, 0) / 0.7, 0.95)  # share of prompts whose 8 samples agree
        groups = []
        for _ in range(8):
            right = rng.random() < p
            groups.append(np.full(8, float(right)) if rng.random() < same else (rng.random(8) < p).astype(float))
        samples = np.concatenate(groups)
        zero = float(np.mean([g.std() == 0 for g in groups]))
        rows.append({"step": i + 1, "reward": 4.0 * samples.mean(), "reward_std": 4.0 * samples.std(ddof=1),
                     "frac_reward_zero_std": zero, "completions/mean_length": 300.0 + rng.normal(0, 10),
                     "kl": 0.001 + 0.01 * t})
    return MetricTable.from_records(rows)


@pytest.mark.parametrize("seed", range(8))
def test_groups_solved_while_the_reward_rises_are_no_collapse(seed):
    report = diagnose(_run(seed, rises=True))
    assert "collapse" not in [str(f.detector) for f in report.failures], report.headline


@pytest.mark.parametrize("seed", range(6))
def test_groups_agreeing_beside_a_flat_reward_are_still_a_failure(seed):
    report = diagnose(_run(seed, rises=False))
    named = {str(f.detector) for f in report.failures}
    assert named & {"collapse", "zero_variance", "stall"}, report.headline
