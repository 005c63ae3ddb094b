"""The job's seccomp filter, built with libseccomp (through `pyseccomp`) in the trainer's process.

The filter is an **allow-list**: the syscalls a Python job needs (`ALLOWED`, each group with the reason it
is there; found by tracing honest jobs of many kinds, `benchmarks/sandbox_syscalls.py`) and nothing else.
Every other syscall fails with ENOSYS, as if this kernel did not have it (libraries fall back or raise
OSError); the few a program reaches through the standard library fail as that library expects
(`DENIED_WITH`: ``socket`` with EPERM, extended attributes with ENOTSUP, ``clone3`` with ENOSYS so that the
C library uses ``clone``, whose flags the filter can read). Some allowed syscalls are allowed only with
certain arguments (`build`): ``clone`` without namespace flags, ``ioctl`` only for the terminal and
descriptor requests the interpreter makes, ``prlimit64`` only on the calling process, ``socketpair`` only
for an AF_UNIX stream pair and only where the job's memory cgroup holds its buffers (``with_socketpair``);
file locks succeed without locking (no channel between concurrent jobs), page-cache probes fail.
Syscalls of another architecture (the i386 ``int 0x80`` entry, x32) kill the process (libseccomp's default
for a foreign architecture). The BPF program libseccomp generates is handed to the workers as bytes and
installed in each job with ``seccomp(2)`` before the program is compiled: no hand-written BPF, and no
libseccomp import in the worker.
"""

from __future__ import annotations

import errno
import tempfile

# group: (syscalls, why a Python job needs them). docs/sandbox.md lists the same table.
ALLOWED: dict[str, tuple[tuple[str, ...], str]] = {
    "memory": (
        ("brk", "mmap", "munmap", "mremap", "mprotect", "madvise", "msync", "mbind", "get_mempolicy",
         "set_mempolicy"),
        "the interpreter's and libraries' allocators, mmap objects; bounded by RLIMIT_AS (and the cgroup)",
    ),
    "files": (
        ("read", "write", "readv", "writev", "pread64", "pwrite64", "preadv", "pwritev", "preadv2", "pwritev2",
         "lseek", "open", "openat", "creat", "close", "close_range", "dup", "dup2", "dup3", "fcntl",
         "stat", "fstat", "lstat", "newfstatat", "statx", "statfs", "fstatfs", "access", "faccessat",
         "faccessat2", "readlink", "readlinkat", "getdents64", "getcwd", "chdir", "fchdir", "umask",
         "ftruncate", "truncate", "fsync", "fdatasync", "fallocate", "sendfile", "copy_file_range", "ioctl"),
        "imports, open(), the job's pipes and its scratch; what a file may hold is bounded by RLIMIT_FSIZE "
        "and the tmpfs size",
    ),
    "file_changes": (
        ("mkdir", "mkdirat", "rmdir", "unlink", "unlinkat", "rename", "renameat", "renameat2", "link",
         "linkat", "symlink", "symlinkat", "chmod", "fchmod", "fchmodat", "chown", "fchown", "lchown",
         "fchownat", "utimensat", "utime", "utimes"),
        "tempfile, shutil, pathlib on the scratch (the only writable place); chown is also the job's own "
        "setup (its work dir), which runs after the filter is in place",
    ),
    "processes": (
        ("clone", "fork", "vfork", "execve", "execveat", "exit", "exit_group", "wait4", "waitid", "kill",
         "tgkill", "tkill", "getpid", "getppid", "gettid", "getpgid", "setpgid", "getpgrp", "getsid",
         "setsid", "set_tid_address", "set_robust_list", "get_robust_list", "rseq", "arch_prctl", "prctl",
         "futex", "sched_yield", "sched_getaffinity", "sched_setaffinity", "getpriority", "setpriority",
         "getrlimit", "setrlimit", "prlimit64", "getrusage", "times"),
        "threads, fork, multiprocessing, subprocess (clone only without namespace flags; kill reaches only "
        "the job's own PID namespace in the namespace modes); rlimits can only be lowered",
    ),
    "identity": (
        ("getuid", "geteuid", "getgid", "getegid", "getresuid", "getresgid", "getgroups", "setresuid",
         "setresgid", "setgroups", "capget", "capset"),
        "os.getuid() and friends; the setters are the job's own setup (limit_job) after the filter: without "
        "capabilities they can only set ids the job already has",
    ),
    "signals_and_time": (
        ("rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigsuspend", "rt_sigpending", "rt_sigtimedwait",
         "sigaltstack", "restart_syscall", "pause", "alarm", "setitimer", "getitimer", "nanosleep",
         "clock_nanosleep", "clock_gettime", "clock_getres", "gettimeofday", "time"),
        "signal, time.sleep, the clocks (mostly the vDSO), faulthandler's alternate stack",
    ),
    "waiting": (
        ("poll", "ppoll", "select", "pselect6", "epoll_create", "epoll_create1", "epoll_ctl", "epoll_wait",
         "epoll_pwait", "epoll_pwait2", "pipe", "pipe2"),
        "select/selectors/asyncio, subprocess and multiprocessing pipes",
    ),
    "socket_pair_io": (
        ("sendto", "recvfrom", "sendmsg", "recvmsg", "shutdown", "getsockname", "getpeername", "getsockopt",
         "setsockopt"),
        "I/O on a socket pair (asyncio's self-pipe, multiprocessing.Pipe); socket() itself is refused, so "
        "these reach only a pair, where pairs are allowed",
    ),
    "system_info": (
        ("uname", "sysinfo", "getrandom", "getcpu"),
        "platform, os.cpu_count, os.urandom/random/secrets",
    ),
}
# Where the program reaches them through the standard library, the error the library expects.
DENIED_WITH = {
    "socket": errno.EPERM,  # socket.socket(): PermissionError (no network, no listening sockets)
    "clone3": errno.ENOSYS,  # glibc falls back to clone(), whose flags the filter reads (the default's errno)
    **{name: errno.ENOTSUP for name in ("getxattr", "lgetxattr", "fgetxattr", "listxattr", "llistxattr",
                                        "flistxattr", "setxattr", "lsetxattr", "fsetxattr", "removexattr",
                                        "lremovexattr", "fremovexattr")},  # shutil.copy2 ignores ENOTSUP
}
DEFAULT_ERRNO = errno.ENOSYS  # every syscall not allowed: "not implemented"
# ioctl requests the interpreter makes (isatty, non-blocking and close-on-exec flags, bytes ready, the
# terminal's size); any other request fails with ENOSYS
IOCTLS = {"TCGETS": 0x5401, "TIOCGWINSZ": 0x5413, "TIOCGPGRP": 0x540F, "FIONREAD": 0x541B, "FIONBIO": 0x5421,
          "FIONCLEX": 0x5450, "FIOCLEX": 0x5451, "FIOASYNC": 0x5452}
