"""The weaker isolation modes: what each still enforces, and when "auto" refuses to run at all.

"basic" (process limits only) and "userns" (unprivileged user namespaces) are what machines without root
or CAP_SYS_ADMIN get. Started as root here, "basic" runs programs as root and "userns" maps them to root,
so only cases that are safe under that are run (no fork bombs, nothing that signals other processes
unless a PID namespace is in force).
"""

import os
import secrets

import pytest

from agentgrpo.sandbox import (
    CRASHED,
    ERROR,
    FAILED,
    OUTPUT_LIMIT,
    PASSED,
    TIMEOUT,
    Limits,
    Sandbox,
    SandboxUnavailable,
    SandboxWarning,
)
from agentgrpo.sandbox.pool import _refusal
from agentgrpo.sandbox.rlimits import tasks_of

LIMITS = Limits(wall_s=3.0, cpu_s=1.0, output_bytes=4096)
TEST = ["assert seen == expected"]

SAFE = [
    ("cpu_loop", "while True:\n    pass", {TIMEOUT}),
    ("sleep", "import time\ntime.sleep(60)", {TIMEOUT}),
    ("os_exit", "import os\nos._exit(0)", {CRASHED}),
    ("segfault", "import ctypes\nctypes.string_at(0)", {CRASHED, ERROR}),  # basic: ctypes.dlopen is refused
    ("flood", "while True:\n    print('x' * 100)", {OUTPUT_LIMIT}),
    ("network", "import socket\nsocket.create_connection(('1.1.1.1', 443), timeout=1)", {ERROR}),
    (
        "env_secret",
        "import os\nseen = any('{secret}' in v for v in os.environ.values())\n"
        "seen = seen or '{secret}' in open('/proc/self/environ', errors='replace').read()\nexpected = True",
        {FAILED},
    ),
    ("good_program", "seen = expected = 1", {PASSED}),
]


def _run_safe_cases(box, secret):
    for name, program, allowed in SAFE:
        verdict = box.run(program.format(secret=secret), TEST)
        assert verdict.status in allowed, (name, verdict)
        assert secret not in verdict.stdout + verdict.stderr + verdict.reason


@pytest.fixture
def planted_secret(monkeypatch):
    secret = "hf_FAKESECRET" + secrets.token_hex(8)
    monkeypatch.setenv("HF_TOKEN", secret)
    return secret


def test_basic_mode_still_contains_the_safe_cases(planted_secret):
    with Sandbox(workers=1, limits=LIMITS, isolation="basic") as box:
        report = box.isolation
        assert report["mode"] == "basic" and report["network"].startswith("audit hook")
        _run_safe_cases(box, planted_secret)
        # the fork is refused by the audit hook, and the work dir is a fresh dir, removed afterwards
        assert box.run("import os\nos.fork()", ["assert True"]).status == ERROR
        where = box.run("import os\nprint(os.getcwd())\nopen('f', 'w').write('x')", ["assert True"])
        workdir = where.stdout.strip()
        assert where.status == PASSED and workdir.startswith("/") and not os.path.exists(workdir)


def test_userns_mode_still_contains_the_safe_cases(planted_secret):
    try:
        box = Sandbox(workers=1, limits=LIMITS, isolation="userns")
        box.start()
    except SandboxUnavailable as exc:  # pragma: no cover - machines without user namespaces
        pytest.skip(f"user namespaces unavailable: {exc}")
    with box:
        report = box.isolation
        if not report["pid_namespace"]:  # pragma: no cover
            pytest.skip("no PID namespace in a user namespace here")
        assert report["mode"] == "userns" and report["mount_namespace"]
        assert report["network"].startswith("network namespace")
        _run_safe_cases(box, planted_secret)
        # with a PID namespace per job, the trainer is out of reach even for a program mapped to root
        kill = box.run(f"import os, signal\nos.kill({os.getpid()}, signal.SIGKILL)", ["assert True"])
        assert kill.status == ERROR and "No such process" in kill.reason
        # the program's /tmp and cwd are its own and empty
        fresh = box.run("import os\nopen('/tmp/x', 'w').write('1')\nfiles = os.listdir('.')", ["assert files == []"])
        again = box.run("import os\nleft = os.path.exists('/tmp/x')", ["assert left is False"])
        assert fresh.status == PASSED and again.status == PASSED


