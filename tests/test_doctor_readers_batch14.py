"""A reader shape met before batch 14 was scored (issue 36), on generated logs against a plain-Python oracle: a
console log of TRL's metric dicts with no progress bar and no stated ``logging_steps`` (steps numbered by position)
whose history starts over (the whole log printed a second time, or a run resumed from a checkpoint). The Trainer's
``epoch`` going back marks where; before, the second history was numbered after the first (twice the steps).
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from agentgrpo.doctor import names
from agentgrpo.doctor.readers import read_run


def _dicts(rng: random.Random, n: int, start: int = 1) -> list[dict]:
    return [
        {
            "loss": round(rng.gauss(0, 0.01), 4),
            "grad_norm": str(round(rng.random(), 4)),  # Unsloth prints some values as strings
            "reward": str(round(rng.random() * 2, 4)),
            "reward_std": round(rng.random(), 4),
            "epoch": round(i / n, 6),
        }
        for i in range(start, n + 1)
    ]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("how", ["printed twice", "resumed"])
def test_a_history_that_starts_over_is_read_once(tmp_path, seed, how):
    rng = random.Random(seed)
    n = rng.randint(20, 300)
    first = _dicts(rng, n)
    if how == "printed twice":
        second = [dict(d) for d in first]  # the same records again
        oracle = {i + 1: float(d["reward"]) for i, d in enumerate(second)}
    else:
        resume = rng.randint(2, n - 5)  # the checkpoint's step: the records from there are logged again
        second = _dicts(random.Random(seed + 100), n, start=resume)
        oracle = {i + 1: float(d["reward"]) for i, d in enumerate(first[: resume - 1])}
        oracle |= {resume + i: float(d["reward"]) for i, d in enumerate(second)}
    banner = "==((====))==  Unsloth - 2x faster free finetuning"
    lines = [banner, *map(str, first), "Training complete.", *map(str, second)]
    path = tmp_path / "training_full_log.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    x, y = read_run(path).table.series(names.REWARD)
    assert x.tolist() == sorted(oracle)
    assert np.allclose(y, [oracle[s] for s in sorted(oracle)])


@pytest.mark.parametrize("seed", range(4))
def test_an_epoch_that_only_grows_leaves_the_positions(tmp_path, seed):
    rng = random.Random(seed)
    n = rng.randint(12, 120)
    path = tmp_path / "train.log"
    path.write_text("\n".join(map(str, _dicts(rng, n))) + "\n", encoding="utf-8")
    x, _ = read_run(path).table.series(names.REWARD)
    assert x.tolist() == list(range(1, n + 1))