# Channels between concurrent jobs through what they share (the host's files, the page cache):
# file locks on shared files succeed without locking anything (errno 0: a no-op, so a program's own
# locking still "works"); page-cache residency cannot be asked for (mincore, cachestat: not allowed;
# preadv2 with RWF_NOWAIT). inotify and fanotify (watches on shared read-only files) are not allowed.
NO_OP = ("flock",)
_LOCK_COMMANDS = (6, 7, 37, 38)  # fcntl F_SETLK, F_SETLKW, F_OFD_SETLK, F_OFD_SETLKW
# fcntl commands allowed; not F_NOTIFY (directory watches), F_SETLEASE, F_SETOWN/F_SETSIG (signals to others),
# F_SETPIPE_SZ (kernel memory), F_ADD_SEALS
FCNTLS = {"F_DUPFD": 0, "F_GETFD": 1, "F_SETFD": 2, "F_GETFL": 3, "F_SETFL": 4, "F_GETLK": 5, "F_OFD_GETLK": 36,
          "F_DUPFD_CLOEXEC": 1030, "F_GETPIPE_SZ": 1032}
_F_SETPIPE_SZ = 1031  # growing a pipe's buffer (kernel memory outside RLIMIT_AS): refused
_RWF_NOWAIT = 0x8
SKIPPED: list[str] = []  # allowed names this kernel/architecture does not have (nothing to allow)
_CLONE_NS_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000
_AF_UNIX, _SOCK_STREAM = 1, 1
_CONDITIONAL = {"clone", "ioctl", "prlimit64", "fcntl", "preadv2", "pwritev2"}  # allowed with arguments only


def socket_pairs(report: dict) -> str:
    """What a job may do with socket pairs under this worker's report (`Sandbox.isolation["socket_pairs"]`):
    the template allows them only where its jobs are in a memory cgroup (``agentgrpo.sandbox.template``)."""
    if not report.get("seccomp") or report["seccomp"] == "none":
        return "no filter"
    if report.get("memory", "").startswith(("RLIMIT_AS", "none")):
        return "refused: no memory cgroup would hold their buffers (kernel memory outside RLIMIT_AS)"
    return "allowed (AF_UNIX stream): their buffers count against the job's memory cgroup"


def allowed_names() -> list[str]:
    """Every syscall name the filter can allow (some only with certain arguments, see `build`)."""
    names = [name for group, _ in ALLOWED.values() for name in group]
    return sorted(set(names) | set(NO_OP) | {"socketpair"})


