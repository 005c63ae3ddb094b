"""Run untrusted Python (a solution plus its tests) in isolated, limited, secret-free processes.

    from agentgrpo.sandbox import Limits, Sandbox
    with Sandbox(workers=2, limits=Limits(wall_s=5)) as box:
        verdict = box.run(program, ["assert f(1) == 2"])
        verdict.status, verdict.passed, verdict.total, verdict.fraction

What is enforced on Linux, and what is not, is written down in docs/sandbox.md; `Sandbox.isolation`
reports what is in force on the machine at hand.

The names below are loaded on first use, so that a worker process (which imports
`agentgrpo.sandbox.worker`) stays small: every page it holds makes each fork dearer.
"""

from __future__ import annotations

from agentgrpo.sandbox.status import (
    CRASHED,
    ERROR,
    FAILED,
    INVALID,
    OUTPUT_LIMIT,
    PASSED,
    SANDBOX_ERROR,
    STATUSES,
    TIMEOUT,
)

_LAZY = ("Limits", "Verdict", "Sandbox", "SandboxUnavailable", "SandboxWarning", "ISOLATION_MODES")

__all__ = [
    "CRASHED",
    "ERROR",
    "FAILED",
    "INVALID",
    "OUTPUT_LIMIT",
    "PASSED",
    "SANDBOX_ERROR",
    "STATUSES",
    "TIMEOUT",
    *_LAZY,
]


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'agentgrpo.sandbox' has no attribute {name!r}")
    if name == "Limits":
        from agentgrpo.sandbox import limits as module
    elif name == "Verdict":
        from agentgrpo.sandbox import verdict as module
    else:
        from agentgrpo.sandbox import pool as module
    value = getattr(module, name)
    globals()[name] = value
    return value
