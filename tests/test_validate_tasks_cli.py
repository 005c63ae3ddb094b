"""`agentgrpo validate TASK` / `--all` and `agentgrpo ls` over every built-in task (offline)."""

from __future__ import annotations

import re

from agentgrpo.cli import main
from agentgrpo.tasks import get_task, task_names


def test_validate_one_task_checks_gold_and_audit(capsys):
    assert main(["validate", "wordle"]) == 0
    out = capsys.readouterr().out
    assert "wordle v1: OK" in out and "verifier: OK" in out and "reward audit: PASS" in out


def test_validate_a_hub_task_offline_names_the_shipped_one(capsys):
    assert main(["validate", "function-calling-hub"]) == 2
    err = capsys.readouterr().err
    assert "HF_HUB_OFFLINE" in err and "use task 'function-calling'" in err


def test_validate_task_refuses_config_options_and_unknown_names(capsys):
    assert main(["validate", "wordle", "--max_steps", "2"]) == 2
    assert "takes no config options (--max_steps 2)" in capsys.readouterr().err
    assert main(["validate", "wordel"]) == 2
    assert "Did you mean 'wordle'" in capsys.readouterr().err


def test_validate_all_checks_every_builtin(capsys):
    assert main(["validate", "--all"]) == 0
    out = capsys.readouterr().out
    offline = {"coding-mbpp", "function-calling-hub"}  # their data needs the Hub
    available = [name for name in task_names() if name not in offline]
    assert {"calculator", "calculator-hard", "coding", "wordle", "reasoning", "function-calling"} <= set(available)
    for name in available:
        assert re.search(rf"^{re.escape(name)} v\d+: OK", out, re.MULTILINE), name
    assert "coding-mbpp: UNAVAILABLE" in out and "function-calling-hub: UNAVAILABLE" in out
    assert f"{len(available)} tasks OK, 0 failed, 2 unavailable here" in out


def test_ls_lists_every_task_with_one_line(capsys):
    assert main(["ls", "tasks"]) == 0
    lines = capsys.readouterr().out.splitlines()[1:]
    assert [line.split()[0] for line in lines] == task_names()
    for line, name in zip(lines, task_names()):
        assert get_task(name).description in line
