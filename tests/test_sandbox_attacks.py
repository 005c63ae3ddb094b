"""Attacks on the sandbox's design, by cause (issue 9): A forged verdicts, B data shared between jobs,
C supervision and cleanup fooled, D the kernel surface. Written as a policy hunting for reward would.

Every program here is *wrong* (or wants something it must not get) and tries to score anyway; each case
asserts it does not pass, that the trainer's secrets stay out of reach, that nothing is left behind, and
that the pool still answers correctly right after. Controls show that each hunt can succeed where the thing
hunted is really there, so a failure means the sandbox held, not that the attack was broken.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time

import pytest
from sandbox_helpers import assert_pool_still_serves

from agentgrpo.sandbox import CRASHED, ERROR, FAILED, PASSED, TIMEOUT, Limits, Sandbox
from agentgrpo.sandbox.isolation import UID_BASE, job_uid

LIMITS = Limits(wall_s=4.0, cpu_s=2.0, memory_mb=512, max_processes=16)
BAD = {FAILED, ERROR, CRASHED, TIMEOUT}
ADD_TESTS = ["assert add(1, 2) == 3", "assert add(2, 2) == 4", "assert add(-1, 1) == 0"]
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="the namespace modes are exercised as root")


@pytest.fixture(scope="module")
def box():
    with Sandbox(workers=2, limits=LIMITS) as sandbox:
        yield sandbox


def _sandbox_processes(box) -> list[int]:
    """Processes running as a uid of this pool's jobs (each job has its own, see isolation.job_uid)."""
    ranges = [job_uid(pid, 0) for pid in box.pids()]
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/status") as fh:
                    uid = next(int(line.split()[1]) for line in fh if line.startswith("Uid:"))
            except (OSError, StopIteration):
                continue
            if any(lo <= uid < lo + 4096 for lo in ranges):
                found.append(int(entry))
    return found


# --- A: the verdict is decided outside the job --------------------------------------------------------
FORGERIES = [
    # an exception class named after a status word, raised instead of answering
    ("status_word_exception", "class passed(Exception):\n    pass\ndef add(a, b):\n    raise passed('passed')"),
    # an object equal to everything, through a builtin (the old guard did not see it)
    ("eq_is_id_builtin", "class E:\n    __eq__ = id\n    __ne__ = lambda s, o: False\ndef add(a, b):\n    return E()"),
    # an int subclass that lies: looks like an int, compares equal to anything
    (
        "lying_int_subclass",
        "class I(int):\n    def __eq__(s, o):\n        return True\n    __hash__ = int.__hash__\n"
        "def add(a, b):\n    return I(0)",
    ),
    # truthy lies for `assert f(x)`-style tests and for `and`/`all()` shapes
    (
        "truthy_object",
        "class T:\n    def __bool__(s):\n        return True\n    __eq__ = lambda s, o: True\n"
        "def add(a, b):\n    return T()",
    ),
    # patching the builtins and modules the tests use
    (
        "patch_builtins",
        "import builtins, math\nbuiltins.abs = lambda x: 0\nbuiltins.sorted = lambda *a, **k: [1, 2, 3]\n"
        "builtins.set = lambda *a: {1}\nbuiltins.all = lambda *a: True\nmath.isclose = lambda *a, **k: True\n"
        "def add(a, b):\n    return 0",
    ),
    # patching the channel: os.write, sys.settrace, frame walking, replacing the reply function
    (
        "patch_the_reporter",
        "import os, sys\n_w = os.write\nos.write = lambda fd, data: _w(fd, data.replace(b'F', b'T'))\n"
        "sys.settrace(lambda *a: None)\nf = sys._getframe()\nwhile f.f_back:\n    f = f.f_back\n"
        "for k, v in list(f.f_globals.items()):\n    if callable(v) and k.startswith('_send'):\n"
        "        f.f_globals[k] = lambda *a, **kw: None\ndef add(a, b):\n    return 0",
    ),
    # pre-writing fake replies into every descriptor, then answering wrongly
    (
        "forged_frames",
        "import os\nfor fd in range(3, 12):\n    try:\n        os.write(fd, (5).to_bytes(4, 'big') + b'tOKAY')\n"
        "    except OSError:\n        pass\nprint('\\x00\\x00\\x00\\x06t\\x00\\x00\\x00\\x01T')\n"
        "def add(a, b):\n    return 0",
    ),
    # exiting in the middle of the tests, cleanly
    ("exit_during_tests", "import os\ndef add(a, b):\n    os._exit(0)"),
    ("sys_exit_during_tests", "import sys\ndef add(a, b):\n    sys.exit(0)"),
    # a generator or iterator pretending to be a value
    ("iterator_instead_of_value", "def add(a, b):\n    return iter([3, 4, 0])"),
]
FORGERY_TESTS = [
    "assert add(1, 2) == 3",
    "assert (add(1, 2), add(2, 2)) == (3, 4)",
    "assert add(1, 2) == 3 and add(2, 2) == 4",
    "assert add(1, 2) in [3]",
    "assert all(x == y for x, y in [(add(1, 2), 3)])",
    "import math\nassert math.isclose(add(1, 2), 3)",
    "assert abs(add(1, 2) - 3) < 1e-9",
    "assert 3 <= add(1, 2) <= 3",
    "assert sorted([add(2, 2), add(1, 2)]) == [3, 4]",
    "assert set([add(1, 2)]) == {3}",
    "assert add(1, 2) != 4",
    "assert not add(0, 0)",
]


