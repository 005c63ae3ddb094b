"""`agentgrpo launch --target accelerate`: the checks before anything starts, and a real 2-process CPU run."""

from __future__ import annotations

import json
import os

import pytest

from agentgrpo.cli import main
from agentgrpo.launch import accelerate_cmd

DEMO = {"num_generations": 8, "per_device_train_batch_size": 32, "use_cpu": True}


def test_checks_name_every_problem_with_its_fix():
    assert accelerate_cmd.check(DEMO, 2, None, gpus=0, vllm_installed=False) == []
    odd = accelerate_cmd.check({**DEMO, "per_device_train_batch_size": 3}, 2, None, gpus=0,
                               vllm_installed=False)
    assert len(odd) == 1 and "num_generations 8 does not divide" in odd[0] and "3 x 2 processes" in odd[0]
    vllm = accelerate_cmd.check({**DEMO, "use_vllm": True}, 1, None, gpus=1, vllm_installed=False)
    assert any("pip install 'agentgrpo[vllm]'" in p for p in vllm)
    assert any("no GPU" in p or "none is visible" in p
               for p in accelerate_cmd.check({**DEMO, "use_vllm": True}, 1, None, gpus=0, vllm_installed=True))
    assert any("2 GPU(s) visible" in p for p in accelerate_cmd.check(DEMO, 4, None, gpus=2, vllm_installed=False))
    assert any("runs on GPUs" in p for p in accelerate_cmd.check(DEMO, 2, "zero2", gpus=0, vllm_installed=False))
    assert any("unknown preset" in p and "zero3" in p
               for p in accelerate_cmd.check(DEMO, 2, "zero4", gpus=1, vllm_installed=False))
    too_many = (os.cpu_count() or 1) + 1
    assert any("cores" in p for p in accelerate_cmd.check(DEMO, too_many, None, gpus=0, vllm_installed=False))


def test_commands_use_trl_presets_or_cpu_processes():
    cpu = accelerate_cmd.command("c.yaml", [], 2, None, gpus=0)
    assert cpu[1:5] == ["-m", "accelerate.commands.launch", "--num_processes", "2"]
    assert "--multi_gpu" in cpu and "--main_process_port" in cpu  # torchrun launcher; gloo via use_cpu
    assert "--cpu" in accelerate_cmd.command("c.yaml", [], 1, None, gpus=0)
    assert cpu[-5:] == ["-m", "agentgrpo.cli", "train", "--config", "c.yaml"]
    gpu = accelerate_cmd.command("c.yaml", [], 8, "zero2", gpus=8)
    preset = gpu[gpu.index("--config_file") + 1]
    assert preset.endswith("accelerate_configs/zero2.yaml") and os.path.exists(preset)


def test_launch_refuses_bad_batches_before_starting(tmp_path, capsys):
    code = main(["launch", "--config", "demo", "--target", "accelerate", "--num_processes", "2",
                 "--per_device_train_batch_size", "3", "--runs_dir", str(tmp_path)])
    assert code == 2 and "does not divide" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def _steps(run_dir):
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.timeout(600)
def test_two_cpu_processes_train_the_demo_like_one(tmp_path):
    common = ["--config", "demo", "--max_steps", "3", "--eval_before", "false", "--eval_after", "false",
              "--per_device_train_batch_size", "8", "--doctor_every", "0", "--save_strategy", "no",
              "--runs_dir", str(tmp_path)]
    assert main(["launch", "--target", "accelerate", "--num_processes", "2", "--run_name", "two", *common]) == 0
    assert main(["launch", "--target", "local", "--run_name", "one", *common]) == 0
    two, one = _steps(tmp_path / "two"), _steps(tmp_path / "one")
    assert [r["step"] for r in two] == [1, 2, 3] == [r["step"] for r in one]
    assert set(two[0]) == set(one[0])  # same metrics, logged once (by the main process)
    # 2 processes x 8 completions per step: twice the tokens of one process
    assert two[-1]["num_tokens"] > 1.5 * one[-1]["num_tokens"]
