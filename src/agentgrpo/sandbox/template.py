"""The job template: a process forked from the worker before any job data arrived, that forks each job.

So every job starts from memory that never held another job's program, tests or expected values (the
worker, which does hold them, never forks a job). The template prepares job processes in advance (forked
into a new PID namespace where available, namespaces, scratch and seccomp filter set up) and hands each
to the worker: a pidfd and the worker's ends of the job's four pipes (stdout, stderr, requests, replies),
created with the job before it existed. The worker's first message (`first_message`) is the job's spec
(its limits and uid) with its first request (the program); the job reads it, after every namespace and
the filter are in force, limits itself, then compiles and runs the program. The template reaps the jobs:
those the worker forgot whenever they have exited, the others when asked (wait status and CPU time).

Each fork makes every page of the template copy-on-write for as long as the child lives, and on this
path each page the template or a fresh job writes costs a page copy: the loop below and the job's setup
are kept to few objects and calls (no socket pair per job, small binary messages, the loop and the
setup's system calls in C, `agentgrpo.sandbox._native`, the hostname and a /dev/null
descriptor set up once here), and the job's code paths are run here once before the first fork
(`_warm_up`), so no job re-does that work on its own pages.
"""

from __future__ import annotations

import gc
import marshal
import os
import random
import select
import signal
import socket

from agentgrpo.sandbox import harness, isolation, linux, rlimits, wire

_MAX_MESSAGE = 1 << 16  # a message on the template's socket
_SPARE, _STATUS = b"S", b"W"  # requests and answers: a job process (+ fds), a wait status
_MAX_FORGET = 1000  # forgotten jobs named in one request (4 bytes each; the C loop reads 4 KiB at most)
_FDS_PER_SPARE = 5  # pidfd, then the worker's ends: stdout, stderr (read), requests (write), replies (read)


class Template:
    """The worker's handle on its template process."""

    def __init__(self, report: dict, bpf: bytes | tuple | None, in_cgroup: bool = False):
        """``bpf``: the job's seccomp filter, or a pair (with socket pairs, without): the template takes the
        first only once it sees itself in the job cgroup (see `_choose_filter`)."""
        self.report, self.bpf = report, bpf
        keep = [p for p in isolation.keep_paths() if p.startswith("/tmp/")]
        worker_cgroup = _own_cgroup()
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.pid = os.fork()
        if self.pid == 0:
            try:
                mine.close()
                linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)  # the worker's death ends the template
                _serve(theirs, report, bpf, keep, in_cgroup, worker_cgroup)
            finally:
                os._exit(0)
        theirs.close()
        self.sock = mine
        self._statuses: dict[int, tuple] = {}  # pid -> (wait status, CPU seconds), as the template sent them
        self._forget: list[int] = []  # jobs whose exit status is not needed: sent with the next request
        self._spare = None  # (pid, scratch_mb, [pidfd, out_r, err_r, req_w, rep_r]): the next job process
        self._asked = False  # a spare is being prepared

    def spawn(self, scratch_mb: int) -> tuple[int, int, list[int]]:
        """A job process with ``scratch_mb`` of scratch: (pid, pidfd, [stdout, stderr, requests, replies]),
        the worker's ends of its pipes. It waits for `first_message` on the request pipe.

        The job process was prepared in advance by the template; the template is asked (without waiting)
        to prepare the next one.
        """
        while True:
            if self._spare is None and not self._asked:
                self._request(_SPARE, scratch_mb)
            while self._spare is None:
                self._next()
            pid, prepared_mb, fds = self._spare
            self._spare = None
            if prepared_mb == scratch_mb:
                break
            for fd in fds:  # prepared for another scratch size: it reads end-of-file and exits, unused
                os.close(fd)
            self.forget(pid)
        self._request(_SPARE, scratch_mb)
        return pid, fds[0], fds[1:]

    def _request(self, kind: bytes, value: int) -> None:
        forget, self._forget = self._forget[:_MAX_FORGET], self._forget[_MAX_FORGET:]
        self.sock.send(kind + value.to_bytes(4, "big") + b"".join(pid.to_bytes(4, "big") for pid in forget))
        if kind == _SPARE:
            self._asked = True

    def wait(self, pid: int) -> tuple[int, float]:
        """The job's wait status and CPU seconds: the template reaps it (it has exited or been killed)."""
        self._request(_STATUS, pid)
        while pid not in self._statuses:
            self._next()
        return self._statuses.pop(pid)

    def forget(self, pid: int) -> None:
        """The job's exit status is not needed: the template reaps it whenever it has exited."""
        self._forget.append(pid)

    def _next(self) -> None:
        data, got, _, _ = socket.recv_fds(self.sock, _MAX_MESSAGE, _FDS_PER_SPARE)
        if not data:
            raise OSError("the job template is gone")
        if data[:1] == _SPARE and len(data) == 9 and len(got) == _FDS_PER_SPARE:
            self._spare = (int.from_bytes(data[5:9], "big"), int.from_bytes(data[1:5], "big"), got)
            self._asked = False
            return
        for fd in got:
            os.close(fd)
        if data[:1] == _STATUS and len(data) == 17 and not got:
            status = int.from_bytes(data[5:9], "big", signed=True)
            self._statuses[int.from_bytes(data[1:5], "big")] = (status, int.from_bytes(data[9:17], "big") / 1e6)
            return
        raise OSError("the job template sent a malformed message")

    def close(self) -> None:
        self.sock.close()
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass


