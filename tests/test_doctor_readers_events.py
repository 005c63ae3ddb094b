"""Readers of logs that spread a step over several lines or records (generated inputs, checked against the
values that generated them): multi-line step reports (NeMo RL's console), event logs of custom loops (a kind
field, a step under its own name), and notebooks that hold an SFT table before the GRPO one."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from agentgrpo.doctor.readers import read_run
from tests.test_doctor_readers_formats import _notebook, _output, text_to_html_table


def _series(seed: int, n: int) -> list[float]:
    rng = random.Random(seed)
    return [round(rng.uniform(-1, 2), 4) for _ in range(n)]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_nemo_rl_style_step_reports(tmp_path, seed):
    rewards, lengths = _series(seed, 40), [round(200 + 100 * abs(x), 2) for x in _series(seed + 9, 40)]
    lines = ["Setting up compute cluster...", "  • Loss: 1.0 (a setup print before any step: not a record)"]
    for step, (reward, length) in enumerate(zip(rewards, lengths), start=1):
        lines += [
            f"\n{'=' * 25} Step {step}/29688 {'=' * 25}",
            "▶ Generating responses for batch of size 512...",
            "\n📊 Training Results:",
            f"  • Loss: {0.01 * step:.4f}",
            f"  • Avg Reward: {reward:.4f}",
            f"  • Mean Generation Length: {length:.4f}",
            "\n⏱️  Timing:",
            f"  • Total step time: {10 + step:.2f}s",
            "  • generation: 55.00s (26.2%)",
        ]
    path = tmp_path / "ray-driver.log"
    path.write_text("\n".join(lines), encoding="utf-8")
    run = read_run(path)
    assert run.fmt == "text step reports"
    assert run.table.steps.tolist() == list(range(1, 41))
    assert np.allclose(run.table["reward"], rewards)
    assert np.allclose(run.table["completions/mean_length"], lengths)  # found by its name and values
    assert np.allclose(run.table["loss"], [0.01 * s for s in range(1, 41)])


def test_step_reports_do_not_replace_step_lines(tmp_path):
    """A log of one-line records keeps its reading: a header-only line is not a step report."""
    lines = [f"step {s}: loss={0.1 * s:.3f} reward={0.02 * s:.3f}" for s in range(1, 31)]
    path = tmp_path / "train.log"
    path.write_text("\n".join(lines), encoding="utf-8")
    run = read_run(path)
    assert run.fmt == "text step lines" and len(run.table) == 30


def _event_log(seed: int, steps: int) -> tuple[list[dict], list[float], dict[int, float]]:
    rng = random.Random(seed)
    records, rollout, evals = [], [], {}
    for step in range(steps):
        if step % 5 == 0:
            evals[step] = round(rng.random(), 4)
            records.append({"type": "eval", "grpo_step": step, "optimizer_step": 2 * step, "reward": evals[step]})
        rollout.append(round(rng.random(), 4))
        records.append({"type": "rollout", "grpo_step": step, "reward": rollout[-1], "std_reward": 0.3})
        for epoch in range(2):
            records.append({"type": "train", "grpo_step": step, "optimizer_step": 2 * step + epoch,
                            "loss": rng.random(), "grad_norm": 1.0 + epoch})
        records.append({"type": "grpo_step_summary", "grpo_step": step, "step_seconds": 12.0})
    return records, rollout, evals


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_event_log_with_eval_records_and_a_named_step(tmp_path, seed):
    records, rollout, evals = _event_log(seed, 60)
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    run = read_run(path)
    table = run.table
    assert table.steps.tolist() == list(range(60))  # grpo_step, not the record's position
    assert np.allclose(table["reward"], rollout)  # the training reward, never an evaluation's
    eval_reward = table["eval/reward"]
    assert {s: eval_reward[s] for s in evals} == pytest.approx(evals)
    assert np.isnan([eval_reward[s] for s in range(60) if s not in evals]).all()
    assert any("grpo_step" in n for n in run.notes) and any("evaluation" in n for n in run.notes)


def test_kind_field_without_an_eval_kind_changes_nothing(tmp_path):
    records = [{"event": "train", "step": s, "reward": 0.01 * s} for s in range(1, 31)]
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    assert np.allclose(read_run(path).table["reward"], [0.01 * s for s in range(1, 31)])


def test_notebook_sft_table_before_the_grpo_table(tmp_path):
    """An SFT warm-up's loss-only table (steps 5-360) and the GRPO table (steps 1-50) in one notebook: the run
    is the GRPO table; merging by step would leave SFT rows 55-360 after it."""
    sft = [["Step", "Training Loss"]] + [[s, 2.0 / s] for s in range(5, 361, 5)]
    rewards = _series(7, 50)
    grpo = [["Step", "Training Loss", "reward", "reward_std", "kl"]]
    grpo += [[s, 0.001, rewards[s - 1], 0.2, 0.01] for s in range(1, 51)]
    outputs = [_output("display_data", data={"text/html": text_to_html_table(t), "text/plain": "x"})
               for t in (sft, grpo)]
    run = read_run(_notebook(tmp_path, outputs))
    assert run.table.steps.tolist() == list(range(1, 51))
    assert np.allclose(run.table["reward"], rewards, atol=1e-6)
    assert any("without a reward" in n for n in run.notes)


@pytest.mark.parametrize("epochs", [1, 3])
def test_step_lines_with_an_epoch_counter_before_the_step_counter(tmp_path, epochs):
    """``Epoch:[e/E](n/T), Reward: x`` (MiniMind's GRPO trainer): the epoch's fraction is not the step; the
    step is counted across epochs."""
    per_epoch = 30
    rewards = _series(epochs, epochs * per_epoch)
    lines = ["loading model..."]
    for i, reward in enumerate(rewards):
        epoch, n = divmod(i, per_epoch)
        lines.append(f"Epoch:[{epoch + 1}/{epochs}]({n + 1}/{per_epoch}), Reward: {reward:.4f}, KL_ref: 0.0010")
    path = tmp_path / "train.log"
    path.write_text("\n".join(lines), encoding="utf-8")
    run = read_run(path)
    assert run.table.steps.tolist() == list(range(1, epochs * per_epoch + 1))
    assert np.allclose(run.table["reward"], rewards)


@pytest.mark.parametrize("sep", ["_", "."])
def test_flattened_metric_names_are_the_names_they_flatten(tmp_path, sep):
    """verl's ``critic/score/mean`` exported as ``critic_score_mean`` (or with dots): the reward, entropy and
    length are read under their flattened names."""
    rewards = _series(11, 40)
    names_ = [n.replace("/", sep) for n in ("critic/score/mean", "actor/entropy", "response_length/mean")]
    lines = ["step," + ",".join(names_)]
    lines += [f"{s},{r},{0.5 + 0.01 * s},{300 - s}" for s, r in enumerate(rewards, start=1)]
    path = tmp_path / "training_metrics.csv"
    path.write_text("\n".join(lines), encoding="utf-8")
    table = read_run(path).table
    assert np.allclose(table["reward"], rewards)
    assert np.allclose(table["entropy"], [0.5 + 0.01 * s for s in range(1, 41)])
    assert np.allclose(table["completions/mean_length"], [300 - s for s in range(1, 41)])


def test_metric_names_written_as_phrases(tmp_path):
    """A homework trainer's descriptive names (``rollout/mean_total_reward_across_all_completions_in_batch_and_groups``,
    ``train/approximate_kl_divergence_policy_vs_reference_mean_over_minibatches``): read by their words, without
    the grammar; a phrase that names another quantity (a fraction of completions with a nonzero reward, a prompt's
    token count) is not taken for it."""
    rewards, kls = _series(21, 40), [abs(x) / 100 for x in _series(22, 40)]
    records = [
        {"step": s, "metrics": {
            "rollout/mean_total_reward_across_all_completions_in_batch_and_groups": r,
            "rollout/fraction_of_completions_with_nonzero_total_reward": 0.5,
            "train/approximate_kl_divergence_policy_vs_reference_mean_over_minibatches": kl,
            "train/policy_token_entropy_mean_over_minibatches": 1.0 - 0.01 * s,
            "rollout/mean_generated_completion_token_count_per_completion": 200.0 + s,
            "rollout/mean_prompt_token_count_per_prompt_after_tokenization": 80.0 + (s % 3),
        }}
        for s, (r, kl) in enumerate(zip(rewards, kls), start=1)
    ]
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    table = read_run(path).table
    assert np.allclose(table["reward"], rewards)
    assert np.allclose(table["kl"], kls)
    assert np.allclose(table["entropy"], [1.0 - 0.01 * s for s in range(1, 41)])
    assert np.allclose(table["completions/mean_length"], [200.0 + s for s in range(1, 41)])
