"""Length rewards: DAPO's soft over-long penalty, a length budget, and an n-gram repetition penalty.

Length is counted in tokens (the ``completion_ids`` TRL passes; tool-output tokens included, as TRL counts
them) or, with ``unit="chars"``, in characters of the assistant's own text.
"""

from __future__ import annotations

from agentgrpo.rewards._base import RewardInputError, check_params, finish, positive
from agentgrpo.rewards._text import assistant_text

_UNITS = ("tokens", "chars")


def _lengths(name: str, unit: str, completions, completion_ids) -> list[int]:
    if unit == "chars":
        return [len(assistant_text(c)) for c in completions]
    if completion_ids is None:
        raise RewardInputError(
            f"reward {name!r} counts tokens but got no completion_ids; TRL passes them, "
            f"elsewhere pass completion_ids=... or set params unit='chars'"
        )
    return [len(ids) for ids in completion_ids]


def overlong_penalty(max_length: int, cache: int, unit: str = "tokens"):
    """DAPO soft over-long punishment: 0 up to ``max_length - cache``, then linearly down to -1 at
    ``max_length``, and -1 beyond.

    >>> reward = overlong_penalty(max_length=100, cache=20)
    >>> reward(["a", "b", "c"], completion_ids=[[0] * 80, [0] * 90, [0] * 120])
    [0.0, -0.5, -1.0]
    """
    check_params(
        "overlong_penalty",
        max_length=(positive(max_length), "must be a number > 0"),
        cache=(positive(cache) and cache <= max_length, "must be > 0 and <= max_length"),
        unit=(unit in _UNITS, f"must be one of {_UNITS}"),
    )
    safe = max_length - cache

    def reward(completions, completion_ids=None, **kwargs):
        out = []
        for n in _lengths("overlong_penalty", unit, completions, completion_ids):
            out.append(0.0 if n <= safe else (safe - n) / cache if n <= max_length else -1.0)
        return out

    return finish(reward, "overlong_penalty", overlong_penalty.__doc__, max_reward=0.0)


def length_budget(budget: int, unit: str = "tokens"):
    """1.0 within ``budget``, then linearly down to 0.0 at twice the budget.

    >>> length_budget(budget=10, unit="chars")(["short", "x" * 15, "x" * 40])
    [1.0, 0.5, 0.0]
    """
    check_params(
        "length_budget",
        budget=(positive(budget), "must be a number > 0"),
        unit=(unit in _UNITS, f"must be one of {_UNITS}"),
    )

    def reward(completions, completion_ids=None, **kwargs):
        lengths = _lengths("length_budget", unit, completions, completion_ids)
        return [1.0 if n <= budget else max(0.0, 1.0 - (n - budget) / budget) for n in lengths]

    return finish(reward, "length_budget", length_budget.__doc__)


def repetition_penalty(ngram: int = 3, max_penalty: float = 1.0):
    """``-max_penalty * (1 - distinct n-grams / n-grams)`` over the assistant's words (0 when too short).

    >>> reward = repetition_penalty(ngram=2)
    >>> reward(["the cat sat on the mat", "go go go go go"])
    [0.0, -0.75]
    """
    check_params(
        "repetition_penalty",
        ngram=(isinstance(ngram, int) and ngram >= 1, "must be an int >= 1"),
        max_penalty=(positive(max_penalty), "must be a number > 0"),
    )

    def reward(completions, **kwargs):
        out = []
        for completion in completions:
            words = assistant_text(completion).lower().split()
            grams = [tuple(words[i : i + ngram]) for i in range(len(words) - ngram + 1)]
            out.append(-max_penalty * (1 - len(set(grams)) / len(grams)) if grams else 0.0)
        return [0.0 if r == 0 else r for r in out]

    return finish(reward, "repetition_penalty", repetition_penalty.__doc__, max_reward=0.0)
