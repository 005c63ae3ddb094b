"""Readers for the files of blind batch 22 (generated inputs; each test fails on the readers before the change).

- A custom loop's per-batch JSONL with no step key but a ``batch_index`` counter: the counter is the step.
- A log whose steps start over from the first one several times (attempts stopped at different points, then
  a full run): the run is the last attempt, however many came before (more than three restarts were read
  as disorder and sorted, which kept the tail of an earlier attempt that ran longer than the last).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from agentgrpo.doctor.readers import read_run


def _attempts(rng, key: str) -> tuple[list[dict], list[float]]:
    """Aborted attempts (one that ran longer than the last, then three to six of 3-20 records) and the last,
    full one; its rewards are returned."""
    rows, final = [], []
    short = [int(n) for n in rng.integers(3, 20, size=int(rng.integers(3, 7)))]
    lengths = [int(rng.integers(130, 160)), *short, int(rng.integers(60, 120))]
    for a, n in enumerate(lengths):
        for i in range(1, n + 1):
            reward = round(float(rng.uniform(0, 1)), 4)
            rows.append({key: i, "reward_mean": reward, "reward_std": 0.2, "attempt": a})
            if a == len(lengths) - 1:
                final.append(reward)
    return rows, final


@pytest.mark.parametrize("key", ["batch_index", "step"])
@pytest.mark.parametrize("seed", range(5))
def test_a_run_started_over_is_read_as_its_last_attempt(tmp_path, seed, key):
    rng = np.random.default_rng(seed)
    rows, final = _attempts(rng, key)
    path = tmp_path / "training_metrics.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    table = read_run(path).table
    assert table.steps.tolist() == list(range(1, len(final) + 1))
    assert np.allclose(table["reward"], final)


def test_a_batch_counter_inside_a_named_step_is_not_the_step(tmp_path):
    """Micro-batches counted inside each ``grpo_step``: the named step wins."""
    rows = [{"grpo_step": s, "batch_index": b, "reward": s / 10 + b / 100} for s in range(1, 21) for b in range(4)]
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert read_run(path).table.steps.tolist() == list(range(1, 21))