def _serve(sock: socket.socket, report: dict, bpf, keep: list, in_cgroup: bool, worker_cgroup: str = "") -> None:
    """Prepare job processes on request (namespaces, scratch and filter set up before any job data exists)
    and hand each to the worker; reap them (report the exit status of those the worker waits for).

    Requests: `_SPARE` + scratch_mb or `_STATUS` + pid (4 bytes), then the pids of jobs whose status the
    worker does not need. The loop is ``serve_template`` in _native.c (after each fork, every page a Python
    loop writes would be a page copy)."""
    if report["pid_namespace"]:  # the same in every job: set once here, not in each job
        os.environ.update(HOME=isolation.WORKDIR, TMPDIR="/tmp", PWD=isolation.WORKDIR)
        linux.unshare(linux.CLONE_NEWUTS)  # each job's own UTS namespace starts as a copy of this one
        linux.sethostname(b"sandbox")
    linux.prctl(linux.PR_SET_NO_NEW_PRIVS, 1)  # inherited by every job: no privilege gained by exec, ever
    devnull = os.open(os.devnull, os.O_RDONLY)  # every job's stdin
    keep = tuple(os.fsencode(p) for p in keep)
    _warm_up()
    gc.collect()
    gc.freeze()  # jobs' collections skip the template's objects: no copy-on-write of their pages per job
    # this process is PID 1 of the worker's PID namespace: each job becomes PID 1 of one nested in it
    own = isolation.own_pid_namespace() if report["pid_namespace"] else -1
    bpf = _choose_filter(sock, bpf, in_cgroup, worker_cgroup)
    started = isolation.native().serve_template(sock.fileno(), own)
    if started is not None:  # a new job process
        _, ends, scratch_mb = started
        _job((devnull, *ends), report, bpf, keep, scratch_mb, in_cgroup)  # never returns


def _own_cgroup() -> str:
    try:
        with open("/proc/self/cgroup") as fh:
            return fh.read()
    except OSError:
        return ""


def _choose_filter(sock: socket.socket, bpf, in_cgroup: bool, worker_cgroup: str) -> bytes | None:
    """The filter every job of this template gets. Of a pair (with socket pairs, without), the first only
    where the jobs' memory cgroup holds their socket buffers: the kernel charges unix-socket buffers to the
    memory cgroup, never to RLIMIT_AS, so without one a job's pairs could hold gigabytes
    (tests/test_sandbox_allowlist.py). The worker moves this process into the job cgroup before its first
    request, so the choice waits for that request and checks that it really moved."""
    if not isinstance(bpf, tuple):
        return bpf
    with_pairs, without = bpf
    if not in_cgroup:
        return without
    select.select([sock], [], [])  # the worker's first request: it has moved us, or failed to
    return with_pairs if _own_cgroup() not in ("", worker_cgroup) else without


