"""Resource limits for one sandboxed program, and applying them with `setrlimit` in the child."""

from __future__ import annotations

import math
import os
import resource
from dataclasses import asdict, dataclass, fields

from agentgrpo.errors import ConfigError

_MIB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """What one program (its solution plus its tests) may use.

    >>> Limits().cpu_s, Limits(wall_s=2).wall_s
    (5.0, 2.0)
    >>> Limits(cpu_s=0)
    Traceback (most recent call last):
    ...
    agentgrpo.errors.ConfigError: 1 problem in the config:
      - sandbox limit cpu_s: must be a number > 0, got 0; pass e.g. Limits(cpu_s=5.0)
    """

    wall_s: float = 10.0  # wall-clock seconds before the whole process tree is killed
    cpu_s: float = 5.0  # CPU seconds (RLIMIT_CPU; all threads together)
    memory_mb: int = 1024  # address space (RLIMIT_AS), per process
    file_size_mb: int = 16  # largest file a program may write (RLIMIT_FSIZE)
    max_processes: int = 32  # processes + threads of the sandbox user (RLIMIT_NPROC)
    max_open_files: int = 64  # RLIMIT_NOFILE
    output_bytes: int = 64 * 1024  # stdout and stderr are each kept up to this; more kills the program
    scratch_mb: int = 64  # size of the private /tmp (and work dir) tmpfs, when mount namespaces are available

    def __post_init__(self):
        problems = []
        for f in fields(self):
            value = getattr(self, f.name)
            ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
            if not ok or value <= 0:
                problems.append(
                    f"sandbox limit {f.name}: must be a number > 0, got {value!r}; "
                    f"pass e.g. Limits({f.name}={getattr(Limits, f.name)!r})"
                )
            elif isinstance(f.default, float):
                object.__setattr__(self, f.name, float(value))
            else:
                object.__setattr__(self, f.name, int(value))
        if problems:
            raise ConfigError(problems)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Limits:
        return cls(**data)


def apply_rlimits(limits: Limits, nproc_base: int = 0) -> None:
    """Set the kernel limits on the calling process (inherited by everything it starts).

    CPU time is a hard limit (SIGKILL, whole seconds, rounded up): a program that is PID 1 of its namespace
    ignores SIGXCPU, and any program could catch it. Core dumps are off. RLIMIT_NPROC counts every task of
    the uid, so where programs share the trainer's uid, ``nproc_base`` (the tasks it already has) is added.
    """
    _set(resource.RLIMIT_CPU, cpu_seconds(limits))
    _set(resource.RLIMIT_AS, limits.memory_mb * _MIB)
    _set(resource.RLIMIT_FSIZE, limits.file_size_mb * _MIB)
    _set(resource.RLIMIT_NPROC, nproc_base + limits.max_processes)
    _set(resource.RLIMIT_NOFILE, limits.max_open_files)
    _set(resource.RLIMIT_CORE, 0)


def cpu_seconds(limits: Limits) -> int:
    """The CPU limit as the kernel applies it (whole seconds)."""
    return max(1, math.ceil(limits.cpu_s))


def _set(which: int, soft: int, hard: int | None = None) -> None:
    hard = soft if hard is None else hard
    _, old_hard = resource.getrlimit(which)
    if old_hard != resource.RLIM_INFINITY:  # never try to raise a hard limit we do not own
        soft, hard = min(soft, old_hard), min(hard, old_hard)
    resource.setrlimit(which, (soft, hard))


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
