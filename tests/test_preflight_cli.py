"""The audit and check commands: help text, exit codes, JSON output and clear errors."""

from __future__ import annotations

import json

import pytest

from agentgrpo.cli import build_parser, main


@pytest.mark.parametrize("command", ["audit", "check"])
def test_help_documents_every_option(command, capsys):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = capsys.readouterr().out
    for option in ("--prompts", "--reward", "--json", "--strict", "--set"):
        assert option in text
    assert ("--threshold" in text) if command == "audit" else ("--k" in text and "--model" in text)
    assert command in build_parser().format_help()


def test_check_command_writes_json_and_rejects_k_below_2(tmp_path, capsys):
    out = tmp_path / "check.json"
    assert main(["check", "demo", "--prompts", "2", "--k", "2", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["k"] == 2 and data["prompts"] == 2 and "verdict" in data
    assert "signal check of config" in capsys.readouterr().out
    assert main(["check", "demo", "--k", "1"]) == 2
    assert "--k: 1 < 2" in capsys.readouterr().err


def test_a_partial_check_exits_non_zero(tmp_path, capsys):
    """A check whose model does not load samples nothing: its partial report must not exit 0 (issue 35)."""
    missing = tmp_path / "no-model"
    missing.mkdir()
    out = tmp_path / "check.json"
    assert main(["check", "calculator", "--model", str(missing), "--prompts", "2", "--k", "2", "--json", str(out)]) == 2
    assert "PARTIAL REPORT" in capsys.readouterr().out
    assert json.loads(out.read_text())["ok"] is None  # the report is still written
    assert main(["check", "calculator", "--model", str(missing), "--strict", "--prompts", "2", "--k", "2"]) == 2


def test_task_target_rejects_config_overrides(capsys):
    assert main(["audit", "calculator", "--set", "temperature=0.5"]) == 2
    assert "is a task, not a config" in capsys.readouterr().err
    assert main(["audit", "demo", "--set", "temperature=0.5", "--prompts", "3"]) == 0


def test_reward_flag_replaces_the_configs_rewards():
    from agentgrpo.preflight.target import resolve

    target = resolve("demo", reward_specs=["correct_answer", "tool_call_count=0"])
    assert target.rewards.names == ["correct_answer", "tool_call_count"]
    assert target.rewards.shadow_names == ["tool_call_count"] and target.num_generations == 8
    assert resolve("demo").rewards.names == ["correct_answer", "well_formed"]
