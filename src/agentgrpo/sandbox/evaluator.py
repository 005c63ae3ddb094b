"""The trusted comparison of one job, in a process of its own: forked from the worker, limited, killed.

Everything the trusted side does with what a job sends — decoding its replies, rebuilding its values and
mirrors, running the tests against them — runs in a child of the worker forked for that job (`run`). The
worker itself never holds a job's values. The child has its own limits: ``RLIMIT_CPU`` of the job's
``cpu_s`` (its CPU time starts at 0 with the fork; the kernel kills it past the limit), ``RLIMIT_AS`` of its
size at the fork plus the job's ``compare_mb`` (an allocation past it is a ``MemoryError``: the test that
made it fails), and the job's wall deadline, enforced by the worker with ``SIGKILL`` at the deadline plus
`MARGIN_S` (a C-level loop — ``sum(range(10**18))``, a huge ``Fraction``, a set of colliding ``Decimal``s —
does not return to Python for a signal handler; a kill ends it wherever it is). So whatever the values
make the comparison do, it ends as that job's ``timeout`` or ``failed`` and the worker goes on unchanged.

The child streams each test's outcome as it ends (so a comparison killed in test 3 keeps tests 1 and 2),
then a final summary, on a pipe: length-prefixed ``marshal`` frames written by trusted code from typed
fields (outcome words from `agentgrpo.sandbox.status`, capped text).
"""

from __future__ import annotations

import marshal
import os
import resource
import select
import signal
import sys
import time

from agentgrpo.sandbox.rlimits import cpu_seconds

MARGIN_S = 3.0  # past the job's wall deadline: the child's own SIGALRM comes at +1 s, the kill at +3 s
_MEMORY_EXIT = 71  # the child ran out of its address space outside any test
_CRASH_EXIT = 72  # an unexpected exception in the child's own code
# modules a comparison may import that the worker then imports too, so the next job's fork has them
# (the value codec's, and what tests commonly import); top-level names only
PRELOADABLE = frozenset({"fractions", "decimal", "datetime", "collections", "numpy", "math", "cmath", "statistics",
                         "itertools", "functools", "heapq", "bisect", "re", "string", "operator", "random", "copy",
                         "dataclasses", "enum", "json", "array", "typing"})
_BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


class Ended:
    """How one comparison ended, as the worker saw it: the streamed ``tests`` {index: (outcome, message)},
    the child's ``final`` summary (None if it did not finish), and why not: ``killed`` (at the wall
    deadline), ``cpu`` (past its CPU limit), ``memory`` (out of its address space), ``crash`` (text)."""

    __slots__ = ("tests", "final", "killed", "cpu", "memory", "crash", "duration")

    def __init__(self):
        self.tests, self.final = {}, None
        self.killed = self.cpu = self.memory = False
        self.crash, self.duration = "", 0.0


def run(work, deadline: float, limits: dict) -> Ended:
    """Run ``work(report)`` in a forked child under the comparison's limits; ``report(index, outcome,
    message)`` streams a test's outcome, and what ``work`` returns (a dict of builtin values) is the final
    summary. The child is killed at ``deadline`` + `MARGIN_S` (a ``time.monotonic()`` time)."""
    start = time.monotonic()
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(read_fd)
        _child(work, write_fd, limits)
    os.close(write_fd)
    ended = Ended()
    buffer = bytearray()
    poll = select.poll()
    poll.register(read_fd, select.POLLIN)
    hard = deadline + MARGIN_S
    try:
        while True:
            left = hard - time.monotonic()
            if left <= 0:
                os.kill(pid, signal.SIGKILL)
                ended.killed = True
                break
            if not poll.poll(max(1, int(left * 1000))):
                continue
            chunk = os.read(read_fd, 1 << 16)
            if not chunk:
                break
            buffer += chunk
            _frames(buffer, ended)
    finally:
        os.close(read_fd)
    _, status, usage = os.wait4(pid, 0)
    cpu = usage.ru_utime + usage.ru_stime
    if ended.final is None and not ended.killed:
        signum = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
        code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
        if signum == signal.SIGXCPU or (signum == signal.SIGKILL and cpu >= cpu_seconds(limits) - 0.05):
            ended.cpu = True
        elif code == _MEMORY_EXIT:
            ended.memory = True
        elif signum is not None:
            ended.crash = f"the trusted comparison process was killed by signal {signum}"
        else:
            ended.crash = f"the trusted comparison process exited with code {code}"
    ended.duration = time.monotonic() - start
    return ended


def _frames(buffer: bytearray, ended: Ended) -> None:
    while len(buffer) >= 4:
        size = int.from_bytes(buffer[:4], "big")
        if len(buffer) < 4 + size:
            return
        message = marshal.loads(bytes(buffer[4 : 4 + size]))
        del buffer[: 4 + size]
        if message[0] == "test":
            ended.tests[message[1]] = (message[2], message[3])
        elif message[0] == "final":
            ended.final = message[1]


def _child(work, write_fd: int, limits: dict) -> None:
    code = 0
    try:
        _limit(limits)
        before = set(sys.modules)

        def send(message) -> None:
            data = marshal.dumps(message)
            view = memoryview(len(data).to_bytes(4, "big") + data)
            while view:
                view = view[os.write(write_fd, view) :]

        def report(index: int, outcome: str, message: str) -> None:
            send(("test", index, outcome, message))

        final = work(report)
        final["modules"] = sorted({m.partition(".")[0] for m in set(sys.modules) - before} & PRELOADABLE)
        send(("final", final))
    except MemoryError:
        code = _MEMORY_EXIT
    except BaseException:
        code = _CRASH_EXIT
    os._exit(code)


def _limit(limits: dict) -> None:
    """The child's own limits: its CPU time (from 0 at the fork) and its address space (its size now plus
    ``compare_mb``); no core dumps. Numerical libraries a test imports use one thread."""
    for name in _BLAS_THREADS:
        os.environ.setdefault(name, "1")
    seconds = cpu_seconds(limits)
    resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds + 1))
    with open("/proc/self/statm", "rb") as fh:
        size = int(fh.read().split()[0]) * resource.getpagesize()
    space = size + limits["compare_mb"] * (1 << 20)
    resource.setrlimit(resource.RLIMIT_AS, (space, space))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def preload(modules) -> None:
    """Import in the worker what a comparison imported (of `PRELOADABLE`), so later forks have it."""
    import importlib

    for name in modules:
        if type(name) is str and name in PRELOADABLE and name not in sys.modules:
            try:
                importlib.import_module(name)
            except Exception:
                pass
