"""The reward's own statistics under its prefix (``reward/selected_mean`` beside ``reward/selected_std``, with
rates and other spreads): the reward is the mean, its spread the std, and nothing is summed. Without such a
pair the reward functions under ``reward/`` are summed as before. Generated JSONL runs, plain-Python oracle."""

from __future__ import annotations

import json

import numpy as np
import pytest

from agentgrpo.doctor.readers import read_run


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.mark.parametrize("n,seed,stem", [(50, 0, "selected"), (200, 1, "score"), (17, 2, "final")])
def test_a_mean_beside_its_std_is_the_reward_not_a_component(tmp_path, n, seed, stem):
    rng = np.random.default_rng(seed)
    mean = rng.uniform(0, 1, n)
    std = rng.uniform(0.1, 0.5, n)
    rows = [{"system/step": i + 1, f"reward/{stem}_mean": mean[i], f"reward/{stem}_std": std[i],
             "reward/valid_rate": rng.uniform(0.9, 1), "reward/checker_failure_rate": rng.uniform(0, 0.01),
             "reward/outcome_advantage_std": rng.uniform(0.2, 0.4), "actor/total_loss": rng.normal()}
            for i in range(n)]
    path = tmp_path / "metrics.jsonl"
    _write(path, rows)
    table = read_run(path).table
    np.testing.assert_allclose(table.columns["reward"], mean)
    np.testing.assert_allclose(table.columns["reward_std"], std)
    assert table.components() == []


@pytest.mark.parametrize("seed", [0, 1])
def test_reward_functions_without_a_statistics_pair_are_still_summed(tmp_path, seed):
    rng = np.random.default_rng(seed)
    fmt, acc = rng.uniform(0, 1, 30), rng.uniform(0, 1, 30)
    path = tmp_path / "metrics.jsonl"
    _write(path, [{"step": i + 1, "reward/format": fmt[i], "reward/accuracy": acc[i]} for i in range(30)])
    table = read_run(path).table
    np.testing.assert_allclose(table.columns["reward"], fmt + acc)
    assert table.components() == ["accuracy", "format"]