def _warm_up() -> None:
    """Run the job's own code paths here, before the first fork, until the interpreter has specialised
    them: done once here, not again on each job's pages."""
    messages = [
        ("program", "def f(x):\n    return x", "trusted", None, ["f"], [[("f", [1, 2], {})]]),
        ("ready", [("value", 1), ("missing",), ("module", "math", None)]),
        ("group", [("ok", [1, 2, "a"], [None, None]), ("raise", "ValueError", "x")]),
        ("ok", {"a": 1.5, "b": (True, b"x", None, 2**70)}, [None]),
        ("end",),
    ]
    for _ in range(10):  # CPython 3.11 specialises a function's code after 8 calls
        for message in messages:
            wire.decode(wire.encode(message, lambda obj: wire.Handle(1, "function")))
        try:
            raise ValueError("x")
        except ValueError as exc:
            harness.describe(exc)
            harness._builtin_base(exc)
        harness._load("f", {"f": len})
        harness._prefetch([("f", ([1],), {})], {"f": len})


def _job(fds: tuple, report: dict, bpf: bytes | None, keep: tuple, scratch_mb: int, in_cgroup: bool) -> None:
    """The job process: isolate and filter itself, wait for its first message, limit itself, then serve
    the program (never returns). Everything up to the filter happens before the job's data exists.
    ``fds``: /dev/null and the job's ends of its pipes (stdout, stderr, requests, replies)."""
    problem = None
    try:
        # the template shares the jobs' cgroup: the OOM killer must take a job process first (raising
        # oom_score_adj needs no privilege; the job's children inherit it)
        isolation.enter_job(scratch_mb, keep, report["pid_namespace"], in_cgroup, bpf)
        if bpf is None:  # with the filter no keyring call is possible: the worker's empty one stays empty
            try:
                linux.join_new_session_keyring()
            except OSError:
                pass  # the worker's keyring is already a fresh, empty one
    except BaseException as exc:
        problem = exc
    spec, request = _read_first(fds[3])  # end-of-file: this spare is not needed
    reply_fd = fds[4]  # until the descriptors are wired
    try:
        if problem is not None:
            raise problem
        uid, workdir = spec["uid"], spec["workdir"]
        if not report["pid_namespace"]:  # (its own session and process group: set up in enter_job)
            os.mkdir(workdir, 0o700)
        isolation.wire_fds(fds)
        reply_fd = harness.REPLY_FD
        limits = spec["rlimits"]
        if not report["pid_namespace"]:  # where programs may share the trainer's uid
            limits = rlimits.table(spec["limits"], _nproc_base(report, uid))
        isolation.limit_job(limits, report["mode"], uid, workdir)
        if not report["pid_namespace"]:  # in the namespace modes the template set these once
            os.environ.update(HOME=workdir, TMPDIR=workdir, PWD=workdir)
        random.seed(0)  # the same starting state in every job
    except BaseException as exc:
        try:
            data = wire.encode(("setup_failed", harness.describe(exc)))
            os.write(reply_fd, len(data).to_bytes(4, "big") + data)
        finally:
            os._exit(70)
    harness.serve(request, not report["pid_namespace"], spec["limits"]["value_bytes"])


def first_message(limits: dict, uid: int | None, workdir: str, request: tuple) -> bytes:
    """The worker's first message to a job (a frame): its spec and its first request, the program (both
    from the trusted side, so marshal; the program is only data until the job has limited itself)."""
    spec = {"limits": limits, "rlimits": rlimits.table(limits), "uid": uid, "workdir": workdir}
    data = marshal.dumps((spec, request), 2)  # version 2: no back-references, fewer pages for the job to write
    return len(data).to_bytes(4, "big") + data


def _read_first(fd: int) -> tuple[dict, tuple]:
    """The worker's first message (see `first_message`); the process exits quietly if none comes."""
    try:
        size = int.from_bytes(harness.read_exact(4, fd), "big")
        if size > harness.MAX_REQUEST:
            os._exit(0)
        return marshal.loads(harness.read_exact(size, fd))
    except (OSError, EOFError, ValueError, TypeError):
        os._exit(0)


def _nproc_base(report: dict, uid: int | None) -> int:
    """Tasks that already count against RLIMIT_NPROC for the uid programs will run as."""
    if uid is not None or report["pid_namespace"] or os.geteuid() == 0:
        return 0  # a uid of its own, or a user namespace (counted per namespace), or root (not limited)
    return rlimits.tasks_of(os.geteuid())
