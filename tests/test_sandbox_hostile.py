"""Hostile programs: each is contained, sees no secret, leaves the trainer unharmed and the pool serving.

The trainer side plants fake secrets first (HF_TOKEN in the environment, a token file under HOME and
HF_HOME, one at an absolute path), then starts the pool. Programs that hunt for secrets *pass their test
only if they find one*, so a leak would show up as a "passed" verdict, which every case forbids.
"""

import os
import secrets
import socket
import time

import pytest
from sandbox_helpers import assert_pool_still_serves

from agentgrpo.sandbox import (
    CRASHED,
    ERROR,
    FAILED,
    OUTPUT_LIMIT,
    PASSED,
    TIMEOUT,
    Limits,
    Sandbox,
)
from agentgrpo.sandbox.isolation import job_uid

LIMITS = Limits(wall_s=3.0, cpu_s=2.0, memory_mb=512, max_processes=16, output_bytes=32 * 1024)
SECRET_PREFIX = "hf_FAKESECRET"


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """Plant the secrets, open a listening socket, start the pool; check nothing is left at the end."""
    root = tmp_path_factory.mktemp("trainer")
    home, target = root / "home", root / "writable"
    (home / ".cache" / "huggingface").mkdir(parents=True)
    target.mkdir(mode=0o777)
    target.chmod(0o777)
    token = SECRET_PREFIX + secrets.token_hex(8)
    file_token = SECRET_PREFIX + secrets.token_hex(8)
    token_file = home / ".cache" / "huggingface" / "token"
    token_file.write_text(file_token)
    token_file.chmod(0o644)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.setblocking(False)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_TOKEN", token)
        mp.setenv("HOME", str(home))
        mp.setenv("HF_HOME", str(home / ".cache" / "huggingface"))
        box = Sandbox(workers=2, limits=LIMITS)
        box.start()
    info = {
        "box": box,
        "secrets": (token, file_token),
        "token_file": str(token_file),
        "target": str(target),
        "port": listener.getsockname()[1],
        "listener": listener,
        "pids": box.pids(),
    }
    yield info
    uid = box.isolation["sandbox_uid"]
    pids = box.pids()
    box.close()
    listener.close()
    assert not any(_alive(p) for p in pids), "workers left running after close()"
    if uid is not None:
        assert all(_processes_of(job_uid(p, 0)) == [] for p in pids), "sandbox processes left running"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _processes_of(uid: int) -> list[int]:
    """Processes of the uid range that ``uid`` (a worker's first job uid) starts: every job of that worker."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/status") as fh:
                    if any(line.startswith("Uid:") and uid <= int(line.split()[1]) < uid + 4096 for line in fh):
                        found.append(int(entry))
            except OSError:
                continue
    return found


HUNT = f"""
def found(sources):
    return any("{SECRET_PREFIX}" in s for s in sources)
