"""A warm sandbox worker: a clean interpreter that forks one isolated child per program.

Started by `agentgrpo.sandbox.pool` with an allowlisted environment. It never runs untrusted code itself:
each job is a fresh fork (so nothing a program does survives into the next one), supervised here for wall
time and output size, and summarised into a plain dict for the pool.

Protocol on stdin/stdout (JSON lines): first a config ``{"isolation", "hide", "scratch_mb"}``, answered by
``{"ready": true, "isolation": report}``; then one job ``{"program", "steps", "limits"}`` per line, each
answered by one result dict (see `agentgrpo.sandbox.supervise.summarize`).
"""

from __future__ import annotations

import os
import random
import signal
import sys

from agentgrpo.sandbox import harness, isolation, protocol
from agentgrpo.sandbox.rlimits import apply_rlimits, tasks_of
from agentgrpo.sandbox.supervise import summarize, supervise

_RESULT_FD = 3
WORKDIR = "/tmp/work"  # cwd and HOME of every program when /tmp is private


class Worker:
    """Runs jobs in one of three styles, the strongest the worker's isolation report allows:

    * "shared": PID namespace per job, scratch tmpfs and /proc set up once per worker, sandbox uid;
    * "private": PID and mount namespace per job, with its own scratch and /proc (user namespaces);
    * "basic": a process group per job and a work dir on the host's /tmp.
    """

    def __init__(self, report: dict, scratch_mb: int):
        self.report, self.scratch_mb = report, scratch_mb
        if report["pid_namespace"]:
            self.style = "shared" if report["sandbox_uid"] is not None else "private"
        else:
            self.style = "basic"
        self.base = None
        if self.style == "basic":
            import tempfile  # only here: the namespace styles keep the worker small

            self.base = tempfile.mkdtemp(prefix="agentgrpo-sandbox-")
            os.chmod(self.base, 0o711)  # the sandbox uid may enter its own job dir, not list the others
        self.count = 0

    def run(self, job: dict) -> dict:
        limits = job["limits"]
        steps = [(bool(t), s) for t, s in job["steps"]]
        compiled = harness.Compiled(job["program"], steps)
        nonce = os.urandom(16).hex()
        workdir = self._before(limits)
        pipes = [os.pipe() for _ in range(3)]  # stdout, stderr, results
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork() if self.style == "basic" else isolation.fork_in_new_pid_namespace()
        if pid == 0:
            self._child(compiled, limits, pipes, nonce, workdir)  # never returns
        for _, w in pipes:
            os.close(w)
        try:
            outcome = supervise(pid, [r for r, _ in pipes], limits, self._kill_tree)
        finally:
            self._after(workdir)
        return summarize(outcome, nonce, sum(1 for t, _ in steps if t), limits)

    def _before(self, limits: dict) -> str:
        """The job's (empty) work dir; in "private" style the child makes it in its own /tmp."""
        if self.style == "private":
            return WORKDIR
        if self.style == "shared":
            if limits["scratch_mb"] != self.scratch_mb:
                isolation.mount_scratch(limits["scratch_mb"], remount=True)
                self.scratch_mb = limits["scratch_mb"]
            os.mkdir(WORKDIR, 0o700)
            return WORKDIR
        self.count += 1
        path = os.path.join(self.base, f"job-{self.count}")
        os.mkdir(path, 0o700)
        return path

    def _after(self, workdir: str) -> None:
        if self.style == "shared":
            isolation.wipe_scratch()
        elif self.style == "basic":
            try:
                isolation.remove_tree(workdir)
            except OSError:  # a stray dir on the host's /tmp is better than a lost worker
                pass

    def _child(self, compiled, limits, pipes, nonce, workdir) -> None:
        try:
            _wire_fds(pipes)
            if self.style == "private":
                isolation.enter_job(limits["scratch_mb"])
                os.mkdir(workdir, 0o700)
            elif self.style == "basic":
                os.setsid()  # own process group, killed as a whole
            apply_rlimits(limits, self._nproc_base())
            isolation.drop_privileges(self.report, workdir)
            os.chdir(workdir)
            os.environ.update(HOME=workdir, TMPDIR="/tmp" if self.style != "basic" else workdir, PWD=workdir)
            random.seed(0)  # the same starting state in every worker
        except BaseException as exc:
            harness.sender(_RESULT_FD, nonce)({"kind": "setup_failed", "message": harness.describe(exc)})
            os._exit(70)
        harness.run(compiled, _RESULT_FD, nonce, block=self.report["network"].startswith("audit"))

    def _nproc_base(self) -> int:
        """Tasks that already count against RLIMIT_NPROC for the uid programs will run as."""
        if self.report["sandbox_uid"] is not None or self.style != "basic" or os.geteuid() == 0:
            return 0  # a uid of its own, or a user namespace (counted per namespace), or root (not limited)
        return tasks_of(os.geteuid())

    def _kill_tree(self, pid: int, reaped: bool) -> None:
        """Kill the program and everything it started."""
        if self.style != "basic":  # PID 1 of its namespace: once it is gone the kernel has killed the rest
            if not reaped:  # (after reaping, ``pid`` may already belong to someone else)
                _signal(os.kill, pid)
            return
        _signal(os.killpg, pid)  # a process group id is never reused while any member lives
        uid = self.report["sandbox_uid"]
        if uid is not None:  # processes that left the group (setsid) still run as the sandbox uid
            _kill_uid(uid)

    def close(self) -> None:
        if self.base:
            isolation.remove_tree(self.base)


def _wire_fds(pipes) -> None:
    (_, out_w), (_, err_w), (_, res_w) = pipes
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(out_w, 1)
    os.dup2(err_w, 2)
    os.dup2(devnull, 0)
    if res_w != _RESULT_FD:
        os.dup2(res_w, _RESULT_FD)
    os.closerange(_RESULT_FD + 1, os.sysconf("SC_OPEN_MAX"))  # the worker's protocol pipes included


def _signal(kill, pid: int) -> None:
    try:
        kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _kill_uid(uid: int) -> None:
    pid = os.fork()
    if pid == 0:
        try:
            isolation.drop_to(uid)
            os.kill(-1, signal.SIGKILL)  # every process of this uid but the caller
        except BaseException:
            pass
        os._exit(0)
    os.waitpid(pid, 0)


def main() -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C in the trainer's terminal is for the trainer
    reader = protocol.Reader(0)
    config = reader.recv(timeout=None)
    report = isolation.isolate_worker(config["isolation"], config["hide"], config["scratch_mb"])
    worker = Worker(report, config["scratch_mb"])
    protocol.send(1, {"ready": True, "isolation": report})
    try:
        while True:
            try:
                job = reader.recv(timeout=None)
                result = worker.run(job)
                protocol.send(1, result)
            except (protocol.ChannelClosed, BrokenPipeError):  # the pool closed us, or the trainer is gone
                return 0
    finally:
        worker.close()


if __name__ == "__main__":
    sys.exit(main())
