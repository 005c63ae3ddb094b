"""The sandbox pool: verdicts, bad input, determinism, isolation between jobs, worker replacement."""

import os
import signal
import threading
import time

import pytest

from agentgrpo.errors import ConfigError
from agentgrpo.sandbox import (
    CRASHED,
    ERROR,
    FAILED,
    INVALID,
    OUTPUT_LIMIT,
    PASSED,
    Limits,
    Sandbox,
    Verdict,
)

ADD = "def add(a, b):\n    return a + b"


@pytest.fixture(scope="module")
def box():
    with Sandbox(workers=2, limits=Limits(wall_s=5.0, cpu_s=3.0)) as sandbox:
        yield sandbox


VERDICTS = [
    # every test passes
    (ADD, ["assert add(1, 2) == 3", "assert add(0, 0) == 0"], PASSED, 2, 2),
    # one of two fails
    (ADD, ["assert add(1, 2) == 3", "assert add(1, 1) == 3"], FAILED, 1, 2),
    # a test that raises counts as failed, the next still runs
    (ADD, ["assert add(1, None) == 1", "assert add(2, 2) == 4"], FAILED, 1, 2),
    # the program does not compile
    ("def add(a, b) return a + b", ["assert add(1, 2) == 3"], ERROR, 0, 1),
    # the program raises at import time
    ("raise ValueError('no')", ["assert True"], ERROR, 0, 1),
    # a test script with setup between asserts
    (
        ADD,
        "import math\nassert add(1, 2) == 3\nx = add(2, 2)\nassert x == 4\nassert math.isclose(x, 5)",
        FAILED,
        2,
        3,
    ),
    # a script without top-level asserts is one test (HumanEval style)
    (ADD, "def check(f):\n    assert f(1, 1) == 2\ncheck(add)", PASSED, 1, 1),
    # the program dies in the third test: the first two still count (calls made up front are per test)
    (
        "def f(x):\n    if x == 3:\n        import os; os._exit(1)\n    return x",
        ["assert f(1) == 1", "assert f(2) == 2", "assert f(3) == 3", "assert f(4) == 4"],
        CRASHED,
        2,
        4,
    ),
    # a stateful program sees its calls in the tests' order, setup steps included
    (
        "n = [0]\ndef f():\n    n[0] += 1\n    return n[0]",
        ["assert f() == 1", "assert f() == 2", "x = 5\nassert f() == 3", "assert f() == 4"],
        PASSED,
        4,
        4,
    ),
    # a test naming something the program lacks fails alone; the planned calls after it still line up
    (ADD, ["assert sub(1, 1) == 0", "assert add(2, 2) == 4", "assert not add(0, 0)"], FAILED, 2, 3),
    # in-place changes of list arguments are seen by the test
    ("def push(xs):\n    xs.append(1)", "xs = []\npush(xs)\nassert xs == [1]", PASSED, 1, 1),
]


@pytest.mark.parametrize("program,tests,status,passed,total", VERDICTS)
def test_verdicts(box, program, tests, status, passed, total):
    verdict = box.run(program, tests)
    assert (verdict.status, verdict.passed, verdict.total) == (status, passed, total), verdict
    assert verdict.fraction == passed / total


BAD_INPUT = [
    (None, ["assert True"], "program must be a str, got NoneType"),  # not a string
    (b"x = 1", ["assert True"], "got bytes"),  # bytes
    ("", ["assert True"], "program is empty"),  # empty
    ("  \n\t", ["assert True"], "program is empty"),  # whitespace only
    ("x = 1", [], "no tests to run"),  # no tests
    ("x = 1", "", "no tests to run"),  # empty test script
    ("x = 1", ["assert True", 3], "a list holding a int"),  # a non-string test
    ("x = 1", {"t": "assert True"}, "got dict"),  # wrong container
    ("x" * 1_000_001, ["assert True"], "more than"),  # too large
]


