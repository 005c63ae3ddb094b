"""A config's `rewards` list for one task: the task's own rewards first, then the library's.

Parsing (names, ``{name, weight, params, alias}``, weights, duplicates) is `agentgrpo.rewards.combine`'s one
parser; this module only adds the task: its own reward names, and the dataset columns each reward needs.
Weight 0 makes a shadow reward: TRL computes and logs it (``rewards/<name>/mean``), it carries no weight.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

from agentgrpo.errors import UserError, unknown_name
from agentgrpo.rewards.combine import RewardSet, RewardSpec, build_rewards, parse_specs
from agentgrpo.tasks.base import Task

# Keyword arguments TRL itself passes to every reward function (not dataset columns).
TRL_REWARD_KWARGS = {"completions", "prompts", "completion_ids", "trainer_state", "log_metric", "log_extra",
                     "environments"}


def specs_or_default(specs, task: Task):
    return task.default_rewards if specs is None else specs


def resolver(task: Task) -> Callable[[RewardSpec], Callable]:
    """Spec -> function: a task reward by name, else a library reward, ``file.py:fn`` or ``module:fn``."""
    from agentgrpo.imports import is_reference
    from agentgrpo.rewards.registry import REWARDS, get_reward

    def resolve(spec: RewardSpec) -> Callable:
        if spec.name in task.reward_funcs:
            if spec.params:
                raise UserError(f"{spec.name!r} is a task reward and takes no params (got {spec.params}).")
            return task.reward_funcs[spec.name]
        if spec.name not in REWARDS and not is_reference(spec.name):
            raise unknown_name("reward", spec.name, [*task.reward_funcs, *REWARDS])
        return get_reward(spec.name, **spec.params)

    return resolve


def build_task_rewards(specs, task: Task, strict: bool = False) -> RewardSet:
    """The `RewardSet` for ``specs`` (None: the task's defaults); raises `ConfigError` with every problem."""
    return build_rewards(specs_or_default(specs, task), strict=strict, resolve=resolver(task))


def recorded_specs(specs, task: Task, rewards: RewardSet | None = None) -> list[dict]:
    """The specs as written to config.yaml: every field explicit, ``alias`` = the name TRL logs it under
    (``rewards``: the `RewardSet` already built from them)."""
    parsed, _ = parse_specs(specs_or_default(specs, task))
    names = (rewards or build_task_rewards(specs, task)).names
    by_order = sorted(parsed, key=lambda s: s.weight == 0)  # RewardSet puts trained rewards first
    out = []
    for spec, logged in zip(by_order, names, strict=True):
        entry = spec.to_dict()
        if logged != spec.name:
            entry["alias"] = logged
        out.append(entry)
    return out


def required_columns(func: Callable) -> set[str]:
    """Dataset columns a reward function needs: its named parameters without defaults, beyond TRL's own."""
    try:
        params = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return set()
    return {p.name for p in params
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.default is p.empty
            and p.name not in TRL_REWARD_KWARGS}


def check_reward_signatures(rewards: RewardSet, task: Task) -> list[str]:
    """Each reward can be called as TRL calls it, ``f(prompts=..., completions=..., completion_ids=...,
    **dataset columns, trainer_state=..., log_metric=..., log_extra=...)``, and the task has every column it
    asks for; all problems, each naming the reward (a wrong signature is not a missing column)."""
    passed = {"prompts", "completions", "completion_ids", "trainer_state", "log_metric", "log_extra",
              *(["environments"] if task.environment_factory else []), *(c for c in task.columns if c != "prompt")}
    problems = []
    for guarded in rewards.funcs:
        name, func = guarded.__name__, guarded.func
        try:
            signature = inspect.signature(func)
        except (TypeError, ValueError):
            continue
        params = signature.parameters
        takes_all = any(p.kind is p.VAR_KEYWORD for p in params.values())
        named = {n for n, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
        positional_only = [n for n, p in params.items() if p.kind is p.POSITIONAL_ONLY]
        unexpected = sorted(passed - named) if not takes_all else []
        if "completions" not in named and not takes_all or positional_only or unexpected:
            why = ("it has no 'completions' parameter" if "completions" not in named and not takes_all
                   else f"positional-only {positional_only}" if positional_only
                   else f"it does not accept {unexpected} (and has no **kwargs)")
            problems.append(
                f"rewards: {name!r} has the signature {name}{signature}, which TRL cannot call ({why}): TRL "
                f"calls a reward as {name}(prompts=..., completions=..., completion_ids=..., **dataset columns, "
                f"...); write it as def {name}(completions, **kwargs) and read dataset columns by name.")
            continue
        missing = required_columns(func) - set(task.columns)
        if missing:
            problems.append(f"rewards: {name!r} needs dataset column(s) {sorted(missing)}, which task "
                            f"{task.name!r} does not provide (it has {list(task.columns)}); pick a reward "
                            f"that fits the task or add the column.")
    return problems
