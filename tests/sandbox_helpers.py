"""Shared checks of the sandbox tests."""

from __future__ import annotations

from agentgrpo.sandbox import FAILED, PASSED

GOOD = ("def f(x):\n    return x + 1", ["assert f(1) == 2", "assert f(2) == 3"])
BAD = ("def f(x):\n    return x", ["assert f(1) == 2", "assert f(2) == 2"])


def assert_pool_still_serves(box) -> None:
    """After an attack, the pool still gives honest jobs their true verdicts (a pass and a failure each)."""
    verdicts = box.run_many([GOOD, BAD, GOOD, BAD])
    assert [(v.status, v.passed) for v in verdicts] == [(PASSED, 2), (FAILED, 1)] * 2, verdicts
