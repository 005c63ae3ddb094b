"""Resuming a run: which options may change on the way (the run directory and checkpoint are decided by
`agentgrpo.plan`, which also reloads the run's own plan).

A resumed run restores the optimizer, the scheduler, the data order and the trainer state from its
checkpoint, so an option that shaped those cannot silently change: it is refused, naming the option. The
options below only say how long to go on, what to log and save, and what to check; they are honoured.
"""

from __future__ import annotations

import math

from agentgrpo.errors import ConfigError

RESUMABLE = frozenset(
    {
        "max_steps",
        "num_train_epochs",
        "save_steps",
        "save_strategy",
        "save_total_limit",
        "save_only_model",
        "logging_steps",
        "report_to",
        "disable_tqdm",
        "log_level",
        "doctor_every",
        "stop_on",
        "on_failure",
        "heal_max",
        "heal_rewards",
        "resume",
        "resume_from_checkpoint",
        "eval_before",
        "eval_after",
        "eval_size",
        "eval_modes",
        "eval_batch_size",
        "run_name",
        "runs_dir",
        "output_dir",
        "save_merged",
        "strict_rewards",
        "sft",
        "push_to_hub",
        "hub_model_id",
    }
)


def check_changes(saved: dict, new: dict) -> None:
    """Refuse an option changed since the run began when the checkpoint would override it (a GRPOConfig
    field missing on one side has TRL's default there)."""
    from agentgrpo.config import _grpo_fields, trl_default

    grpo = _grpo_fields()

    def value_in(config: dict, key: str):
        return config[key] if key in config else (trl_default(key) if key in grpo else None)

    problems = []
    for key in sorted((set(saved) | set(new)) - RESUMABLE):
        old, value = value_in(saved, key), value_in(new, key)
        if not same(old, value):
            problems.append(
                f"{key}: {old!r} when the run began, {value!r} now; a resumed run restores the "
                f"optimizer, scheduler and data order from its checkpoint, so this change would not "
                f"take effect. Drop the override, or start a new run (--run_name NEW, "
                f"--resume_from_checkpoint PATH to start from a checkpoint)."
            )
    if problems:
        raise ConfigError(problems)


def same(a, b) -> bool:
    """Equal as recorded in YAML (1 == 1.0; lists and tuples alike).

    >>> same(1, 1.0), same([1, 2], (1, 2)), same(3e-4, 1e-3), same(None, None)
    (True, True, False, True)
    """
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b or a == b and type(a) is type(b)
    if isinstance(a, int | float) and isinstance(b, int | float):
        return math.isclose(a, b, rel_tol=1e-12, abs_tol=0.0)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return set(a) == set(b) and all(same(a[k], b[k]) for k in a)
    return a == b
