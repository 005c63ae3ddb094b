"""The job's setup, in C only (`agentgrpo.sandbox._native`): the kernel state a program finds, the same in
the root and the user-namespace modes where the kernel allows; its failures reported by step; and no job
at all where the helper is not built."""

from __future__ import annotations

import ast
import os
import resource

import pytest

from agentgrpo.sandbox import PASSED, Limits, Sandbox, SandboxUnavailable
from agentgrpo.sandbox.isolation import INODES_PER_MB, UID_BASE, keep_paths

try:
    from agentgrpo.sandbox import _native
except ImportError:  # pragma: no cover - a machine without a C compiler
    _native = None

LIMITS = Limits(wall_s=4.0, cpu_s=2.0, memory_mb=512, max_processes=16, max_open_files=48, file_size_mb=3)
RESOURCES = ("RLIMIT_CPU", "RLIMIT_AS", "RLIMIT_FSIZE", "RLIMIT_NPROC", "RLIMIT_NOFILE", "RLIMIT_CORE")
PROBE = f"RESOURCES = {RESOURCES!r}\n" + """
import os, resource, socket
def _status(field):
    with open('/proc/self/status') as fh:
        return next(line.split(':', 1)[1].strip() for line in fh if line.startswith(field + ':'))
fds = sorted(int(fd) for fd in os.listdir('/proc/self/fd'))
try:
    socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()
    inet = 'allowed'
except OSError as exc:
    inet = exc.errno
state = {
    'pid': os.getpid(), 'sid': os.getsid(0), 'pgid': os.getpgid(0), 'uid': os.getuid(), 'gid': os.getgid(),
    'groups': os.getgroups(),
    'hostname': os.uname().nodename, 'cwd': os.getcwd(), 'home': os.environ.get('HOME'),
    'tmp': sorted(os.listdir('/tmp')), 'tmp_inodes': os.statvfs('/tmp').f_files, 'root': sorted(os.listdir('/')),
    'shm': oct(os.stat('/tmp/.shm').st_mode & 0o7777),
    'fds': fds[:5], 'more_fds': len(fds) - 5,
    'stdin': os.read(0, 10),
    'rlimits': [resource.getrlimit(getattr(resource, name)) for name in RESOURCES],
    'oom': open('/proc/self/oom_score_adj').read().strip(),
    'no_new_privs': _status('NoNewPrivs'), 'seccomp': _status('Seccomp'), 'caps': _status('CapEff'),
    'inet_socket': inet, 'proc_pids': sorted(p for p in os.listdir('/proc') if p.isdigit()),
    'environ': sorted(os.environ),
}
print(repr(state))
"""


def _state(isolation: str) -> tuple[dict, dict]:
    with Sandbox(workers=1, limits=LIMITS, isolation=isolation) as box:
        verdict = box.run(PROBE, ["assert True"])
        report = box.isolation
    assert verdict.status == PASSED, verdict
    return ast.literal_eval(verdict.stdout.strip()), report


def _userns_works() -> bool:
    try:
        with Sandbox(workers=1, limits=LIMITS, isolation="userns") as box:
            return box.isolation["pid_namespace"]
    except SandboxUnavailable:
        return False


