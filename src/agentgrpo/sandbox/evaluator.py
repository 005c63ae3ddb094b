"""The trusted comparison, in a process of its own: forked from the worker, limited per job, killed.

Everything the trusted side does with what a job sends — decoding its replies, rebuilding its values and
mirrors, running the tests against them — runs in a *comparison process*, a child of the worker
(`Evaluator`); the worker itself never decodes a job's data. The worker hands it each job (the job's
descriptors over a socket, `SCM_RIGHTS`) and waits for its outcome under the job's wall deadline. Per job
the comparison process has the job's limits: ``RLIMIT_CPU`` of its CPU time so far plus the job's
``cpu_s`` (the kernel's ``SIGXCPU`` ends it past that), ``RLIMIT_AS`` of its size when it started plus the
job's ``compare_mb`` (an allocation past it is a ``MemoryError``: the test that made it fails), and the
wall deadline, enforced by the worker with ``SIGKILL`` at the deadline plus `MARGIN_S` (a C-level loop —
``sum(range(10**18))``, a huge ``Fraction``, a set of colliding ``Decimal``s — never returns to Python for
a signal handler; a kill ends it wherever it is). A comparison process that was killed, or ended, is
replaced by a fresh fork of the worker for the next job; one that grew past `RECYCLE_MB` over its start
retires after its job. So whatever a job's values make the comparison do, it ends as that job's
``timeout`` or ``failed``, and the worker goes on unchanged.

It is kept from job to job (a fresh fork per job would cost each job the page copies of everything the
comparison touches, about 3.5 ms of CPU here, doubling a job's cost); what one job leaves in it is only
what the trusted code keeps (parsed tests, caches of the worker's own modules; each job's mirrors and
handles are dropped when the next begins), as in the worker before.

It streams each test's outcome as it ends (a comparison killed in test 3 keeps tests 1 and 2), then a
final summary: length-prefixed ``marshal`` frames written by trusted code from typed fields (outcome
words from `agentgrpo.sandbox.status`, capped text).
"""

from __future__ import annotations

import marshal
import math
import os
import resource
import select
import signal
import socket
import sys
import time

from agentgrpo.sandbox.rlimits import cpu_seconds

MARGIN_S = 3.0  # past the job's wall deadline: the comparison's own SIGALRM comes at +1 s, the kill at +3 s
RECYCLE_MB = 256  # a comparison process grown this much past its start retires after its job
_MEMORY_EXIT = 71  # the comparison ran out of its address space outside any test
_CRASH_EXIT = 72  # an unexpected exception in the comparison's own code
_FDS = 8  # descriptors handed over with one job, at most
# modules a comparison may import that the worker then imports too, so that a replacement has them
PRELOADABLE = frozenset({"fractions", "decimal", "datetime", "collections", "numpy", "math", "cmath", "statistics",
                         "itertools", "functools", "heapq", "bisect", "re", "string", "operator", "random", "copy",
                         "dataclasses", "enum", "json", "array", "typing"})
_BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


class Ended:
    """How one job's comparison ended, as the worker saw it: the streamed ``tests`` {index: (outcome,
    message)}, the ``final`` summary (None if it did not finish), and why not: ``killed`` (at the wall
    deadline), ``cpu`` (past its CPU limit), ``memory`` (out of its address space), ``crash`` (text)."""

    __slots__ = ("tests", "final", "killed", "cpu", "memory", "crash", "duration", "unsent")

    def __init__(self):
        self.tests, self.final = {}, None
        self.killed = self.cpu = self.memory = self.unsent = False
        self.crash, self.duration = "", 0.0


