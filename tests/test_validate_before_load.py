"""`validate` catches, before any model loads and all at once, what used to crash after the load or train
silently wrong (issue 8)."""

from __future__ import annotations

import importlib.util

import pytest

from agentgrpo.cli import main
from agentgrpo.errors import ConfigError
from agentgrpo.plan import resolve_plan

BASE = {"model": "tiny", "max_steps": 5}


def problems(data, deep=False):
    with pytest.raises(ConfigError) as info:
        resolve_plan({**BASE, **data}, cuda_available=False, deep=deep)
    return info.value.problems


@pytest.fixture
def no_model_loads(monkeypatch):
    import transformers

    def boom(*a, **k):
        raise AssertionError("a model was loaded before the config was checked")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", boom)


def test_every_crash_after_load_case_is_reported_in_one_validate(tmp_path, capsys, no_model_loads, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    path = tmp_path / "bad.yaml"
    path.write_text(
        "model: some-org/not-cached-model\nmax_steps: 5\nlearning_rate: -1.0e-5\nloss_type: foo\n"
        "temperature: -1\nreport_to: wandb\noutput_dir: " + str(tmp_path / "out") + "\n"
    )
    assert main(["validate", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    fields = [line.split(":")[0].strip(" -") for line in err.splitlines()[1:] if line.startswith("  - ")]
    expected = ["learning_rate", "temperature", "loss_type", "model"]
    if importlib.util.find_spec("wandb") is None:
        expected.append("report_to")
    assert sorted(fields) == sorted(expected), err
    assert "HF_HUB_OFFLINE" in err and "hf download some-org/not-cached-model" in err
    assert "Available: bnpo, cispo, dapo" in err
    assert not (tmp_path / "out").exists()  # output_dir is accepted (the run directory), nothing created yet


def test_output_dir_is_the_run_directory():
    cfg = resolve_plan({**BASE, "output_dir": "/tmp/somewhere/run1"}, cuda_available=False)
    assert str(cfg.run_dir_path()) == "/tmp/somewhere/run1" and "output_dir" not in cfg.grpo
    (msg,) = problems({"output_dir": "/tmp/x", "run_name": "y"})
    assert msg.startswith("output_dir: given together with run_name")


def test_an_empty_config_does_not_start_a_run_on_defaults(tmp_path, capsys):
    path = tmp_path / "empty.yaml"
    path.write_text("")
    assert main(["train", "--config", str(path), "--runs_dir", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err
    assert "model: not set" in err and "max_steps: not set" in err and "3 epochs" in err
    assert not (tmp_path / "runs").exists()


def test_silently_wrong_rewards_are_refused():
    msgs = problems({"rewards": [{"name": "correct_answer", "weight": float("nan")}]})
    assert msgs == ["rewards[0] (correct_answer): weight must be a finite number, got nan"]
    (msg,) = problems({"rewards": ["correct_answer", "correct_answer"]})
    assert "'correct_answer' appears twice" in msg and "alias" in msg
    (msg,) = problems({"rewards": [{"name": "numeric_answer", "params": {"tol": 0.1}}]})
    assert "unknown parameter 'tol' of reward 'numeric_answer'" in msg and "rel_tol" in msg


def test_a_single_name_where_a_list_is_expected_is_a_one_item_list():
    cfg = resolve_plan(
        None,
        ["--model", "tiny", "--max_steps", "5", "--rewards", "correct_answer", "--stop_on", "collapse"],
        cuda_available=False,
    )
    assert cfg.run.rewards == ["correct_answer"] and cfg.run.stop_on == ["collapse"]
    assert cfg.grpo["report_to"] == "none"  # a field that takes a string keeps it


def test_ranges_trl_only_checks_after_the_load():
    msgs = problems({"doctor_every": -3, "max_steps": 0})
    assert {m.split(":")[0] for m in msgs} == {"doctor_every", "max_steps"}


def test_stop_on_accepts_every_mode_the_doctor_reports():
    from agentgrpo.doctor import detectors

    names = list(detectors.NAMES) + ["kl", "length", "tools", "kl_blowup", "length_gaming", "tool_misuse"]
    cfg = resolve_plan({**BASE, "stop_on": names}, cuda_available=False)
    assert cfg.run.stop_on == names
    (msg,) = problems({"stop_on": ["colapse"]})
    assert "Did you mean 'collapse'" in msg


def test_config_yaml_keeps_integers():
    cfg = resolve_plan({**BASE, "logging_steps": 1}, cuda_available=False)
    assert cfg.to_dict()["logging_steps"] == 1 and isinstance(cfg.to_dict()["logging_steps"], int)


def test_trl_defaults_are_read_from_grpoconfig():
    import dataclasses

    from trl import GRPOConfig

    cfg = resolve_plan(BASE, cuda_available=False)
    defaults = {f.name: f.default for f in dataclasses.fields(GRPOConfig)}
    for name in ("temperature", "max_completion_length", "num_generations", "beta", "loss_type"):
        assert cfg.setting(name) == defaults[name]


def test_the_real_grpoconfig_is_built_without_deprecation_noise():
    import warnings

    import trl  # noqa: F401 - imported first: warnings at import time are not the GRPOConfig's

    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        args = resolve_plan(BASE, cuda_available=False).grpo_config  # the plan builds the one GRPOConfig
    assert args.activation_checkpointing is True and args.logging_steps == 1
