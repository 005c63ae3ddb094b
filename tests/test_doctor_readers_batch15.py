"""Reader shapes met before blind batch 15 was scored (issue 36), on generated logs against a plain-Python oracle.

- Tunix (Google's JAX RL library) names metrics ``<family>/<mode>/<name>``: ``rewards/train/<reward fn>``,
  ``rewards/train/score/mean`` (the batch's mean total), ``rewards/train/sum``, ``rewards/train/mean`` (the mean
  over the functions), ``actor/train/kl``, ``completions/train/mean_length``, and the same under ``eval``. Before,
  ``rewards/train/mean`` and ``rewards/eval/mean`` were read as two reward components ("train", "eval") and the
  reward as their sum; the functions' own columns and the length were not read.
- A reward logged as ``reward_latest`` (the step's value, beside moving averages ``window_mean`` and
  ``all_time_mean``) is the reward; before, no reward was found.
- A long table (one row per step and metric: ``run_name,metric,step,value``) is pivoted to one column per metric;
  before, it had no reward column.
- A log whose only reward is a held-out evaluation's (``eval/reward``) is judged by it, with a note; before, it
  was unreadable. A training reward beside it still wins.
"""

from __future__ import annotations

import csv
import json
import random

import numpy as np
import pytest

from agentgrpo.doctor import names
from agentgrpo.doctor.readers import read_run
from agentgrpo.errors import UserError

FNS = ("match_format_exactly", "match_format_approximately", "check_answer", "check_numbers")


def _tunix_rows(rng: random.Random, n: int, every: int, keys: str) -> tuple[list[dict], dict, dict]:
    """W&B history rows of a Tunix GRPO run: per step a batch of trajectories scored by each reward function.
    ``keys``: "full" (score/*, sum, mean, min, max), "sum" (an older Tunix: sum, min, max) or "mean" (the mean
    over the functions only). Returns the rows, the oracle's total per step and its per-function means."""
    rows, total, comps = [], {}, {f: {} for f in FNS}
    for step in range(n):
        batch = [[rng.choice([-1.0, 0.0, 0.5, 1.5, 3.0]) for _ in FNS] for _ in range(rng.randint(2, 8))]
        sums = [sum(t) for t in batch]
        row = {"_step": step, "_runtime": step * 3.0, "actor/train/kl": rng.random() * 0.1,
               "actor/train/loss": rng.gauss(0, 0.1), "completions/train/mean_length": rng.randint(50, 300)}
        for i, f in enumerate(FNS):
            row[f"rewards/train/{f}"] = sum(t[i] for t in batch) / len(batch)
            comps[f][step] = row[f"rewards/train/{f}"]
        mean_over_fns = sum(sum(t) / len(FNS) for t in batch) / len(batch)
        if keys in ("full", "sum"):
            row["rewards/train/sum"] = sum(sums) / len(sums)
            row["rewards/train/min"] = min(min(t) for t in batch)
            row["rewards/train/max"] = max(max(t) for t in batch)
        if keys == "full":
            row |= {"rewards/train/score/mean": sum(sums) / len(sums), "rewards/train/score/max": max(sums),
                    "rewards/train/score/min": min(sums), "rewards/train/mean": mean_over_fns}
        if keys == "mean":
            row = {"step": step, "rewards/train/mean": mean_over_fns}
        total[step] = row.get("rewards/train/sum", mean_over_fns)
        if step % every == 0 and keys != "mean":
            row |= {f"rewards/eval/{f}": rng.random() for f in FNS} | {"rewards/eval/mean": rng.random(),
                                                                       "rewards/eval/score/mean": rng.random()}
        rows.append(row)
    return rows, total, comps


def _write_csv(path, rows):
    header = sorted({k for r in rows for k in r})
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=header)
        w.writeheader()
        w.writerows(rows)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("keys", ["full", "sum", "mean"])
