"""Apply a job's limits (a `Limits.to_dict()`) with `setrlimit`, in the job process.

Kept free of heavy imports: the worker process loads it, and every page a worker holds makes each fork
of it dearer.
"""

from __future__ import annotations

import math
import os
import resource

_MIB = 1024 * 1024


def table(limits: dict, nproc_base: int = 0) -> tuple[tuple[int, int], ...]:
    """The kernel limits for a job, ``(resource, limit)`` pairs, each set as soft and hard limit.

    CPU time is a hard limit (SIGKILL, whole seconds, rounded up): a program that is PID 1 of its namespace
    ignores SIGXCPU, and any program could catch it. Core dumps are off. RLIMIT_NPROC counts every task of
    the uid, so where programs share the trainer's uid, ``nproc_base`` (the tasks it already has) is added.

    >>> dict(table({"cpu_s": 1.5, "memory_mb": 256, "file_size_mb": 8, "max_processes": 4, "max_open_files": 64}))[
    ...     resource.RLIMIT_CPU]
    2
    """
    return (
        (resource.RLIMIT_CPU, cpu_seconds(limits)),
        (resource.RLIMIT_AS, limits["memory_mb"] * _MIB),
        (resource.RLIMIT_FSIZE, limits["file_size_mb"] * _MIB),
        (resource.RLIMIT_NPROC, nproc_base + limits["max_processes"]),
        (resource.RLIMIT_NOFILE, limits["max_open_files"]),
        (resource.RLIMIT_CORE, 0),
    )


def cpu_seconds(limits: dict) -> int:
    """The CPU limit as the kernel applies it (whole seconds)."""
    return max(1, math.ceil(limits["cpu_s"]))


def tasks_of(uid: int) -> int:
    """How many tasks (threads included) the uid runs now: what RLIMIT_NPROC counts."""
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as fh:
                fields = dict(line.split(":", 1) for line in fh if ":" in line)
        except OSError:
            continue
        if fields.get("Uid", "").split()[:1] == [str(uid)]:
            total += int(fields.get("Threads", "1"))
    return total