@pytest.mark.parametrize("name,program", FORGERIES, ids=[f[0] for f in FORGERIES])
def test_a_forged_verdicts_fail(box, name, program):
    verdict = box.run(program, FORGERY_TESTS)
    assert verdict.status in BAD, verdict
    # "!= 4" and "not add(0, 0)" are the ones a wrong add returning 0 legitimately passes; no other may
    assert {i for i, t in enumerate(verdict.tests) if t == "passed"} <= {10, 11}, verdict
    assert not verdict.forgeable
    assert_pool_still_serves(box)


def test_a_control_the_honest_program_passes_every_shape(box):
    verdict = box.run("def add(a, b):\n    return a + b", FORGERY_TESTS)
    assert verdict.status == PASSED and verdict.passed == len(FORGERY_TESTS), verdict


def test_a_the_job_never_sees_the_tests_or_expected_values(box):
    """The program searches its whole memory for the expected answer; in the trusted mode it is not there."""
    marker = "EXPECTED" + secrets.token_hex(8)
    hunt = (
        "import gc, sys\ndef answer():\n"
        "    for o in gc.get_objects():\n"
        "        for s in (o if isinstance(o, (list, tuple, dict)) else [o]):\n"
        "            i = s.find('EXPECTED') if isinstance(s, str) else -1\n"
        "            while i >= 0:\n"  # the marker: EXPECTED and 16 hex digits (not this program's own text)
        "                if len(s) >= i + 24 and all(c in '0123456789abcdef' for c in s[i + 8:i + 24]):\n"
        "                    return s[i:i + 24]\n"
        "                i = s.find('EXPECTED', i + 1)\n"
        "    with open('/proc/self/maps') as fh:\n        maps = fh.read().splitlines()\n"
        "    with open('/proc/self/mem', 'rb', 0) as mem:\n"
        "        for line in maps:\n            lo, hi = (int(x, 16) for x in line.split()[0].split('-'))\n"
        "            if 'r' not in line.split()[1] or hi - lo > 1 << 26:\n                continue\n"
        "            try:\n                mem.seek(lo)\n                chunk = mem.read(hi - lo)\n"
        "            except (OSError, ValueError, OverflowError):\n                continue\n"
        "            i = chunk.find(b'EXPECTED' + b'')\n"
        "            while i >= 0:\n"
        "                cand = chunk[i:i + 24]\n"
        "                if cand != b'EXPECTED' and all(c in b'0123456789abcdef' for c in cand[8:]):\n"
        "                    return cand.decode()\n"
        "                i = chunk.find(b'EXPECTED', i + 1)\n"
        "    return None\n"
    )
    verdict = box.run(hunt, [f"assert answer() == {marker!r}"])
    assert verdict.status == FAILED, verdict
    # control: in the forgeable in-process mode the same hunt finds the answer in its own memory
    with Sandbox(workers=1, limits=LIMITS, comparison="in_process") as leaky:
        control = leaky.run(hunt, [f"assert answer() == {marker!r}"])
    assert control.status == PASSED and control.forgeable, control


