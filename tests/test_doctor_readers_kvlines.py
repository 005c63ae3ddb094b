"""Metric lines without a step (`readers/kvlines.py`): a custom loop's ``key: value, ...`` logging line per step,
with a printed dict of batch sums and their count, between prints of a few samples' rewards. Checked on generated
logs against a plain-Python oracle (the means are the sums over the count, the steps the lines' order)."""

from __future__ import annotations

import numpy as np
import pytest

from agentgrpo.doctor.readers import read_run


def _log(n: int, seed: int, count: int, every: int) -> tuple[str, np.ndarray, np.ndarray]:
    """``n`` step lines (loss, norm, entropy, sums over ``count`` samples), each after a rollout line; every
    ``every`` steps an eval block printing one sample's reward dict and an accuracy."""
    rng = np.random.default_rng(seed)
    answer = rng.integers(0, count + 1, n)
    fmt = np.maximum(answer, rng.integers(0, count + 1, n))
    entropy = rng.uniform(0.2, 1.0, n)
    lines = []
    for i in range(n):
        stamp = f"2025-09-23 09:{i % 60:02d}:00,{i % 1000:03d} - train - INFO - "
        lines.append(stamp + f"rollout batch {i} generated, length: {count}")
        sums = {"total_num": count, "total_reward": float(answer[i]), "total_format_reward": float(fmt[i]),
                "total_answer_reward": float(answer[i])}
        lines.append(stamp + f"rl_loss: {rng.normal(0, 0.01):.6f}, time: {rng.uniform(100, 120):.3f}, "
                     f"l2_norm: {rng.uniform(0.1, 0.2):.5f}, token_entropy: {entropy[i]:.6f}, reward_data: {sums}")
        if i % every == 0:
            lines.append(stamp + "model output: <answer> 12 </answer>")
            sample = {"format_reward": 1.0, "answer_reward": float(i % 2), "reward": float(i % 2)}
            lines.append(stamp + f"reward: {sample}")
            lines.append(stamp + f"rollout batch {i} done, eval_acc: {0.4 + i / (10 * n):.4f}")
    return "\n".join(lines) + "\n", answer / count, entropy


@pytest.mark.parametrize("n,seed,count,every", [(200, 0, 256, 10), (60, 1, 64, 5), (31, 2, 8, 3), (500, 3, 128, 25)])
def test_stepless_metric_lines_are_the_steps_and_sums_become_means(tmp_path, n, seed, count, every):
    text, reward, entropy = _log(n, seed, count, every)
    path = tmp_path / "train.log"
    path.write_text(text)
    table = read_run(path).table
    assert list(table.steps) == list(range(1, n + 1))
    np.testing.assert_allclose(table.columns["reward"], reward)
    np.testing.assert_allclose(table.columns["entropy"], np.round(entropy, 6))
    # the evaluation printed after step i's line (i counted from 0) joins that step, i + 1
    x, acc = table.series("eval/rewards/acc/mean")
    assert list(x) == [i + 1 for i in range(0, n, every)]
    np.testing.assert_allclose(acc, [round(0.4 + i / (10 * n), 4) for i in range(0, n, every)])


def test_a_few_repeated_lines_are_not_a_per_step_log(tmp_path):
    """Under MIN_LINES repetitions the lines are status prints: the printed sample dicts stay the rows."""
    text, _, _ = _log(6, 0, 16, 1)
    path = tmp_path / "train.log"
    path.write_text(text)
    table = read_run(path).table
    assert len(table.steps) == 6 and set(table.columns["reward"]) <= {0.0, 1.0}  # the sample prints, as before


def test_lines_that_name_their_step_stay_step_lines(tmp_path):
    lines = [f"step {i}: loss: {0.1 * i:.2f}, reward: {i / 50:.3f}, kl: 0.01" for i in range(1, 41)]
    path = tmp_path / "train.log"
    path.write_text("\n".join(lines) + "\n")
    table = read_run(path).table
    assert list(table.steps) == list(range(1, 41))
    np.testing.assert_allclose(table.columns["reward"], [i / 50 for i in range(1, 41)])
