"""The worker's side of one job: its channel, its output caps, its deadline; then the verdict fields.

`Session` talks to the job over pipes and watches it through a pidfd: every wait also drains stdout and
stderr (capped), enforces the wall-clock deadline and notices the job's exit. Stops (SIGSTOP, ptrace
stops) are not exits: a stopped job just runs into its deadline and is killed. Whatever the job sends is
decoded strictly (`agentgrpo.sandbox.wire`); a malformed or oversized reply kills it. The status is
decided here, from what the worker saw, never from what the job says about itself.
"""

from __future__ import annotations

import os
import select
import signal
import time

from agentgrpo.sandbox import status as V
from agentgrpo.sandbox import trusted, wire
from agentgrpo.sandbox.rlimits import cpu_seconds

_GRACE_S = 1.0  # after the last test: how long the job may take to flush its output and exit

# Why a job is out of reach (`Session.gone`): a fixed vocabulary set by the worker's own control flow; the
# detail (`Session.detail`) is text for the reason only, never read to decide a status.
EXITED, TIMEOUT, STDOUT, STDERR, CHANNEL, SETUP = "exited", "timeout", "stdout", "stderr", "channel", "setup"


class Session:
    def __init__(self, pidfd: int, fds: list[int], request_fd: int, limits: dict, kill):
        self.pidfd, self.request_fd, self.limits, self._kill = pidfd, request_fd, limits, kill
        self.out_fd, self.err_fd, self.reply_fd = fds
        self.start = time.monotonic()
        self.deadline = self.start + limits["wall_s"]
        self.streams, self.truncated = [bytearray(), bytearray()], [False, False]
        self.replies, self.pending = bytearray(), bytearray()
        self.gone = ""  # why the job is out of reach: one of EXITED, TIMEOUT, STDOUT, STDERR, CHANNEL, SETUP
        self.detail = ""  # for CHANNEL: what the job did (text for the reason, never parsed)
        self.exited = False
        self.unsplittable: list[str] = []
        self.test_output = ""
        self.prefetched: list = []
        self.groups: list = []
        self.reply_cap = limits["value_bytes"] + 4096
        self._open = {self.out_fd, self.err_fd, self.reply_fd}
        self._poll = select.poll()
        for fd in fds:
            os.set_blocking(fd, False)
        for fd in (*fds, pidfd):
            self._poll.register(fd, select.POLLIN)
        os.set_blocking(request_fd, False)

    # messages -----------------------------------------------------------------------------------------
    def send(self, message: tuple) -> None:
        if self.gone:
            raise trusted.JobGone(self.gone)
        try:
            data = wire.encode(message, trusted.to_handle, max_bytes=64 << 20)
        except trusted.Unsplittable as exc:
            self.unsplittable.append(str(exc))
            raise
        except wire.WireError as exc:
            raise ValueError(f"the test's value cannot be sent to the program: {exc}") from None
        self.send_frame(len(data).to_bytes(4, "big") + data)

    def send_frame(self, frame: bytes) -> None:
        """Queue an encoded frame for the job; what the pipe takes now is written at once."""
        if self.gone:
            raise trusted.JobGone(self.gone)
        queued = bool(self.pending)
        self.pending += frame
        if not queued:
            self._write_pending(select.POLLOUT, registered=False)

    def receive(self) -> tuple:
        """The job's next reply (decoded strictly); `trusted.JobGone` if it cannot come."""
        while True:
            frame = self._frame()
            if frame is not None:
                try:
                    reply = wire.decode(frame, max_bytes=self.reply_cap)
                    if type(reply) is not tuple or not reply or type(reply[0]) is not str:
                        raise wire.WireError("a reply must be a tuple starting with its kind")
                    if reply[0] == "fields" and len(reply) == 2:  # new snapshots of dataclass objects' fields
                        trusted.update_fields(reply[1], self)
                        continue
                    return reply
                except wire.WireError as exc:
                    self.stop(CHANNEL, f"the job sent a malformed reply ({exc})")
            if self.exited and not self.gone:
                self.gone = EXITED
            if self.gone:
                raise trusted.JobGone(self.gone)
            self._wait(self.deadline)

    def expect(self, plan: list) -> None:
        """The job will stream the answers to the calls planned up front (`trusted.plan_calls`), one frame
        per test; they are read when the tests get there."""
        self.groups = [[(name, repr((args, kwargs))) for name, args, kwargs in group] for group in plan]
        self.groups.reverse()
        self.prefetched = []

    def _planned(self, name: str, signature: str):
        """The job's answer to this call if it is the next one planned; else None (and no more planning)."""
        while not self.prefetched and self.groups:  # an empty group: a test whose name the program lacks
            self.prefetched = self._next_group(self.groups.pop())
        if self.prefetched and self.prefetched[-1][:2] == (name, signature):
            return self.prefetched.pop()[2]
        if self.prefetched or self.groups:  # the tests took another path: read what is left, then ask
            while self.groups:
                self._next_group(self.groups.pop())
            self.prefetched = []
        return None

    def _next_group(self, group: list) -> list:
        reply = self.receive()
        if reply[0] != "group" or len(reply) != 2 or type(reply[1]) is not list or len(reply[1]) > len(group):
            self.stop(CHANNEL, "a malformed answer to the planned calls")
            raise trusted.JobGone(self.gone)
        answers = [(name, sig, answer) for (name, sig), answer in zip(group, reply[1], strict=False)]
        answers.reverse()  # pop() from the end
        return answers

    def ask(self, message: tuple, name: str = "") -> tuple:
        """Send a request and return the job's "ok" reply, with handles made `Remote`; raise what it raised.

        A call already made up front is answered from what the job said then, if it is the very next one.
        """
        reply = None
        if (self.prefetched or self.groups) and message[0] == "call":
            reply = self._planned(name, repr((message[2], message[3])))
        elif self.prefetched or self.groups:
            self._planned("", "")  # any other request ends the planned calls first
        if reply is None:
            self.send(message)
            reply = self.receive()
        if type(reply) is not tuple or not reply or type(reply[0]) is not str:
            self.stop(CHANNEL, "a malformed answer")
            raise trusted.JobGone(self.gone)
        if reply[0] == "ok":
            return trusted.localize(reply, self)
        if reply[0] in ("raise", "stop") and len(reply) >= (1 if reply[0] == "stop" else 3):
            trusted.raise_for(reply)
        self.stop(CHANNEL, f"unexpected reply {reply[0][:40]!r}")
        raise trusted.JobGone(self.gone)

    def _frame(self) -> bytes | None:
        if len(self.replies) < 4:
            return None
        size = int.from_bytes(self.replies[:4], "big")
        if size > self.reply_cap:
            self.stop(CHANNEL, f"a reply of {size} bytes, more than {self.reply_cap}")
            return None
        if len(self.replies) < 4 + size:
            return None
        frame = bytes(self.replies[4 : 4 + size])
        del self.replies[: 4 + size]
        return frame

    # waiting ------------------------------------------------------------------------------------------
    def _wait(self, until: float) -> None:
        now = time.monotonic()
        if now >= self.deadline and not self.exited and not self.gone:
            self.stop(TIMEOUT)
        if not self.gone:
            until = min(until, self.deadline)
        for fd, event in self._poll.poll(max(0, int((until - now) * 1000)) + 1):
            if fd == self.pidfd:
                self.exited = True
                self._poll.unregister(fd)
                self._drain(self.reply_fd)
            elif fd == self.request_fd:
                self._write_pending(event)
            elif fd in self._open:
                self._read(fd)

    def _write_pending(self, event: int, registered: bool = True) -> None:
        try:
            if event & select.POLLOUT:
                del self.pending[: os.write(self.request_fd, self.pending)]
            elif event & (select.POLLERR | select.POLLHUP):
                self.pending.clear()
        except BlockingIOError:
            pass
        except OSError:  # the job closed its end
            self.pending.clear()
        if self.pending and not registered:
            self._poll.register(self.request_fd, select.POLLOUT)
        elif not self.pending and registered:
            self._poll.unregister(self.request_fd)

    def _read(self, fd: int) -> None:
        try:
            data = os.read(fd, 1 << 16)
        except BlockingIOError:
            return
        if not data:
            self._open.discard(fd)
            self._poll.unregister(fd)
            return
        if fd == self.reply_fd:
            self.replies += data
            if len(self.replies) > 2 * self.reply_cap:
                self.stop(CHANNEL, "the job flooded its reply pipe")
            return
        index = 0 if fd == self.out_fd else 1
        buffer, cap = self.streams[index], self.limits["output_bytes"]
        room = cap - len(buffer)
        buffer += data[: max(0, room)]
        if len(data) > room:
            self.truncated[index] = True
            if not self.gone:
                self.stop((STDOUT, STDERR)[index])

    def _drain(self, fd: int) -> None:
        while fd in self._open:
            before = len(self.replies)
            self._read(fd)
            if len(self.replies) == before:
                return

    def stop(self, kind: str, detail: str = "") -> None:
        """Kill the job (its whole PID namespace) and remember why (``kind``: one of the constants above)."""
        if not self.gone:
            self.gone, self.detail = kind, detail
        self._kill()

    def finish(self, wait: bool = True) -> float:
        """Kill the job, drain its pipes, close them; the time taken. Its output is flushed before every
        reply, so a job whose last reply came (``wait=False``) needs no waiting for its exit or output."""
        self._kill()
        if wait:
            limit = time.monotonic() + 5.0
            while not self.exited and time.monotonic() < limit:
                self._wait(limit)
            limit = time.monotonic() + _GRACE_S  # output still in the pipes
            while (self._open - {self.reply_fd}) and time.monotonic() < limit:
                self._wait(limit)
        else:
            for fd in (self.out_fd, self.err_fd):
                self._drain_stream(fd)
        for fd in (self.out_fd, self.err_fd, self.reply_fd, self.request_fd, self.pidfd):
            try:
                os.close(fd)
            except OSError:
                pass
        return time.monotonic() - self.start

    def close_fds(self, keep_pidfd: bool = False) -> None:
        """Close this process's copies of the job's descriptors (the comparison process has its own)."""
        for fd in (self.out_fd, self.err_fd, self.reply_fd, self.request_fd) + (() if keep_pidfd else (self.pidfd,)):
            try:
                os.close(fd)
            except OSError:
                pass

    def _drain_stream(self, fd: int) -> None:
        for _ in range(64):  # what is already in the pipe (bounded by the output cap anyway)
            if fd not in self._open or self.gone in (STDOUT, STDERR):
                return
            before = len(self.streams[0]) + len(self.streams[1])
            self._read(fd)
            if len(self.streams[0]) + len(self.streams[1]) == before:
                return

    def text(self, index: int) -> str:
        raw = bytes(self.streams[index]).decode("utf-8", errors="replace")
        return raw + "\n[... truncated]" if self.truncated[index] else raw