SERIALISER_BREAKERS = [
    ("deep_nesting", "def add(a, b):\n    x = []\n    for _ in range(100000):\n        x = [x]\n    return x"),
    ("self_reference", "def add(a, b):\n    x = []\n    x.append(x)\n    return x"),
    ("huge_int", "import sys\nsys.set_int_max_str_digits(0)\ndef add(a, b):\n    return 10 ** 20000"),
    ("huge_string", "def add(a, b):\n    return 'x' * (50 * 1024 * 1024)"),
    ("many_items", "def add(a, b):\n    return [0] * 5_000_000"),
    ("dict_subclass", "class D(dict):\n    def __eq__(s, o):\n        return True\ndef add(a, b):\n    return D()"),
    (
        "unhashable_in_set_shape",
        "class K:\n    def __hash__(s):\n        raise RuntimeError\ndef add(a, b):\n    return {K()}",
    ),
    ("nan_and_lies", "def add(a, b):\n    return float('nan')"),
]


@pytest.mark.parametrize("name,program", SERIALISER_BREAKERS, ids=[s[0] for s in SERIALISER_BREAKERS])
def test_a_return_values_built_to_break_the_serialiser(box, name, program):
    verdict = box.run(program, ["assert add(1, 2) == 3"])
    assert verdict.status in BAD and verdict.passed == 0, verdict
    assert_pool_still_serves(box)


# --- B: nothing is shared between jobs ------------------------------------------------------------------
LEAVE = (
    "import os\nMARK = {mark!r}\n"
    "for path in ['/tmp/m', '/var/tmp/m', '/dev/shm/m', os.path.expanduser('~/m'), 'm', {target!r} + '/m']:\n"
    "    try:\n        open(path, 'w').write(MARK)\n    except OSError:\n        pass\n"
    "big = [MARK * 1000 for _ in range(200)]\ndel big\n"
)
FIND = (
    "import os, gc, re\nPATTERN = re.compile(('OTHER' + 'JOB' + '[0-9a-f]{{16}}').encode())\ndef found():\n"
    "    seen = []\n"
    "    for path in ['/tmp/m', '/var/tmp/m', '/dev/shm/m', os.path.expanduser('~/m'), 'm', {target!r} + '/m']:\n"
    "        try:\n            seen.append(open(path, 'rb').read())\n        except OSError:\n            pass\n"
    "    seen += [o.encode('latin-1', 'replace') for o in gc.get_objects() if isinstance(o, str)]\n"
    "    with open('/proc/self/maps') as fh:\n        maps = fh.read().splitlines()\n"
    "    with open('/proc/self/mem', 'rb', 0) as mem:\n        for line in maps:\n"
    "            lo, hi = (int(x, 16) for x in line.split()[0].split('-'))\n"
    "            if 'rw' in line.split()[1] and hi - lo < 1 << 26:\n"
    "                try:\n                    mem.seek(lo)\n                    seen.append(mem.read(hi - lo))\n"
    "                except (OSError, ValueError, OverflowError):\n                    pass\n"
    "    return any(PATTERN.search(s) for s in seen)\n"
)


def test_b_no_job_sees_an_earlier_job_files_or_memory(box, tmp_path):
    target = tmp_path / "world-writable"
    target.mkdir()
    target.chmod(0o777)
    mark = "OTHERJOB" + secrets.token_hex(8)
    box.run_many([(LEAVE.format(mark=mark, target=str(target)), ["assert True"])] * 4)
    finder = FIND.format(target=str(target))
    for verdict in box.run_many([(finder, ["assert found()"])] * 4):
        assert verdict.status == FAILED, verdict
    assert list(target.iterdir()) == [], "a job wrote into a world-writable host directory"
    # control: a job finds the mark in its own files and memory
    same_job = LEAVE.format(mark=mark, target=str(target)) + "\n" + finder
    assert box.run(same_job, ["assert found()"]).status == PASSED


