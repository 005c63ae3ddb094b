"""A task's SFT demonstrations as chat rows (messages + the tools' JSON schemas): what SFT trains on and
what the tiny tokenizer is fitted to."""

from __future__ import annotations

import random

from agentgrpo.tasks.base import Task


def demonstrations(task: Task, n: int, tool_fraction: float, seed: int) -> list[dict]:
    """``n`` SFT examples (messages + the tools' JSON schemas), a ``tool_fraction`` of them using the tool."""
    from transformers.utils import get_json_schema

    rng = random.Random(seed)
    schemas = [get_json_schema(tool) for tool in task.tools()]
    rows = task.train_problems(n, seed=seed + 1)
    return [{**task.demonstration(row, rng.random() < tool_fraction), "tools": schemas} for row in rows]
