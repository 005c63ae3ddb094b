"""Trackers (trackio, wandb) see the run under its own name and an agentgrpo project, not TRL's defaults."""

from __future__ import annotations

from agentgrpo.plan import resolve_plan
from agentgrpo.training.grpo import build_grpo_trainer


def test_tracker_run_name_and_project(tiny_sft_dir, tmp_path, calculator):
    run_dir = tmp_path / "my-run"
    run_dir.mkdir()
    cfg = resolve_plan(
        None,
        ["--model", "tiny", "--max_steps", "2", "--per_device_train_batch_size", "8", "--save_strategy", "no",
         "--output_dir", str(run_dir)],
        cuda_available=False,
    )
    args = build_grpo_trainer(cfg, str(tiny_sft_dir)).args
    assert args.run_name == "my-run" and args.project == "agentgrpo-calculator"
    cfg = resolve_plan(
        None,
        [
            "--model",
            "tiny",
            "--max_steps",
            "2",
            "--per_device_train_batch_size",
            "8",
            "--save_strategy",
            "no",
            "--project",
            "mine",
            "--output_dir",
            str(run_dir),
        ],
        cuda_available=False,
    )
    assert build_grpo_trainer(cfg, str(tiny_sft_dir)).args.project == "mine"
