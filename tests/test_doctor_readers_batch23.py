"""Readers for the files of blind batch 23 (generated inputs; each test fails on the readers before the change).

A custom loop that reports each step only in its tqdm bar's postfix (``Dr. CPPO:  3%|▎ | 1379/50000 [..., H=2.33,
loss=0.298, reward=3.41]``): the bar's counter is the step, and the last line of each counter carries that step's
values (tqdm prints the bar when the counter moves, still showing the previous step's postfix, then again when the
step's postfix is set). Before, every printed bar was a record numbered in file order: twice the steps, each
step's values shifted by one line. A step whose postfix holds NaN (an update skipped) keeps it: the redrawn line
replaces the one before, NaN included (a merge of records that share a step would keep the earlier finite value).
"""

from __future__ import annotations

import io

import numpy as np
import pytest
from tqdm import tqdm

from agentgrpo.doctor.readers import read_run


def _bar_log(seed: int, steps: int) -> tuple[str, list[float], list[float]]:
    """The text tqdm itself writes for a loop that calls ``update(1)`` then ``set_postfix(...)`` each step,
    between other prints; the rewards and the entropies (``H``, NaN where an update was skipped) set, in order."""
    rng = np.random.default_rng(seed)
    out = io.StringIO()
    out.write("Loading model...\nstep config: lr=1e-5 G=4\n")
    rewards, entropies = [], []
    bar = tqdm(total=steps * 10, desc="Dr. CPPO", file=out, mininterval=0, miniters=1, ascii=False)
    for i in range(steps):
        bar.update(1)
        reward = round(float(rng.normal(2.0 + i / steps, 1.0)), 2)
        rewards.append(reward)
        entropy = float("nan") if rng.random() < 0.08 else round(float(rng.uniform(0.3, 2.0)), 2)  # a skipped update
        entropies.append(entropy)
        bar.set_postfix(H=entropy, loss=round(float(rng.normal()), 3), reward=reward)
        if rng.random() < 0.1:
            out.write("[reward worker] error: '(' was never closed (<string>, line 4)\n")
    bar.close()
    return out.getvalue(), rewards, entropies


@pytest.mark.parametrize("seed", range(5))
def test_a_progress_bars_postfix_is_read_at_the_bars_counter(tmp_path, seed):
    text, rewards, entropies = _bar_log(seed, 30 + 17 * seed)
    path = tmp_path / "train.log"
    path.write_text(text)
    table = read_run(path).table
    assert table.steps.tolist() == list(range(1, len(rewards) + 1))
    assert np.allclose(table["reward"], rewards)
    assert np.allclose(table["H"], entropies, equal_nan=True)  # a step's NaN is its own, not the step before's