def test_b_ipc_keyrings_and_other_jobs_are_out_of_reach(box):
    attempt = (
        "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "def got():\n    out = {}\n"
        "    out['shm'] = libc.shmget(0x1234, 4096, 0o1666) >= 0\n"
        "    out['msg'] = libc.msgget(0x1234, 0o1666) >= 0\n"
        "    out['key'] = libc.syscall(248, b'user', b'agentgrpo', b'x', 1, 0xfffffffd) >= 0\n"  # add_key
        "    out['keyread'] = libc.syscall(250, 11, 0xfffffffd, None, 0) >= 0\n"  # keyctl READ session
        "    out['others'] = sorted(p for p in os.listdir('/proc') if p.isdigit()) != ['1']\n"
        "    caps = next(l for l in open('/proc/self/status') if l.startswith('CapEff:')).split()[1]\n"
        "    out['privileged'] = os.getuid() == 0 and int(caps, 16) != 0\n"  # userns: uid 0 mapped, no caps
        "    return out\n"
    )
    import platform

    if platform.machine() != "x86_64":
        pytest.skip("syscall numbers here are x86_64's")
    verdicts = box.run_many([(attempt, ["g = got()\nprint(g)\nassert not any(g.values())"])] * 2)
    assert all(v.status == PASSED for v in verdicts), verdicts


@root_only
def test_b_each_job_has_its_own_uid_and_hostname(box):
    program = "import os, socket\ndef who():\n    return [os.getuid(), socket.gethostname(), os.getpid()]"
    job_uids = set()
    for _ in range(3):
        for verdict in box.run_many([(program, ["w = who()\nprint(w)\nassert w[2] == 1 and w[1] == 'sandbox'"])] * 2):
            assert verdict.status == PASSED, verdict
            job_uids.add(eval(verdict.stdout.strip())[0])
    assert len(job_uids) == 6 and min(job_uids) >= UID_BASE


def test_b_compiling_happens_under_the_job_limits(box):
    """A program that is expensive to compile costs the job its CPU limit, not the worker."""
    bomb = "x = " + "+".join(["(1" + "+1" * 300 + ")"] * 800) + "\n"  # ~1 MB of arithmetic to fold
    before = [_cpu_of(pid) for pid in box.pids()]
    verdict = box.run(bomb[:999_000] + "1\n", ["assert True"], limits=Limits(wall_s=3.0, cpu_s=1.0))
    after = [_cpu_of(pid) for pid in box.pids()]
    assert verdict.status in {PASSED, TIMEOUT, ERROR}, verdict
    assert max(a - b for a, b in zip(after, before, strict=True)) < 0.5, (before, after)
    assert_pool_still_serves(box)