@pytest.mark.parametrize("program,tests,reason", BAD_INPUT)
def test_bad_input_gets_a_verdict_not_a_crash(box, program, tests, reason):
    verdict = box.run(program, tests)
    assert verdict.status == INVALID and reason in verdict.reason and verdict.fraction == 0.0


def test_run_many_keeps_order_and_accepts_dicts(box):
    jobs = [
        (ADD, ["assert add(1, 1) == 2"]),
        {"program": "import time\ntime.sleep(0.3)", "tests": ["assert 1"]},
        ("x = 1", ["assert x == 2"]),
        42,
        {"program": ADD, "tests": ["assert add(2, 3) == 5"]},
    ]
    statuses = [v.status for v in box.run_many(jobs)]
    assert statuses == [PASSED, PASSED, FAILED, INVALID, PASSED]


def test_output_is_captured_and_capped():
    with Sandbox(workers=1, limits=Limits(output_bytes=1000)) as small:
        ok = small.run("import sys\nprint('out')\nprint('err', file=sys.stderr)", ["assert True"])
        assert (ok.status, ok.stdout, ok.stderr) == (PASSED, "out\n", "err\n")
        flood = small.run("print('x' * 5000)", ["assert True"])
        assert flood.status == OUTPUT_LIMIT and len(flood.stdout) < 1100 and flood.stdout.endswith("[... truncated]")


def test_results_do_not_depend_on_worker_or_history(box):
    program = (
        "import random, os\nvalue = (random.random(), list({'a', 'b', 'c', 'd'}), os.getcwd(),\n"
        "         sorted(os.listdir('.')), hash('agentgrpo'))\nprint(value)"
    )
    outputs = {v.stdout for v in box.run_many([(program, ["assert True"])] * 8)}
    assert len(outputs) == 1, outputs  # same seed, same hash seed, same empty work dir on every worker


def test_nothing_survives_from_one_job_to_the_next(box):
    dirty = (
        "import os, json\nopen('left.txt', 'w').write('x')\nopen('/tmp/left.txt', 'w').write('x')\n"
        "json.dumps = None\nos.environ['LEFT'] = '1'"
    )
    clean = (
        "import os, json\nstate = [os.path.exists('left.txt'), os.path.exists('/tmp/left.txt'),\n"
        "         json.dumps is None, 'LEFT' in os.environ, os.listdir('.')]"
    )
    box.run_many([(dirty, ["assert True"])] * 4)
    for verdict in box.run_many([(clean, ["assert state == [False, False, False, False, []]"])] * 4):
        assert verdict.status == PASSED, verdict


def test_a_dead_worker_is_replaced_and_the_job_retried():
    with Sandbox(workers=2) as sandbox:
        before = sandbox.pids()
        os.killpg(before[0], signal.SIGKILL)
        time.sleep(0.1)
        verdicts = sandbox.run_many([(ADD, ["assert add(1, 2) == 3"])] * 4)
        assert [v.status for v in verdicts] == [PASSED] * 4
        after = sandbox.pids()
        assert len(after) == 2 and before[0] not in after and before[1] in after


def test_a_worker_dying_with_jobs_queued_ahead_loses_none_of_them():
    slow = "import time\ntime.sleep(0.15)\n" + ADD
    with Sandbox(workers=2) as sandbox:
        victim = sandbox.pids()[0]
        killer = threading.Timer(0.4, os.killpg, (victim, signal.SIGKILL))
        killer.start()
        verdicts = sandbox.run_many([(slow, [f"assert add({i}, 1) == {i + 1}"]) for i in range(12)])
        killer.join()
        assert [v.status for v in verdicts] == [PASSED] * 12, [v.reason for v in verdicts]
        assert victim not in sandbox.pids() and len(sandbox.pids()) == 2


