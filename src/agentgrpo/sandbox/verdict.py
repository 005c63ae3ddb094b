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
    TEST_FAILED,
    TEST_NOT_RUN,
    TEST_OUTCOMES,
    TEST_PASSED,
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
    tests: tuple[str, ...] = field(default=())  # per test: "passed", "not run" or "failed: <one line>"
    duration_s: float = 0.0
    comparison: str = "trusted"  # "trusted": asserts evaluated outside the job; "in_process": forgeable
    lacks: tuple[str, ...] = ()  # guarantees the sandbox's mode could not give (isolation.GUARANTEES)
    outcomes: tuple[str, ...] = ()  # per test: TEST_PASSED / TEST_FAILED / TEST_NOT_RUN (typed, see status.py)
    forgeable_tests: tuple[int, ...] = ()  # tests (0-based) whose expected value the program's own code built

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(f"Verdict status {self.status!r} is not one of {STATUSES}")
        if any(o not in TEST_OUTCOMES for o in self.outcomes):
            raise ValueError(f"Verdict outcomes {self.outcomes!r}: each must be one of {TEST_OUTCOMES}")
        if self.outcomes and self.passed != self.outcomes.count(TEST_PASSED):
            raise ValueError(f"Verdict passed={self.passed} but {self.outcomes.count(TEST_PASSED)} outcomes passed")

    @property
    def fraction(self) -> float:
        """Share of tests that passed (0.0 when there were none to run)."""
        return self.passed / self.total if self.total else 0.0

    @property
    def forgeable(self) -> bool:
        """True when the program's own code could decide a test's outcome: the tests ran inside the program's
        process (``comparison == "in_process"``), or a test's expected value was built by the program's own
        code (its class, its function: `forgeable_tests`), which plain Python could not prevent either."""
        return self.comparison == "in_process" or bool(self.forgeable_tests)

    @property
    def ok(self) -> bool:
        return self.status == PASSED

    def same_outcome(self, other: Verdict) -> bool:
        """Equal status and counts: how determinism is judged (timings and text may differ)."""
        return (self.status, self.passed, self.total) == (other.status, other.passed, other.total)
