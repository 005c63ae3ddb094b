"""Kernel isolation: the worker's view of the machine, and each job's own namespaces, uid and scratch.

Worker level (once, before any job data arrives): a new mount, network and IPC namespace and a new empty
session keyring. In that mount namespace secret paths are covered (the interpreter's own directories are
bound back read-only), /dev is replaced by a minimal one (null, zero, urandom, an empty shm dir), /sys
by an empty directory, and then every mount is made read-only.

Job level (in each fresh child, see `agentgrpo.sandbox.template`): PID namespace (the job is PID 1;
when it dies the kernel kills every process it left), its own mount, IPC, network and UTS namespaces,
a fresh tmpfs on /tmp (/dev/shm links into it: the only writable place, freed by the kernel
with the namespace, so nothing is ever removed by path), its own /proc, a uid of its own (as root), no
capabilities, ``no_new_privs``, limits and the seccomp filter.

Without namespaces ("basic" mode) only the process-level measures apply; see docs/sandbox.md.

A job's own setup (`enter_job`, `limit_job`, and the fork into its PID namespace) runs in C where the
optional extension `agentgrpo.sandbox._native` is built: the same system calls in the same order, but
without the Python objects whose pages each job (forked from the template) would otherwise copy.
"""

from __future__ import annotations

import errno
import fcntl
import os
import signal
import stat
import sys

from agentgrpo.sandbox import linux
from agentgrpo.sandbox.rlimits import apply_rlimits

try:
    from agentgrpo.sandbox import _native
except ImportError:  # not built (no C compiler, not Linux): the same setup in Python
    _native = None

WORKDIR = "/tmp/work"  # cwd and HOME of every program in the namespace modes
UID_BASE = 100_000  # each job runs as a uid of its own: UID_BASE + (worker pid << 12 | job counter)
_DEVICES = ("null", "zero", "urandom")


def use_native(wanted: bool) -> str:
    """Choose the C or the Python job setup (C where built and ``wanted``); say which one is in use."""
    global _native
    if not wanted:
        _native = None
        return "Python (the C helper is turned off)"
    if _native is None:
        return "Python (agentgrpo.sandbox._native is not built: reinstall with a C compiler for faster jobs)"
    return "C (agentgrpo.sandbox._native)"


def native():
    """The C helper (`agentgrpo.sandbox._native`) the job setup uses, or None: the Python setup."""
    return _native


def base_report(mode: str) -> dict:
    return {
        "mode": mode,
        "network": "audit hook (not a security boundary)",
        "mount_namespace": False,
        "pid_namespace": False,
        "job_namespaces": [],
        "proc": "host /proc",
        "scratch": "host /tmp (job dir removed afterwards, by the job's uid)",
        "dev": "host /dev",
        "root_fs": "host file system, writable where permissions allow",
        "hidden_paths": [],
        "sandbox_uid": None,
        "process_limit": False,
        "keyring": "inherited",
        "seccomp": "none",
        "memory": "RLIMIT_AS per process",
        "job_setup": "Python",
        "problems": [],
    }


def job_uid(worker_pid: int, count: int) -> int:
    """The uid of a worker's ``count``-th job (distinct across live workers and consecutive jobs)."""
    return UID_BASE + (((worker_pid % (1 << 18)) << 12) | (count % (1 << 12)))


