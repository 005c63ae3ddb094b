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
        rec = {"step": i + 1, "rewards/correctness_reward_func/mean": 0.0,
               "rewards/xmlcount_reward_func/mean": float(proxy[i])}
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
    records = _proxy_beside_idle_components(n, seed, onset, scale, idle)
    found = diagnose(MetricTable.from_records(records)).get("hacking")
    assert found.status == FAILURE, found.verdict
    assert "xmlcount_reward_func" in found.verdict
    assert "idle" not in found.verdict and "idle" not in found.evidence[0], found.verdict


def test_the_real_run_names_only_xmlcount():
    """nisal_qwen_200: soft/strict format and int are 0 on all 200 steps; only xmlcount moved."""
    found = diagnose(read_run(HELDOUT / "nisal_qwen_200.ipynb").table).get("hacking")
    assert found.status != "ok"  # a warning now: a consequence of the truncation found first (below)
    for idle in ("soft_format_reward_func", "strict_format_reward_func", "int_reward_func"):
        assert idle not in found.verdict, found.verdict


def _pinned_lengths(n, seed, cap, onset, share, base):
    """Mean completion length rising from ``base`` to ``cap`` by ``onset``, then exactly ``cap`` on a
    ``share`` of the steps (every completion truncated) and just below it on the others; no clipped share or
    terminated length logged (a notebook's table)."""
    rng = np.random.default_rng(seed)
    records = []
    for i in range(n):
        if i < onset:
            length = base + (cap - base) * i / onset + rng.normal(0, 0.02 * cap)
        elif rng.random() < share:
            length = float(cap)
        else:
            length = cap * (1 - rng.uniform(0.005, 0.05))
        records.append({"step": i + 1, "reward": 0.2 + 0.3 * rng.random(), "reward_std": 0.3,
                        "completions/mean_length": float(min(length, cap))})
    return records


@pytest.mark.parametrize("n,seed,cap,onset,share", [
    (200, 0, 200, 10, 0.9), (80, 1, 512, 1, 1.0), (400, 2, 1024, 100, 0.8), (60, 3, 64, 20, 0.7),
    (300, 4, 4096, 5, 0.95),
])
def test_a_mean_length_pinned_at_its_ceiling_is_truncation(n, seed, cap, onset, share):
    """With no truncation metric logged, a mean length equal to the run's own maximum on most late steps
    (a mean equals the cap only when every completion hit it) is the truncation failure, dated where the
    length first reached it."""
    records = _pinned_lengths(n, seed, cap, onset, share, base=cap * 0.4)
    found = diagnose(MetricTable.from_records(records)).get("length")
    assert found.status == FAILURE and "truncation" in found.verdict, found.verdict
    assert found.onset is not None and abs(found.onset - max(onset, 1)) <= 0.2 * n, found.onset


@pytest.mark.parametrize("seed", range(5))
def test_lengths_near_but_not_at_one_ceiling_are_not_truncation(seed):
    """Means that come close to their maximum without repeating it, a ceiling too short to be a cap
    (degenerate output), or a ceiling that is not the configured cap: no truncation finding."""
    rng = np.random.default_rng(seed)
    near = [{"step": i + 1, "reward": 0.5 + 0.01 * rng.random(),
             "completions/mean_length": float(190 + 9.9 * rng.random())}
            for i in range(150)]
    assert "truncation" not in diagnose(MetricTable.from_records(near)).get("length").verdict
    short = _pinned_lengths(150, seed, 8, 5, 1.0, base=8)
    assert "truncation" not in diagnose(MetricTable.from_records(short)).get("length").verdict
    other_cap = MetricTable.from_records(_pinned_lengths(150, seed, 200, 10, 0.9, base=80))
    other_cap.meta["max_completion_length"] = 512
    assert "truncation" not in diagnose(other_cap).get("length").verdict
    constant = [dict(r, **{"completions/mean_length": 120.0}) for r in near]
    assert "truncation" not in diagnose(MetricTable.from_records(constant)).get("length").verdict


def test_the_real_run_at_its_200_token_cap_is_truncation():
    """nisal_qwen_200 logs only the mean length: exactly 200 (its cap) on most steps."""
    found = diagnose(read_run(HELDOUT / "nisal_qwen_200.ipynb").table).get("length")
    assert found.status == FAILURE and "truncation" in found.verdict