def build(with_socketpair: bool = True) -> tuple[bytes | None, str]:
    """(the BPF program, "") or (None, why there is no filter). ``with_socketpair``: allow
    socketpair(AF_UNIX, SOCK_STREAM) (only where a memory cgroup holds the job's socket buffers)."""
    try:
        import pyseccomp as sc
    except ImportError as exc:
        return None, f"no seccomp filter: pyseccomp is not installed ({exc}); pip install 'pyseccomp>=0.1.2'"
    SKIPPED.clear()
    try:
        filt = sc.SyscallFilter(sc.ERRNO(DEFAULT_ERRNO))
        _optimise(filt, sc)
        for names, _ in ALLOWED.values():
            for name in names:
                if name not in _CONDITIONAL:
                    _add(filt, sc.ALLOW, name)
        for name, code in DENIED_WITH.items():
            if code != DEFAULT_ERRNO:  # (libseccomp refuses a rule that repeats the default action)
                _add(filt, sc.ERRNO(code), name)
        for name in NO_OP:
            _add(filt, sc.ERRNO(0), name)
        # (libseccomp lets an unconditional rule override the conditional ones of the same syscall: every
        # rule below names its arguments, and what no rule matches gets the default)
        filt.add_rule(sc.ALLOW, "clone", sc.Arg(0, sc.MASKED_EQ, _CLONE_NS_FLAGS, 0))
        for bit in range(64):
            if _CLONE_NS_FLAGS >> bit & 1:
                filt.add_rule(sc.ERRNO(errno.EPERM), "clone", sc.Arg(0, sc.MASKED_EQ, 1 << bit, 1 << bit))
        for request in IOCTLS.values():
            filt.add_rule(sc.ALLOW, "ioctl", sc.Arg(1, sc.EQ, request))
        filt.add_rule(sc.ALLOW, "prlimit64", sc.Arg(0, sc.EQ, 0))
        filt.add_rule(sc.ERRNO(errno.EPERM), "prlimit64", sc.Arg(0, sc.NE, 0))
        for command in FCNTLS.values():
            filt.add_rule(sc.ALLOW, "fcntl", sc.Arg(1, sc.EQ, command))
        for command in _LOCK_COMMANDS:
            filt.add_rule(sc.ERRNO(0), "fcntl", sc.Arg(1, sc.EQ, command))
        filt.add_rule(sc.ERRNO(errno.EPERM), "fcntl", sc.Arg(1, sc.EQ, _F_SETPIPE_SZ))
        for name in ("preadv2", "pwritev2"):  # flags are the 6th argument
            filt.add_rule(sc.ALLOW, name, sc.Arg(5, sc.MASKED_EQ, _RWF_NOWAIT, 0))
            filt.add_rule(sc.ERRNO(errno.EOPNOTSUPP), name, sc.Arg(5, sc.MASKED_EQ, _RWF_NOWAIT, _RWF_NOWAIT))
        if with_socketpair:
            stream = sc.Arg(1, sc.MASKED_EQ, 0xF, _SOCK_STREAM)
            filt.add_rule(sc.ALLOW, "socketpair", sc.Arg(0, sc.EQ, _AF_UNIX), stream)
            filt.add_rule(sc.ERRNO(errno.EPERM), "socketpair", sc.Arg(0, sc.NE, _AF_UNIX))
            for kind in (2, 3, 5):  # SOCK_DGRAM, SOCK_RAW, SOCK_SEQPACKET
                filt.add_rule(sc.ERRNO(errno.EPERM), "socketpair", sc.Arg(1, sc.MASKED_EQ, 0xF, kind))
        else:
            _add(filt, sc.ERRNO(errno.EPERM), "socketpair")
        with tempfile.TemporaryFile() as fh:
            filt.export_bpf(fh)
            fh.flush()
            fh.seek(0)
            bpf = fh.read()
    except (OSError, RuntimeError, ValueError) as exc:  # no libseccomp.so, unknown syscall, ...
        return None, f"no seccomp filter: libseccomp failed ({type(exc).__name__}: {exc}); apt install libseccomp2"
    return bpf, ""


def _optimise(filt, sc) -> None:
    """Ask for a binary tree of syscall numbers (libseccomp >= 2.5) rather than a linear list: the kernel
    runs the filter for every syscall number when it is installed (to cache the always-allowed ones), so a
    short path per number makes each job's install about 50 us cheaper, and each checked syscall faster."""
    try:
        filt.set_attr(sc.Attr.CTL_OPTIMIZE, 2)
    except (OSError, ValueError, RuntimeError, AttributeError):
        pass  # an older libseccomp: the linear filter is as correct, only slower to install


def _add(filt, action: int, name: str) -> None:
    try:
        filt.add_rule(action, name)
    except (OSError, ValueError, RuntimeError) as exc:
        # a syscall this kernel/architecture does not have cannot be called either
        if getattr(exc, "errno", None) not in (errno.EDOM, errno.EINVAL, errno.EFAULT, None):
            raise
        SKIPPED.append(name)