def isolate_worker(requested: str, hide: list[str], seccomp_ok: bool) -> dict:
    """Set up the worker as far as the kernel allows; return what is in force."""
    report = base_report("basic")
    try:
        linux.join_new_session_keyring()
        report["keyring"] = "new empty session keyring (worker and each job)"
    except OSError as exc:
        report["problems"].append(f"keyring: {exc}")
    if requested == "basic" or not linux.available():
        return _finish_basic(report)
    kind = _enter_namespaces(requested, report)
    if kind is None:
        return _finish_basic(report)
    report.update(mode=kind, network="network namespace per job (no interface up)", mount_namespace=True)
    linux.mount(None, "/", None, linux.MS_REC | linux.MS_PRIVATE)
    keep = keep_paths()
    report["hidden_paths"] = hide_paths(hide, keep, report["problems"])
    _minimal_dev(report)
    _detach("/sys")
    _cover("/sys", report)
    if os.path.isdir("/var/tmp"):
        _cover("/var/tmp", report)  # empty and read-only: TMPDIR and the job's tmpfs are /tmp
    try:
        linux.make_tree_readonly("/")
        report["root_fs"] = "read-only (every mount); the job's tmpfs is its only writable place"
    except OSError as exc:
        report["problems"].append(f"read-only root: {exc}")
    report["pid_namespace"] = _probe_pid_namespace(report["problems"])
    if kind == "root":
        report["sandbox_uid"] = _probe_uid(job_uid(os.getpid(), 0), report["problems"])
    report["process_limit"] = report["sandbox_uid"] is not None or (kind == "userns" and os.geteuid() != 0)
    if not report["process_limit"]:
        report["problems"].append("no process limit: programs run as uid 0, which RLIMIT_NPROC does not bind")
    if report["pid_namespace"]:
        report.update(
            job_namespaces=["pid", "mount", "ipc", "network", "uts"],
            scratch="private tmpfs per job (/tmp; /dev/shm -> /tmp/.shm), freed with its mount namespace",
            proc="private /proc per job (its own PID namespace)",
        )
    return report


def _finish_basic(report: dict) -> dict:
    if os.geteuid() == 0:
        report["sandbox_uid"] = _probe_uid(job_uid(os.getpid(), 0), report["problems"])
    report["process_limit"] = report["sandbox_uid"] is not None or os.geteuid() != 0
    if not report["process_limit"]:
        report["problems"].append("no process limit: programs run as root, which RLIMIT_NPROC does not bind")
    return report


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
                _cover(path, None, [k for k in keep if k.startswith(path.rstrip("/") + "/")])
            elif os.path.exists(path):
                linux.mount("/dev/null", path, None, linux.MS_BIND)
            else:
                continue
            hidden.append(path)
        except OSError as exc:
            problems.append(f"could not hide {path}: {exc}")
    return hidden


def _cover(path: str, report: dict | None, keep: list[str] = ()) -> None:
    """An empty tmpfs over ``path``, with ``keep`` bound back read-only (mounts are made read-only later)."""
    try:
        fds = [os.open(k, os.O_PATH | os.O_DIRECTORY) for k in keep]
        try:
            linux.mount("tmpfs", path, "tmpfs", linux.MS_NOSUID | linux.MS_NODEV, "size=1m,mode=755")
            for k, fd in zip(keep, fds, strict=True):
                bind_back(fd, k)
        finally:
            for fd in fds:
                os.close(fd)
    except OSError as exc:
        if report is None:
            raise
        report["problems"].append(f"could not cover {path}: {exc}")


def _detach(path: str) -> None:
    """Drop the mounts at and under ``path`` from this namespace where allowed (fewer mounts make each job's
    mount namespace cheaper to copy and to tear down); otherwise they stay, covered."""
    try:
        linux.umount(path, linux.MNT_DETACH)
    except OSError:
        pass


def bind_back(fd: int, path: str) -> None:
    """Bind the directory open as ``fd`` (O_PATH) onto ``path`` (created), read-only."""
    os.makedirs(path, mode=0o755, exist_ok=True)
    linux.mount(f"/proc/self/fd/{fd}", path, None, linux.MS_BIND | linux.MS_REC)
    linux.mount(None, path, None, linux.MS_REMOUNT | linux.MS_BIND | linux.MS_RDONLY | linux.MS_NOSUID)