def test_a_tunix_history_reads_its_total_components_and_length(tmp_path, seed, keys):
    rng = random.Random(seed)
    rows, total, comps = _tunix_rows(rng, rng.randint(20, 200), rng.randint(5, 64), keys)
    path = tmp_path / "wandb_history.csv"
    _write_csv(path, rows)
    table = read_run(path).table
    x, y = table.series(names.REWARD)
    assert np.allclose(y, [total[int(s)] for s in x]) and len(x) == len(total)
    if keys == "mean":
        assert table.components() == []
        return
    assert table.components() == sorted(FNS)  # not "train" and "eval"
    for f in FNS:
        cx, cy = table.series(f"rewards/{f}/mean")
        assert np.allclose(cy, [comps[f][int(s)] for s in cx])
    assert table.has(names.KL) and table.has(names.LENGTH)
    assert not table.has("rewards/eval/mean") and table.has("eval/rewards/check_answer/mean")


@pytest.mark.parametrize("seed", range(3))
def test_a_reward_logged_as_its_latest_value_is_the_reward(tmp_path, seed):
    rng = random.Random(seed)
    rewards, rows = [], []
    for i in range(rng.randint(15, 80)):
        rewards.append(round(rng.uniform(-1, 1), 4))
        window = rewards[-10:]
        rows.append({"step": 5 * (i + 1), "reward_latest": rewards[-1], "reward_std": rng.random(),
                     "window_mean": sum(window) / len(window), "all_time_mean": sum(rewards) / len(rewards),
                     "trend": rng.choice(["insufficient_data", "STABLE (+0.02)", "IMPROVING (+0.1)"])})
    path = tmp_path / "reward_log.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    x, y = read_run(path).table.series(names.REWARD)
    assert x.tolist() == [r["step"] for r in rows] and np.allclose(y, rewards)


def _long_rows(rng: random.Random, run: str, n: int) -> tuple[list[dict], dict]:
    oracle: dict[str, dict[int, float]] = {"train/reward": {}, "train/kl": {}, "eval/accuracy": {}}
    rows = []
    for step in range(n):
        oracle["train/reward"][step] = rng.random()
        oracle["train/kl"][step] = rng.random() * 0.05
        if step % 4 == 0:
            oracle["eval/accuracy"][step] = rng.random()
    for metric, values in oracle.items():  # grouped by metric, as a tracker dumps it
        rows += [{"run_name": run, "metric": metric, "step": s, "value": v} for s, v in values.items()]
    return rows, oracle


@pytest.mark.parametrize("seed", range(4))
def test_a_long_table_is_one_column_per_metric(tmp_path, seed):
    rng = random.Random(seed)
    rows, oracle = _long_rows(rng, "run_a", rng.randint(15, 150))
    if seed % 2:
        rng.shuffle(rows)
    path = tmp_path / "run_data.csv"
    _write_csv(path, rows)
    table = read_run(path).table
    assert names.canonical("train/reward") == names.REWARD and names.canonical("train/kl") == names.KL
    for metric in oracle:
        x, y = table.series(names.canonical(metric))
        assert x.tolist() == sorted(oracle[metric]) and np.allclose(y, [oracle[metric][s] for s in x])


def test_a_long_table_of_several_runs_names_them_and_reads_the_one_chosen(tmp_path):
    rng = random.Random(7)
    a, _ = _long_rows(rng, "run_a", 30)
    b, oracle_b = _long_rows(rng, "run_b", 40)
    path = tmp_path / "export.csv"
    _write_csv(path, a + b)
    with pytest.raises(UserError, match="2 runs .*run_a, run_b.*#RUN"):
        read_run(path)
    x, y = read_run(f"{path}#run_b").table.series(names.REWARD)
    assert x.tolist() == sorted(oracle_b["train/reward"])
    assert np.allclose(y, [oracle_b["train/reward"][s] for s in x])


@pytest.mark.parametrize("seed", range(3))
def test_a_log_with_only_a_heldout_reward_is_judged_by_it(tmp_path, seed):
    rng = random.Random(seed)
    rows, evals = [], {}
    for step in range(rng.randint(40, 200)):
        row = {"step": step, "train/mean_response_length": rng.uniform(100, 400)}
        if step % 4 == 3:
            evals[step] = row["eval/reward"] = rng.random()
        rows.append(row)
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    run = read_run(path)
    x, y = run.table.series(names.REWARD)
    assert x.tolist() == sorted(evals) and np.allclose(y, [evals[s] for s in x])
    assert any("held-out reward 'eval/reward'" in note for note in run.notes)
    for r in rows:  # guard: a training reward beside it is the reward
        r["reward"] = 0.5
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert np.allclose(read_run(path).table.series(names.REWARD)[1], 0.5)
