"""The checks of ``on_failure``, ``heal_max`` and ``heal_rewards``, before any model loads: a heal needs the
live doctor and a checkpoint to roll back to; each problem names the field and the fix. Run once, by the plan."""

from __future__ import annotations

import math


def check_plan(plan) -> list[str]:
    """Problems of the plan's `HealSettings` (``plan.heal``, made once from the options) with the run."""
    run, heal = plan.run, plan.heal
    problems = []
    if heal.heal_max < 0:
        problems.append(f"heal_max: {heal.heal_max} must be >= 0 (heals at most; 0 = stop at the first failure).")
    if not heal.heals:
        if heal.heal_rewards:
            problems.append("heal_rewards: given, but on_failure is stop, so they are never used; set "
                            "on_failure: heal, or drop heal_rewards.")
        return problems
    if not run.doctor_every:
        problems.append("on_failure: heal needs the live doctor to name failures, but doctor_every is 0; set "
                        "doctor_every: 10 (or on_failure: stop).")
    strategy = str(plan.setting("save_strategy"))
    if strategy.split(".")[-1].lower() != "steps":
        problems.append(f"save_strategy: {strategy!r} with on_failure: heal; a heal rolls back to a checkpoint, so "
                        "set save_strategy: steps and save_steps below max_steps (e.g. save_steps: 10).")
    else:
        problems += _check_save_steps(plan.setting("save_steps"), plan.setting("max_steps"))
    if run.num_processes > 1 or run.target == "accelerate":
        problems.append("on_failure: heal runs in one process for now (target: local, num_processes: 1); with "
                        "several processes use on_failure: stop and resume by hand from the checkpoint before "
                        "the onset.")
    if heal.heal_rewards:
        problems += _check_rewards(plan) + _check_rewards_used(run.stop_on)
    return problems


def _check_rewards_used(stop_on) -> list[str]:
    """heal_rewards are used only by the heal of a mode in `remedies.USES_HEAL_REWARDS` (hacking, length): with
    a ``stop_on`` that names none of them, no heal can ever switch to them. An empty stop_on heals every mode."""
    from agentgrpo.doctor import detectors
    from agentgrpo.heal.remedies import USES_HEAL_REWARDS

    modes = set()
    for mode in stop_on or []:
        try:
            modes.add(detectors.resolve(mode))
        except (ValueError, AttributeError):
            return []  # an unknown mode is reported by check_stop_on
    users = [str(m) for m in USES_HEAL_REWARDS]
    if not modes or modes & set(users):
        return []
    return [f"heal_rewards: given, but stop_on {sorted(modes)} names none of the failures whose heal switches to "
            f"them ({' or '.join(users)}), so they can never be used; add {users[0]} (and/or {users[1]}) to "
            "stop_on, or drop heal_rewards."]


def _check_save_steps(save_steps, max_steps) -> list[str]:
    if not max_steps or max_steps <= 0 or save_steps is None:
        return []
    every = math.ceil(save_steps * max_steps) if save_steps < 1 else save_steps
    if every >= max_steps:
        return [f"save_steps: {save_steps:g} with max_steps {max_steps}: no checkpoint is saved before the run ends, "
                "so a heal has nothing to roll back to; set save_steps well below max_steps (e.g. "
                f"save_steps: {max(1, max_steps // 8)})."]
    return []


def _check_rewards(plan) -> list[str]:
    """heal_rewards build as the rewards do (names, params, weights)."""
    from agentgrpo.errors import ConfigError
    from agentgrpo.training.reward_specs import build_task_rewards

    if plan.task is None:
        return []
    try:
        build_task_rewards(plan.heal.heal_rewards, plan.task, strict=plan.run.strict_rewards)
    except ConfigError as exc:
        return [f"heal_rewards: {p}" for p in exc.problems]
    except Exception as exc:  # noqa: BLE001 - a user's reward spec: say what it was
        return [f"heal_rewards: {type(exc).__name__}: {exc}"]
    return []