def _minimal_dev(report: dict) -> None:
    """/dev with only null, zero, urandom (bound from the host's), an shm mount point and fd links."""
    try:
        fds = {name: os.open(f"/dev/{name}", os.O_PATH) for name in _DEVICES}
        try:
            linux.mount("tmpfs", "/dev", "tmpfs", linux.MS_NOSUID | linux.MS_NOEXEC, "size=64k,mode=755")
            for name, fd in fds.items():
                os.close(os.open(f"/dev/{name}", os.O_CREAT | os.O_WRONLY, 0o666))
                linux.mount(f"/proc/self/fd/{fd}", f"/dev/{name}", None, linux.MS_BIND)
        finally:
            for fd in fds.values():
                os.close(fd)
        for link, target in (
            ("shm", "/tmp/.shm"),  # the job's own tmpfs: one mount per job serves /tmp and /dev/shm
            ("fd", "/proc/self/fd"),
            ("stdin", "/proc/self/fd/0"),
            ("stdout", "/proc/self/fd/1"),
            ("stderr", "/proc/self/fd/2"),
            ("random", "urandom"),
        ):
            os.symlink(target, f"/dev/{link}")
        report["dev"] = "minimal: null, zero, urandom (random -> urandom), shm; nothing else of the host"
    except OSError as exc:
        report["problems"].append(f"minimal /dev: {exc}")


_own_pid_ns: int | None = None  # an fd on the worker's own PID namespace
_use_reaper = False  # True where setns back to our own PID namespace is refused (user namespaces)
_pid_ns_reset = False  # True once setns has put us back in our own PID namespace after an unshare


def _probe_pid_namespace(problems: list[str]) -> bool:
    global _own_pid_ns, _use_reaper
    _own_pid_ns = os.open("/proc/self/ns/pid", os.O_RDONLY)
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


def own_pid_namespace() -> int | None:
    """An fd on our own PID namespace for `agentgrpo.sandbox._native`'s forks; None where jobs need the
    reaper (setns back to it is refused)."""
    return None if _use_reaper else _own_pid_ns


def fork_in_new_pid_namespace() -> int:
    """Like ``os.fork()``, but the child runs as PID 1 of a fresh PID namespace. The caller stays put.

    Returns 0 in that child. In the caller it returns the pid to supervise: the child itself, or (where a
    reaper is needed) a small process that waits for it, mirrors its exit status, and whose death kills it.
    """
    global _pid_ns_reset
    if _use_reaper:
        return _fork_with_reaper()
    if _native is not None:
        return _native.fork_in_pid_namespace(_own_pid_ns)  # comes back to our own namespace itself
    if not _pid_ns_reset:  # a second unshare(NEWPID) is refused until we are back in our own namespace
        linux.setns(_own_pid_ns, linux.CLONE_NEWPID)
    _pid_ns_reset = False
    linux.unshare(linux.CLONE_NEWPID)
    try:
        return os.fork()
    finally:
        if os.getpid() != 1:  # parent: later plain forks must land in our own namespace again
            linux.setns(_own_pid_ns, linux.CLONE_NEWPID)
            _pid_ns_reset = True


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


_JOB_NAMESPACES = linux.CLONE_NEWNS | linux.CLONE_NEWIPC | linux.CLONE_NEWNET | linux.CLONE_NEWUTS
_PROC_FLAGS = linux.MS_NOSUID | linux.MS_NODEV | linux.MS_NOEXEC
_WORKDIR = WORKDIR.encode()


def enter_job(scratch_mb: int, keep_under_tmp: tuple[bytes, ...], oom_first: bool = False, program=None) -> None:
    """In a fresh job that is PID 1 of its namespace, before any job data exists: die with the template,
    its own mount/IPC/network/UTS namespaces (the hostname was set once, in the template), scratch, /proc;
    chosen first by the OOM killer if ``oom_first``; then the seccomp filter ``program`` (if any)."""
    options = b"size=%dm,mode=1777" % scratch_mb
    if _native is not None:
        _native.enter_job(_JOB_NAMESPACES, options, _WORKDIR, keep_under_tmp, oom_first, program and program.bpf)
        return
    linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)  # the template's death ends a waiting job
    linux.unshare(_JOB_NAMESPACES)
    keep = [(os.open(p, os.O_PATH | os.O_DIRECTORY), p) for p in keep_under_tmp]  # in this namespace
    linux.mount(b"tmpfs", b"/tmp", b"tmpfs", linux.MS_NOSUID | linux.MS_NODEV, options)
    os.mkdir(b"/tmp/.shm", 0o1777)  # /dev/shm points here
    os.chmod(b"/tmp/.shm", 0o1777)
    for fd, path in keep:  # a virtual environment under /tmp stays importable
        bind_back(fd, path)
        os.close(fd)
    os.mkdir(_WORKDIR, 0o700)
    linux.mount(b"proc", b"/proc", b"proc", _PROC_FLAGS, b"")
    if oom_first:
        oom_score_adj(1000)
    if program is not None:  # no_new_privs is inherited from the template
        program.install()


