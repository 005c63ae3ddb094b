"""Issue 34: a verdict is data, the trusted side's work on a job's values is bounded, and `sandbox_error`
is left to faults of the sandbox itself.

* **Verdicts are typed.** Generated exception classes (names and messages drawn from every status and
  outcome word, blanks, and text), raised by the program in every way a test meets them, never give a
  test `passed`: an outcome is "passed" only when the trusted runner completed the test's code.
* **Bounded comparison.** Values whose handling in the worker is one long C call (``sum`` of a huge
  ``range``, an unreduced ``Fraction`` with a 2 MB numerator, a set of colliding ``Decimal``s, ``sorted()``
  of a rebuilt ``range(3e7)``) end as that job's ``timeout`` or ``failed``, within the wall limit plus the
  stated margin; the worker processes stay the same, their own memory stays under a bound, and the next
  honest job passes.
* **sandbox_error only for our faults.** Killing the worker from the outside (twice) gives
  ``sandbox_error``; none of the above does.
"""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentgrpo.sandbox import FAILED, PASSED, SANDBOX_ERROR, STATUSES, TIMEOUT, Limits, Sandbox
from agentgrpo.sandbox.evaluator import MARGIN_S
from agentgrpo.sandbox.status import TEST_OUTCOMES, TEST_PASSED

WORDS = [*STATUSES, *TEST_OUTCOMES, "", " ", "\t", "\n", "ok", "pass", "PASSED", "Passed", "passed ", " passed",
         "failed: passed", "not run", "True", "None", "0", "AssertionError"]


@pytest.fixture(scope="module")
def box():
    with Sandbox(workers=2, limits=Limits(wall_s=4, cpu_s=3, memory_mb=256)) as sandbox:
        yield sandbox


def _honest_job_passes(box):
    verdict = box.run("def add(a, b):\n    return a + b", ["assert add(1, 2) == 3", "assert add(2, 2) == 4"])
    assert verdict.status == PASSED and verdict.passed == 2, verdict


# --- 1. a verdict is data ---------------------------------------------------------------------------------
CALL_SHAPES = ["assert f(1) == 2", "assert f(1)", "assert not f(1)", "assert f(1) != 2",
               "try:\n    f(1)\nexcept ValueError:\n    pass\nassert False", "assert [f(1)] == [2]"]
# (how the program raises its exception, the test shapes in which plain Python meets that raise)
RAISE_WAYS = [
    ("def f(*a):\n    raise E({msg!r})", CALL_SHAPES),
    ("def f(*a):\n    raise E()", CALL_SHAPES),
    ("class R:\n    def __eq__(self, other):\n        raise E({msg!r})\ndef f(*a):\n    return R()",
     ["assert f(1) == 2", "assert f(1) != 2", "assert 2 == f(1)"]),
    ("def f(*a):\n    return g()\ndef g():\n    raise E({msg!r})\n    yield 1", ["assert list(f(1)) == [1]",
                                                                           "assert sum(f(1)) == 0"]),
    ("class V:\n    @property\n    def x(self):\n        raise E({msg!r})\ndef f(*a):\n    return V()",
     ["assert f(1).x == 1", "assert f(1).x is None"]),
]


