"""The job's seccomp filter, built with libseccomp (through `pyseccomp`) in the trainer's process.

The filter allows by default and denies what a Python solution never needs but an escape or a covert
channel does (`DENIED`), plus namespace flags on ``clone`` and every socket but an ``AF_UNIX`` stream
``socketpair`` (what ``multiprocessing.Pipe`` uses). The job's own channels are pipes. Syscalls of another
architecture (the i386 ``int 0x80`` entry, x32) kill the process (libseccomp's default for a foreign
architecture). The BPF program libseccomp generates is handed to the workers as bytes and installed in
each job with ``prctl(PR_SET_SECCOMP)`` just before the program is compiled: no hand-written BPF, and no
libseccomp import in the worker.
"""

from __future__ import annotations

import errno
import tempfile

DENIED = {
    # asynchronous I/O rings (they even create sockets past a socket() rule)
    "io_uring": ("io_uring_setup", "io_uring_enter", "io_uring_register"),
    # reading or writing other processes
    "tracing": ("ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd", "process_madvise"),
    # kernel keyrings
    "keyrings": ("keyctl", "add_key", "request_key"),
    # kernel programs, counters, page-fault handlers
    "kernel_surface": ("bpf", "perf_event_open", "userfaultfd", "fanotify_init", "open_by_handle_at"),
    # mounts and namespaces
    "mounts": (
        "mount",
        "umount2",
        "pivot_root",
        "chroot",
        "fsopen",
        "fsmount",
        "fsconfig",
        "fspick",
        "move_mount",
        "open_tree",
        "mount_setattr",
        "unshare",
        "setns",
        "clone3",
    ),
    # memory outside RLIMIT_AS, and System V / POSIX IPC objects
    "memory_objects": ("memfd_create", "memfd_secret", "shmget", "msgget", "semget", "mq_open"),
    # sockets: only socketpair(AF_UNIX, SOCK_STREAM) is allowed (rule below)
    "sockets": ("socket",),
    # the machine itself
    "system": (
        "init_module",
        "finit_module",
        "delete_module",
        "kexec_load",
        "kexec_file_load",
        "reboot",
        "swapon",
        "swapoff",
        "acct",
        "quotactl",
        "syslog",
        "personality",
    ),
}
# Channels between concurrent jobs through what they share (the host's files, the page cache):
# file locks on shared files succeed without locking anything (errno 0: a no-op, so a program's own
# locking still "works"); page-cache residency cannot be asked for (mincore, cachestat, preadv2 with
# RWF_NOWAIT). What remains (timing) is stated in docs/sandbox.md.
NO_OP = ("flock",)
_LOCK_COMMANDS = (6, 7, 37, 38)  # fcntl F_SETLK, F_SETLKW, F_OFD_SETLK, F_OFD_SETLKW
CACHE_PROBES = ("mincore", "cachestat")
_RWF_NOWAIT = 0x8
SKIPPED: list[str] = []  # names in DENIED this kernel/architecture does not have (nothing to deny)
_CLONE_NS_FLAGS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000)
_AF_UNIX, _SOCK_STREAM = 1, 1


def build() -> tuple[bytes | None, str]:
    """(the BPF program, "") or (None, why there is no filter)."""
    try:
        import pyseccomp as sc
    except ImportError as exc:
        return None, f"no seccomp filter: pyseccomp is not installed ({exc}); pip install 'pyseccomp>=0.1.2'"
    SKIPPED.clear()
    try:
        filt = sc.SyscallFilter(sc.ALLOW)
        _optimise(filt, sc)
        for names in DENIED.values():
            for name in names:
                # ENOSYS for clone3, so that the C library falls back to clone(), which the rules can read
                action = sc.ERRNO(errno.ENOSYS if name == "clone3" else errno.EPERM)
                _add(filt, action, name)
        for name in NO_OP:
            _add(filt, sc.ERRNO(0), name)
        for command in _LOCK_COMMANDS:
            for fcntl_name in ("fcntl", "fcntl64"):
                try:
                    filt.add_rule(sc.ERRNO(0), fcntl_name, sc.Arg(1, sc.EQ, command))
                except (OSError, ValueError, RuntimeError):
                    pass  # fcntl64: not on 64-bit architectures
        for name in CACHE_PROBES:
            _add(filt, sc.ERRNO(errno.EPERM), name)
        for name in ("preadv2", "pwritev2"):  # flags are the 6th argument
            filt.add_rule(sc.ERRNO(errno.EOPNOTSUPP), name, sc.Arg(5, sc.MASKED_EQ, _RWF_NOWAIT, _RWF_NOWAIT))
        for flag in _CLONE_NS_FLAGS:
            filt.add_rule(sc.ERRNO(errno.EPERM), "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
        filt.add_rule(sc.ERRNO(errno.EPERM), "socketpair", sc.Arg(0, sc.NE, _AF_UNIX))
        filt.add_rule(sc.ERRNO(errno.EPERM), "socketpair", sc.Arg(1, sc.MASKED_EQ, 0xF, 2))  # SOCK_DGRAM
        filt.add_rule(sc.ERRNO(errno.EPERM), "socketpair", sc.Arg(1, sc.MASKED_EQ, 0xF, 5))  # SOCK_SEQPACKET
        filt.add_rule(sc.ERRNO(errno.EPERM), "socketpair", sc.Arg(1, sc.MASKED_EQ, 0xF, 3))  # SOCK_RAW
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