@pytest.mark.parametrize(
    "requested,report,euid,refused",
    [
        # auto, no namespaces, root, and no other uid can read the interpreter: refuse
        ("auto", {"mode": "basic", "sandbox_uid": None, "pid_namespace": False, "problems": ["x"]}, 0, True),
        # the same, but asked for explicitly: the caller accepts it
        ("basic", {"mode": "basic", "sandbox_uid": None, "pid_namespace": False, "problems": []}, 0, False),
        # basic as root but with a separate uid: acceptable
        ("auto", {"mode": "basic", "sandbox_uid": 200001, "pid_namespace": False, "problems": []}, 0, False),
        # basic as an ordinary user: acceptable (with a warning)
        ("auto", {"mode": "basic", "sandbox_uid": None, "pid_namespace": False, "problems": []}, 1000, False),
        # namespaces demanded but not available
        (
            "namespaces",
            {"mode": "basic", "sandbox_uid": None, "pid_namespace": False, "problems": ["EPERM"]},
            0,
            True,
        ),
    ],
)
def test_refusal_rules(monkeypatch, requested, report, euid, refused):
    monkeypatch.setattr(os, "geteuid", lambda: euid)
    assert (_refusal(requested, report) is not None) is refused


def test_auto_falling_back_to_basic_warns(monkeypatch):
    from agentgrpo.sandbox import pool

    def weak_spawn_report(self, config, env, timeout, name):
        real_init(self, {**config, "isolation": "basic"}, env, timeout, name)

    real_init = pool._WorkerProcess.__init__
    monkeypatch.setattr(pool._WorkerProcess, "__init__", weak_spawn_report)
    monkeypatch.setattr(pool, "_refusal", lambda requested, report: None)
    with pytest.warns(SandboxWarning, match="cannot guarantee answer_keys"), Sandbox(workers=1) as box:
        assert box.isolation["mode"] == "basic"
        lacks = box.isolation["lacks"]
        assert {"answer_keys", "private_files", "host_writes", "inode_limit"} <= set(lacks), lacks
        assert box.run("x = 1", ["assert x == 1"]).lacks == tuple(lacks)  # in every verdict


def test_a_code_reward_refuses_a_mode_that_lacks_guarantees_unless_the_config_accepts(monkeypatch):
    from agentgrpo.config import RunConfig
    from agentgrpo.rewards import code

    assert RunConfig.__dataclass_fields__["sandbox_insecure_ok"].default is False
    reward = code.code_tests_passed(workers=1, isolation="basic")
    completions, tests = ["def f():\n    return 1"], [["assert f() == 1"]]
    with pytest.raises(code.SandboxInsecure, match="sandbox_insecure_ok: true") as refused:
        reward(completions, tests=tests)
    assert "answer_keys: a job can read files that hold tasks' tests" in str(refused.value)
    monkeypatch.setattr(code, "INSECURE_OK", True)  # what `sandbox_insecure_ok: true` sets
    assert reward(completions, tests=tests) == [1.0]
    if os.geteuid() == 0 or _userns_available():  # control: a mode with every guarantee is accepted
        monkeypatch.setattr(code, "INSECURE_OK", False)
        assert code.code_tests_passed(workers=1)(completions, tests=tests) == [1.0]


def _userns_available() -> bool:
    try:
        with Sandbox(workers=1, limits=LIMITS, isolation="userns") as box:
            return not box.isolation["lacks"]
    except SandboxUnavailable:
        return False


def test_tasks_of_counts_this_uid():
    assert tasks_of(os.geteuid()) >= 1
    assert tasks_of(4_000_000_000) == 0


