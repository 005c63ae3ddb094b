"""One length for every completion, read from the batch's spread of lengths (``completions/std_length``).

A spread of exactly 0 over a batch of different prompts is one and the same answer (a collapse); a spread of a
third of a token is a few completions one token longer than the rest: different answers of nearly one length
(an integer inside a fixed tag, held-out batch 9's format-copy task), not one output. The oracle is plain
Python: the lengths of every completion are generated, and ``statistics.pstdev`` gives the logged spread.
"""

from __future__ import annotations

import json
import statistics

import numpy as np
import pytest

from agentgrpo.doctor.diagnose import diagnose
from agentgrpo.doctor.readers import read_run


def _run(tmp_path, seed: int, *, one_answer: bool):
    """A custom loop's metrics.jsonl (reward, reward_std, entropy, mean and std of lengths; no shortest or
    longest). Until the onset the completions vary widely and the reward is low; from it, each prompt's
    group answers ``<answer>K</answer>``: all right (the reward at its maximum 1.3, reward_std 0) with a few
    prompts' K one token longer (``one_answer`` False), or one and the same answer for every prompt, right on
    a share of prompts only, the reward held below its best (``one_answer`` True)."""
    rng = np.random.default_rng(seed)
    n, prompts, group = int(rng.integers(40, 160)), int(rng.integers(4, 13)), int(rng.integers(4, 17))
    onset, longer = int(n * rng.uniform(0.1, 0.3)), rng.uniform(0.1, 0.3)
    rows, spreads = [], []
    for step in range(n):
        if step < onset:
            lengths = [int(v) for v in rng.integers(5, 80, prompts * group)]
            reward, spread_r, entropy = 0.1 + 0.3 * rng.random(), 0.4, 1.1 * rng.uniform(0.95, 1.05)
        elif one_answer:
            lengths = [9] * (prompts * group)
            reward, spread_r, entropy = 0.4, 0.0, 0.03 * rng.uniform(0.8, 1.2)
        else:
            per_prompt = [9 + int(rng.random() < longer) for _ in range(prompts)]
            lengths = [k for k in per_prompt for _ in range(group)]
            reward, spread_r, entropy = 1.3, 0.0, 0.04 * rng.uniform(0.8, 1.2)
        spread = statistics.pstdev(lengths)
        spreads.append(spread)
        rows.append({"step": step, "rollout/mean_total_reward": reward, "rollout/std_total_reward": spread_r,
                     "policy_token_entropy": entropy, "rollout/mean_completion_tokens": statistics.fmean(lengths),
                     "rollout/std_completion_tokens": spread})
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    late = spreads[int(0.8 * n):]
    return read_run(path).table, late


@pytest.mark.parametrize("seed", range(8))
def test_answers_a_token_apart_are_no_fixed_output(tmp_path, seed):
    table, late = _run(tmp_path, seed, one_answer=False)
    assert sum(s > 0 for s in late) > len(late) / 2  # the oracle: most late batches hold different lengths
    report = diagnose(table)
    assert "collapse" not in [f.detector for f in report.failures], report.headline


@pytest.mark.parametrize("seed", range(4))
def test_one_answer_for_every_prompt_is_still_a_collapse(tmp_path, seed):
    table, late = _run(tmp_path, seed, one_answer=True)
    assert all(s == 0 for s in late)
    report = diagnose(table)
    assert "collapse" in [f.detector for f in report.failures], report.headline