def test_a_program_finds_the_kernel_state_the_setup_promises():
    state, report = _state("auto")
    if not report["pid_namespace"]:  # pragma: no cover - machines without namespaces
        pytest.skip("no namespaces here")
    assert report["job_setup"].startswith("C")
    mib = 1024 * 1024
    cpu = (2, 2)
    expected_limits = [cpu, (512 * mib,) * 2, (3 * mib,) * 2, (16, 16), (48, 48), (0, 0)]
    assert state["rlimits"] == expected_limits, state
    assert state["pid"] == 1 and state["sid"] == 1 and state["pgid"] == 1, state  # its own session and group
    if report["mode"] == "root":
        assert state["uid"] >= UID_BASE and state["gid"] == state["uid"] and state["groups"] == [], state
    else:  # a user namespace: one uid can be mapped, every capability dropped
        assert state["uid"] == 0 and state["caps"] == "0000000000000000", state
    assert state["hostname"] == "sandbox" and state["cwd"] == "/tmp/work", state
    kept = {p.split("/")[2] for p in keep_paths() if p.startswith("/tmp/")}  # e.g. a virtual env under /tmp
    assert state["tmp"] == sorted({".shm", "work"} | kept), state
    assert state["tmp_inodes"] == LIMITS.scratch_mb * INODES_PER_MB, state
    assert state["shm"] == "0o1777" and state["home"] == "/tmp/work", state
    assert state["fds"] == [0, 1, 2, 3, 4] and state["more_fds"] == 1, state  # 5: the listdir itself
    assert state["stdin"] == b"" and state["no_new_privs"] == "1" and state["proc_pids"] == ["1"], state
    assert "LD_BIND_NOW" not in state["environ"] and "HOME" in state["environ"], state  # loader-only
    assert state["root"] == sorted(report_root(report)), state
    if report["seccomp"] != "none":
        assert state["seccomp"] == "2" and state["inet_socket"] != "allowed", state


def report_root(report: dict) -> set:
    """What / holds in the new root: the system trees there are, the top of each kept path, and the
    mount points the worker makes."""
    from agentgrpo.sandbox.isolation import SYSTEM_TREES

    names = {t.strip("/") for t in SYSTEM_TREES if os.path.lexists(t)}
    names |= {p.split("/")[1] for p in keep_paths()}
    return names | {"dev", "proc", "sys", "tmp", "var"}


@pytest.mark.skipif(os.geteuid() != 0, reason="both modes from one machine: root can also ask for userns")
def test_the_userns_mode_gives_the_root_modes_job_state():
    """PID namespace per job (no reaper), own session, the same scratch, view, limits and filter: all but
    the uid (one can be mapped) is the same as root's."""
    if not _userns_works():  # pragma: no cover
        pytest.skip("user namespaces unavailable here")
    root, _ = _state("namespaces")
    userns, report = _state("userns")
    assert report["mode"] == "userns" and report["lacks"] == [], report
    for state in (root, userns):
        for key in ("uid", "gid", "groups", "caps"):
            state.pop(key)
    assert userns == root


def test_without_the_c_helper_the_pool_refuses_to_start(monkeypatch):
    """One implementation of the boundary: where it is not built, no job runs (never set up another way)."""
    from agentgrpo.sandbox import isolation

    monkeypatch.setattr(isolation, "_native", None)
    with pytest.raises(SandboxUnavailable, match="C compiler"):
        Sandbox(workers=1, limits=LIMITS).start()


def test_a_build_older_than_its_source_is_refused(monkeypatch):
    """A stale extension would run an older boundary (one such ran basic-mode jobs' mounts in the host's
    namespace): the pool refuses to start and says to rebuild."""
    from agentgrpo.sandbox import isolation

    if isolation.native() is None:
        pytest.skip("the C helper is not built here")
    assert isolation.native_problem() == "", "the extension here is stale: rebuild it"
    monkeypatch.setattr(isolation.native(), "SOURCE_SHA256", "0" * 64)
    assert "rebuild" in isolation.native_problem()
    with pytest.raises(SandboxUnavailable, match="rebuild"):
        Sandbox(workers=1, limits=LIMITS).start()


def test_basic_mode_mounts_nothing_in_the_callers_namespace():
    """Without namespaces a job must not mount anything: in the caller's mount namespace a tmpfs on /tmp
    (and a /proc) would cover the machine's."""
    def mounts() -> int:
        with open("/proc/self/mountinfo") as fh:
            return sum(1 for _ in fh)

    before = mounts()
    with Sandbox(workers=1, limits=LIMITS, isolation="basic") as box:
        verdicts = box.run_many([("def f():\n    return 1", ["assert f() == 1"])] * 3)
    assert [v.status for v in verdicts] == [PASSED] * 3, verdicts
    assert mounts() == before


