"""Build a TRL reward function (``(completions, **kwargs) -> list[float | None]``) from a per-sample score."""

from __future__ import annotations

import inspect
from collections.abc import Callable

from agentgrpo.errors import ConfigError, UserError


class RewardInputError(UserError, ValueError):
    """A reward lacks an input it needs (a dataset column, completion_ids): a config problem, so it stops
    the run with this message instead of scoring every sample None."""


def per_sample(
    name: str,
    score: Callable,
    columns: dict[str, str] | None = None,
    max_reward: float | None = 1.0,
    doc: str = "",
) -> Callable:
    """A reward named ``name`` that calls ``score(completion, **row)`` for each completion.

    ``columns`` maps score keyword -> dataset column; TRL passes each column as a list, one value per
    completion. The function's signature names those columns as required keywords, and ``max_reward`` is
    the best score it can give (None when unbounded), which "the gold answer scores the maximum" checks use.
    """
    columns = dict(columns or {})

    def reward(completions, **kwargs):
        rows = {}
        for arg, column in columns.items():
            if column not in kwargs:
                raise RewardInputError(
                    f"reward {name!r} needs the dataset column {column!r}, which the batch lacks "
                    f"(it has: {', '.join(sorted(kwargs)) or 'none'}); add the column or pass "
                    f"params {{'{arg}_column': ...}} naming the one you have"
                )
            rows[arg] = kwargs[column]
        return [score(c, **{a: v[i] for a, v in rows.items()}) for i, c in enumerate(completions)]

    return finish(reward, name, doc or score.__doc__, max_reward, required=tuple(columns.values()))


def finish(
    func: Callable, name: str, doc: str, max_reward: float | None = 1.0, required: tuple[str, ...] = ()
) -> Callable:
    """Name a reward function, and give it a signature naming the dataset columns it requires."""
    func.__name__ = func.__qualname__ = name
    func.__doc__ = doc
    func.max_reward = max_reward
    params = [inspect.Parameter("completions", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    params += [inspect.Parameter(c, inspect.Parameter.KEYWORD_ONLY) for c in dict.fromkeys(required)]
    params.append(inspect.Parameter("kwargs", inspect.Parameter.VAR_KEYWORD))
    func.__signature__ = inspect.Signature(params)
    return func


def check_params(name: str, **checks: tuple[bool, str]) -> None:
    """Raise one `ConfigError` listing every parameter whose check failed (``param=(ok, rule)``)."""
    problems = [f"reward {name!r} param {param}: {rule}" for param, (ok, rule) in checks.items() if not ok]
    if problems:
        raise ConfigError(problems)


def positive(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value > 0