@settings(max_examples=60, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(st.lists(st.tuples(st.sampled_from(WORDS) | st.text(max_size=6), st.sampled_from(WORDS) | st.text(max_size=6),
                          st.sampled_from(["Exception", "ValueError", "BaseException", "KeyboardInterrupt",
                                           "SystemExit", "AssertionError", "StopIteration", "GeneratorExit"]),
                          st.sampled_from(RAISE_WAYS)), min_size=8, max_size=8))
def test_no_exception_name_or_message_reads_as_a_pass(box, cases):
    jobs = []
    for name, message, base, (way, shapes) in cases:
        program = f"E = type({name!r}, ({base},), {{}})\n" + way.format(msg=message)
        jobs.append((program, shapes))
    for (program, _), verdict in zip(jobs, box.run_many(jobs), strict=True):
        assert verdict.status not in (PASSED, SANDBOX_ERROR), (program, verdict)
        assert verdict.passed == verdict.outcomes.count(TEST_PASSED) == 0, (program, verdict)
        assert TEST_PASSED not in verdict.tests, (program, verdict)  # no failure's text reads "passed"
        assert all(t == "not run" or t.startswith("failed") for t in verdict.tests), verdict


def test_control_the_same_shapes_pass_for_an_honest_program(box):
    honest = "class O:\n    x = 1\ndef f(*a):\n    return 2 if a == (1,) else O()"
    verdict = box.run(honest, ["assert f(1) == 2", "assert f(1)", "assert f(1) != 3"])
    assert verdict.status == PASSED and verdict.outcomes == (TEST_PASSED,) * 3, verdict


# --- 2. bounded trusted work ------------------------------------------------------------------------------
STALLS = [
    # one C call each in the trusted process: no Python signal handler can interrupt them
    ("sum_of_a_huge_range", "def f():\n    return range(10**18)", "assert sum(f()) == 1"),
    ("fraction_2mb_unreduced",
     "from fractions import Fraction\ndef f():\n    n = 3 ** 2_000_000\n"
     "    return Fraction(n * 5, n * 7, _normalize=False)",
     "assert f() == 1"),
    ("decimals_sharing_one_hash",
     "from decimal import Decimal\ndef f():\n    return [Decimal(2**61 - 1) * k + 1 for k in range(29_000)]",
     "assert len(set(f())) == 1"),
    ("sorted_range_3e7", "def f():\n    return range(30_000_000)", "assert sorted(f())[-1] == 1"),
    ("huge_power", "def f():\n    return 10**100_000", "assert f() ** 10**6 == 1"),
    ("lazy_product", "def f():\n    return range(10**6)", "assert max(x * y for x in f() for y in f()) == 1"),
]


def _rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:"))


@pytest.mark.parametrize("name,program,test", STALLS, ids=[s[0] for s in STALLS])
def test_values_cannot_stall_or_bloat_the_trusted_side(box, name, program, test):
    limits = Limits(wall_s=4, cpu_s=3, memory_mb=256)
    pids = box.pids()
    start = time.monotonic()
    verdict = box.run(program, [test, "assert True"], limits)
    took = time.monotonic() - start
    assert verdict.status in (TIMEOUT, FAILED), verdict
    assert verdict.outcomes[0] != TEST_PASSED, verdict
    assert took < limits.wall_s + MARGIN_S + 2.0, (took, verdict)  # + reaping and the pool's round trip
    assert box.pids() == pids, "a worker was lost"
    for pid in pids:  # the worker's own peak memory: the comparison ran in a process of its own
        assert _rss_kb(pid) < 300 * 1024, (pid, _rss_kb(pid))
    _honest_job_passes(box)


def test_the_comparison_memory_bound_fails_the_test_with_the_reason(box):
    verdict = box.run("def f():\n    return range(30_000_000)", ["assert len(sorted(f())) == 3", "assert f()[0] == 0"],
                      Limits(wall_s=8, cpu_s=6, compare_mb=128))
    assert verdict.status == FAILED and verdict.outcomes == ("failed", TEST_PASSED), verdict
    assert "MemoryError" in verdict.tests[0], verdict


# --- sandbox_error: only the sandbox's own faults ---------------------------------------------------------
def test_a_worker_killed_from_outside_gives_sandbox_error():
    with Sandbox(workers=1, limits=Limits(wall_s=6, cpu_s=5)) as box:
        box.run("x = 1", ["assert x == 1"])  # started
        killed = []

        def killer():
            for _ in range(2):  # the job is retried once on a new worker: kill that one too
                deadline = time.monotonic() + 20
                while time.monotonic() < deadline:
                    pids = [p for p in box.pids() if p not in killed]
                    if pids:
                        time.sleep(0.5)  # the job is running on it
                        os.kill(pids[0], signal.SIGKILL)
                        killed.append(pids[0])
                        break
                    time.sleep(0.05)

        thread = threading.Thread(target=killer)
        thread.start()
        verdict = box.run("import time\ndef f():\n    time.sleep(4)\n    return 1", ["assert f() == 1"])
        thread.join()
        assert len(killed) == 2
        if "signals" in verdict.lacks:
            assert verdict.status == "crashed", verdict  # there a program could have done it
        else:
            assert verdict.status == SANDBOX_ERROR and "worker lost" in verdict.reason, verdict
        _honest_job_passes(box)


# --- 3. no job code inside a comparison; tests the program can decide are marked ---------------------------
SPY = """
import dataclasses
READS = [0]
@dataclasses.dataclass(frozen=True)
class Point:
    x: int
    y: int
    def __getattribute__(self, name):
        READS[0] += 1
        return object.__getattribute__(self, name)
def reads():
    return READS[0]
def f():
    return Point(1, 2)
"""


def test_comparisons_run_no_program_code(box):
    """Equality, hashing and ordering of a dataclass read the snapshot taken when the object crossed: the
    program's ``__getattribute__`` (which sees every read) is not called by any of them."""
    # (each reply's refresh of the snapshots reads the fields in the job: the same count per reply)
    tests = ["p, q = f(), f()\na = reads()\nb = reads()\nassert p == q and not (p != q) and len({p, q}) == 1\n"
             "assert [p] == [q] and {p: 1}[q] == 1 and hash(p) == hash(q)\nc = reads()\n"
             "assert c - b == b - a, (a, b, c)"]
    verdict = box.run(SPY, tests)
    assert verdict.status == PASSED, verdict


LIAR = """
import dataclasses
@dataclasses.dataclass
class Point:
    x: int
    y: int
    def __getattribute__(self, name):
        if name in ("x", "y"):
            return 0
        return object.__getattribute__(self, name)
def f():
    return Point(5, 5)
"""


def test_a_test_built_with_the_programs_constructor_is_marked_forgeable(box):
    """A lying ``__getattribute__`` makes contradictory ``== Point(...)`` tests pass, in plain Python as here:
    the expected value is the program's own. The sandbox says so, per test; a literal expected value is not
    marked, and there the lie does not help."""
    tests = ["assert f() == Point(1, 2)", "assert f() == Point(3, 4)", "assert (f().x, f().y) == (1, 2)",
             "assert f().x == 1"]
    verdict = box.run(LIAR, tests)
    assert verdict.outcomes == (TEST_PASSED, TEST_PASSED, "failed", "failed"), verdict
    assert verdict.forgeable and verdict.forgeable_tests == (0, 1), verdict
    honest = box.run("def add(a, b):\n    return a + b", ["assert add(1, 2) == 3"])
    assert not honest.forgeable and honest.forgeable_tests == (), honest


def _comparison_processes(worker: int) -> list[int]:
    """The worker's comparison process(es): its children that are not its job template (PID 1 of its own
    PID namespace)."""
    found = []
    for task in os.listdir(f"/proc/{worker}/task"):
        with open(f"/proc/{worker}/task/{task}/children") as fh:
            for child in map(int, fh.read().split()):
                with open(f"/proc/{child}/status") as status:
                    nspid = next(line.split()[1:] for line in status if line.startswith("NSpid:"))
                if nspid[-1] != "1":
                    found.append(child)
    return found


def test_a_comparison_process_gone_between_jobs_is_replaced():
    with Sandbox(workers=1, limits=Limits(wall_s=6, cpu_s=5)) as box:
        if not box.isolation["pid_namespace"]:
            pytest.skip("the job template is told apart as PID 1 of its own PID namespace")
        _honest_job_passes(box)
        (worker,) = box.pids()
        first = _comparison_processes(worker)
        assert len(first) == 1, first
        os.kill(first[0], signal.SIGKILL)
        time.sleep(0.2)
        _honest_job_passes(box)  # handed to a fresh one, not failed
        assert box.pids() == [worker] and _comparison_processes(worker) not in ([], first)
