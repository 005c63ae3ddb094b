"""Built-in agent tasks, looked up by name (or ``"module:attr"`` for your own `Task`)."""

from __future__ import annotations

import importlib

from agentgrpo.errors import UserError, unknown_name
from agentgrpo.tasks.base import Task

_BUILTIN = {
    "calculator": "agentgrpo.tasks.calculator:TASK",
    "coding": "agentgrpo.tasks.coding:TASK",
    "coding-mbpp": "agentgrpo.tasks.coding:MBPP_TASK",
}


def task_names() -> list[str]:
    return sorted(_BUILTIN)


def get_task(name: str) -> Task:
    """The task called ``name``: a built-in, or ``"package.module:ATTR"`` pointing at a `Task`."""
    target = _BUILTIN.get(name)
    if target is None:
        if ":" not in name:
            raise unknown_name("task", name, _BUILTIN)
        target = name
    module_name, attr = target.split(":", 1)
    try:
        task = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise UserError(f"task {name!r}: cannot import {target} ({exc}). Check the module path.") from exc
    if not isinstance(task, Task):
        raise UserError(f"task {name!r}: {target} is a {type(task).__name__}, not an agentgrpo Task.")
    return task


__all__ = ["Task", "get_task", "task_names"]
