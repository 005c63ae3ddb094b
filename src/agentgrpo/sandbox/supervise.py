"""Watch one job process (wall time, output caps), then turn what happened into a result dict."""

from __future__ import annotations

import os
import select
import signal
import time

from agentgrpo.sandbox import status as V
from agentgrpo.sandbox.harness import parse_records
from agentgrpo.sandbox.rlimits import cpu_seconds

_RESULTS_CAP = 1 << 20  # the harness's own records; a program flooding that pipe is killed too
_GRACE_S = 1.0  # after the job exits, how long its leftovers may keep the pipes open


class Outcome:
    """What happened to one job process (a plain class: dataclasses would cost the worker an import)."""

    def __init__(self):
        self.streams = [bytearray(), bytearray(), bytearray()]  # stdout, stderr, results
        self.status = 0  # os.wait status
        self.cpu_s = 0.0
        self.timed_out = False
        self.overflow = ""  # "stdout" / "stderr" / "results" when a cap was hit
        self.duration_s = 0.0
        self.truncated = [False, False, False]


def supervise(pid: int, fds: list[int], limits: dict, kill_tree) -> Outcome:
    """Read the job's pipes until it exits (or is killed for time/output); reap it."""
    start = time.monotonic()
    out = Outcome()
    caps = [limits["output_bytes"], limits["output_bytes"], _RESULTS_CAP]
    poller, open_fds = select.poll(), dict(zip(fds, range(3), strict=True))
    for fd in fds:
        poller.register(fd, select.POLLIN)
    pidfd = _pidfd(pid, poller)
    deadline, exited_at = start + limits["wall_s"], None
    while True:
        if exited_at is None and _reaped(pid, out):
            exited_at = time.monotonic()
            if pidfd is not None:
                poller.unregister(pidfd)
            kill_tree(pid, reaped=True)  # whatever it left behind
        now = time.monotonic()
        if exited_at is not None and (not open_fds or now >= exited_at + _GRACE_S):
            break
        if exited_at is None and now >= deadline:
            out.timed_out = True
            kill_tree(pid, reaped=False)
            _reap(pid, out)
            break
        for fd, _ in poller.poll(_wait_ms(deadline, exited_at, pidfd)):
            if fd in open_fds and not _read(fd, open_fds, poller, out, caps) and exited_at is None:
                kill_tree(pid, reaped=False)
    for fd in [*open_fds, *([pidfd] if pidfd is not None else [])]:
        os.close(fd)
    out.duration_s = time.monotonic() - start
    return out


def _pidfd(pid: int, poller) -> int | None:
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None
    poller.register(fd, select.POLLIN)
    return fd


def _wait_ms(deadline: float, exited_at: float | None, pidfd: int | None) -> int:
    until = exited_at + _GRACE_S if exited_at is not None else deadline
    wait = max(0.0, until - time.monotonic())
    if pidfd is None and exited_at is None:
        wait = min(wait, 0.02)  # no pidfd: notice the exit by polling
    return int(wait * 1000) + 1


def _read(fd: int, open_fds: dict, poller, out: Outcome, caps: list[int]) -> bool:
    """Append what is readable; False when a cap was hit (the caller kills the job)."""
    index = open_fds[fd]
    data = os.read(fd, 1 << 16)
    if not data:
        poller.unregister(fd)
        os.close(fd)
        del open_fds[fd]
        return True
    buffer = out.streams[index]
    room = caps[index] - len(buffer)
    buffer += data[: max(0, room)]
    if len(data) > room:
        out.truncated[index] = True
        if not out.overflow:
            out.overflow = ("stdout", "stderr", "results")[index]
        return False
    return True


def _reaped(pid: int, out: Outcome) -> bool:
    wpid, status, usage = os.wait4(pid, os.WNOHANG)
    if wpid == 0:
        return False
    out.status, out.cpu_s = status, usage.ru_utime + usage.ru_stime
    return True


def _reap(pid: int, out: Outcome) -> None:
    try:
        _, status, usage = os.wait4(pid, 0)
    except ChildProcessError:
        return
    out.status, out.cpu_s = status, usage.ru_utime + usage.ru_stime


def summarize(out: Outcome, nonce: str, total: int, limits: dict) -> dict:
    """The result dict sent to the pool (fields of `Verdict`)."""
    records = parse_records(bytes(out.streams[2]), nonce)
    tests = ["not run"] * total
    for r in records:
        if r.get("kind") == "test" and isinstance(r.get("index"), int) and 0 <= r["index"] < total:
            tests[r["index"]] = "passed" if r.get("ok") else str(r.get("message", "failed"))
    passed = sum(t == "passed" for t in tests)
    status, reason = _classify(out, records, tests, limits)
    return {
        "status": status,
        "passed": passed,
        "total": total,
        "reason": reason,
        "stdout": _text(out.streams[0], out.truncated[0]),
        "stderr": _text(out.streams[1], out.truncated[1]),
        "tests": tests,
        "duration_s": round(out.duration_s, 4),
    }


def _classify(out: Outcome, records: list[dict], tests: list[str], limits: dict) -> tuple[str, str]:
    kinds = {r.get("kind"): r for r in records}
    signum = os.WTERMSIG(out.status) if os.WIFSIGNALED(out.status) else None
    if out.timed_out:
        return V.TIMEOUT, f"wall-clock limit of {limits['wall_s']:g}s reached; the process tree was killed"
    if out.overflow:
        return (
            V.OUTPUT_LIMIT,
            f"{out.overflow} went past {limits['output_bytes']} bytes; the process was killed",
        )
    if signum == signal.SIGXCPU or (signum == signal.SIGKILL and out.cpu_s >= 0.9 * cpu_seconds(limits)):
        return V.TIMEOUT, f"CPU time limit of {cpu_seconds(limits)}s reached"
    if "setup_failed" in kinds:
        return V.SANDBOX_ERROR, f"sandbox setup failed: {kinds['setup_failed'].get('message')}"
    if "error" in kinds:
        return V.ERROR, f"the program raised {kinds['error'].get('message')}"
    if "done" in kinds:
        failed = [(i, t) for i, t in enumerate(tests) if t != "passed"]
        if not failed:
            return V.PASSED, f"all {len(tests)} tests passed"
        return (
            V.FAILED,
            f"{len(failed)} of {len(tests)} tests failed; test {failed[0][0] + 1}: {failed[0][1]}",
        )
    if signum is not None:
        return V.CRASHED, f"killed by {signal.Signals(signum).name} before the tests finished"
    return V.CRASHED, f"exited with code {os.waitstatus_to_exitcode(out.status)} before the tests finished"


def _text(raw: bytearray, truncated: bool) -> str:
    text = bytes(raw).decode("utf-8", errors="replace")
    return text + "\n[... truncated]" if truncated else text
