"""Built-in agent tasks, looked up by name, or your own `Task` as ``"path/to/file.py:TASK"`` or
``"package.module:TASK"``. A plain dataset with reward functions needs no Task: see `tasks.dataset`."""

from __future__ import annotations

import re

from agentgrpo.errors import UserError, unknown_name
from agentgrpo.tasks.base import Task

_BUILTIN = {
    "calculator": "agentgrpo.tasks.calculator:TASK",
    "calculator-hard": "agentgrpo.tasks.calculator:HARD_TASK",
    "coding": "agentgrpo.tasks.coding:TASK",
    "coding-easy": "agentgrpo.tasks.coding_easy:TASK",
    "coding-mbpp": "agentgrpo.tasks.coding:MBPP_TASK",
    "wordle": "agentgrpo.tasks.wordle:TASK",
    "wordle-easy": "agentgrpo.tasks.wordle:EASY_TASK",
    "function-calling": "agentgrpo.tasks.function_calling:TASK",
    "function-calling-easy": "agentgrpo.tasks.function_calling_easy:TASK",
    "function-calling-hub": "agentgrpo.tasks.function_calling:HUB_TASK",
    "reasoning": "agentgrpo.tasks.reasoning:TASK",
    "reasoning-easy": "agentgrpo.tasks.reasoning:EASY_TASK",
}
# built-ins that take options in the name, e.g. ``reasoning[difficulty=2]``: name -> factory(options text)
_WITH_OPTIONS = {"reasoning": "agentgrpo.tasks.reasoning:task_with_options"}
_OPTIONS = re.compile(r"([\w-]+)\[(.*)\]")


def task_names() -> list[str]:
    return sorted(_BUILTIN)


def is_builtin(name: str) -> bool:
    """Whether ``name`` is a built-in task, with options where it takes them (``reasoning[difficulty=2]``)."""
    match = _OPTIONS.fullmatch(name.strip()) if isinstance(name, str) else None
    return name in _BUILTIN or bool(match and match.group(1) in _WITH_OPTIONS)


def get_task(name: str) -> Task:
    """The task called ``name``: a built-in, ``"file.py:ATTR"`` or ``"package.module:ATTR"`` naming a `Task`."""
    from agentgrpo.imports import is_reference, load_object

    if not isinstance(name, str):
        raise UserError(f"task: expected a name or 'file.py:TASK', got {type(name).__name__} {name!r}")
    with_options = _OPTIONS.fullmatch(name.strip())
    if with_options and with_options.group(1) in _WITH_OPTIONS:
        return load_object(_WITH_OPTIONS[with_options.group(1)], "task")(with_options.group(2))
    if with_options and with_options.group(1) in _BUILTIN:
        raise UserError(f"task {name!r}: {with_options.group(1)} takes no options in [...]; tasks that do: "
                        f"{', '.join(sorted(_WITH_OPTIONS))}")
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


__all__ = ["Task", "get_task", "is_builtin", "task_names"]