def test_large_jobs_and_large_results_do_not_deadlock_the_pipelined_pool():
    # a job too large to wait in the worker's input pipe is sent only when the worker is free, so the
    # pool is always reading while a worker writes a result larger than a pipe
    big = "DATA = " + repr("x" * 40_000) + "\nprint('y' * 100_000)\n" + ADD
    with Sandbox(workers=1, limits=Limits(output_bytes=200_000)) as sandbox:
        verdicts = sandbox.run_many([(big, ["assert add(1, 1) == 2"]), (ADD, ["assert add(2, 2) == 4"])] * 3)
    assert [v.status for v in verdicts] == [PASSED] * 6
    assert all(len(v.stdout) == 100_001 for v in verdicts[::2])


def test_a_hung_worker_is_replaced():
    with Sandbox(workers=1, limits=Limits(wall_s=1.0), worker_timeout_s=3.0) as sandbox:
        (pid,) = sandbox.pids()
        os.kill(pid, signal.SIGSTOP)  # the worker stops answering
        verdict = sandbox.run(ADD, ["assert add(2, 2) == 4"])
        assert verdict.status == PASSED
        assert sandbox.pids() != [pid]
        with pytest.raises(ProcessLookupError):
            for _ in range(50):  # the stopped worker was killed, not left behind
                os.kill(pid, 0)
                time.sleep(0.05)


def test_close_ends_every_worker_and_refuses_more_work():
    sandbox = Sandbox(workers=2)
    sandbox.start()
    pids = sandbox.pids()
    assert len(pids) == 2
    sandbox.close()
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    with pytest.raises(RuntimeError, match="closed"):
        sandbox.run(ADD, ["assert True"])


@pytest.mark.parametrize(
    "kwargs,needle",
    [
        ({"workers": 0}, "workers: must be an int >= 1"),  # no workers
        ({"workers": 1.5}, "workers: must be an int >= 1"),  # not an int
        ({"isolation": "docker"}, "isolation: 'docker' is not one of"),  # unknown mode
        ({"limits": {"wall_s": 1}}, "limits: must be a Limits"),  # a dict instead of Limits
    ],
)
def test_bad_sandbox_config(kwargs, needle):
    with pytest.raises(ConfigError, match=needle):
        Sandbox(**kwargs)


def test_bad_limits_are_all_reported():
    with pytest.raises(ConfigError) as err:
        Limits(wall_s=0, cpu_s=float("inf"), memory_mb=-1, output_bytes="big")
    assert len(err.value.problems) == 4


def test_per_call_limits_override_the_pool_default(box):
    slow = "import time\nwhile time.process_time() < 1.5:\n    pass"  # 1.5 s of CPU
    assert box.run(slow, ["assert True"], limits=Limits(wall_s=60, cpu_s=3)).status == PASSED
    assert box.run(slow, ["assert True"], limits=Limits(wall_s=60, cpu_s=1)).status == "timeout"


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="namespaces as root")
def test_isolation_report_as_root(box):
    report = box.isolation
    assert report["mode"] == "root" and report["pid_namespace"] and report["mount_namespace"]
    assert report["network"].startswith("network namespace") and report["sandbox_uid"] is not None
    assert report["process_limit"] and report["problems"] == []


def test_verdict_rejects_unknown_status():
    with pytest.raises(ValueError, match="not one of"):
        Verdict(status="ok", passed=1, total=1)


def test_the_worker_stays_lean():
    """Every module a worker imports makes each fork dearer: keep the heavy ones out (see docs/sandbox.md)."""
    import subprocess
    import sys

    heavy = [
        "json",
        "subprocess",
        "threading",
        "dataclasses",
        "concurrent.futures",
        "shutil",
        "tempfile",
        "difflib",
        "inspect",
        "logging",
        "agentgrpo.sandbox.pool",
        "agentgrpo.errors",
    ]
    code = f"import sys, agentgrpo.sandbox.worker; print([m for m in {heavy!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-s", "-P", "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout
