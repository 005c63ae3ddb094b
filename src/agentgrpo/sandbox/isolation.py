"""Kernel isolation for sandboxed programs: namespaces, hidden paths, a private /tmp, dropped privileges.

Two levels, both Linux-only and each tried in turn (what worked is reported, never assumed):

* worker level (once, when a worker starts): a new mount, network and IPC namespace. Secret paths are
  covered with empty read-only tmpfs mounts (the interpreter's own directories are bound back read-only),
  and the network namespace has no interface but a loopback that is down.
  As root, the worker also puts a size-limited tmpfs on /tmp, /var/tmp and /dev/shm (wiped after each job)
  and a /proc that hides other users' processes, and runs programs as a uid of its own.
* job level (per program): a new PID namespace (the program is PID 1; when it exits the kernel kills every
  process it left), then the switch to the unprivileged uid. Without a uid to switch to (user namespace
  mode) each job gets its own mount namespace, tmpfs scratch and /proc instead, and sheds all capabilities.

Without namespaces ("basic" mode) only the process-level measures apply; see docs/sandbox.md.
"""

from __future__ import annotations

import errno
import os
import signal
import stat
import sys

from agentgrpo.sandbox import linux

SCRATCH = ("/tmp", "/var/tmp", "/dev/shm")
UID_BASE = 200_000  # each worker runs programs as its own uid: UID_BASE + the worker's pid


def base_report(mode: str) -> dict:
    return {
        "mode": mode,
        "network": "audit hook (not a security boundary)",
        "mount_namespace": False,
        "pid_namespace": False,
        "proc": "host /proc",
        "scratch": "host /tmp (job dir removed afterwards)",
        "hidden_paths": [],
        "sandbox_uid": None,
        "process_limit": False,
        "problems": [],
    }


def isolate_worker(requested: str, hide: list[str], scratch_mb: int) -> dict:
    """Set up the worker's namespaces as far as the kernel allows; return what is in force."""
    report = base_report("basic")
    if requested == "basic" or not linux.available():
        return _finish_basic(report)
    kind = _enter_namespaces(requested, report)
    if kind is None:
        return _finish_basic(report)
    report.update(mode=kind, network="network namespace (no interface up)", mount_namespace=True)
    linux.mount(None, "/", None, linux.MS_REC | linux.MS_PRIVATE)
    report["hidden_paths"] = hide_paths(hide, keep_paths(), report["problems"])
    report["pid_namespace"] = _probe_pid_namespace(report["problems"])
    if kind == "root":
        report["sandbox_uid"] = _probe_uid(UID_BASE + os.getpid(), report["problems"])
    # in a user namespace RLIMIT_NPROC counts per namespace, except for uid 0, which it never limits
    report["process_limit"] = report["sandbox_uid"] is not None or (kind == "userns" and os.geteuid() != 0)
    if not report["process_limit"]:
        report["problems"].append("no process limit: programs run as uid 0, which RLIMIT_NPROC does not bind")
    if report["pid_namespace"] and report["sandbox_uid"] is not None:
        mount_scratch(scratch_mb)
        _mount_proc("hidepid=invisible", "hidepid=2")
        report.update(scratch="private tmpfs, wiped after each job", proc="private /proc, other users hidden")
    elif report["pid_namespace"]:
        report.update(scratch="private tmpfs per job", proc="private /proc per job")
    return report


def _finish_basic(report: dict) -> dict:
    if os.geteuid() == 0:
        report["sandbox_uid"] = _probe_uid(UID_BASE + os.getpid(), report["problems"])
    report["process_limit"] = report["sandbox_uid"] is not None or os.geteuid() != 0
    if not report["process_limit"]:
        report["problems"].append("no process limit: programs run as root, which RLIMIT_NPROC does not bind")
    return report


def mount_scratch(size_mb: int, remount: bool = False) -> None:
    """A size-limited tmpfs on /tmp, /var/tmp and /dev/shm (or just a new size with ``remount``)."""
    flags = linux.MS_NOSUID | linux.MS_NODEV | (linux.MS_REMOUNT if remount else 0)
    for path in SCRATCH:
        if os.path.isdir(path):
            linux.mount("tmpfs", path, "tmpfs", flags, f"size={size_mb}m,mode=1777")


def wipe_scratch() -> None:
    """Empty the scratch dirs (only once every process of the job is gone)."""
    for path in SCRATCH:
        if not os.path.isdir(path):
            continue
        for entry in os.scandir(path):
            remove_tree(entry.path)


def remove_tree(path: str) -> None:
    """Delete a file or a directory tree, whatever its permissions (without importing shutil)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISDIR(mode):
        os.chmod(path, 0o700)  # a program may have made its dirs unreadable
        for entry in os.scandir(path):
            remove_tree(entry.path)
        os.rmdir(path)
    else:
        os.unlink(path)


def _mount_proc(*options: str) -> None:
    flags = linux.MS_NOSUID | linux.MS_NODEV | linux.MS_NOEXEC
    for i, option in enumerate(options):
        try:
            linux.mount("proc", "/proc", "proc", flags, option)
            return
        except OSError:
            if i == len(options) - 1:
                raise


def _enter_namespaces(requested: str, report: dict) -> str | None:
    flags = linux.CLONE_NEWNS | linux.CLONE_NEWNET | linux.CLONE_NEWIPC
    if requested != "userns" and os.geteuid() == 0:
        try:
            linux.unshare(flags)
            return "root"
        except OSError as exc:
            report["problems"].append(f"namespaces as root: {exc}")
    uid, gid = os.geteuid(), os.getegid()
    try:
        linux.unshare(flags | linux.CLONE_NEWUSER)
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"0 {uid} 1")
        _write("/proc/self/gid_map", f"0 {gid} 1")
        return "userns"
    except OSError as exc:
        report["problems"].append(f"user namespace: {exc}")
        return None


def _write(path: str, text: str) -> None:
    with open(path, "w") as fh:
        fh.write(text)


def keep_paths() -> list[str]:
    """Directories the interpreter needs (prefixes and sys.path): bound back inside hidden paths."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(os.path.realpath(sys.executable))}
    paths.update(p for p in sys.path if p)
    real = sorted({os.path.realpath(p) for p in paths if os.path.isdir(p)})
    return [p for p in real if not any(p != q and p.startswith(q + "/") for q in real)]


def hide_paths(hide: list[str], keep: list[str], problems: list[str]) -> list[str]:
    """Cover each path with an empty read-only tmpfs (a file: with /dev/null), re-binding ``keep`` inside."""
    hidden = []
    for path in hide:
        if path in keep:
            problems.append(f"not hidden: {path} is on the interpreter's path (sys.path / prefix)")
            continue
        try:
            if os.path.isdir(path):
                _hide_dir(path, [k for k in keep if k == path or k.startswith(path.rstrip("/") + "/")])
            elif os.path.exists(path):
                linux.mount("/dev/null", path, None, linux.MS_BIND)
            else:
                continue
            hidden.append(path)
        except OSError as exc:
            problems.append(f"could not hide {path}: {exc}")
    return hidden


def _hide_dir(path: str, keep: list[str]) -> None:
    fds = [os.open(k, os.O_PATH | os.O_DIRECTORY) for k in keep]
    try:
        linux.mount("tmpfs", path, "tmpfs", linux.MS_NOSUID | linux.MS_NODEV, "size=1m,mode=755")
        for k, fd in zip(keep, fds, strict=True):
            os.makedirs(k, mode=0o755, exist_ok=True)
            linux.mount(f"/proc/self/fd/{fd}", k, None, linux.MS_BIND | linux.MS_REC)
            linux.mount(None, k, None, linux.MS_REMOUNT | linux.MS_BIND | linux.MS_RDONLY | linux.MS_NOSUID)
        linux.mount(None, path, None, linux.MS_REMOUNT | linux.MS_RDONLY | linux.MS_NOSUID | linux.MS_NODEV)
    finally:
        for fd in fds:
            os.close(fd)


_own_pid_ns: int | None = None  # an fd on the worker's own PID namespace
_use_reaper = False  # True where setns back to our own PID namespace is refused (user namespaces)


