"""Code reward: the share of a row's tests that the model's program passes, run in `agentgrpo.sandbox`."""

from __future__ import annotations

import atexit
import re
import threading

from agentgrpo.errors import UserError
from agentgrpo.rewards._base import RewardInputError, check_params, finish, positive
from agentgrpo.rewards._text import completion_text
from agentgrpo.sandbox import SANDBOX_ERROR, Limits, Sandbox
from agentgrpo.sandbox.pool import insecure_summary

_FENCE = re.compile(r"```[ \t]*(?:python|py|python3)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)
_pools: dict[tuple, Sandbox] = {}
_pools_lock = threading.Lock()
INSECURE_OK = False  # the run's `sandbox_insecure_ok` (set by agentgrpo.pipeline from the config)


class SandboxInsecure(UserError):
    """The sandbox's mode cannot give every guarantee, and the config did not accept the risks."""


def extract_code(text: str) -> str:
    """The program in a reply: the last fenced code block, else the whole text.

    >>> extract_code("Here:\\n```python\\ndef f(): return 1\\n```\\nDone.")
    'def f(): return 1\\n'
    """
    blocks = _FENCE.findall(text)
    return blocks[-1] if blocks else text


def shared_sandbox(workers: int, limits: Limits, isolation: str, comparison: str = "trusted") -> Sandbox:
    """One started pool per configuration, shared by every reward that asks, closed at exit."""
    key = (workers, limits, isolation, comparison)
    with _pools_lock:
        if key not in _pools:
            _pools[key] = Sandbox(workers=workers, limits=limits, isolation=isolation, comparison=comparison)
        box = _pools[key]
    report = box.isolation  # starts it
    if report["lacks"] and not INSECURE_OK:
        raise SandboxInsecure(
            "refusing to score code with this sandbox: " + insecure_summary(report) + " A policy trained "
            "against it can learn to use these. Run where namespaces work (root with CAP_SYS_ADMIN, or "
            "unprivileged user namespaces: sysctl kernel.unprivileged_userns_clone=1), or set "
            "`sandbox_insecure_ok: true` in the config to accept the risks."
        )
    return box


@atexit.register
def _close_pools() -> None:
    with _pools_lock:
        for box in _pools.values():
            box.close()
        _pools.clear()


def code_tests_passed(
    column: str = "tests",
    workers: int = 2,
    limits: dict | None = None,
    isolation: str = "auto",
    comparison: str = "trusted",
):
    """Fraction of the row's tests (a list of asserts, or one test script) the final code passes.

    None for rows without tests. The sandbox status of each run is logged as the ``sandbox_status`` column,
    and whether its verdict was forgeable (tests run in-process, or a test whose expected value the program's
    own code builds; see docs/sandbox.md) as ``sandbox_forgeable``.
    ``comparison``: "trusted" (default; asserts evaluated outside the program's process), "auto" or
    "in_process" (for tests that cannot be split; forgeable).

    >>> reward = code_tests_passed(workers=1)
    >>> reward(["```python\\ndef add(a, b):\\n    return a + b\\n```", "def add(a, b): return a - b",
    ...         "import os; os._exit(0)"],
    ...        tests=[["assert add(1, 2) == 3", "assert add(0, 0) == 0"]] * 3)
    [1.0, 0.5, 0.0]
    """
    check_params(
        "code_tests_passed",
        workers=(isinstance(workers, int) and positive(workers), "must be an int > 0"),
        limits=(limits is None or isinstance(limits, dict), "must be a mapping of Limits fields"),
        comparison=(comparison in ("trusted", "auto", "in_process"), "must be 'trusted', 'auto' or 'in_process'"),
    )
    box_limits = Limits(**(limits or {}))

    def reward(completions, log_extra=None, **kwargs):
        if column not in kwargs:
            raise RewardInputError(
                f"reward 'code_tests_passed' needs the dataset column {column!r} with each row's tests; "
                f"add it or pass params {{'column': ...}}"
            )
        rows = [
            (i, extract_code(completion_text(c)), t)
            for i, (c, t) in enumerate(zip(completions, kwargs[column], strict=True))
            if t
        ]
        box = shared_sandbox(workers, box_limits, isolation, comparison)
        verdicts = box.run_many([(p, t) for _, p, t in rows])
        out: list[float | None] = [None] * len(completions)
        statuses = [None] * len(completions)
        forgeable = [None] * len(completions)
        for (i, _, _), verdict in zip(rows, verdicts, strict=True):
            # our own failure is not the model's: no score (None) rather than a silent 0
            out[i] = None if verdict.status == SANDBOX_ERROR else verdict.fraction
            statuses[i] = verdict.status
            forgeable[i] = verdict.forgeable
        if log_extra is not None:
            log_extra("sandbox_status", statuses)
            log_extra("sandbox_forgeable", forgeable)
        return out

    return finish(reward, "code_tests_passed", code_tests_passed.__doc__, required=(column,))