class Evaluator:
    """The worker's handle on its comparison process. ``serve(job, fds, report) -> dict`` runs in the child
    for each job (``report(index, outcome, message)`` streams a test's outcome)."""

    def __init__(self, serve):
        for name in _BLAS_THREADS:  # numerical libraries a test imports: one thread (the job never sees this)
            os.environ.setdefault(name, "1")
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.pid = os.fork()
        if self.pid == 0:  # the comparison process: never returns
            mine.close()
            _serve(theirs, serve)
        theirs.close()
        self.sock = mine
        self._buffer = bytearray()

    def run(self, job: dict, fds: list[int], deadline: float) -> Ended:
        """Hand the comparison process one job (its descriptors too) and collect its outcome; kill it at
        ``deadline`` + `MARGIN_S` (a ``time.monotonic()`` time). After an `Ended` without ``final`` the
        process is gone (`alive` is False)."""
        start = time.monotonic()
        ended = Ended()
        data = marshal.dumps(job)
        try:
            socket.send_fds(self.sock, [len(data).to_bytes(8, "big")], fds)
            self.sock.sendall(data)
        except OSError:  # it was gone before the job reached it (nothing of this job ran there)
            self._end(ended, killed=False)
            ended.unsent = True
            ended.duration = time.monotonic() - start
            return ended
        poll = select.poll()
        poll.register(self.sock, select.POLLIN)
        hard = deadline + MARGIN_S
        while ended.final is None:
            left = hard - time.monotonic()
            if left <= 0:
                self._end(ended, killed=True)
                break
            if not poll.poll(max(1, int(left * 1000))):
                continue
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                self._end(ended, killed=False)
                break
            self._buffer += chunk
            self._frames(ended)
        if ended.final is not None and ended.final.get("retire"):
            self.close()
        ended.duration = time.monotonic() - start
        return ended

    @property
    def alive(self) -> bool:
        return self.sock is not None

    def _frames(self, ended: Ended) -> None:
        buffer = self._buffer
        while len(buffer) >= 4 and ended.final is None:
            size = int.from_bytes(buffer[:4], "big")
            if len(buffer) < 4 + size:
                return
            message = marshal.loads(bytes(buffer[4 : 4 + size]))
            del buffer[: 4 + size]
            if message[0] == "test":
                ended.tests[message[1]] = (message[2], message[3])
            elif message[0] == "final":
                ended.final = message[1]

    def _end(self, ended: Ended, killed: bool) -> None:
        """The comparison did not finish: kill the process (at the deadline) or see how it ended."""
        if killed:
            os.kill(self.pid, signal.SIGKILL)
            ended.killed = True
        status = self._reap()
        if not killed:
            signum = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
            code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
            if signum == signal.SIGXCPU:
                ended.cpu = True
            elif code == _MEMORY_EXIT:
                ended.memory = True
            elif signum is not None:
                ended.crash = f"the trusted comparison process was killed by signal {signum}"
            else:
                ended.crash = f"the trusted comparison process exited with code {code}"

    def _reap(self) -> int:
        self.sock.close()
        self.sock = None
        try:
            return os.waitpid(self.pid, 0)[1]
        except ChildProcessError:
            return 0

    def close(self) -> None:
        if self.sock is None:
            return
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self._reap()


def _serve(sock: socket.socket, serve) -> None:
    """The comparison process's loop: one job at a time, each under its own limits."""
    code = 0
    try:
        base = _size()
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        while True:
            header, fds, _, _ = socket.recv_fds(sock, 8, _FDS)
            if len(header) < 8:
                break  # the worker is done with us
            job = marshal.loads(_recv_exact(sock, int.from_bytes(header, "big")))
            _limit(job["limits"], base)
            before = set(sys.modules)

            def send(message) -> None:
                data = marshal.dumps(message)
                sock.sendall(len(data).to_bytes(4, "big") + data)

            def report(index: int, outcome: str, message: str) -> None:
                send(("test", index, outcome, message))

            final = serve(job, fds, report)
            final["modules"] = sorted({m.partition(".")[0] for m in set(sys.modules) - before} & PRELOADABLE)
            final["retire"] = _size() > base + RECYCLE_MB * (1 << 20)
            send(("final", final))
            if final["retire"]:
                break
    except MemoryError:
        code = _MEMORY_EXIT
    except BaseException:
        code = _CRASH_EXIT
    os._exit(code)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    chunks, got = [], 0
    while got < n:
        chunk = sock.recv(min(n - got, 1 << 20))
        if not chunk:
            os._exit(0)
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _size() -> int:
    with open("/proc/self/statm", "rb") as fh:
        return int(fh.read().split()[0]) * resource.getpagesize()


def _limit(limits: dict, base: int) -> None:
    """This job's limits on the comparison process (soft limits: the kernel enforces those, and the next job
    sets its own): CPU time so far plus ``cpu_s``; the address space at the start plus ``compare_mb``."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    spent = math.ceil(usage.ru_utime + usage.ru_stime)
    for which, soft in ((resource.RLIMIT_CPU, spent + cpu_seconds(limits)),
                        (resource.RLIMIT_AS, base + limits["compare_mb"] * (1 << 20))):
        hard = resource.getrlimit(which)[1]
        resource.setrlimit(which, (soft if hard == resource.RLIM_INFINITY else min(soft, hard), hard))


def preload(modules) -> None:
    """Import in the worker what a comparison imported (of `PRELOADABLE`), so a replacement has it."""
    import importlib

    for variable in _BLAS_THREADS:  # (the job template was forked long before: jobs never see these)
        os.environ.setdefault(variable, "1")
    for name in modules:
        if type(name) is str and name in PRELOADABLE and name not in sys.modules:
            try:
                importlib.import_module(name)
            except Exception:
                pass
