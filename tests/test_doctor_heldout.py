"""Kinds of miss found on the blind held-out corpus (benchmarks/public-runs-heldout), each checked on generated
runs (several lengths, seeds, onsets, scales) and on the real file that showed it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from agentgrpo.doctor.diagnose import diagnose
from agentgrpo.doctor.finding import FAILURE
from agentgrpo.doctor.readers import read_run
from agentgrpo.doctor.table import MetricTable

HELDOUT = Path(__file__).resolve().parents[1] / "benchmarks" / "public-runs-heldout"


def _proxy_beside_idle_components(n, seed, onset, scale, idle):
    """A proxy rising from ``onset`` while correctness never pays and ``idle`` other components sit at one
    value on every step (0, or a constant bonus)."""
    rng = np.random.default_rng(seed)
    x = np.arange(n)
    proxy = scale * (0.1 + 0.8 * np.clip((x - onset) / (n / 3), 0, 1)) + rng.normal(0, 0.02 * scale, n)
    records = []
    for i in range(n):
        rec = {"step": i + 1, "rewards/correctness_reward_func/mean": 0.0, "rewards/xmlcount_reward_func/mean": float(proxy[i])}
        for k in range(idle):
            rec[f"rewards/idle{k}_reward_func/mean"] = 0.0 if k % 2 == 0 else 0.5
        rec["reward"] = float(proxy[i]) + 0.5 * (idle // 2)
        rec["reward_std"] = 0.2 * scale
        records.append(rec)
    return records


@pytest.mark.parametrize("n,seed,onset,scale,idle", [
    (80, 0, 10, 1.0, 1), (200, 1, 30, 0.3, 3), (140, 2, 5, 2.0, 2), (60, 3, 15, 0.5, 4), (300, 4, 60, 1.0, 3),
])
def test_hacking_names_only_the_components_that_moved(n, seed, onset, scale, idle):
    """Components held at one value on every step did not produce the gain: the verdict names the mover."""
    found = diagnose(MetricTable.from_records(_proxy_beside_idle_components(n, seed, onset, scale, idle))).get("hacking")
    assert found.status == FAILURE, found.verdict
    assert "xmlcount_reward_func" in found.verdict
    assert "idle" not in found.verdict and "idle" not in found.evidence[0], found.verdict


def test_the_real_run_names_only_xmlcount():
    """nisal_qwen_200: soft/strict format and int are 0 on all 200 steps; only xmlcount moved."""
    found = diagnose(read_run(HELDOUT / "nisal_qwen_200.ipynb").table).get("hacking")
    assert found.status == FAILURE
    for idle in ("soft_format_reward_func", "strict_format_reward_func", "int_reward_func"):
        assert idle not in found.verdict, found.verdict
