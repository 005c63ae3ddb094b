"""Turn a config's `rewards` list into TRL reward functions and weights.

A spec is a name or ``{name, weight, params}``. Names are looked up in the task's own rewards first,
then in `agentgrpo.rewards`, then as ``"module:attr"``. Weight 0 makes a shadow reward: TRL computes and
logs it (``rewards/<name>/mean``) but it carries no weight in the advantage.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass

from agentgrpo.errors import UserError, unknown_name
from agentgrpo.tasks.base import Task

# Keyword arguments TRL itself passes to every reward function (not dataset columns).
TRL_REWARD_KWARGS = {"completions", "prompts", "completion_ids", "trainer_state", "log_metric", "log_extra",
                     "environments"}


@dataclass(frozen=True)
class RewardSpec:
    name: str
    weight: float = 1.0
    params: dict | None = None

    @property
    def shadow(self) -> bool:
        return self.weight == 0


def normalize_specs(specs: list | None, task: Task) -> list[RewardSpec]:
    """Specs as `RewardSpec`s; ``None`` means the task's default rewards."""
    out = []
    for spec in task.default_rewards if specs is None else specs:
        if isinstance(spec, str):
            out.append(RewardSpec(spec))
        elif isinstance(spec, dict) and isinstance(spec.get("name"), str):
            unknown = set(spec) - {"name", "weight", "params"}
            if unknown:
                raise UserError(f"rewards: entry {spec!r} has unknown keys {sorted(unknown)}; "
                                "use name, weight, params.")
            out.append(RewardSpec(spec["name"], float(spec.get("weight", 1.0)), spec.get("params")))
        else:
            raise UserError(f"rewards: {spec!r} is not a name or a {{name, weight, params}} mapping.")
    return out


def lookup(name: str, task: Task, params: dict | None = None) -> Callable:
    """The reward function called ``name`` (task's own, the library's, or ``module:attr``)."""
    if name in task.reward_funcs:
        if params:
            raise UserError(f"rewards: {name!r} is a task reward and takes no params (got {params}).")
        return task.reward_funcs[name]
    if ":" in name:
        return _import(name)
    try:
        from agentgrpo.rewards import get_reward
    except ImportError:  # the library is optional for tasks that bring their own rewards
        get_reward = None
    if get_reward is not None:
        try:
            return get_reward(name, **(params or {}))
        except UserError as exc:
            if ":" in name:
                raise
            available = [*task.reward_funcs, *_library_names()]
            raise unknown_name("reward", name, available) from exc
    raise unknown_name("reward", name, task.reward_funcs)


def _import(target: str) -> Callable:
    import importlib

    module_name, _, attr = target.partition(":")
    try:
        func = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise UserError(f"rewards: cannot import {target!r} ({exc}); use 'package.module:function'.") from exc
    if not callable(func):
        raise UserError(f"rewards: {target!r} is not callable.")
    return func


def _library_names() -> list[str]:
    try:
        from agentgrpo.rewards import REWARDS
    except ImportError:
        return []
    return list(REWARDS)


def required_columns(func: Callable) -> set[str]:
    """Dataset columns a reward function needs: its named parameters without defaults, beyond TRL's own."""
    try:
        params = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return set()
    return {p.name for p in params
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.default is p.empty
            and p.name not in TRL_REWARD_KWARGS}


def check_reward_specs(specs: list | None, task: Task) -> list[str]:
    """All problems with a rewards list, as 'rewards: ...' strings (empty when fine)."""
    try:
        normalized = normalize_specs(specs, task)
    except (UserError, TypeError, ValueError) as exc:
        return [f"rewards: {exc}"]
    problems = []
    for spec in normalized:
        try:
            func = lookup(spec.name, task, spec.params)
        except UserError as exc:
            problems.append(f"rewards: {exc}")
            continue
        missing = required_columns(func) - set(task.columns)
        if missing:
            problems.append(f"rewards: {spec.name!r} needs dataset column(s) {sorted(missing)}, which task "
                            f"{task.name!r} does not provide (it has {list(task.columns)}); pick a reward "
                            f"that fits the task or add the column.")
    if normalized and all(s.shadow for s in normalized):
        problems.append("rewards: every reward has weight 0 (shadow), so nothing is trained on; "
                        "give at least one a positive weight.")
    return problems


def make_reward_funcs(specs: list | None, task: Task, strict: bool = False) -> tuple[list[Callable], list[float]]:
    """Guarded reward functions (named as in the spec, failures counted and logged) and their weights.

    Built as one `RewardSet`, so shadow rewards (weight 0) stay None where every trained reward is None
    and never turn an unscorable row into a trained zero.
    """
    from agentgrpo.rewards import RewardSet

    named = [(s.name, s.weight, lookup(s.name, task, s.params)) for s in normalize_specs(specs, task)]
    reward_set = RewardSet.from_functions(named, strict=strict)
    return reward_set.funcs, reward_set.weights
