"""Bad config input gets one clear message per problem, all at once, before any model is loaded."""

from __future__ import annotations

import pytest

from agentgrpo.commands._common import config_path
from agentgrpo.errors import ConfigError
from agentgrpo.plan import resolve_plan

ESSENTIALS = ["--model", "tiny", "--max_steps", "5"]


def problems(overrides, path=None, cuda=False):
    with pytest.raises(ConfigError) as info:
        resolve_plan(path, [*ESSENTIALS, *overrides] if path is None else overrides, cuda_available=cuda)
    return info.value.problems


def test_demo_config_is_valid():
    from agentgrpo.commands._common import config_path

    cfg = resolve_plan(config_path("demo"), [], cuda_available=False)
    assert cfg.run.task == "calculator" and cfg.grpo["num_generations"] == 8
    assert cfg.grpo["use_cpu"] is True and cfg.grpo["bf16"] is False


def test_unknown_key_suggests_the_close_one():
    (msg,) = problems(["--num_generation", "8"])
    assert msg.startswith("num_generation: unknown option") and "Did you mean 'num_generations'" in msg


def test_wrong_types_name_the_field():
    msgs = problems(["--learning_rate", "fast", "--max_steps", "1.5", "--sft", "maybe"])
    assert any(m.startswith("learning_rate: expected float") for m in msgs)
    assert any(m.startswith("max_steps: expected int") for m in msgs)
    assert any(m.startswith("sft: expected true or false") for m in msgs)


def test_num_generations_must_divide_generation_batch():
    (msg,) = problems(["--num_generations", "3", "--per_device_train_batch_size", "8"])
    assert "num_generations: 3 does not divide the generation batch of 8" in msg and "multiple of 3" in msg


def test_bf16_on_cpu_only_machine():
    (msg,) = problems(["--bf16", "true"], cuda=False)
    assert msg.startswith("bf16: true needs a CUDA GPU") and "bf16: false" in msg
    resolve_plan(None, [*ESSENTIALS, "--bf16", "true", "--use_cpu", "false"], cuda_available=True)  # fine, GPU


def test_unknown_task_and_reward_say_did_you_mean():
    (msg,) = problems(["--task", "calculater"])
    assert "Did you mean 'calculator'" in msg
    (msg,) = problems(["--rewards", "[correct_answr]"])
    assert "Did you mean 'correct_answer'" in msg


def test_reward_needing_a_missing_column(tmp_path):
    module = tmp_path / "my_rewards.py"
    module.write_text("def needs_solution(completions, solution, **kw):\n    return [0.0] * len(completions)\n")
    import sys

    sys.path.insert(0, str(tmp_path))
    try:
        (msg,) = problems(["--rewards", "[my_rewards:needs_solution]"])
    finally:
        sys.path.remove(str(tmp_path))
    assert "needs dataset column(s) ['solution']" in msg and "calculator" in msg


def test_all_problems_reported_at_once(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("task: calculator\nmodel: tiny\nmax_steps: 4\nnum_generatons: 8\nlearning_rate: abc\nbf16: true\n"
                    "stop_on: [colapse]\n")
    msgs = problems([], path=path)
    assert len(msgs) == 4
    assert [m.split(":")[0] for m in msgs] == ["num_generatons", "learning_rate", "bf16", "stop_on"]


def test_config_errors_come_before_any_model_load(monkeypatch):
    import transformers

    def boom(*a, **k):
        raise AssertionError("a model was loaded before the config was checked")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", boom)
    from agentgrpo.cli import main

    assert main(["train", "--config", "demo", "--num_generations", "3", "--bf16", "true"]) == 2


def test_missing_config_file():
    (msg,) = problems([], path="no/such/config.yaml")
    assert "does not exist" in msg


def test_real_model_config_is_valid_on_a_gpu_machine_and_refused_on_cpu():
    import importlib.util

    from agentgrpo.commands._common import config_path

    if importlib.util.find_spec("trackio") is None:  # the config reports to trackio: refused when it is missing
        (msg,) = problems([], path=config_path("qwen2.5-0.5b-1gpu"), cuda=True)
        assert msg.startswith("report_to: TrackioCallback cannot start") and "pip install trackio" in msg
        return
    cfg = resolve_plan(config_path("qwen2.5-0.5b-1gpu"), [], cuda_available=True)
    assert cfg.run.model == "Qwen/Qwen2.5-0.5B-Instruct" and cfg.grpo["use_vllm"] and cfg.grpo["bf16"]
    msgs = problems([], path=config_path("qwen2.5-0.5b-1gpu"), cuda=False)
    assert {m.split(":")[0] for m in msgs} - {"report_to"} == {"bf16", "use_vllm"}


def test_hub_ids_and_directories_resolve_to_the_same_string_path(tmp_path, calculator):
    from agentgrpo.errors import UserError
    from agentgrpo.training.models import resolve_model

    assert resolve_model("Qwen/Qwen2.5-0.5B-Instruct", calculator) == "Qwen/Qwen2.5-0.5B-Instruct"
    (tmp_path / "config.json").write_text("{}")
    assert resolve_model(str(tmp_path), calculator) == str(tmp_path)
    with pytest.raises(UserError, match="without config.json"):
        resolve_model(str(tmp_path.parent), calculator)


def test_output_dir_flag_with_a_config_that_leaves_run_name_null(tmp_path):
    """The shipped demo has `run_name: null`; --output_dir on top of it is the run directory, not a clash."""
    cfg = resolve_plan(config_path("demo"), ["--output_dir", str(tmp_path / "mine")], cuda_available=False)
    assert cfg.run.output_dir == str(tmp_path / "mine")
    with pytest.raises(ConfigError, match="output_dir: given together with run_name"):
        resolve_plan(config_path("demo"), ["--output_dir", "x", "--run_name", "y"], cuda_available=False)