def _cpu_of(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# --- C: supervision and cleanup ------------------------------------------------------------------------
SUPERVISION = [
    # a child that stops itself, a parent that waits on it forever
    (
        "stopped_children",
        "import os, signal, time\nfor _ in range(3):\n    if os.fork() == 0:\n"
        "        os.kill(os.getpid(), signal.SIGSTOP)\n        os._exit(0)\ndef add(a, b):\n    time.sleep(60)",
    ),
    # real-time and odd signals at itself and its children
    (
        "realtime_signals",
        "import os, signal\nfor s in (34, 40, 64, signal.SIGSTOP, signal.SIGTSTP, signal.SIGCONT):\n"
        "    try:\n        os.kill(os.getpid(), s)\n    except OSError:\n        pass\n"
        "pid = os.fork()\nif pid == 0:\n    os.kill(os.getpid(), 50)\nos.waitpid(pid, 0)\n"
        "def add(a, b):\n    os.kill(os.getpid(), 45)\n    return 0",
    ),
    # daemons that try to outlive the job
    (
        "setsid_daemons",
        "import os, time\nfor _ in range(3):\n    if os.fork() == 0:\n        os.setsid()\n"
        "        if os.fork() == 0:\n            time.sleep(30)\n        os._exit(0)\ndef add(a, b):\n    return 0",
    ),
    # half a reply, then silence
    (
        "half_a_frame",
        "import os, time\nos.write(4, (1000).to_bytes(4, 'big') + b'xx')\ndef add(a, b):\n    time.sleep(60)",
    ),
    # closing its own channel
    ("close_channel", "import os\nos.close(3)\nos.close(4)\ndef add(a, b):\n    return 3"),
    # symlinks and deep nesting in its scratch, for a cleanup to trip over
    (
        "symlinks_and_depth",
        "import os\nos.chdir('/tmp')\nfor i in range(2000):\n    os.mkdir('d')\n    os.chdir('d')\n"
        "for t in ['/etc/passwd', '/', '{victim}']:\n    os.symlink(t, 'l%d' % hash(t))\n"
        "os.symlink('{victim}', '/tmp/victim')\ndef add(a, b):\n    return 0",
    ),
]


@pytest.mark.parametrize("name,program", SUPERVISION, ids=[s[0] for s in SUPERVISION])
def test_c_supervision_cannot_be_fooled(box, tmp_path, name, program):
    victim = tmp_path / "victim"
    victim.write_text("root's file")
    t0 = time.monotonic()
    verdict = box.run(program.format(victim=str(victim)), ADD_TESTS)
    assert verdict.status in BAD, verdict
    assert time.monotonic() - t0 < LIMITS.wall_s + 3
    assert victim.read_text() == "root's file"  # no root operation on a path the job chose
    time.sleep(0.1)
    assert _sandbox_processes(box) == [], "job processes outlived their job"
    assert_pool_still_serves(box)


@pytest.mark.parametrize(
    "wait_status",
    [
        0x137F,  # stopped by SIGSTOP (WIFSTOPPED)
        0x857F,  # stopped by a real-time signal
        0xFFFF,  # continued
        40,  # killed by a real-time signal
        64 | 0x80,  # killed by SIGRTMAX, core flag set
        0,  # exited cleanly without finishing
        0x4500,  # exit code 69
    ],
)
def test_c_the_classifier_takes_every_wait_status(wait_status):
    from agentgrpo.sandbox.supervise import classify

    state = {"outcomes": ["not run"], "messages": [""]}
    status, reason = classify("", "", state, wait_status, 0.0, Limits().to_dict())
    assert status == CRASHED and reason


# --- D: the kernel surface -----------------------------------------------------------------------------
SYSCALLS = (
    "import ctypes, os, socket, errno\nlibc = ctypes.CDLL(None, use_errno=True)\n"
    "def ok(fn):\n    try:\n        r = fn()\n    except OSError:\n        return False\n"
    "    if r is None or type(r) is bool:\n        return bool(r)\n    return r >= 0 if type(r) is int else True\n"
    "def sock(family, kind=socket.SOCK_STREAM):\n    return lambda: socket.socket(family, kind).close() or True\n"
    "def opens(path):\n    return lambda: os.close(os.open(path, os.O_RDWR)) or True\n"
    "ATTEMPTS = {{\n"
    "    'io_uring_setup': lambda: libc.syscall(425, 8, ctypes.create_string_buffer(120)),\n"
    "    'ptrace_traceme': lambda: libc.ptrace(0, 0, None, None),\n"
    "    'keyctl': lambda: libc.syscall(250, 0, 0xfffffffd, 0),\n"
    "    'bpf': lambda: libc.syscall(321, 0, ctypes.create_string_buffer(128), 128),\n"
    "    'perf_event_open': lambda: libc.syscall(298, ctypes.create_string_buffer(128), 0, -1, -1, 0),\n"
    "    'mount_tmpfs': lambda: libc.mount(b'none', b'/tmp', b'tmpfs', 0, None),\n"
    "    'unshare_user': lambda: libc.unshare(0x10000000),\n"
    "    'unshare_net': lambda: libc.unshare(0x40000000),\n"
    "    'setns': lambda: libc.setns(os.open('/proc/self/ns/net', os.O_RDONLY), 0),\n"
    "    'clone_newns': lambda: libc.syscall(56, 0x00020000 | 17, 0, 0, 0, 0),\n"
    "    'vsock': sock(40),\n    'inet': sock(socket.AF_INET),\n    'inet6': sock(socket.AF_INET6),\n"
    "    'netlink': sock(socket.AF_NETLINK, socket.SOCK_RAW),\n    'unix_socket': sock(socket.AF_UNIX),\n"
    "    'unix_dgram_pair': lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM),\n"
    "    'memfd': lambda: os.memfd_create('x'),\n"
    "    'shmget': lambda: libc.shmget(0, 1 << 30, 0o1600),\n"
    "    'fuse': opens('/dev/fuse'),\n    'tun': opens('/dev/net/tun'),\n    'kmsg': opens('/dev/kmsg'),\n"
    "    'gpu': lambda: any(n.startswith(('nvidia', 'dri', 'kfd')) for n in os.listdir('/dev')),\n"
    "    'write_host_fs': lambda: open('/etc/agentgrpo-pwned', 'w').close() or True,\n"
    "    'write_var_run': lambda: open('/run/agentgrpo-pwned', 'w').close() or True,\n"
    "}}\n"
    "def reached(name):\n    return ok(ATTEMPTS[name])\n"
)
DENIED = [
    "io_uring_setup",
    "ptrace_traceme",
    "keyctl",
    "bpf",
    "perf_event_open",
    "mount_tmpfs",
    "unshare_user",
    "unshare_net",
    "setns",
    "clone_newns",
    "vsock",
    "inet",
    "inet6",
    "netlink",
    "unix_socket",
    "unix_dgram_pair",
    "memfd",
    "shmget",
    "fuse",
    "tun",
    "kmsg",
    "gpu",
    "write_host_fs",
    "write_var_run",
]


@root_only
def test_d_the_kernel_surface_is_closed(box):
    import platform

    if platform.machine() != "x86_64":
        pytest.skip("syscall numbers here are x86_64's")
    if box.isolation["seccomp"] == "none":
        pytest.fail("no seccomp filter: " + "; ".join(box.isolation["problems"]))
    verdict = box.run(SYSCALLS.format(), [f"assert reached({name!r})" for name in DENIED])
    opened = [name for name, result in zip(DENIED, verdict.tests, strict=True) if result == "passed"]
    assert opened == [], f"reachable from a job: {opened}"
    assert verdict.status == FAILED
    # control: what a solution legitimately needs still works (a Unix socketpair, /dev/urandom, /tmp)
    allowed = SYSCALLS.format() + (
        "ATTEMPTS['pair'] = lambda: socket.socketpair()\nATTEMPTS['urandom'] = opens('/dev/urandom')\n"
        "ATTEMPTS['tmp'] = lambda: open('/tmp/x', 'w').close() or True\n"
        "ATTEMPTS['thread'] = lambda: __import__('threading').Thread(target=int).start() or True\n"
        "ATTEMPTS['fork'] = lambda: (lambda p: p == 0 and os._exit(0) or os.waitpid(p, 0))(os.fork())\n"
    )
    control = box.run(allowed, [f"assert reached({n!r})" for n in ("pair", "urandom", "tmp", "thread", "fork")])
    assert control.status == PASSED, control
    assert_pool_still_serves(box)


@root_only
def test_d_memory_outside_rlimit_as_is_closed(box):
    program = (
        "import os, mmap\ndef grab():\n    got = 0\n"
        "    try:\n        fd = os.memfd_create('x')\n        os.ftruncate(fd, 1 << 30)\n        got += 1\n"
        "    except OSError:\n        pass\n"
        "    try:\n        with open('/dev/shm/big', 'wb') as fh:\n"
        "            fh.write(b'x' * (200 << 20))\n        got += 1\n"
        "    except OSError:\n        pass\n"
        "    try:\n        m = mmap.mmap(-1, 2 << 30)\n        got += 1\n"
        "    except (OSError, MemoryError):\n        pass\n"
        "    return got\n"
    )
    verdict = box.run(program, ["assert grab() == 0"])
    assert verdict.status == PASSED, verdict


KEYRING_SCRIPT = """
import ctypes, secrets, sys
from agentgrpo.sandbox import Limits, Sandbox
libc = ctypes.CDLL(None, use_errno=True)
secret = "hf_FAKESECRET" + secrets.token_hex(8)
libc.syscall(250, 1, None)  # KEYCTL_JOIN_SESSION_KEYRING: this process's own session keyring
serial = libc.syscall(248, b"user", b"hf", secret.encode(), len(secret), 0xFFFFFFFD)  # add_key
buf = ctypes.create_string_buffer(4096)
assert libc.syscall(250, 11, serial, buf, 4096) > 0 and secret.encode() in buf.raw  # the trainer can read it
hunt = (
    "import ctypes\\nlibc = ctypes.CDLL(None, use_errno=True)\\ndef read():\\n"
    "    buf = ctypes.create_string_buffer(4096)\\n"
    f"    n = libc.syscall(250, 11, {serial}, buf, 4096)\\n"
    "    m = libc.syscall(250, 11, 0xfffffffd, buf, 4096)\\n"
    "    return bytes(buf.raw[:max(n, m, 0)])\\n"
)
with Sandbox(workers=1, limits=Limits(wall_s=4)) as box:
    verdict = box.run(hunt, [f"assert {secret.encode()!r} in read()"])
print(verdict.status, secret in verdict.reason + verdict.stdout + verdict.stderr)
"""


def test_d_trainer_keyring_secret_is_unreachable():
    """A secret in the trainer's session keyring: the workers start a new one, and jobs cannot call keyctl."""
    import platform

    if platform.machine() != "x86_64":
        pytest.skip("syscall numbers here are x86_64's")
    out = subprocess.run([sys.executable, "-c", KEYRING_SCRIPT], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["failed", "False"], out.stdout


# --- bad input --------------------------------------------------------------------------------------------
BAD_TESTS = [
    # a test that does not parse
    (["assert add(1, 2) ==", "assert add(1, 1) == 2"], FAILED, 1),
    # an expected value that cannot be sent: a lambda handed to the program
    (["assert add(lambda: 1, 2) == 3", "assert add(1, 1) == 2"], FAILED, 1),
    # a test that catches everything, our signals included
    (["try:\n    add(lambda: 1, 2)\nexcept BaseException:\n    pass", "assert add(1, 1) == 2"], FAILED, 1),
    # a test that prints, reads stdin and exits: the worker's own stdio is not the channel
    (["print('x' * 100000)\nassert add(1, 1) == 2", "input()", "import sys\nsys.exit(0)"], FAILED, 1),
]


@pytest.mark.parametrize("tests,status,passed", BAD_TESTS)
def test_bad_tests_fail_cleanly(box, tests, status, passed):
    verdict = box.run("def add(a, b):\n    return a + b", tests)
    assert (verdict.status, verdict.passed) == (status, passed), verdict
    assert_pool_still_serves(box)


def test_output_imitating_the_framing_is_just_output(box):
    fake = "import sys\nsys.stdout.buffer.write((3).to_bytes(4, 'big') + b'tOK' * 1000)\ndef add(a, b):\n    return 0"
    verdict = box.run(fake, ADD_TESTS)
    assert verdict.status == FAILED and verdict.passed == 1, verdict


def test_more_workers_than_cores_is_a_clear_error():
    from agentgrpo.errors import ConfigError

    with pytest.raises(ConfigError, match="more than the .* CPU cores"):
        Sandbox(workers=len(os.sched_getaffinity(0)) + 1)


def test_auto_comparison_reruns_unsplittable_tests_in_process_and_says_so():
    with Sandbox(workers=1, limits=LIMITS, comparison="auto") as sandbox:
        split = sandbox.run("def apply(f, x):\n    return f(x)", ["assert apply(1, 2) is None"])
        unsplit = sandbox.run("def apply(f, x):\n    return f(x)", ["assert apply(lambda v: v + 1, 1) == 2"])
    assert split.status == FAILED and not split.forgeable  # 1(2) raised TypeError in the program
    assert unsplit.status == PASSED and unsplit.forgeable
