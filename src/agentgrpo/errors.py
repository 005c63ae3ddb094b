"""Errors that reach the user, and the 'did you mean' helper every registry uses."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class UserError(Exception):
    """A problem with what the user asked for. The CLI prints it without a traceback and exits with 2."""


class ConfigError(UserError, ValueError):
    """One or more problems in a config, all reported at once.

    >>> err = ConfigError(["num_generations: must be >= 2", "bf16: no GPU here"])
    >>> print(err)
    2 problems in the config:
      - num_generations: must be >= 2
      - bf16: no GPU here
    """

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        n = len(self.problems)
        head = "1 problem in the config:" if n == 1 else f"{n} problems in the config:"
        super().__init__("\n".join([head, *(f"  - {p}" for p in self.problems)]))


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """A hint naming the closest choices and listing all of them.

    >>> did_you_mean("calcualtor", ["calculator", "gsm8k"])
    "Did you mean 'calculator'? Available: calculator, gsm8k"
    >>> did_you_mean("zzz", ["a", "b"])
    'Available: a, b'
    """
    choices = sorted(choices)
    close = difflib.get_close_matches(name, choices, n=3, cutoff=0.6)
    avail = f"Available: {', '.join(choices)}"
    if close:
        return "Did you mean " + " or ".join(repr(c) for c in close) + "? " + avail
    return avail


def unknown_name(kind: str, name: str, choices: Iterable[str]) -> UserError:
    """The error for a name that is not registered, e.g. ``unknown_name("task", "calcualtor", TASKS)``."""
    return UserError(f"unknown {kind} {name!r}. {did_you_mean(name, choices)}")
