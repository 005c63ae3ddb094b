"""Run untrusted Python (a solution plus its tests) in isolated, limited, secret-free processes.

    from agentgrpo.sandbox import Limits, Sandbox
    with Sandbox(workers=2, limits=Limits(wall_s=5)) as box:
        verdict = box.run(program, ["assert f(1) == 2"])
        verdict.status, verdict.passed, verdict.total, verdict.fraction

What is enforced on Linux, and what is not, is written down in docs/sandbox.md; `Sandbox.isolation`
reports what is in force on the machine at hand.
"""

from agentgrpo.sandbox.limits import Limits
from agentgrpo.sandbox.pool import ISOLATION_MODES, Sandbox, SandboxUnavailable, SandboxWarning
from agentgrpo.sandbox.verdict import (
    CRASHED,
    ERROR,
    FAILED,
    INVALID,
    OUTPUT_LIMIT,
    PASSED,
    SANDBOX_ERROR,
    STATUSES,
    TIMEOUT,
    Verdict,
)

__all__ = [
    "CRASHED",
    "ERROR",
    "FAILED",
    "INVALID",
    "ISOLATION_MODES",
    "OUTPUT_LIMIT",
    "PASSED",
    "SANDBOX_ERROR",
    "STATUSES",
    "TIMEOUT",
    "Limits",
    "Sandbox",
    "SandboxUnavailable",
    "SandboxWarning",
    "Verdict",
]
