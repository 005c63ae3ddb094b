"""The shipped real-model configs of the wordle, reasoning and function-calling tasks load, name their task,
and state expected memory and time with where the numbers come from."""

from __future__ import annotations

import re

import pytest

from agentgrpo.commands._common import shipped_configs
from agentgrpo.plan import resolve_plan

CONFIGS = {"wordle-qwen3-1.7b-1gpu": "wordle", "reasoning-qwen2.5-1.5b-1gpu": "reasoning[difficulty=1]",
           "function-calling-qwen2.5-0.5b-1gpu": "function-calling"}


@pytest.mark.parametrize("name, task", sorted(CONFIGS.items()))
def test_config_loads_and_states_memory_and_time(name, task):
    path = shipped_configs()[name]
    cfg = resolve_plan(path, cuda_available=True)
    assert cfg.task.name == task and cfg.warnings == []
    header = "\n".join(line for line in path.read_text().splitlines() if line.startswith("#"))
    assert "ESTIMATES, not measured" in header
    assert re.search(r"=> ~\d+ GB peak", header) and re.search(r"\d+ steps ~\d+-\d+ min", header)
    assert "params x (4" in header  # the formula: parameters x bytes per parameter
    assert cfg.setting("max_completion_length") == int(re.search(r"max_completion_length: (\d+)",
                                                                 path.read_text()).group(1))
