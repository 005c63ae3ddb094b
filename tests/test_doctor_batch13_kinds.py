"""The kinds of miss of blind batch 13, as generated scenarios (each fails on the doctor before its fix).

- A placeholder column (KL exactly 0 on every finite row: ``beta=0``, never computed) whose other rows are NaN
  (ranks that wrote NaN) measured nothing: no numerical instability. Before, the NaN rows alone made an
  "instability" failure and turned the run's real failure (most completions cut at the length cap) into a
  warning "explained" by it. Guard: a KL that measured something and then went NaN is still an instability.
- A proxy component (named as form) that rose from the very first logged step and saturated inside the early
  window, while the objective stayed flat, is reward hacking. Before, with no bins before the rise, the early
  window (already at the proxy's ceiling) hid the gain: "converged". Guard: an objective that rose with it.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from agentgrpo.doctor.diagnose import diagnose
from agentgrpo.doctor.readers import read_run
from agentgrpo.doctor.table import MetricTable


def _failures(table: MetricTable) -> list[str]:
    return [f.detector for f in diagnose(table).failures]


def _truncated_run_jsonl(tmp_path, seed: int, kl: str) -> MetricTable:
    """TRL log dicts, one per rank per step (4 ranks), most completions cut at the 1024 cap; ``kl`` is "zero"
    (0.0, NaN on some ranks' rows) or "real" (a measured KL that goes NaN from mid-run on)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(120, 400))
    rows = []
    nan_at = set(rng.choice(np.arange(1, n + 1), size=int(rng.integers(10, n // 4)), replace=False).tolist())
    for step in range(1, n + 1):
        reward = 0.7 + 0.3 * min(step / (0.5 * n), 1.0) + rng.normal(0, 0.1)
        clipped = float(np.clip(rng.normal(0.65, 0.05), 0, 1))
        for _rank in range(4):
            if kl == "zero":
                value = float("nan") if step in nan_at and rng.random() < 0.5 else 0.0
            else:
                value = float("nan") if step > n // 2 else float(rng.uniform(0.01, 0.05))
            rows.append({
                "loss": float(rng.normal(0, 0.01)), "grad_norm": float(rng.uniform(0.1, 0.4)),
                "reward": reward, "reward_std": float(rng.uniform(0.8, 1.2)),
                "frac_reward_zero_std": float(rng.uniform(0, 0.15)), "kl": value,
                "completions/mean_length": 1024 * clipped + 100 * (1 - clipped),
                "completions/max_length": 1024.0, "completions/min_length": float(rng.integers(40, 120)),
                "completions/clipped_ratio": clipped, "completions/mean_terminated_length": 100.0,
                "step": step,
            })
    path = tmp_path / "grpo_losses.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return read_run(path).table


@pytest.mark.parametrize("seed", range(6))
def test_nan_rows_of_a_placeholder_kl_are_no_instability(tmp_path, seed):
    table = _truncated_run_jsonl(tmp_path, seed, "zero")
    failures = _failures(table)
    assert "instability" not in failures
    assert "length" in failures, diagnose(table).headline


@pytest.mark.parametrize("seed", range(4))
def test_a_measured_kl_that_goes_nan_is_still_an_instability(tmp_path, seed):
    table = _truncated_run_jsonl(tmp_path, seed, "real")
    assert "instability" in _failures(table)


def _early_format_run(seed: int, objective_rises: bool) -> MetricTable:
    """A tag-format reward from below 0 at the first step to its maximum within the first 3-8% of the run; the
    task reward near its floor (-1: invalid answers) throughout, or rising materially over the run."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(150, 400))
    steps = np.arange(1, n + 1)
    top = float(rng.choice([1.0, 2.0, 2.5]))
    settle = int(rng.uniform(0.03, 0.08) * n)
    fmt = np.where(steps < settle, -0.1 + (top + 0.1) * steps / settle, top) + rng.normal(0, 0.02 * top, n)
    fmt = np.minimum(fmt, top)
    if objective_rises:
        task = -0.95 + 1.2 * steps / n + rng.normal(0, 0.05, n)
    else:
        task = -0.98 + rng.choice([0.0, 0.05, 0.1], n, p=[0.8, 0.15, 0.05])
    return MetricTable(steps, {
        "reward": fmt + task,
        "reward_std": np.where(steps < settle, 1.3, rng.uniform(0.08, 0.2, n)),
        "rewards/format_reward_func/mean": fmt,
        "rewards/move_reward_func/mean": task,
        "completions/mean_length": rng.normal(40, 3, n),
        "completions/clipped_ratio": np.zeros(n),
        "kl": rng.uniform(3.0, 7.0, n),
    }, {})


@pytest.mark.parametrize("seed", range(8))
def test_a_format_reward_saturated_from_the_first_step_beside_a_flat_objective_is_hacking(seed):
    table = _early_format_run(seed, objective_rises=False)
    assert "hacking" in _failures(table), diagnose(table).headline


@pytest.mark.parametrize("seed", range(8))
def test_an_objective_that_rose_beside_the_early_format_gain_is_no_hacking(seed):
    table = _early_format_run(seed, objective_rises=True)
    assert "hacking" not in _failures(table)
