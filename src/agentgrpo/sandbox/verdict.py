"""The outcome of running one program and its tests: a `Verdict`."""

from __future__ import annotations

from dataclasses import dataclass, field

from agentgrpo.sandbox.status import (  # noqa: F401  (re-exported: the vocabulary lives with Verdict)
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


@dataclass(frozen=True)
class Verdict:
    """What happened to one program.

    >>> v = Verdict(status="failed", passed=2, total=3, reason="test 3 failed: AssertionError")
    >>> v.fraction, v.ok
    (0.6666666666666666, False)
    >>> Verdict(status="invalid", passed=0, total=0, reason="program is empty").fraction
    0.0
    """

    status: str
    passed: int
    total: int
    reason: str = ""
    stdout: str = ""
    stderr: str = ""
    tests: tuple[str, ...] = field(default=())  # per test: "passed" or a one-line failure message
    duration_s: float = 0.0
    comparison: str = "trusted"  # "trusted": asserts evaluated outside the job; "in_process": forgeable
    lacks: tuple[str, ...] = ()  # guarantees the sandbox's mode could not give (isolation.GUARANTEES)

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(f"Verdict status {self.status!r} is not one of {STATUSES}")

    @property
    def fraction(self) -> float:
        """Share of tests that passed (0.0 when there were none to run)."""
        return self.passed / self.total if self.total else 0.0

    @property
    def forgeable(self) -> bool:
        """True when the tests ran inside the program's own process (the program could fake the result)."""
        return self.comparison == "in_process"

    @property
    def ok(self) -> bool:
        return self.status == PASSED
