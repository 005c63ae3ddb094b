"""Resource limits for one sandboxed program, and applying them with `setrlimit` in the child."""

from __future__ import annotations

import math
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
                problems.append(f"sandbox limit {f.name}: must be a number > 0, got {value!r}; "
                                f"pass e.g. Limits({f.name}={getattr(Limits, f.name)!r})")
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


def apply_rlimits(limits: Limits) -> None:
    """Set the kernel limits on the calling process (inherited by everything it starts).

    CPU time gets a soft limit (SIGXCPU) and a hard limit one second later (SIGKILL). Core dumps are off.
    """
    cpu = max(1, math.ceil(limits.cpu_s))
    _set(resource.RLIMIT_CPU, cpu, cpu + 1)
    _set(resource.RLIMIT_AS, limits.memory_mb * _MIB)
    _set(resource.RLIMIT_FSIZE, limits.file_size_mb * _MIB)
    _set(resource.RLIMIT_NPROC, limits.max_processes)
    _set(resource.RLIMIT_NOFILE, limits.max_open_files)
    _set(resource.RLIMIT_CORE, 0)


def _set(which: int, soft: int, hard: int | None = None) -> None:
    hard = soft if hard is None else hard
    _, old_hard = resource.getrlimit(which)
    if old_hard != resource.RLIM_INFINITY:  # never try to raise a hard limit we do not own
        soft, hard = min(soft, old_hard), min(hard, old_hard)
    resource.setrlimit(which, (soft, hard))
