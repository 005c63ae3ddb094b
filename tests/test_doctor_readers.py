"""Readers: every log format into one table; bad input gives a clear message."""

from __future__ import annotations

import json

import numpy as np
import pytest

from agentgrpo.doctor.readers import read_run
from agentgrpo.errors import UserError


def _records(n=12, **extra):
    return [{"step": i + 1, "reward": 0.1 * i, "reward_std": 0.3, "kl": 0.001 * i, **extra} for i in range(n)]


def test_metrics_jsonl_truncated_last_line(tmp_path):
    path = tmp_path / "metrics.jsonl"
    lines = [json.dumps(r) for r in _records()]
    path.write_text("\n".join(lines) + '\n{"step": 13, "reward": 0.', encoding="utf-8")
    run = read_run(path)
    assert run.table.steps.tolist() == list(range(1, 13))
    assert any("incomplete" in n for n in run.notes)


def test_trainer_state_old_names_are_mapped(tmp_path):
    history = [
        {
            "step": i,
            "completion_length": 100.0 + i,
            "rewards/correct": 0.5,
            "kl": 0.01,
            "reward": 0.5,
            "clip_ratio": 0.0,
        }
        for i in range(1, 11)
    ]
    history.append({"step": 10, "train_runtime": 12.0, "train_loss": 0.1})  # end-of-run summary
    path = tmp_path / "trainer_state.json"
    path.write_text(json.dumps({"global_step": 10, "log_history": history}), encoding="utf-8")
    run = read_run(path)
    t = run.table
    assert run.fmt == "trainer_state.json"
    assert t["completions/mean_length"][-1] == 110.0
    assert t.components() == ["correct"]
    assert t.has("clip_ratio/region_mean")
    assert t.meta["summary"]["train_runtime"] == 12.0


def test_trainer_state_cut_short_reads_complete_records(tmp_path):
    text = json.dumps({"global_step": 5, "log_history": _records(5)}, indent=2)
    path = tmp_path / "trainer_state.json"
    path.write_text(text[: text.rfind('"kl"')], encoding="utf-8")
    run = read_run(path)
    assert run.table.steps.tolist() == [1, 2, 3, 4]
    assert any("cut short" in n for n in run.notes)


def test_csv_tracker_export(tmp_path):
    rows = ["Step,run - train/reward,run - train/reward__MIN,train/rewards/fmt/mean,train/global_step"]
    rows += [f"{i},{0.1 * i},{0.0},{0.5},{i}" for i in range(1, 11)]
    rows.append("11,0.3")  # a row cut short
    path = tmp_path / "export.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    run = read_run(path)
    assert run.table.steps.tolist() == list(range(1, 11))
    assert run.table.has("reward") and run.table.components() == ["fmt"]
    assert not any("__MIN" in k for k in run.table.names())
    assert any("row 12" in n for n in run.notes)


def test_console_log_with_progress_bar_and_string_values(tmp_path):
    text = []
    for i in range(1, 13):
        text.append(f"  3%|#  | {10 * i}/400 [00:10<01:00,  1.0it/s]")
        text.append(f"{{'loss': '0.01', 'reward': '{0.05 * i}', 'kl': {0.001 * i}, 'epoch': 0.1}}")
    text.append("{'train_runtime': 10.0, 'train_loss': 0.2, 'epoch': 1.0}")
    path = tmp_path / "console.txt"
    path.write_text("\n".join(text), encoding="utf-8")
    run = read_run(path)
    assert run.fmt == "console log"
    assert run.table.steps.tolist() == [10 * i for i in range(1, 13)]
    assert np.isclose(run.table["reward"][-1], 0.6)


def test_console_log_without_steps_uses_stated_logging_steps(tmp_path):
    lines = ["# logging_steps=5"] + ["{'reward': 0.1, 'kl': 0.01}"] * 10
    path = tmp_path / "run.log"
    path.write_text("\n".join(lines), encoding="utf-8")
    assert read_run(path).table.steps.tolist() == [5 * i for i in range(1, 11)]


def test_run_directory_reads_config_eval_and_samples(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    recs = [dict(r, **{"rewards/proxy/mean": 0.1, "rewards/correct/mean": 0.2}) for r in _records()]
    (run_dir / "metrics.jsonl").write_text("\n".join(json.dumps(r) for r in recs), encoding="utf-8")
    (run_dir / "config.yaml").write_text(
        "rewards:\n  - {name: proxy, weight: 1.0}\n  - {name: correct, weight: 0.0}\n"
        "  - {name: gone, weight: 1}\n",
        encoding="utf-8",
    )
    (run_dir / "eval.json").write_text(
        json.dumps({"after": {"greedy": {"success_rate": 0.5}}}), encoding="utf-8"
    )
    samples = [{"step": 2, "prompt": "p", "completion": c, "rewards": {}} for c in ("a", "a", "b", "c")]
    (run_dir / "completions.jsonl").write_text("\n".join(json.dumps(s) for s in samples), encoding="utf-8")
    run = read_run(run_dir)
    assert run.table.meta["shadow"] == ["correct"]
    assert run.eval["after"]["greedy"]["success_rate"] == 0.5
    assert any("'gone'" in n for n in run.notes)
    distinct = run.table["completions/distinct_frac"]
    assert distinct[1] == 0.75 and np.isnan(distinct[0])


def test_run_directory_falls_back_to_latest_checkpoint(tmp_path):
    for step in (5, 12):
        ckpt = tmp_path / f"checkpoint-{step}"
        ckpt.mkdir()
        (ckpt / "trainer_state.json").write_text(
            json.dumps({"log_history": _records(step)}), encoding="utf-8"
        )
    assert len(read_run(tmp_path).table) == 12


@pytest.mark.parametrize(
    "content, name, message",
    [
        (None, "missing.json", "no such file"),
        ("", "metrics.jsonl", "empty"),
        ('{"model": "x", "epochs": 3}', "config.json", "not a TRL trainer state"),
        ("[1, 2, 3]", "list.json", "expected a trainer_state.json"),
        (
            '{"log_history": [{"step": 1, "loss": 0.3}, {"step": 2, "loss": 0.2}]}',
            "trainer_state.json",
            "no reward metric",
        ),
        ("hello\nworld\n", "notes.txt", "no per-step metric record"),
        ('{"log_history": [{"ste', "trainer_state.json", "no complete record"),
    ],
)
def test_bad_input_says_what_was_found(tmp_path, content, name, message):
    path = tmp_path / name
    if content is not None:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(UserError, match=message):
        read_run(path)


def test_no_reward_message_lists_found_metrics(tmp_path):
    path = tmp_path / "trainer_state.json"
    path.write_text(
        json.dumps({"log_history": [{"step": 1, "loss": 0.3, "grad_norm": 1.0}]}), encoding="utf-8"
    )
    with pytest.raises(UserError) as err:
        read_run(path)
    assert "found: grad_norm, loss" in str(err.value)


def test_directory_without_a_log(tmp_path):
    (tmp_path / "notes.md").write_text("x", encoding="utf-8")
    with pytest.raises(UserError, match="no training log in this directory.*notes.md"):
        read_run(tmp_path)
