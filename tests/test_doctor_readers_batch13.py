"""Reader shapes met before batch 13 was scored (issue 36), each on generated logs against a plain-Python oracle:

- slime's and miles' worker logs: ``rollout N: {...}`` (the rollout's metrics: ``rollout/raw_reward`` is the task
  score, ``rollout/rewards`` the group-normalised one) and ``step N: {...}`` (the train step's), behind a logger's
  prefix or none, with ``perf N`` and ``eval N`` dicts between: the step is the number printed before each dict;
- an entropy bonus logged as its loss term (slime's ``train/entropy_loss``, verl's ``actor/entropy_loss``) read as
  the entropy where its values are non-negative, never where they are negated (Stable-Baselines' convention);
- a handful of printed summary dicts (an evaluation's JSON, printed twice) do not pre-empt the step lines that
  carry the reward on every logged step.
"""

from __future__ import annotations

import json
import pprint
import random

import numpy as np
import pytest
from test_doctor_readers_formats import _notebook, _output, text_to_html_table

from agentgrpo.doctor import names
from agentgrpo.doctor.readers import read_run

SEEDS = [0, 1, 2, 3, 4]


def _slime_log(seed: int) -> tuple[str, dict[int, dict]]:
    """A slime/miles worker log and, per rollout id, the oracle values written into it."""
    rng = random.Random(seed)
    n = rng.randint(12, 80)
    prefix = rng.choice(["", "[2025-06-01 10:00:00] rollout.py:201 - ", "(MegatronTrainRayActor pid=77) "])
    lines = [":job_id:02000000", "Applying monkey patch to torch.distributed", "> setting random seeds to 1234 ..."]
    truth = {}
    for i in range(n):
        raw = round(rng.random(), 4)
        length = round(rng.uniform(200, 4000), 3)
        truncated = round(rng.random() * 0.5, 4)
        entropy = round(rng.uniform(0.2, 1.2), 6)
        truth[i] = {"reward": raw, "length": length, "clipped": truncated, "entropy": entropy}
        lines.append("Memory-Usage before wake_up model: {'gpu': '0', 'total_GB': 139.81, 'used_GB': 3.66}")
        rollout = {
            "rollout/raw_reward": raw,
            "rollout/total_lengths": length + 60,
            "rollout/response_lengths": length,
            "rollout/rewards": 0.0,  # group-normalised: zero mean by construction, never the reward
            "rollout/truncated": truncated,
            "rollout/advantages": rng.gauss(0, 1e-8),
        }
        lines.append(f"{prefix}rollout {i}: {rollout}")
        lines.append(f"{prefix}perf {i}: {{'perf/sleep_time': {rng.random() * 20}, 'perf/train_wait_time': 48.0}}")
        step = {
            "train/loss": rng.gauss(0, 1e-3),
            "train/pg_loss": rng.gauss(0, 1e-3),
            "train/entropy_loss": entropy,
            "train/pg_clipfrac": 0.0,
            "train/ppo_kl": 0.0,
            "train/grad_norm": rng.uniform(0.1, 1.0),
            "train/step": i,
        }
        lines.append(f"{prefix}step {i}: {step}")
        if seed % 2 and i % 5 == 4:
            lines.append(f"{prefix}eval {i}: {{'eval/aime': {round(rng.random(), 3)}}}")
    return "\n".join(lines) + "\n", truth


@pytest.mark.parametrize("seed", SEEDS)
def test_slime_worker_log_reads_one_row_per_rollout_with_its_raw_reward(tmp_path, seed):
    text, truth = _slime_log(seed)
    path = tmp_path / "worker.out"
    path.write_text(text, encoding="utf-8")
    t = read_run(path).table
    assert t.steps.tolist() == sorted(truth)
    steps, reward = t.series(names.REWARD)
    assert steps.tolist() == sorted(truth)
    assert np.allclose(reward, [truth[i]["reward"] for i in sorted(truth)])
    assert np.allclose(t.columns[names.LENGTH], [truth[i]["length"] for i in sorted(truth)])
    assert np.allclose(t.columns[names.CLIPPED], [truth[i]["clipped"] for i in sorted(truth)])
    assert np.allclose(t.columns[names.ENTROPY], [truth[i]["entropy"] for i in sorted(truth)])


