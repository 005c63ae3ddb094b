"""The built-in rewards by name, and `get_reward` (a built-in, or ``"package.module:attr"`` for your own)."""

from __future__ import annotations

import inspect
from collections.abc import Callable

from agentgrpo.errors import UserError, unknown_name
from agentgrpo.rewards import answer, code, length, tools
from agentgrpo.rewards import format as formats

# name -> factory; ``factory(**params)`` returns a TRL reward function whose ``__name__`` is the name.
REWARDS: dict[str, Callable[..., Callable]] = {
    "exact_answer": answer.exact_answer,
    "numeric_answer": answer.numeric_answer,
    "math_answer": answer.math_answer,
    "tags_format": formats.tags_format,
    "tags_format_strict": formats.tags_format_strict,
    "json_valid": formats.json_valid,
    "json_schema": formats.json_schema,
    "tool_called": tools.tool_called,
    "tool_success": tools.tool_success,
    "tool_call_count": tools.tool_call_count,
    "tool_call_penalty": tools.tool_call_penalty,
    "code_tests_passed": code.code_tests_passed,
    "overlong_penalty": length.overlong_penalty,
    "length_budget": length.length_budget,
    "repetition_penalty": length.repetition_penalty,
}


def get_reward(name: str, **params) -> Callable:
    """The reward function called ``name``, built with ``params``.

    >>> get_reward("numeric_answer", rel_tol=0.01).__name__
    'numeric_answer'
    >>> get_reward("numeric_anwser")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    agentgrpo.errors.UserError: unknown reward 'numeric_anwser'. Did you mean 'numeric_answer' or ...
    """
    if not isinstance(name, str) or not name:
        raise UserError(
            f"a reward name must be a non-empty string, got {name!r}. Available: {', '.join(REWARDS)}"
        )
    factory = REWARDS.get(name)
    if factory is None:
        if ":" in name:
            return _import_reward(name, params)
        raise unknown_name("reward", name, REWARDS)
    _check_params(name, factory, params)
    return factory(**params)


def _check_params(name: str, factory: Callable, params: dict) -> None:
    """Params the factory does not take are named as such (not as an unknown reward).

    >>> _check_params("numeric_answer", answer.numeric_answer, {"tolerance": 0.1})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    agentgrpo.errors.UserError: unknown parameter 'tolerance' of reward 'numeric_answer'. Its params are: ...
    """
    signature = inspect.signature(factory)
    takes = ", ".join(signature.parameters) or "none"
    accepts_any = any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values())
    unknown = [k for k in params if k not in signature.parameters and not accepts_any]
    if unknown:
        label = "parameter" if len(unknown) == 1 else "parameters"
        raise UserError(f"unknown {label} {', '.join(map(repr, unknown))} of reward {name!r}. "
                        f"Its params are: {takes}.")
    try:
        signature.bind(**params)
    except TypeError as exc:
        raise UserError(f"reward {name!r}: {exc}. Its params are: {takes}.") from None


def _import_reward(target: str, params: dict) -> Callable:
    """``"module:attr"`` or ``"file.py:attr"``: the function itself, or, with params, ``attr(**params)``."""
    from agentgrpo.imports import load_object

    obj = load_object(target, "reward")
    func = obj(**params) if params else obj
    if not callable(func):
        raise UserError(
            f"reward {target!r} is a {type(func).__name__}, not a function "
            f"`(completions, **kwargs) -> list[float | None]`."
        )
    return func
