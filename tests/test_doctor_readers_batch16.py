"""Reader shapes met before blind batch 16 was scored (issue 36), on generated logs against a plain-Python oracle.

- A JSON object of metric records keyed by their step (``{"0": {...}, "1": {...}}``, DeepSeekRL-Extended's
  ``train_logs.json``; a metric may hold ``Infinity``); before: "a JSON object but not a TRL trainer state".
- A JSON object of columns named in the plural (``{"steps": [...], "rewards": [...]}``) beside component lists left
  empty; before: unreadable.
- A closing record that repeats the last step with every metric 0 and a completion length of 0 (nothing sampled)
  does not replace that step's measured values; before, the reward "jumped" to 0 at the end. Guard: a reward of
  0 at a repeated step with a sampled length is a measurement, and later values still win.
"""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from agentgrpo.doctor import names
from agentgrpo.doctor.readers import read_run


@pytest.mark.parametrize("seed", range(4))
def test_records_keyed_by_step_are_read_in_step_order(tmp_path, seed):
    rng = random.Random(seed)
    n = rng.randint(15, 300)
    logs = {}
    for step in rng.sample(range(n), n):  # written in any order
        logs[str(step)] = {"rewards/numeric": rng.uniform(-3, 0), "rewards/xml": rng.random(), "kl": rng.random() / 10,
                           "reward": rng.uniform(-3, 1), "metrics/mae": float("inf") if rng.random() < 0.2 else 5.0,
                           "response_length": rng.uniform(40, 90), "loss": rng.random() / 100}
    path = tmp_path / "train_logs.json"
    path.write_text(json.dumps(logs, indent=4), encoding="utf-8")  # json writes Infinity, as Python loops do
    table = read_run(path).table
    x, y = table.series(names.REWARD)
    assert x.tolist() == list(range(n)) and np.allclose(y, [logs[str(s)]["reward"] for s in range(n)])
    assert sorted(table.components()) == ["numeric", "xml"]


@pytest.mark.parametrize("seed", range(3))
def test_plural_columns_with_empty_component_lists_are_read(tmp_path, seed):
    rng = random.Random(seed)
    n = rng.randint(15, 600)
    rewards = [rng.uniform(0, 10) for _ in range(n)]
    data = {"steps": list(range(1, n + 1)), "rewards": rewards, "format_rewards": [], "play_rewards": []}
    path = tmp_path / "reward_log.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    x, y = read_run(path).table.series(names.REWARD)
    assert x.tolist() == list(range(1, n + 1)) and np.allclose(y, rewards)


@pytest.mark.parametrize("seed", range(4))
def test_a_zeroed_closing_record_does_not_replace_the_last_step(tmp_path, seed):
    rng = random.Random(seed)
    n = rng.randint(15, 200)
    rows = [{"step": s, "reward": rng.uniform(-15, -8), "reward_std": rng.random(), "loss": rng.random() / 100,
             "kl": rng.random() / 10, "completion_length": rng.uniform(90, 130), "elapsed_minutes": 5.0 * s}
            for s in range(1, n + 1)]
    closing = {"step": n, "reward": 0, "reward_std": 0, "loss": 0, "kl": 0, "completion_length": 0,
               "elapsed_minutes": 5.0 * n + 0.01}
    path = tmp_path / "progress.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows + [closing]), encoding="utf-8")
    x, y = read_run(path).table.series(names.REWARD)
    assert x.tolist() == list(range(1, n + 1)) and np.allclose(y, [r["reward"] for r in rows])
    measured = dict(closing, completion_length=101.0)  # a sampled length: a measurement of reward 0
    path.write_text("".join(json.dumps(r) + "\n" for r in rows + [measured]), encoding="utf-8")
    assert read_run(path).table.series(names.REWARD)[1][-1] == 0.0