def signal_name(signum: int) -> str:
    """A name for any signal number (real-time ones included), never an exception.

    >>> signal_name(9), signal_name(40)
    ('SIGKILL', 'signal 40')
    """
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def classify(gone: str, detail: str, state: dict, wait_status: int, cpu_s: float, limits: dict) -> tuple[str, str]:
    """The verdict's status and reason, from what the worker saw: ``gone`` (why the job went out of reach,
    one of the constants above), ``state`` ("error", "setup", "done", "outcomes", "messages", "memory",
    "oom_mb"). Every branch is control flow over typed facts; no text decides a status."""
    if gone == TIMEOUT:
        why = state.get("timeout_reason") or "the process tree was killed"
        return V.TIMEOUT, f"wall-clock limit of {limits['wall_s']:g}s reached; {why}"
    if gone in (STDOUT, STDERR):
        return V.OUTPUT_LIMIT, f"{gone} went past {limits['output_bytes']} bytes; the process was killed"
    signum = os.WTERMSIG(wait_status) if os.WIFSIGNALED(wait_status) else None
    if not state.get("done") and state.get("oom_mb"):
        return V.CRASHED, (
            f"the job's processes together went past the memory ceiling of {state['oom_mb']} MB "
            "(memory_mb + scratch_mb + margin, cgroup); the kernel killed them"
        )
    if not state.get("done"):
        if state.get("compare_cpu"):
            return V.TIMEOUT, (f"CPU time limit of {cpu_seconds(limits)}s reached by the tests' work on the "
                               "program's values (the trusted comparison)")
        if signum == signal.SIGXCPU or (signum == signal.SIGKILL and cpu_s >= 0.5 * cpu_seconds(limits)):
            return V.TIMEOUT, f"CPU time limit of {cpu_seconds(limits)}s reached"
    if gone == SETUP:
        return V.SANDBOX_ERROR, f"sandbox setup failed: {detail}"
    if state.get("error"):
        return V.ERROR, f"the program raised {state['error']}"
    outcomes = state["outcomes"]
    if state.get("done"):
        failed = [i for i, outcome in enumerate(outcomes) if outcome != V.TEST_PASSED]
        if not failed:
            return V.PASSED, f"all {len(outcomes)} tests passed"
        first = failed[0]
        return V.FAILED, f"{len(failed)} of {len(outcomes)} tests failed; test {first + 1}: {state['messages'][first]}"
    if state.get("memory"):
        return V.FAILED, state["memory"]
    if state.get("compare_crash"):
        return V.CRASHED, state["compare_crash"]
    if gone == CHANNEL:
        return V.CRASHED, f"the program broke the sandbox channel ({detail})"
    if signum is not None:
        return V.CRASHED, f"killed by {signal_name(signum)} before the tests finished"
    if os.WIFEXITED(wait_status):
        return V.CRASHED, f"exited with code {os.WEXITSTATUS(wait_status)} before the tests finished"
    return V.CRASHED, "ended before the tests finished"
