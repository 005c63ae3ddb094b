"""The job template: a process forked from the worker before any job data arrived, that forks each job.

So every job starts from memory that never held another job's program, tests or expected values (the
worker, which does hold them, never forks a job). The worker sends the template only a job's limits and
uid with the job's pipe ends (``SCM_RIGHTS``); the template forks the job (in a new PID namespace where
available), hands the worker a pidfd for it, reaps it and reports the wait status and CPU time. The job
itself then reads its program from its request pipe, after every limit, namespace and filter is in force,
and compiles it there.
"""

from __future__ import annotations

import fcntl
import marshal
import os
import random
import select
import signal
import socket

from agentgrpo.sandbox import harness, isolation, linux
from agentgrpo.sandbox.rlimits import apply_rlimits, tasks_of

_MAX_MESSAGE = 1 << 16


class Template:
    """The worker's handle on its template process."""

    def __init__(self, report: dict, bpf: bytes | None):
        self.report, self.bpf = report, bpf
        keep = [p for p in isolation.keep_paths() if p.startswith("/tmp/")]
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.pid = os.fork()
        if self.pid == 0:
            try:
                mine.close()
                linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)  # the worker's death ends the template
                _serve(theirs, report, bpf, keep)
            finally:
                os._exit(0)
        theirs.close()
        self.sock = mine
        self._statuses: dict[int, dict] = {}
        self._ignored: set[int] = set()

    def spawn(self, spec: dict, fds: list[int]) -> tuple[int, int]:
        """Start a job with ``fds`` (stdout, stderr, request read end, reply write end): (pid, pidfd)."""
        socket.send_fds(self.sock, [marshal.dumps(spec)], fds)
        while True:
            message, got = self._next()
            if message.get("kind") == "pid":
                if not got:
                    raise OSError("the job template sent no pidfd")
                return message["pid"], got[0]

    def wait(self, pid: int) -> tuple[int, float]:
        """The job's wait status and CPU seconds, once the template has reaped it."""
        while pid not in self._statuses:
            self._next()
        message = self._statuses.pop(pid)
        return message["status"], message["cpu_s"]

    def forget(self, pid: int) -> None:
        """The job's exit status is not needed: drop it whenever it comes."""
        if self._statuses.pop(pid, None) is None:
            self._ignored.add(pid)

    def _next(self) -> tuple[dict, list[int]]:
        data, got, _, _ = socket.recv_fds(self.sock, _MAX_MESSAGE, 1)
        if not data:
            raise OSError("the job template is gone")
        message = marshal.loads(data)
        if message.get("kind") == "status":
            if message["pid"] in self._ignored:
                self._ignored.discard(message["pid"])
            else:
                self._statuses[message["pid"]] = message
        return message, got

    def close(self) -> None:
        self.sock.close()
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass


def _serve(sock: socket.socket, report: dict, bpf: bytes | None, keep: list) -> None:
    """Hand each request to a job process prepared in advance (its namespaces and scratch already set up,
    before any job data existed), prepare the next one, and report each job's exit as it comes."""
    poller, children, spare = select.poll(), {}, None  # children: pidfd -> pid
    poller.register(sock.fileno(), select.POLLIN)
    while True:
        for fd, _ in poller.poll():
            if fd != sock.fileno():
                pid = children.pop(fd)
                poller.unregister(fd)
                os.close(fd)
                _, status, usage = os.wait4(pid, 0)
                cpu_s = usage.ru_utime + usage.ru_stime
                sock.send(marshal.dumps({"kind": "status", "pid": pid, "status": status, "cpu_s": cpu_s}))
                continue
            try:
                data, fds, _, _ = socket.recv_fds(sock, _MAX_MESSAGE, 8)
            except OSError:
                return
            if not data:
                return  # the worker is gone
            spec = marshal.loads(data)
            scratch_mb = spec["limits"]["scratch_mb"]
            if spare is not None and spare[3] != scratch_mb:  # prepared for another size: start afresh
                _discard(spare)
                spare = None
            pid, pidfd, channel, _ = spare or _prepare(sock, report, bpf, keep, scratch_mb)
            socket.send_fds(channel, [data], fds)
            channel.close()
            for child_fd in fds:
                os.close(child_fd)
            children[pidfd] = pid
            poller.register(pidfd, select.POLLIN)
            socket.send_fds(sock, [marshal.dumps({"kind": "pid", "pid": pid})], [pidfd])
            spare = _prepare(sock, report, bpf, keep, scratch_mb)