def _probe_pid_namespace(problems: list[str]) -> bool:
    global _own_pid_ns, _use_reaper
    _own_pid_ns = os.open("/proc/self/ns/pid", os.O_RDONLY)  # before /proc is replaced
    failures = []
    for reaper in (False, True):
        _use_reaper = reaper
        try:
            pid = fork_in_new_pid_namespace()
        except OSError as exc:
            failures.append(f"PID namespace ({'with reaper' if reaper else 'setns'}): {exc}")
            continue
        if pid == 0:
            os._exit(0 if os.getpid() == 1 else 1)
        _, status = os.waitpid(pid, 0)
        if os.waitstatus_to_exitcode(status) == 0:
            return True
        failures.append(f"PID namespace ({'with reaper' if reaper else 'setns'}): the child was not PID 1")
    problems.extend(failures)
    return False


def fork_in_new_pid_namespace() -> int:
    """Like ``os.fork()``, but the child runs as PID 1 of a fresh PID namespace. The caller stays put.

    Returns 0 in that child. In the caller it returns the pid to supervise: the child itself, or (where a
    reaper is needed) a small process that waits for it, mirrors its exit status, and whose death kills it.
    """
    if _use_reaper:
        return _fork_with_reaper()
    linux.setns(_own_pid_ns, linux.CLONE_NEWPID)  # a second unshare(NEWPID) is refused without this reset
    linux.unshare(linux.CLONE_NEWPID)
    try:
        return os.fork()
    finally:
        if os.getpid() != 1:  # parent: later plain forks must land in our own namespace again
            linux.setns(_own_pid_ns, linux.CLONE_NEWPID)


def _fork_with_reaper() -> int:
    pid = os.fork()
    if pid != 0:
        return pid
    try:
        linux.unshare(linux.CLONE_NEWPID)
        child = os.fork()
        if child == 0:
            linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)  # the reaper's death ends the job
            return 0
        os.closerange(0, os.sysconf("SC_OPEN_MAX"))  # the job's pipes must close when the job ends
        _, status = os.waitpid(child, 0)
    except BaseException:
        os._exit(71)
    if os.WIFSIGNALED(status):  # die the same way (SIGKILL cannot and need not be reset)
        signum = os.WTERMSIG(status)
        if signum not in (signal.SIGKILL, signal.SIGSTOP):
            signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
    os._exit(os.waitstatus_to_exitcode(status))


def _probe_uid(uid: int, problems: list[str]) -> int | None:
    """``uid`` if a process switched to it can still reach the interpreter's files, else None."""
    paths = keep_paths()  # computed with our own rights: the uid may not even see that they exist
    pid = os.fork()
    if pid == 0:
        try:
            drop_to(uid)
            for path in paths:
                os.listdir(path)
            os._exit(0)
        except BaseException:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) == 0:
        return uid
    problems.append(f"uid {uid} cannot read the interpreter's directories; programs keep the worker's uid")
    return None


def drop_to(uid: int) -> None:
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)


def enter_job(scratch_mb: int) -> None:
    """In a job that is PID 1 but shares no scratch with its worker: its own tmpfs scratch and /proc."""
    linux.unshare(linux.CLONE_NEWNS)
    mount_scratch(scratch_mb)
    _mount_proc("")


def drop_privileges(report: dict, workdir: str) -> None:
    """Become the sandbox user (or shed all capabilities in a user namespace); no regaining them by exec."""
    uid = report["sandbox_uid"]
    if uid is not None:
        os.chown(workdir, uid, uid)
        drop_to(uid)
    elif report["mode"] == "userns":
        drop_capabilities()
    linux.prctl(linux.PR_SET_NO_NEW_PRIVS, 1)
    linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)
    linux.prctl(linux.PR_SET_DUMPABLE, 1)  # setuid cleared it; programs may read their own /proc/self


def drop_capabilities() -> None:
    """Clear the bounding, effective, permitted and inheritable capability sets of the calling process."""
    pr_capbset_drop = 24
    for cap in range(64):
        try:
            linux.prctl(pr_capbset_drop, cap)
        except OSError as exc:
            if exc.errno != errno.EINVAL:  # EINVAL: no such capability on this kernel
                raise
    linux.capset_empty()
