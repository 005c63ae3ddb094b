"""The outcome of running one program and its tests: a `Verdict`."""

from __future__ import annotations

from dataclasses import dataclass, field

# The whole vocabulary. Only PASSED means "every test passed"; everything else scores `passed / total`.
PASSED = "passed"  # the program ran and every test passed
FAILED = "failed"  # the program ran; at least one test failed or raised
ERROR = "error"  # the program itself raised (syntax error, exception, exit) before any test ran
TIMEOUT = "timeout"  # wall-clock or CPU limit reached; the process tree was killed
CRASHED = "crashed"  # the process died before reporting (signal such as SIGSEGV, os._exit, killed itself)
OUTPUT_LIMIT = "output_limit"  # stdout or stderr went past the cap; the process tree was killed
INVALID = "invalid"  # the input was not a runnable program/tests (wrong type, empty, too large)
SANDBOX_ERROR = "sandbox_error"  # our side failed (worker lost twice, setup failure); not the program's fault

STATUSES = (PASSED, FAILED, ERROR, TIMEOUT, CRASHED, OUTPUT_LIMIT, INVALID, SANDBOX_ERROR)


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

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(f"Verdict status {self.status!r} is not one of {STATUSES}")

    @property
    def fraction(self) -> float:
        """Share of tests that passed (0.0 when there were none to run)."""
        return self.passed / self.total if self.total else 0.0

    @property
    def ok(self) -> bool:
        return self.status == PASSED

    def same_outcome(self, other: Verdict) -> bool:
        """Equal status and counts: how determinism is judged (timings and text may differ)."""
        return (self.status, self.passed, self.total) == (other.status, other.passed, other.total)