@pytest.mark.parametrize("seed", SEEDS)
def test_printed_dicts_without_a_stated_step_keep_their_inferred_steps(tmp_path, seed):
    """Oracle: a TRL console log (no step printed before its dicts) reads as it did: steps from the progress bar."""
    rng = random.Random(seed)
    n, every = rng.randint(12, 60), rng.choice([1, 2, 5])
    lines = []
    for i in range(1, n + 1):
        lines.append(f" {i * every}/{n * every} [00:{i:02d}<00:10, 1.2s/it]")
        lines.append(str({"loss": round(rng.gauss(0, 1), 4), "reward": round(rng.random(), 4), "epoch": i / n}))
    path = tmp_path / "train.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    t = read_run(path).table
    assert t.steps.tolist() == [i * every for i in range(1, n + 1)]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("sign", [1, -1])
def test_an_entropy_loss_column_is_the_entropy_only_when_non_negative(tmp_path, seed, sign):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(15, 120))
    entropy = np.round(np.linspace(1.0, 0.3, n) + rng.normal(0, 0.02, n), 5)
    rows = [
        {"step": i + 1, "critic/score/mean": round(float(rng.random()), 4), "actor/entropy_loss": float(sign * e)}
        for i, e in enumerate(entropy)
    ]
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    t = read_run(path).table
    if sign > 0:
        assert np.allclose(t.columns[names.ENTROPY], entropy)
        assert t.meta["sources"][names.ENTROPY] == "actor/entropy_loss"
    else:  # the negated bonus (Stable-Baselines' train/entropy_loss) is not an entropy
        assert not t.has(names.ENTROPY)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_logged_entropy_wins_over_an_entropy_loss(tmp_path, seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(15, 80))
    rows = [
        {"step": i + 1, "reward": float(rng.random()), "entropy": 0.5 + i / n,
         "entropy_loss": 2.0 + float(rng.random())}
        for i in range(n)
    ]
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    t = read_run(path).table
    assert np.allclose(t.columns[names.ENTROPY], [0.5 + i / n for i in range(n)])


def _summary(rng: random.Random, n: int) -> str:
    """An evaluation's summary dict (its accuracy, a few samples with numeric fields), pretty-printed."""
    samples = [{"problem": "2+2?", "gold": rng.randint(0, 9), "pred": rng.randint(0, 9), "ok": False} for _ in range(3)]
    summary = {"model": "Qwen/Qwen3-0.6B", "n": n, "accuracy": round(rng.random(), 2), "samples": samples}
    return pprint.pformat(summary, width=rng.choice([60, 80, 120]))  # as Jupyter shows a returned dict


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("where", ["log", "notebook"])
def test_a_few_summary_dicts_do_not_preempt_the_step_lines_that_carry_the_reward(tmp_path, seed, where):
    rng = random.Random(seed)
    n, every = rng.randint(15, 60), rng.choice([1, 5])
    step_lines, truth = [], {}
    for i in range(1, n + 1):
        reward = round(rng.random(), 3)
        truth[i * every] = reward
        step_lines.append(f"[mem][step {i * every}] used=9.96GiB (31%) step_t=14.33s tok/s~1143")
        loss, kl = rng.gauss(0, 0.01), rng.random()
        step_lines.append(f"[log][step {i * every}] loss={loss:.4f} reward={reward} kl={kl:.4f}")
    before, after = _summary(rng, 50), _summary(rng, 100)
    if where == "log":
        path = tmp_path / "run.log"
        path.write_text("\n".join([before, *step_lines, after]) + "\n", encoding="utf-8")
    else:
        rows = [["Step", "Training Loss", "Validation Loss"]]
        rows += [[s, rng.random(), rng.random()] for s in sorted(truth)[:: max(1, n // 4)]]
        outputs = [
            _output("stream", text=before),
            _output("stream", text="\n".join(step_lines) + "\n"),
            _output("display_data", data={"text/html": text_to_html_table(rows)}),
            _output("stream", text=after),
        ]
        path = _notebook(tmp_path, outputs)
    x, y = read_run(path).table.series(names.REWARD)
    assert x.tolist() == sorted(truth)
    assert np.allclose(y, [truth[s] for s in sorted(truth)])
