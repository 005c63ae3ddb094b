"""The seccomp filter is an allow-list (issue 34, item 4): what is not needed is closed, honest jobs still run.

* inotify, fanotify and dnotify watches cannot be placed (they carried 64 of 64 bits between concurrent jobs
  through watches on shared read-only files);
* kernel memory a job can hold outside its memory limit through buffers stays within the bound the docs
  state per mode: socket pairs where no memory cgroup holds them are refused, pipes cannot grow, and with a
  cgroup the whole job dies at its ceiling;
* honest jobs of many kinds (`benchmarks/sandbox_honest_kinds.py`) get plain Python's verdict, except the
  kinds that need a socket pair where pairs are refused (and those fail with PermissionError, not hang);
* the filter allows nothing outside `seccomp.ALLOWED`, and each allowed group has its reason.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentgrpo.sandbox import FAILED, PASSED, Limits, Sandbox, seccomp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.sandbox_honest_kinds import KINDS, NEEDS_SOCKETPAIR  # noqa: E402
from tests.sandbox_helpers import assert_pool_still_serves  # noqa: E402

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="Linux sandbox")


@pytest.fixture(scope="module")
def box():
    with Sandbox(workers=1, limits=Limits(wall_s=20, cpu_s=10)) as sandbox:
        if sandbox.isolation["seccomp"] == "none":
            pytest.fail("no seccomp filter: " + "; ".join(sandbox.isolation["problems"]))
        yield sandbox


WATCHES = r"""
import ctypes, ctypes.util, errno, fcntl, os, sys
libc = ctypes.CDLL(None, use_errno=True)
SHARED = os.__file__  # a read-only file every job sees
def failed(result):
    return result < 0 or result is None
def inotify():
    fd = libc.inotify_init1(0)
    if fd < 0:
        fd = libc.syscall(253)  # inotify_init
    if fd < 0:
        return "no inotify"
    return "watch placed" if libc.inotify_add_watch(fd, SHARED.encode(), 0xfff) >= 0 else "no watch"
def fanotify():
    return "no fanotify" if libc.syscall(300, 0, 0) < 0 else "fanotify"
def dnotify():
    fd = os.open(os.path.dirname(SHARED), os.O_RDONLY)
    try:
        fcntl.fcntl(fd, 1026, 0x3f | 0x80000000)  # F_NOTIFY, every event, multishot
        return "dnotify"
    except OSError:
        return "no dnotify"
def lease():
    fd = os.open(SHARED, os.O_RDONLY)
    try:
        fcntl.fcntl(fd, 1024, fcntl.F_RDLCK)  # F_SETLEASE
        return "lease"
    except OSError:
        return "no lease"
"""


def test_no_watch_lease_or_notification_can_be_placed_on_shared_files(box):
    verdict = box.run(
        WATCHES,
        [
            "assert inotify() == 'no inotify'",
            "assert fanotify() == 'no fanotify'",
            "assert dnotify() == 'no dnotify'",
            "assert lease() == 'no lease'",
        ],
    )
    assert verdict.status == PASSED, verdict
    # the same program outside the sandbox does place the inotify watch (the test is not vacuous)
    script = WATCHES + "\nprint(inotify(), dnotify())"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["watch", "placed", "dnotify"], out


HOG = r'''
import fcntl, os, socket, time
def _fill_pairs(held):
    total = 0
    while True:
        try:
            a, b = socket.socketpair()
        except OSError:
            return total
        held.append((a, b))
        for s in (a, b):
            try:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 30)
            except OSError:
                pass
            s.setblocking(False)
            try:
                while True:
                    total += s.send(b"x" * 65536)
            except OSError:
                pass
def _fill_pipes(held):
    total = 0
    while True:
        try:
            r, w = os.pipe()
        except OSError:
            return total
        try:
            fcntl.fcntl(w, 1031, 1 << 20)  # F_SETPIPE_SZ
        except OSError:
            pass
        os.set_blocking(w, False)
        try:
            while True:
                total += os.write(w, b"x" * 65536)
        except OSError:
            pass
        os.close(w)  # the data stays while the read end is open: one descriptor per pipe
        held.append(r)
def hog(kind, children):
    """Bytes this process tree holds in kernel buffers (each process fills what its descriptors allow)."""
    results_r, results_w = os.pipe()
    pids = []
    for _ in range(children):
        try:
            pid = os.fork()
        except OSError:  # RLIMIT_NPROC
            break
        if pid == 0:
            os.close(results_r)
            held = []
            n = (_fill_pairs if kind == "pairs" else _fill_pipes)(held)
            os.write(results_w, n.to_bytes(8, "big"))
            time.sleep(60)
            os._exit(0)
        pids.append(pid)
    os.close(results_w)
    total = 0
    for _ in pids:
        data = os.read(results_r, 8)
        if len(data) < 8:
            break
        total += int.from_bytes(data, "big")
    return total
'''
KIB = 1024
PIPE_BYTES = 64 * KIB  # a pipe's default buffer: growing it (F_SETPIPE_SZ) is refused


def _held(box, kind: str, children: int, limits: Limits) -> tuple[str, int | None]:
    """(status, bytes held) of the hog: the bytes come back as the test's failure message."""
    verdict = box.run(HOG, [f"got = hog({kind!r}, {children})\nassert got < 0, got"], limits=limits)
    text = verdict.tests[0]
    number = text.rsplit(" ", 1)[-1].strip("()',\"")
    return verdict.status, int(number) if number.isdigit() else None


