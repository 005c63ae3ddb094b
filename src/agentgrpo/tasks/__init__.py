"""Built-in agent tasks, looked up by name, or your own `Task` as ``"path/to/file.py:TASK"`` or
``"package.module:TASK"``. A plain dataset with reward functions needs no Task: see `tasks.dataset`."""

from __future__ import annotations

from agentgrpo.errors import UserError, unknown_name
from agentgrpo.tasks.base import Task

_BUILTIN = {
    "calculator": "agentgrpo.tasks.calculator:TASK",
    "calculator-hard": "agentgrpo.tasks.calculator:HARD_TASK",
    "coding": "agentgrpo.tasks.coding:TASK",
    "coding-mbpp": "agentgrpo.tasks.coding:MBPP_TASK",
}


def task_names() -> list[str]:
    return sorted(_BUILTIN)


def get_task(name: str) -> Task:
    """The task called ``name``: a built-in, ``"file.py:ATTR"`` or ``"package.module:ATTR"`` naming a `Task`."""
    from agentgrpo.imports import is_reference, load_object

    if not isinstance(name, str):
        raise UserError(f"task: expected a name or 'file.py:TASK', got {type(name).__name__} {name!r}")
    target = _BUILTIN.get(name)
    if target is None:
        if not is_reference(name):
            raise unknown_name("task", name, _BUILTIN) from None
        target = name
    task = load_object(target, "task")
    if not isinstance(task, Task):
        raise UserError(f"task {name!r}: {target} is a {type(task).__name__}, not an agentgrpo Task "
                        "(see docs/tasks.md), or use dataset_name + rewards for a plain dataset.")
    return task


__all__ = ["Task", "get_task", "task_names"]