def _prepare(sock, report: dict, bpf: bytes | None, keep: list, scratch_mb: int):
    """Fork the next job process; it isolates itself and waits for its spec: (pid, pidfd, its channel)."""
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    pid = isolation.fork_in_new_pid_namespace() if report["pid_namespace"] else os.fork()
    if pid == 0:
        sock.close()
        mine.close()
        _job(theirs, report, bpf, keep, scratch_mb)  # never returns
    theirs.close()
    return pid, os.pidfd_open(pid), mine, scratch_mb


def _discard(spare) -> None:
    pid, pidfd, channel, _ = spare
    channel.close()
    signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    os.waitpid(pid, 0)
    os.close(pidfd)


def _job(channel: socket.socket, report: dict, bpf: bytes | None, keep: list, scratch_mb: int) -> None:
    """The job process: isolate and filter itself, wait for the spec, limit itself, then serve the program
    (never returns). Everything up to the filter happens before the job's data exists."""
    problem = None
    try:
        linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)  # the template's death ends a waiting job
        if report["pid_namespace"]:
            isolation.enter_job(scratch_mb, keep)
        try:
            linux.join_new_session_keyring()
        except OSError:
            pass  # the worker's keyring is already a fresh, empty one
        linux.prctl(linux.PR_SET_NO_NEW_PRIVS, 1)
        if bpf:
            linux.install_seccomp(bpf)  # from here on no mount, namespace, keyring, socket, ... for this process
    except BaseException as exc:
        problem = exc
    try:
        data, fds, _, _ = socket.recv_fds(channel, _MAX_MESSAGE, 8)
    except OSError:
        os._exit(0)
    if not data or len(fds) != 4:
        os._exit(0)
    channel.close()
    spec = marshal.loads(data)
    limits, uid, workdir = spec["limits"], spec["uid"], spec["workdir"]
    reply_fd = fds[3]  # until the descriptors are wired
    try:
        if problem is not None:
            raise problem
        if not report["pid_namespace"]:
            os.setsid()  # its own process group, killed as a whole
            os.mkdir(workdir, 0o700)
        _wire_fds(fds)
        reply_fd = harness.REPLY_FD
        apply_rlimits(limits, _nproc_base(report, uid))
        isolation.drop_privileges(report["mode"], uid, workdir)
        os.chdir(workdir)
        os.environ.update(HOME=workdir, TMPDIR="/tmp" if report["pid_namespace"] else workdir, PWD=workdir)
        random.seed(0)  # the same starting state in every job
    except BaseException as exc:
        try:
            data = harness.wire.encode(("setup_failed", harness.describe(exc)))
            os.write(reply_fd, len(data).to_bytes(4, "big") + data)
        finally:
            os._exit(70)
    harness.serve(not report["pid_namespace"], limits["value_bytes"])


def _wire_fds(fds: list[int]) -> None:
    """stdin from /dev/null, stdout, stderr, requests on 3, replies on 4; every other descriptor closed."""
    devnull = os.open(os.devnull, os.O_RDONLY)
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (devnull, *fds)]  # no dup2 clobbers a source
    for target, fd in enumerate(high):
        os.dup2(fd, target)
    os.closerange(harness.REPLY_FD + 1, os.sysconf("SC_OPEN_MAX"))


def _nproc_base(report: dict, uid: int | None) -> int:
    """Tasks that already count against RLIMIT_NPROC for the uid programs will run as."""
    if uid is not None or report["pid_namespace"] or os.geteuid() == 0:
        return 0  # a uid of its own, or a user namespace (counted per namespace), or root (not limited)
    return tasks_of(os.geteuid())