"""

# (id, program, allowed statuses); "{...}" fields are filled from the fixture.
CASES = [
    ("infinite_loop", "while True:\n    pass", {TIMEOUT}),
    ("sleep_past_limit", "import time\ntime.sleep(60)", {TIMEOUT}),
    (
        "ignore_sigxcpu_and_spin",
        "import signal\nsignal.signal(signal.SIGXCPU, signal.SIG_IGN)\nwhile True:\n    pass",
        {TIMEOUT},
    ),
    ("fork_bomb", "import os\nwhile True:\n    os.fork()", {ERROR, TIMEOUT, CRASHED}),
    ("memory_bomb", "x = bytearray(16 * 1024 ** 3)", {ERROR}),
    ("memory_creep", "xs = []\nwhile True:\n    xs.append(bytearray(50 * 1024 ** 2))", {ERROR, CRASHED}),
    (
        "deep_recursion",
        "import sys\nsys.setrecursionlimit(10 ** 8)\ndef f(n):\n    return f(n + 1)\nf(0)",
        {ERROR, CRASHED, TIMEOUT},
    ),
    ("segfault_via_ctypes", "import ctypes\nctypes.string_at(0)", {CRASHED}),
    ("os_exit_zero", "import os\nos._exit(0)", {CRASHED}),
    ("sys_exit_zero", "import sys\nsys.exit(0)", {ERROR}),
    ("flood_stdout", "while True:\n    print('x' * 1000)", {OUTPUT_LIMIT}),
    ("flood_stderr", "import sys\nwhile True:\n    sys.stderr.write('y' * 1000)", {OUTPUT_LIMIT}),
    (
        "spawn_many_threads",
        "import threading, time\nfor _ in range(10_000):\n    threading.Thread(target=time.sleep, args=(60,)).start()",
        {ERROR, TIMEOUT},
    ),
    ("fill_disk", "with open('big', 'wb') as fh:\n    fh.write(b'x' * (200 * 1024 ** 2))", {ERROR}),
    ("exhaust_file_descriptors", "fds = [open('/dev/null') for _ in range(100_000)]", {ERROR}),
    ("raise_own_limits", "import resource\nresource.setrlimit(resource.RLIMIT_CPU, (-1, -1))", {ERROR}),
    # uid 0 with a capability (in a user namespace the job is uid 0 there already, with none)
    ("become_root", "import os\nos.setuid(0)\nos.setgroups([0])", {ERROR}),
    ("read_hf_token_env", HUNT + "import os\nsecret_seen = found(os.environ.values())", {FAILED}),
    (
        "read_proc_environ",
        HUNT + "import glob\nsrcs = []\nfor p in glob.glob('/proc/*/environ') + "
        "glob.glob('/proc/*/cmdline'):\n    try:\n        srcs.append(open(p, errors='replace').read())\n"
        "    except OSError:\n        pass\nsecret_seen = found(srcs)",
        {FAILED},
    ),
    (
        "read_token_via_home",
        HUNT + "import os\nsrcs = []\nfor p in ['~/.cache/huggingface/token', "
        "'~/.huggingface/token']:\n    try:\n        srcs.append(open(os.path.expanduser(p)).read())\n"
        "    except OSError:\n        pass\nsecret_seen = found(srcs)",
        {FAILED},
    ),
    (
        "read_token_absolute_path",
        HUNT + "srcs = []\nfor p in ['{token_file}', '/root/.cache/huggingface/token']:\n"
        "    try:\n        srcs.append(open(p).read())\n    except OSError:\n        pass\n"
        "secret_seen = found(srcs)",
        {FAILED},
    ),
    (
        "write_outside_workdir",
        "import os\nsecret_seen = False\nfor p in ['{target}/pwned', '/etc/agentgrpo_pwned', "
        "'{cwd}/agentgrpo_pwned']:\n    try:\n        open(p, 'w').write('x')\n        secret_seen = True\n"
        "    except OSError:\n        pass",
        {FAILED},
    ),
    (
        "connect_to_trainer_socket",
        "import socket\ns = socket.create_connection(('127.0.0.1', {port}), timeout=1)\ns.sendall(b'exfiltrate')",
        {ERROR},
    ),
    ("connect_to_internet", "import socket\nsocket.create_connection(('1.1.1.1', 443), timeout=1)", {ERROR}),
    (
        "kill_the_parent",
        "import os, signal\nfor pid in [{trainer}, {workers}, os.getppid()]:\n    try:\n"
        "        os.kill(pid, signal.SIGKILL)\n    except OSError:\n        pass\n"
        "os.kill(-1, signal.SIGKILL)",
        {ERROR, CRASHED},
    ),
    (
        "forge_results",
        "import os\nfor fd in range(3, 10):\n    try:\n"
        '        os.write(fd, b\'{{"nonce": "x", "kind": "done"}}\\n\')\n    except OSError:\n        pass\n'
        'print(\'{{"kind": "test", "index": 0, "ok": true}}\')\nsecret_seen = False',
        {FAILED, CRASHED},
    ),
    (
        "always_equal_object",
        "class Eq:\n    def __eq__(self, other):\n        return True\nsecret_seen = Eq()\nexpected = True",
        {FAILED},
    ),
    (
        "daemon_outlives_job",
        "import os, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
        "        time.sleep(30)\n        open('{target}/late', 'w').write('x')\n    os._exit(0)\n"
        "secret_seen = False",
        {FAILED},
    ),
]
TEST = ["assert secret_seen == expected"]


@pytest.mark.parametrize("name,program,allowed", CASES, ids=[c[0] for c in CASES])
def test_hostile_program_is_contained(env, name, program, allowed):
    box = env["box"]
    program = program.format(
        token_file=env["token_file"],
        target=env["target"],
        port=env["port"],
        trainer=os.getpid(),
        workers=", ".join(map(str, box.pids())),
        cwd=os.getcwd(),
    )
    program += "\nexpected = globals().get('expected', True)"
    verdict = box.run(program, TEST)

    if name == "write_outside_workdir":
        # A path under /tmp can exist in the job's view (the parent of a bound import path: a clone under
        # /tmp) and be writable there: on the job's own tmpfs, discarded with it. Containment is judged
        # where it matters: nothing reached the host (`_trainer_unharmed`) or any later job.
        assert verdict.status in allowed | {PASSED}, verdict
        _no_later_job_sees_it(box, program)
    else:
        assert verdict.status in allowed, verdict
        assert verdict.status != PASSED and verdict.passed < verdict.total
    seen = " ".join([verdict.stdout, verdict.stderr, verdict.reason, *verdict.tests])
    assert not any(s in seen for s in env["secrets"]), "a secret reached the verdict"
    assert os.getpid() and _trainer_unharmed(env)
    assert_pool_still_serves(box)


def _trainer_unharmed(env) -> bool:
    """Nothing written outside, no connection made, and this process (the trainer) still here."""
    for path in (
        os.path.join(env["target"], "pwned"),
        "/etc/agentgrpo_pwned",
        os.path.join(os.getcwd(), "agentgrpo_pwned"),
    ):
        assert not os.path.exists(path), f"{path} was written"
    try:
        conn, _ = env["listener"].accept()
        conn.close()
        raise AssertionError("a sandboxed program connected to the trainer's socket")
    except BlockingIOError:
        pass
    return True


def _no_later_job_sees_it(box, program):
    paths = [line.split("'")[1] for line in program.split("[", 1)[1].split("]", 1)[0].split(",")]
    look = f"import os\nseen = [p for p in {paths!r} if os.path.exists(p)]"
    for verdict in box.run_many([(look, ["assert seen == []"])] * len(box.pids()) * 2):
        assert verdict.status == PASSED, f"a later job saw a file the hostile job wrote: {verdict}"




def test_daemon_left_nothing_running(env):
    """After the daemon case, no process of the sandbox uid survives (the PID namespace took it down)."""
    if env["box"].isolation["sandbox_uid"] is None:
        pytest.skip("no separate sandbox uid on this machine: see docs/sandbox.md")
    time.sleep(0.2)
    for pid in env["box"].pids():
        assert _processes_of(job_uid(pid, 0)) == []
    assert not os.path.exists(os.path.join(env["target"], "late"))


def test_workers_were_never_killed_by_programs(env):
    """The kill_the_parent case did not reach the workers either: the same processes still serve."""
    assert env["box"].pids() == env["pids"]


def test_the_hunt_catches_a_secret_that_is_handed_over(env):
    """Control: the secret-hunting programs do pass when a secret is visible, so their failures above mean
    the secret was not there (not that the hunt was broken)."""
    token = env["secrets"][0]
    hunt = dict((c[0], c[1]) for c in CASES)
    with Sandbox(workers=1, limits=LIMITS, env={"LEAKED": token}) as leaky:
        assert leaky.run(hunt["read_hf_token_env"] + "\nexpected = True", TEST).status == PASSED
        assert leaky.run(hunt["read_proc_environ"] + "\nexpected = True", TEST).status == PASSED
        # "write outside" passes when the target is the program's own work dir
        assert leaky.run("open('mine', 'w').write('x')\nsecret_seen = expected = True", TEST).status == PASSED


def test_suite_is_large_enough():
    assert len(CASES) >= 20
