"""Resource limits for one sandboxed program (`Limits`); `agentgrpo.sandbox.rlimits` applies them."""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass, fields

from agentgrpo.errors import ConfigError


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
    scratch_mb: int = 64  # size of the job's private tmpfs (/tmp; /dev/shm links into it), in the namespace modes
    value_bytes: int = 16 * 1024 * 1024  # largest encoded value one call into the program may return
    compare_mb: int = 512  # memory the trusted comparison of one job may add to its worker (RLIMIT_AS, own process)

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
        return dict(self._as_dict)  # a copy: the caller may change it

    @functools.cached_property
    def _as_dict(self) -> dict:  # made once per Limits (frozen): every job of a run_many sends it
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Limits:
        return cls(**data)