def test_the_c_helper_is_built_where_ci_requires_it():
    """.ci/run sets AGENTGRPO_REQUIRE_NATIVE=1: there a silently skipped build (optional=True) must fail."""
    if os.environ.get("AGENTGRPO_REQUIRE_NATIVE") != "1":
        pytest.skip("only where the build environment promises a C compiler (.ci/run)")
    assert _native is not None, "agentgrpo.sandbox._native did not build; see the pip install output"


def _in_child(fn) -> tuple[int, str]:
    """Run ``fn`` in a forked child (it changes the process); its exit code and the error it raised."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        code, text = 0, ""
        try:
            fn()
        except BaseException as exc:
            code, text = 1, f"{type(exc).__name__}: {exc}"
        os.write(write, text.encode())
        os._exit(code)
    os.close(write)
    text = os.read(read, 4096).decode()
    os.close(read)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), text


@pytest.mark.skipif(_native is None, reason="agentgrpo.sandbox._native is not built here")
def test_the_c_helper_raises_the_failing_step_with_its_errno():
    code, text = _in_child(lambda: _native.limit_job(((resource.RLIMIT_NOFILE, 16),), -1, b"/no/such/dir", False))
    assert code == 1 and text == "FileNotFoundError: [Errno 2] chdir: No such file or directory", text
    code, text = _in_child(lambda: _native.wire_fds((0, 1, 2, 99999, 4)))
    assert code == 1 and text.startswith("OSError: [Errno 9] dup"), text
    # malformed arguments are refused before anything changes
    with pytest.raises(ValueError, match="multiple of 8"):
        _native.enter_job(0, b"size=1m", b"/tmp/work", (), False, b"123")
    with pytest.raises(TypeError, match="bytes paths"):
        _native.enter_job(0, b"size=1m", b"/tmp/work", ("/tmp/venv",), False, None)
    with pytest.raises(ValueError, match="uid out of range"):
        _native.limit_job((), -2, b"/", False)
    with pytest.raises(TypeError):
        _native.limit_job(((resource.RLIMIT_NOFILE, "many"),), -1, b"/", False)


def test_unfinished_jobs_get_their_wait_status_from_the_template():
    """A job that does not finish its tests is waited for: the template reports the wait status and CPU
    time the verdict is classified by."""
    cases = [
        ("import os\nos._exit(3)", "crashed", "exited with code 3"),
        ("import os\nos.abort()", "crashed", "killed by SIG"),  # PID 1 ignores SIGABRT; glibc then traps
        ("while True:\n    pass", "timeout", "CPU time limit of 1s"),
        ("def f():\n    return 1", "passed", "all 1 tests passed"),
    ]
    with Sandbox(workers=1, limits=Limits(wall_s=4.0, cpu_s=1.0)) as box:
        for program, status, reason in cases:
            verdict = box.run(program, ["assert f() == 1"] if status == "passed" else ["assert True"])
            assert verdict.status == status and reason in verdict.reason, (program, verdict)


def test_programs_and_tests_compile_as_plain_python_would():
    """No __future__ flag of the sandbox's own modules leaks into the program or the tests: an annotation
    naming nothing fails as it does under `python -c` (it passed while `annotations` was inherited)."""
    with Sandbox(workers=1, limits=LIMITS) as box:
        program = box.run("def f(x: undefined_name):\n    return x", ["assert f(1) == 1"])
        test = box.run("def f(x):\n    return x", ["y: undefined_name = 1\nassert f(y) == 1"])
    with Sandbox(workers=1, limits=LIMITS, comparison="in_process") as box:
        in_process = box.run("def f(x: undefined_name):\n    return x", ["assert f(1) == 1"])
    assert program.status == "error" and "NameError" in program.reason, program
    assert test.status == "failed" and "NameError" in test.reason, test
    assert in_process.status == "error" and "NameError" in in_process.reason, in_process
