"""The job template: a process forked from the worker before any job data arrived, that forks each job.

So every job starts from memory that never held another job's program, tests or expected values (the
worker, which does hold them, never forks a job). The template prepares job processes in advance (forked
into a new PID namespace where available, namespaces, scratch and seccomp filter set up) and hands each
to the worker with a pidfd and a channel; the worker sends it only its limits, uid and pipe ends
(``SCM_RIGHTS``). The template reaps them and reports wait status and CPU time. The job itself then reads
its program from its request pipe, after every limit, namespace and filter is in force, and compiles it
there.
"""

from __future__ import annotations

import fcntl
import gc
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

    def __init__(self, report: dict, bpf: bytes | None, in_cgroup: bool = False):
        self.report, self.bpf = report, bpf
        keep = [p for p in isolation.keep_paths() if p.startswith("/tmp/")]
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.pid = os.fork()
        if self.pid == 0:
            try:
                mine.close()
                linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)  # the worker's death ends the template
                _serve(theirs, report, bpf, keep, in_cgroup)
            finally:
                os._exit(0)
        theirs.close()
        self.sock = mine
        self._statuses: dict[int, dict] = {}
        self._ignored: set[int] = set()
        self._spare = None  # (pid, pidfd, channel, scratch_mb): the next job process, waiting for its spec
        self._asked = False  # a spare is being prepared

    def spawn(self, spec: dict, fds: list[int]) -> tuple[int, int]:
        """Start a job with ``fds`` (stdout, stderr, request read end, reply write end): (pid, pidfd).

        The job process was prepared in advance by the template; the spec and descriptors go to it
        directly, and the template is asked (without waiting) to prepare the next one.
        """
        scratch_mb = spec["limits"]["scratch_mb"]
        while True:
            if self._spare is None and not self._asked:
                self._ask(scratch_mb)
            while self._spare is None:
                self._next()
            pid, pidfd, channel, prepared_mb = self._spare
            self._spare = None
            if prepared_mb == scratch_mb:
                break
            channel.close()  # prepared for another scratch size: it exits, unused
            os.close(pidfd)
            self.forget(pid)
        socket.send_fds(channel, [marshal.dumps(spec)], fds)
        channel.close()
        self._ask(scratch_mb)
        return pid, pidfd

    def _ask(self, scratch_mb: int) -> None:
        self.sock.send(marshal.dumps({"kind": "prepare", "scratch_mb": scratch_mb}))
        self._asked = True

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
        data, got, _, _ = socket.recv_fds(self.sock, _MAX_MESSAGE, 2)
        if not data:
            raise OSError("the job template is gone")
        message = marshal.loads(data)
        if message.get("kind") == "spare":
            if len(got) != 2:
                raise OSError("the job template sent an incomplete job process")
            channel = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET, fileno=got[1])
            self._spare, self._asked = (message["pid"], got[0], channel, message["scratch_mb"]), False
        elif message.get("kind") == "status":
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


def _serve(sock: socket.socket, report: dict, bpf: bytes | None, keep: list, in_cgroup: bool) -> None:
    """Prepare job processes on request (namespaces, scratch and filter set up before any job data exists)
    and hand each to the worker; report each process's exit as it comes."""
    if report["pid_namespace"]:  # the same in every job: set once here, not in each job
        os.environ.update(HOME=isolation.WORKDIR, TMPDIR="/tmp", PWD=isolation.WORKDIR)
    program = linux.SeccompProgram(bpf) if bpf else None
    gc.collect()
    gc.freeze()  # jobs' collections skip the template's objects: no copy-on-write of their pages per job
    poller, children = select.poll(), {}  # children: pidfd -> pid
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
                data = sock.recv(_MAX_MESSAGE)
            except OSError:
                return
            if not data:
                return  # the worker is gone
            scratch_mb = marshal.loads(data)["scratch_mb"]
            pid, pidfd, channel, _ = _prepare(sock, report, program, keep, scratch_mb, in_cgroup)
            children[pidfd] = pid
            poller.register(pidfd, select.POLLIN)
            message = {"kind": "spare", "pid": pid, "scratch_mb": scratch_mb}
            socket.send_fds(sock, [marshal.dumps(message)], [pidfd, channel.fileno()])
            channel.close()


def _prepare(sock, report: dict, program: linux.SeccompProgram | None, keep: list, scratch_mb: int, in_cgroup: bool):
    """Fork the next job process; it isolates itself and waits for its spec: (pid, pidfd, its channel)."""
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    pid = isolation.fork_in_new_pid_namespace() if report["pid_namespace"] else os.fork()
    if pid == 0:
        sock.close()
        mine.close()
        _job(theirs, report, program, keep, scratch_mb, in_cgroup)  # never returns
    theirs.close()
    return pid, os.pidfd_open(pid), mine, scratch_mb


def _job(channel: socket.socket, report: dict, program, keep: list, scratch_mb: int, in_cgroup: bool) -> None:
    """The job process: isolate and filter itself, wait for the spec, limit itself, then serve the program
    (never returns). Everything up to the filter happens before the job's data exists."""
    problem = None
    try:
        linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)  # the template's death ends a waiting job
        if report["pid_namespace"]:
            isolation.enter_job(scratch_mb, keep)
        if in_cgroup:  # the template shares the jobs' cgroup: the OOM killer must take a job process first
            oom_score_adj(1000)  # (raising needs no privilege; the job's children inherit it)
        if program is None:  # with the filter no keyring call is possible: the worker's empty one stays empty
            try:
                linux.join_new_session_keyring()
            except OSError:
                pass  # the worker's keyring is already a fresh, empty one
        linux.prctl(linux.PR_SET_NO_NEW_PRIVS, 1)
        if program is not None:
            program.install()  # from here on no mount, namespace, keyring, socket, ... for this process
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
        if not report["pid_namespace"]:  # in the namespace modes the template set these once
            os.environ.update(HOME=workdir, TMPDIR=workdir, PWD=workdir)
        random.seed(0)  # the same starting state in every job
    except BaseException as exc:
        try:
            data = harness.wire.encode(("setup_failed", harness.describe(exc)))
            os.write(reply_fd, len(data).to_bytes(4, "big") + data)
        finally:
            os._exit(70)
    harness.serve(not report["pid_namespace"], limits["value_bytes"])


def oom_score_adj(value: int) -> None:
    """Set this process's OOM-killer adjustment (1000: chosen first; 0: the default)."""
    fd = os.open("/proc/self/oom_score_adj", os.O_WRONLY)
    try:
        os.write(fd, str(value).encode())
    finally:
        os.close(fd)


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
