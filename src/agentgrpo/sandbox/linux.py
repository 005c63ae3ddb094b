"""Thin ctypes wrappers for the Linux calls Python 3.11 lacks: unshare, setns, mount, mount_setattr, prctl,
pivot_root, sethostname and keyctl (the worker's own setup; a job's is in C, `agentgrpo.sandbox._native`).

Every wrapper raises `OSError` with the errno on failure, like the `os` module does.
"""

from __future__ import annotations

import ctypes
import os
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_NO_NEW_PRIVS = 38

MOUNT_ATTR_RDONLY = 0x1
MOUNT_ATTR_NOSUID = 0x2
_AT_FDCWD = -100
_AT_RECURSIVE = 0x8000
_SYS_MOUNT_SETATTR = 442  # the same number on every architecture (asm-generic, Linux 5.12)
_SYS_KEYCTL = {"x86_64": 250, "aarch64": 219, "ppc64le": 271, "s390x": 280, "riscv64": 219}
_KEYCTL_JOIN_SESSION_KEYRING = 1
_SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "ppc64le": 203, "s390x": 217, "riscv64": 41}

_libc = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None
_SIGNATURES = {  # declared at import: each call converts its arguments in C, and a forked job finds them ready
    "unshare": [ctypes.c_int],
    "setns": [ctypes.c_int, ctypes.c_int],
    "mount": [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p],
    "umount2": [ctypes.c_char_p, ctypes.c_int],
    "prctl": [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong],
    "sethostname": [ctypes.c_char_p, ctypes.c_size_t],
}
if _libc is not None:
    for _name, _argtypes in _SIGNATURES.items():
        getattr(_libc, _name).argtypes = _argtypes


def available() -> bool:
    return _libc is not None


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def unshare(flags: int) -> None:
    _check(_libc.unshare(flags), "unshare")


MNT_DETACH = 2


def umount(target: str, flags: int = 0) -> None:
    _check(_libc.umount2(os.fsencode(target), flags), f"umount {target}")


def setns(fd: int, nstype: int) -> None:
    _check(_libc.setns(fd, nstype), "setns")


def mount(source, target, fstype, flags: int = 0, data=None) -> None:
    """mount(2); each of ``source``, ``target``, ``fstype``, ``data`` a str, bytes or None."""
    args = [a if a is None or type(a) is bytes else os.fsencode(a) for a in (source, target, fstype, data)]
    _check(_libc.mount(args[0], args[1], args[2], flags, args[3]), f"mount {os.fsdecode(target)}")


def prctl(option: int, arg: int) -> None:
    _check(_libc.prctl(option, arg, 0, 0, 0), "prctl")


class _MountAttr(ctypes.Structure):
    _fields_ = [
        ("attr_set", ctypes.c_uint64),
        ("attr_clr", ctypes.c_uint64),
        ("propagation", ctypes.c_uint64),
        ("userns_fd", ctypes.c_uint64),
    ]


def make_tree_readonly(path: str = "/") -> None:
    """Every mount at and under ``path`` becomes read-only and nosuid (one ``mount_setattr`` call)."""
    attr = _MountAttr(MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID, 0, 0, 0)
    result = _libc.syscall(
        ctypes.c_long(_SYS_MOUNT_SETATTR),
        ctypes.c_int(_AT_FDCWD),
        os.fsencode(path),
        ctypes.c_uint(_AT_RECURSIVE),
        ctypes.byref(attr),
        ctypes.c_size_t(ctypes.sizeof(attr)),
    )
    _check(result, f"mount_setattr {path}")


def pivot_root(new_root: str, put_old: str) -> None:
    """pivot_root(2): ``new_root`` (a mount point) becomes /, the old root moves to ``put_old`` under it."""
    number = _SYS_PIVOT_ROOT.get(os.uname().machine)
    if number is None:
        raise OSError(38, f"pivot_root: syscall number unknown on {os.uname().machine}")
    result = _libc.syscall(ctypes.c_long(number), os.fsencode(new_root), os.fsencode(put_old))
    _check(result, "pivot_root")


def sethostname(name: str) -> None:
    data = name if type(name) is bytes else name.encode()
    _check(_libc.sethostname(data, len(data)), "sethostname")


def join_new_session_keyring() -> None:
    """Replace the session keyring with a new, empty, anonymous one (what the trainer held is gone)."""
    number = _SYS_KEYCTL.get(os.uname().machine)
    if number is None:
        raise OSError(38, f"keyctl: syscall number unknown on {os.uname().machine}")
    result = _libc.syscall(ctypes.c_long(number), ctypes.c_int(_KEYCTL_JOIN_SESSION_KEYRING), None)
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"keyctl: {os.strerror(err)}")