def test_socket_buffers_are_bounded_in_every_mode(box):
    """With a memory cgroup the job's pairs count against its ceiling (it dies there); without one (the
    userns mode, basic as a user) socket pairs are refused: 0 bytes."""
    limits = Limits(wall_s=6, cpu_s=5, memory_mb=64, max_processes=16)
    status, held = _held(box, "pairs", 12, limits)
    if box.isolation["socket_pairs"].startswith("refused"):
        assert held == 0, (status, held)
    else:
        assert box.isolation["memory"].startswith("cgroup"), box.isolation
        ceiling = (limits.memory_mb + limits.scratch_mb + 64) * KIB * KIB
        assert status == "crashed" or (held is not None and held <= ceiling), (status, held)
    assert_pool_still_serves(box)


def test_pipe_buffers_stay_within_the_stated_bound(box):
    """Pipes cannot grow; what a job holds in them is at most max_processes x max_open_files x 64 KiB
    (docs/sandbox.md, "What holds in each mode"), and with a memory cgroup within its ceiling."""
    limits = Limits(wall_s=6, cpu_s=5, memory_mb=64, max_processes=8, max_open_files=32)
    status, held = _held(box, "pipes", 6, limits)
    bound = limits.max_processes * limits.max_open_files * PIPE_BYTES
    assert status == "crashed" or (held is not None and 0 < held <= bound), (status, held, bound)
    assert_pool_still_serves(box)


def test_honest_kinds_get_pythons_verdict(box):
    refused = box.isolation["socket_pairs"].startswith("refused")
    verdicts = box.run_many([(program, tests) for _, program, tests in KINDS])
    for (name, _, _), verdict in zip(KINDS, verdicts, strict=True):
        if refused and name in NEEDS_SOCKETPAIR:
            assert verdict.status == FAILED and "PermissionError" in verdict.tests[0], (name, verdict)
        else:
            assert verdict.status == PASSED, (name, verdict)


def test_python_passes_the_honest_kinds():
    """The oracle for the test above: each kind in a fresh interpreter, as plain Python runs it."""
    for name, program, tests in KINDS:
        out = subprocess.run(
            [sys.executable, "-c", program + "\n" + "\n".join(tests)],
            capture_output=True,
            text=True,
            timeout=120,
            cwd="/tmp",
        )
        assert out.returncode == 0, (name, out.stderr[-2000:])


def test_the_filter_is_an_allow_list():
    """Default deny; every allowed group has a reason; nothing is both allowed and denied; the names exist."""
    assert seccomp.DEFAULT_ERRNO and "socket" not in seccomp.allowed_names()
    for group, (names, reason) in seccomp.ALLOWED.items():
        assert names and len(reason) > 20, group
    allowed = set(seccomp.allowed_names())
    for name in (
        "inotify_init",
        "inotify_init1",
        "inotify_add_watch",
        "fanotify_init",
        "fanotify_mark",
        "io_uring_setup",
        "bpf",
        "ptrace",
        "keyctl",
        "add_key",
        "mount",
        "unshare",
        "setns",
        "memfd_create",
        "mincore",
        "userfaultfd",
        "perf_event_open",
        "socket",
        "connect",
        "bind",
        "splice",
        "vmsplice",
        "tee",
        "setxattr",
        "timerfd_create",
        "eventfd2",
        "signalfd4",
        "mq_open",
        "shmget",
        "msgget",
        "semget",
    ):
        assert name not in allowed, name
    assert not set(seccomp.DENIED_WITH) & allowed
    bpf, why = seccomp.build()
    assert bpf and not why and not seccomp.SKIPPED, (why, seccomp.SKIPPED)


@pytest.mark.skipif(os.geteuid() != 0, reason="docs table check is mode-independent; run once")
def test_docs_list_the_allowed_set():
    """docs/sandbox.md lists every allowed syscall (the table is the filter's, not a copy that drifts)."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "sandbox.md").read_text()
    missing = [name for name in seccomp.allowed_names() if f"`{name}`" not in text]
    assert missing == []
