"""What a preflight command checks: a task name (or ``module:ATTR``) or a config, resolved to one `Target`.

    target = resolve("calculator")                 # a task with its default rewards
    target = resolve("demo", ["--num_generations", "4"])   # a shipped config (or a YAML path) + overrides

Rewards come from the config's ``rewards`` list (or the task's defaults), or from ``reward_specs`` given
on the command line. A spec names a task reward, a library reward, ``package.module:function`` or
``path/to/file.py:function``.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field

from agentgrpo.config import RunConfig
from agentgrpo.errors import ConfigError, UserError


@dataclass
class Target:
    task: object  # agentgrpo Task
    rewards: object  # agentgrpo RewardSet (trained rewards first, then weight-0 shadows)
    model: str = RunConfig.model
    grpo: dict = field(default_factory=dict)
    train_size: int | None = None
    config: object | None = None  # the ResolvedConfig, when the target was a config
    source: str = ""

    def __post_init__(self):
        self.grpo = {**grpo_settings(), **self.grpo}  # what the config leaves out: TRL's own defaults

    @property
    def seed(self) -> int:
        return int(self.grpo["seed"])

    @property
    def num_generations(self) -> int:
        return int(self.grpo["num_generations"])

    @property
    def tool_timeout(self) -> float:
        """Seconds a tool call may take: the config's ``tool_timeout``, else the option's default."""
        from agentgrpo.timeouts import DEFAULT_TOOL_TIMEOUT

        return float(self.config.run.tool_timeout) if self.config is not None else DEFAULT_TOOL_TIMEOUT


def resolve(name: str, overrides: list[str] | None = None, reward_specs: list[str] | None = None,
            model: str | None = None) -> Target:
    """The task (and config) ``name`` refers to, with its rewards built; every problem reported at once.
    ``model`` replaces the config's (or the default) model to sample."""
    from agentgrpo.config import config_path
    from agentgrpo.tasks import get_task, task_names

    if _is_task(name, task_names()):
        if overrides:
            raise UserError(
                f"{name!r} is a task, not a config; option overrides ({' '.join(overrides)}) need a "
                "config: pass a YAML file or a shipped config name instead"
            )
        task = get_task(name)
        specs = parse_reward_specs(reward_specs) if reward_specs else task.default_rewards
        return Target(task=task, rewards=build_reward_set(specs, task), grpo=grpo_settings(), source=f"task {name}",
                      **({"model": model} if model else {}))
    from agentgrpo.plan import resolve_plan

    path = config_path(name)
    plan = resolve_plan(path, [*(overrides or []), *(["--model", model] if model else [])])
    if reward_specs:  # rewards given here replace the plan's
        rewards = build_reward_set(parse_reward_specs(reward_specs), plan.task, strict=False)
    else:
        rewards = plan.rewards.fresh()
    return from_config(plan, plan.task, rewards, f"config {path}")


def grpo_settings(plan=None) -> dict:
    """The GRPOConfig settings the samplers read (`agentgrpo.plan.SAMPLING`): the plan's, or for a bare task
    TRL's own defaults (read from GRPOConfig, never retyped)."""
    from agentgrpo.plan import SAMPLING

    if plan is None:
        from agentgrpo.config import trl_default

        return {k: trl_default(k) for k in SAMPLING}
    return plan.sampling


def from_config(plan, task, rewards, source: str) -> Target:
    return Target(
        task=task,
        rewards=rewards,
        model=plan.run.model,
        grpo=grpo_settings(plan),
        train_size=plan.run.train_size,
        config=plan,
        source=source,
    )


def _is_task(name: str, builtin: list[str]) -> bool:
    from agentgrpo.tasks import is_builtin

    if name in builtin or is_builtin(name):
        return True
    if ":" in name and not name.endswith((".yaml", ".yml")):
        module = name.split(":", 1)[0]
        return not module.endswith(".py") and importlib.util.find_spec(module.split(".")[0]) is not None
    return False


def parse_reward_specs(items: list[str]) -> list[dict]:
    """``NAME`` or ``NAME=WEIGHT`` strings (the ``--reward`` flag) as ``{name, weight}`` specs.

    >>> parse_reward_specs(["correct_answer", "my_rewards.py:score=0.5", "well_formed=0"])
    [{'name': 'correct_answer', 'weight': 1.0}, {'name': 'my_rewards.py:score', 'weight': 0.5}, \
{'name': 'well_formed', 'weight': 0.0}]
    """
    specs, problems = [], []
    for item in items:
        name, eq, weight = item.rpartition("=") if "=" in item else (item, "", "1")
        try:
            specs.append({"name": name, "weight": float(weight)})
        except ValueError:
            problems.append(f"--reward {item!r}: the weight after '=' must be a number, e.g. {name}=0.5")
    if problems:
        raise ConfigError(problems)
    return specs


def build_reward_set(specs: list, task, strict: bool = False):
    """A `RewardSet` for ``specs`` (names or ``{name, weight, params}``), built as training builds it."""
    from agentgrpo.training import reward_specs

    return reward_specs.build_task_rewards(specs, task, strict=strict)
