"""A memory ceiling for all of a job's processes together, from the kernel's memory controller.

``RLIMIT_AS`` binds each process; a job may run ``max_processes`` of them. Where the worker (as root) can
write a memory cgroup, it creates one of its own for its jobs (cgroup v2 ``memory.max`` with
``memory.swap.max`` 0, or cgroup v1 ``memory.limit_in_bytes`` and ``memory.memsw.limit_in_bytes``) and
puts each job process in it before the job gets its program: the job and every process it starts share
one ceiling, tmpfs pages included. A worker runs one job at a time, so one cgroup per worker (created
by the pool before the worker starts, removed by the pool once the worker is dead) costs a single write
per job; the ceiling is the job's ``memory_mb`` plus its ``scratch_mb`` plus a margin for the next job
process waiting in it.

The worker opens the cgroup's directory before it covers /sys and works through that descriptor only:
jobs never see the cgroup files, and no path a job could choose is ever used.
"""

from __future__ import annotations

import os
import time

MARGIN_MB = 64  # the waiting next job process and a dying previous one


class JobCgroup:
    """The worker's memory cgroup for its jobs (see the module docstring)."""

    def __init__(self, path: str, version: int):
        self.path, self.version = path, version
        self.fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        self.limit_mb: int | None = None

    @property
    def description(self) -> str:
        files = "memory.max, memory.swap.max 0" if self.version == 2 else "memory.limit_in_bytes (+memsw)"
        return (
            f"cgroup v{self.version} ceiling for all of a job's processes together "
            f"({files}: memory_mb + scratch_mb + {MARGIN_MB} MB), and RLIMIT_AS per process"
        )

    def set_limit(self, limit_mb: int) -> None:
        """The ceiling for the next jobs (written only when it changes)."""
        if limit_mb == self.limit_mb:
            return
        value = str(limit_mb << 20)
        if self.version == 2:
            self._write("memory.max", value)
            self._write("memory.swap.max", "0", optional=True)
        else:  # memsw (memory + swap) may never be below the memory limit: up, memsw first; down, last
            up = self.limit_mb is not None and limit_mb > self.limit_mb  # a new cgroup starts unlimited
            for name in ("memory.memsw.limit_in_bytes", "memory.limit_in_bytes")[:: 1 if up else -1]:
                self._write(name, value, optional=name.startswith("memory.memsw"))
        self.limit_mb = limit_mb

    def attach(self, pid: int) -> None:
        """Move process ``pid`` (as this process sees it) into the cgroup; its children follow."""
        self._write("cgroup.procs", str(pid))

    def oom_kills(self) -> int:
        """How many processes the kernel killed for this cgroup's ceiling so far (-1: not reported)."""
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        try:
            fd = os.open(name, os.O_RDONLY, dir_fd=self.fd)
            try:
                text = os.read(fd, 4096).decode()
            finally:
                os.close(fd)
        except OSError:
            return -1
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
        return -1

    def close(self) -> None:
        os.close(self.fd)

    def _write(self, name: str, value: str, optional: bool = False) -> None:
        try:
            fd = os.open(name, os.O_WRONLY, dir_fd=self.fd)
        except FileNotFoundError:
            if optional:
                return
            raise
        try:
            os.write(fd, value.encode())
        finally:
            os.close(fd)


def create(name: str, problems: list[str]) -> tuple[str, int] | None:
    """Create the job cgroup ``name`` under this process's memory cgroup: (its path, cgroup version), or
    None with the reason in ``problems``. Call as root, before any namespace is entered."""
    why = "RLIMIT_AS per process is the memory limit"
    if os.geteuid() != 0:
        problems.append(f"no memory cgroup: not root; {why}")
        return None
    try:
        found = _own_memory_cgroup()
        if found is None:
            problems.append(f"no memory cgroup: no memory controller for this process; {why}")
            return None
        parent, version = found
        if version == 2 and "memory" not in _read(os.path.join(parent, "cgroup.subtree_control")).split():
            problems.append(f"no memory cgroup: cgroup v2 memory is not enabled for the children of {parent}; {why}")
            return None
        path = os.path.join(parent, name)
        os.mkdir(path, 0o700)
    except OSError as exc:
        problems.append(f"no memory cgroup ({exc}); {why}")
        return None
    return path, version


def remove(path: str, attempts: int = 50) -> bool:
    """Remove a job cgroup once the processes in it are gone (retried for up to about half a second)."""
    for _ in range(attempts):
        try:
            os.rmdir(path)
            return True
        except FileNotFoundError:
            return True
        except OSError:
            time.sleep(0.01)
    return False


def remove_stale(prefix: str = "agentgrpo-") -> None:
    """Remove job cgroups left by pools whose process is gone (a trainer that was killed)."""
    try:
        found = _own_memory_cgroup()
        if found is None:
            return
        for entry in os.listdir(found[0]):
            if entry.startswith(prefix):
                owner = entry[len(prefix) :].split("-")[0]
                if owner.isdigit() and not os.path.exists(f"/proc/{owner}"):
                    remove(os.path.join(found[0], entry), attempts=1)
    except OSError:
        pass


def _own_memory_cgroup() -> tuple[str, int] | None:
    """(directory of this process's memory cgroup, cgroup version), or None."""
    with open("/proc/self/cgroup") as fh:
        entries = [line.rstrip("\n").split(":", 2) for line in fh if line.count(":") >= 2]
    with open("/proc/self/mountinfo") as fh:
        mounts = [line.split() for line in fh]
    for _hierarchy, controllers, path in entries:
        if "memory" in controllers.split(","):  # v1
            for fields in mounts:
                sep = fields.index("-")
                fstype, options = fields[sep + 1], fields[sep + 3].split(",")
                if fstype == "cgroup" and "memory" in options:
                    return _join(fields[4], fields[3], path), 1
    for hierarchy, controllers, path in entries:
        if hierarchy == "0" and controllers == "":  # v2
            for fields in mounts:
                sep = fields.index("-")
                if fields[sep + 1] == "cgroup2":
                    directory = _join(fields[4], fields[3], path)
                    if "memory" in _read(os.path.join(directory, "cgroup.controllers")).split():
                        return directory, 2
    return None


def _join(mount_point: str, mount_root: str, path: str) -> str:
    """Where cgroup ``path`` (relative to the hierarchy's root) is, given a mount of ``mount_root`` there."""
    if mount_root != "/" and (path == mount_root or path.startswith(mount_root + "/")):
        path = path[len(mount_root) :]
    return os.path.join(mount_point, path.lstrip("/"))


def _read(path: str) -> str:
    try:
        with open(path) as fh:
            return fh.read()
    except OSError:
        return ""