def test_basic_mode_cleanup_never_follows_what_the_job_planted(tmp_path):
    """Symlinks to root's files, unreadable and deeply nested dirs: cleanup works by directory descriptor,
    never following a link, bounded (and as the job's uid where it has one); the victims stay, the work
    dir goes."""
    victim_dir = tmp_path / "victim"
    victim_dir.mkdir()
    (victim_dir / "keep").write_text("root's")
    victim_file = tmp_path / "victim.txt"
    victim_file.write_text("root's")
    program = (
        "import os\nwd = os.getcwd()\nprint(wd)\n"
        f"os.symlink({str(victim_dir)!r}, 'dir-link')\nos.symlink({str(victim_file)!r}, 'file-link')\n"
        "os.symlink('/', 'root-link')\nfor i in range(1500):\n    os.mkdir('d')\n    os.chdir('d')\n"
        f"os.symlink({str(victim_dir)!r}, 'deep-link')\nos.chdir(wd)\nos.mkdir('locked')\n"
        "open('locked/f', 'w').write('x')\nos.chmod('locked', 0)\n"
    )
    with Sandbox(workers=1, limits=LIMITS, isolation="basic") as box:
        verdict = box.run(program, ["assert True"])
        workdir = verdict.stdout.strip()
        assert verdict.status == PASSED, verdict
        assert not os.path.exists(workdir), "the job's work dir was left behind"
        assert (victim_dir / "keep").read_text() == "root's" and victim_file.read_text() == "root's"
        assert box.run("def f():\n    return 2", ["assert f() == 2"]).status == PASSED


def test_an_interpreter_path_under_tmp_stays_importable():
    """The job's private /tmp must not hide a virtual environment (or any sys.path entry) under /tmp."""
    import shutil
    import tempfile

    where = tempfile.mkdtemp(prefix="agentgrpo-venv-", dir="/tmp")
    try:
        os.chmod(where, 0o755)
        with open(os.path.join(where, "agentgrpo_tmp_module.py"), "w") as fh:
            fh.write("VALUE = 42\n")
        os.chmod(os.path.join(where, "agentgrpo_tmp_module.py"), 0o644)
        program = "import agentgrpo_tmp_module\ndef value():\n    return agentgrpo_tmp_module.VALUE"
        with Sandbox(workers=1, limits=LIMITS, env={"PYTHONPATH": where}) as box:
            assert box.run(program, ["assert value() == 42"]).status == PASSED
            # the rest of /tmp is still the job's own, empty and writable
            scratch = box.run(
                "import os\ndef f():\n    open('/tmp/x', 'w').close()\n    return os.path.exists('/tmp/x')",
                ["assert f() is True"],
            )
            assert scratch.status == PASSED, scratch
        with Sandbox(workers=1, limits=LIMITS) as box:  # control: without it on the path, no such module
            assert box.run(program, ["assert value() == 42"]).status == ERROR
    finally:
        shutil.rmtree(where)


def test_without_libseccomp_the_report_says_so_and_jobs_still_run(monkeypatch):
    import sys

    from agentgrpo.sandbox import seccomp

    monkeypatch.setitem(sys.modules, "pyseccomp", None)  # as if it were not installed
    bpf, why = seccomp.build()
    assert bpf is None and "pip install" in why
    with Sandbox(workers=1, limits=LIMITS) as box:
        report = box.isolation
        assert report["seccomp"] == "none" and any("pyseccomp" in p for p in report["problems"])
        assert box.run("def f():\n    return 1", ["assert f() == 1"]).status == PASSED


def test_with_libseccomp_every_denied_syscall_resolves():
    from agentgrpo.sandbox import seccomp

    bpf, why = seccomp.build()
    assert bpf and not why and len(bpf) % 8 == 0
    assert seccomp.SKIPPED == [], f"not denied, unknown to libseccomp here: {seccomp.SKIPPED}"