def oom_score_adj(value: int) -> None:
    """Set this process's OOM-killer adjustment (1000: chosen first; 0: the default)."""
    fd = os.open("/proc/self/oom_score_adj", os.O_WRONLY)
    try:
        os.write(fd, str(value).encode())
    finally:
        os.close(fd)


def wire_fds(fds: tuple[int, ...]) -> None:
    """Put the job's five ``fds`` on 0-4 (stdin, stdout, stderr, requests, replies); close every other one."""
    if _native is not None:
        _native.wire_fds(fds)
        return
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in fds]  # no dup2 clobbers a source
    for target, fd in enumerate(high):
        os.dup2(fd, target)
    os.closerange(len(fds), os.sysconf("SC_OPEN_MAX"))


def limit_job(rlimits: tuple, mode: str, uid: int | None, workdir: str) -> None:
    """Apply the kernel limits ``rlimits`` (`agentgrpo.sandbox.rlimits.table`), become the job's own uid
    (or shed all capabilities in a user namespace), die with the template, and enter ``workdir``."""
    if _native is not None:
        _native.limit_job(rlimits, -1 if uid is None else uid, os.fsencode(workdir), mode == "userns")
        return
    apply_rlimits(rlimits)
    drop_privileges(mode, uid, workdir)
    os.chdir(workdir)


def drop_privileges(mode: str, uid: int | None, workdir: str) -> None:
    """Become the job's own uid (or shed all capabilities in a user namespace). ``no_new_privs`` is already
    set (by the job template, inherited): nothing is regained by exec."""
    if uid is not None:
        os.chown(workdir, uid, uid)
        drop_to(uid)
    elif mode == "userns":
        drop_capabilities()
    linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)  # after the uid change, which clears it
    linux.prctl(linux.PR_SET_DUMPABLE, 1)  # own uid, own PID namespace, ptrace denied: /proc/self readable


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


def remove_tree(parent_fd: int, name: str, budget: int = 100_000) -> int:
    """Remove ``name`` under the directory ``parent_fd`` without following any symlink; what is left.

    Works on directory file descriptors only (a symlink swapped in is removed, never followed), visits at
    most ``budget`` entries and keeps no recursion (depth is no problem). Call it with the job's own uid:
    then even a race could only touch what the job itself could.
    """
    stack = [(parent_fd, name, None)]  # (dir fd holding the entry, entry name, fd of the entry once opened)
    while stack and budget > 0:
        holder, entry, fd = stack[-1]
        if fd is None:
            try:
                st = os.stat(entry, dir_fd=holder, follow_symlinks=False)
            except FileNotFoundError:
                stack.pop()
                continue
            if not stat.S_ISDIR(st.st_mode):
                _quiet(os.unlink, entry, holder)
                stack.pop()
                budget -= 1
                continue
            try:
                fd = os.open(entry, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=holder)
                os.fchmod(fd, 0o700)
            except OSError:
                stack.pop()
                continue
            stack[-1] = (holder, entry, fd)
        children = os.listdir(fd)
        if children:
            stack.extend((fd, child, None) for child in children[:budget])
            budget -= min(len(children), budget)
            continue
        os.close(fd)
        stack.pop()
        _quiet(os.rmdir, entry, holder)
    left = len(stack)
    for _, _, fd in stack:
        if fd is not None:
            os.close(fd)
    return left


def _quiet(fn, entry: str, dir_fd: int) -> None:
    try:
        fn(entry, dir_fd=dir_fd)
    except OSError:
        pass
