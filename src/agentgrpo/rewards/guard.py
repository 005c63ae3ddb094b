"""Failures are data: a reward that raises scores None for the failed samples, is counted and reported.

`GuardedReward` wraps a TRL reward function. When a call raises, the batch is retried one sample at a time
so only the failing samples get None (never a silent 0). Each batch logs ``rewards/<name>/errors`` (the
number of failed samples) through TRL's ``log_metric``; the first failure of each function is reported once
as a `RewardFailureWarning` with its traceback. ``strict=True`` re-raises instead.

Output that breaks the contract (wrong length, a non-number, NaN/inf) is a bug in the function, not a sample
failure: it always raises `RewardOutputError` naming the function. A `UserError` (a missing dataset column,
a sandbox that cannot start) is a configuration problem and stops the run too.
"""

from __future__ import annotations

import functools
import math
import numbers
import traceback
import warnings
from collections import defaultdict
from collections.abc import Callable

from agentgrpo.errors import UserError


class RewardFailureWarning(UserWarning):
    """A reward function raised on some samples; they scored None."""


class RewardOutputError(ValueError):
    """A reward function returned something other than one finite number (or None) per completion."""


class GuardedReward:
    """``func`` with failures turned into None, counted and logged. Keeps ``func``'s name and signature."""

    def __init__(self, func: Callable, name: str | None = None, strict: bool = False):
        functools.update_wrapper(self, func)
        self.func, self.strict = func, strict
        self.__name__ = name or getattr(func, "__name__", type(func).__name__)
        self.max_reward = getattr(func, "max_reward", None)
        self.errors_total = 0
        self.first_error: str | None = None
        self.after: Callable | None = None  # hook run on each validated output (see combine.py)

    def __repr__(self) -> str:
        return f"GuardedReward({self.__name__}, strict={self.strict})"

    def __call__(self, completions, **kwargs) -> list[float | None]:
        n = len(completions)
        logs = _Logs(kwargs.get("log_extra"), n)
        try:
            out = self.func(completions=completions, **{**kwargs, "log_extra": logs.batch})
            errors = 0
        except UserError:
            raise
        except Exception as exc:
            if self.strict:
                exc.add_note(f"(raised by reward function {self.__name__!r}; strict mode is on)")
                raise
            out, errors = self._one_by_one(completions, kwargs, logs, exc)
        out = check_output(self.__name__, out, n)
        logs.flush()
        self.errors_total += errors
        if callable(kwargs.get("log_metric")):
            kwargs["log_metric"](f"rewards/{self.__name__}/errors", float(errors))
        return self.after(completions, out) if self.after else out

    def _one_by_one(self, completions, kwargs, logs, first_exc) -> tuple[list, int]:
        out, errors = [], 0
        logs.per_sample()
        for i in range(len(completions)):
            row = {k: [v[i]] if _per_sample(v, len(completions)) else v for k, v in kwargs.items()}
            row["log_extra"] = logs.sample(i)
            try:
                value = self.func(completions=[completions[i]], **row)
            except UserError:
                raise
            except Exception as exc:
                self._warn(exc)
                logs.drop(i)
                out.append(None)
                errors += 1
                continue
            out.append(check_output(self.__name__, value, 1)[0])
        if errors == 0:  # every sample works alone: keep their scores, but say the batch call is broken
            self._warn(first_exc)
        return out, errors

    def _warn(self, exc: BaseException) -> None:
        if self.first_error is not None:
            return
        self.first_error = "".join(traceback.format_exception(exc, chain=False))
        warnings.warn(
            RewardFailureWarning(
                f"reward function {self.__name__!r} raised {type(exc).__name__}: {exc}. The failed samples "
                f"score None (not 0) and are counted in rewards/{self.__name__}/errors; pass strict=True to "
                f"stop the run instead. First traceback:\n{self.first_error}"
            ),
            stacklevel=3,
        )


def guarded(func: Callable, name: str | None = None, strict: bool = False) -> GuardedReward:
    """``func`` wrapped so its failures become None, counted and logged (a `GuardedReward`).

    >>> def half(completions, **kwargs):
    ...     return [1 / len(c) for c in completions]
    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     guarded(half)(["ab", ""])
    [0.5, None]
    """
    if isinstance(func, GuardedReward) and func.strict == strict and name in (None, func.__name__):
        return func
    return GuardedReward(func, name=name, strict=strict)


def _per_sample(value, n: int) -> bool:
    return isinstance(value, list | tuple) and len(value) == n


def check_output(name: str, out, n: int) -> list[float | None]:
    """``out`` as a list of floats/None, or a `RewardOutputError` saying what is wrong and how to fix it.

    >>> check_output("f", [1, None, 0.5], 3)
    [1.0, None, 0.5]
    >>> check_output("f", [1.0], 2)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    agentgrpo.rewards.guard.RewardOutputError: reward function 'f' returned 1 values for 2 completions; ...
    """
    if isinstance(out, str | bytes | dict) or not hasattr(out, "__len__") or not hasattr(out, "__iter__"):
        raise RewardOutputError(
            f"reward function {name!r} returned a {type(out).__name__}; return a list with one "
            f"float (or None) per completion"
        )
    if len(out) != n:
        raise RewardOutputError(
            f"reward function {name!r} returned {len(out)} values for {n} completions; "
            f"return exactly one float (or None) per completion"
        )
    values = []
    for i, value in enumerate(out):
        if value is None:
            values.append(None)
            continue
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
            raise RewardOutputError(
                f"reward function {name!r} returned {value!r} ({type(value).__name__}) for "
                f"completion {i}; rewards must be finite numbers, or None for 'not applicable'"
            )
        values.append(float(value))
    return values


class _Logs:
    """Holds a reward's ``log_extra`` columns until its output is known to be good, then forwards them."""

    def __init__(self, log_extra: Callable | None, n: int):
        self.target, self.n = log_extra if callable(log_extra) else None, n
        self.columns: dict[str, list] = {}
        self.rows: dict[int, dict[str, list]] | None = None  # per-sample mode

    def batch(self, column: str, values: list) -> None:
        self.columns.setdefault(column, []).extend(values)

    def per_sample(self) -> None:
        """Forget what the failed batch call logged; collect per sample from now on."""
        self.columns, self.rows = {}, defaultdict(dict)

    def sample(self, i: int) -> Callable:
        def log(column: str, values: list) -> None:
            self.rows[i].setdefault(column, []).extend(values)

        return log

    def drop(self, i: int) -> None:
        self.rows.pop(i, None)

    def flush(self) -> None:
        if self.rows is not None:  # one value per sample, None where a sample failed or logged nothing
            names = {c for row in self.rows.values() for c in row}
            self.columns = {
                c: [(self.rows.get(i, {}).get(c) or [None])[0] for i in range(self.n)] for c in names
            }
        if self.target is not None:
            for column, values in self.columns.items():
                self.target(column, values)
