"""Honest programs of many kinds, each with tests plain Python passes: what the seccomp allow-list must serve.

Each entry is ``(name, program, tests)``. The work happens inside the functions the tests call (so in the
job, under its filter), covering what solutions and their libraries do: threads and thread pools, process
pools, pipes, ``select``/``poll``, ``asyncio``, ``subprocess``, files and directories on the scratch,
``sqlite3``, ``mmap``, signals and timers, ``time.sleep``, randomness, ``numpy`` (its thread pool),
``ctypes``, ``faulthandler``, ``tracemalloc``, ``resource``, ``platform``, ``locale``, and the plain
standard library. `benchmarks/sandbox_syscalls.py` runs them under ``strace`` to find the syscalls a
Python job needs; ``tests/test_sandbox_allowlist.py`` runs them through the pool and expects Python's
verdict (all pass) — except the kinds in `NEEDS_SOCKETPAIR` where the mode refuses socket pairs.
"""

from __future__ import annotations

KINDS: list[tuple[str, str, list[str]]] = [
    ("plain", "def f(xs):\n    return sorted(set(xs))[::-1]", ["assert f([3, 1, 3, 2]) == [3, 2, 1]"]),
    (
        "bigint_and_text",
        "import sys\nsys.set_int_max_str_digits(0)\ndef f(n):\n    return len(str(3 ** n)), 'ab' * n",
        ["assert f(20000)[0] == 9543", "assert f(3)[1] == 'ababab'"],
    ),
    (
        "recursion",
        "import sys\nsys.setrecursionlimit(5000)\ndef depth(n):\n    return 0 if n == 0 else 1 + depth(n - 1)",
        ["assert depth(3000) == 3000"],
    ),
    (
        "threads",
        "import threading, queue\nfrom concurrent.futures import ThreadPoolExecutor\n"
        "def f(n):\n    q = queue.Queue()\n    ts = [threading.Thread(target=q.put, args=(i,)) for i in range(n)]\n"
        "    [t.start() for t in ts]\n    [t.join() for t in ts]\n    lock = threading.Lock()\n"
        "    with lock:\n        pass\n    ev = threading.Event()\n    ev.set()\n    ev.wait(0.01)\n"
        "    with ThreadPoolExecutor(4) as ex:\n        squares = list(ex.map(lambda x: x * x, range(n)))\n"
        "    return sorted(q.get() for _ in range(n)), sum(squares)",
        ["assert f(6) == ([0, 1, 2, 3, 4, 5], 55)"],
    ),
    (
        "process_pool",
        "import multiprocessing as mp\n"  # a builtin: the program's own functions do not pickle by name in a job
        "def f(n):\n    ctx = mp.get_context('fork')\n    with ctx.Pool(2) as pool:\n"
        "        return pool.map(abs, range(-n, 0))",
        ["assert f(5) == [5, 4, 3, 2, 1]"],
    ),
    (
        "process_queue_and_pipe",
        "import multiprocessing as mp\ndef child(q, w):\n    q.put(41)\n    w.send('hi')\n"
        "def f():\n    ctx = mp.get_context('fork')\n    q = ctx.Queue()\n    r, w = ctx.Pipe(duplex=False)\n"
        "    p = ctx.Process(target=child, args=(q, w))\n    p.start()\n    got = (q.get(timeout=5) + 1, r.recv())\n"
        "    p.join()\n    return got, p.exitcode",
        ["assert f() == ((42, 'hi'), 0)"],
    ),
    (
        "fork_and_pipes",
        "import os, select\ndef f():\n    r, w = os.pipe()\n    pid = os.fork()\n    if pid == 0:\n"
        "        os.write(w, b'ok')\n        os._exit(0)\n    ready, _, _ = select.select([r], [], [], 5)\n"
        "    p = select.poll()\n    p.register(r, select.POLLIN)\n    p.poll(100)\n"
        "    data = os.read(r, 2)\n    _, status = os.waitpid(pid, 0)\n"
        "    return data, os.waitstatus_to_exitcode(status)",
        ["assert f() == (b'ok', 0)"],
    ),
    (
        "subprocess",
        "import subprocess, sys\ndef f():\n"
        "    out = subprocess.run([sys.executable, '-c', 'print(6 * 7)'], capture_output=True, text=True, timeout=20)\n"
        "    return out.stdout.strip(), out.returncode",
        ["assert f() == ('42', 0)"],
    ),
    (
        "files_and_dirs",
        "import os, tempfile, shutil, pathlib, glob\ndef f():\n    d = tempfile.mkdtemp()\n"
        "    p = pathlib.Path(d, 'a.txt')\n    p.write_text('hello')\n    shutil.copy2(p, pathlib.Path(d, 'b.txt'))\n"
        "    os.rename(pathlib.Path(d, 'b.txt'), pathlib.Path(d, 'c.txt'))\n"
        "    os.symlink('c.txt', os.path.join(d, 'l'))\n"
        "    os.chmod(p, 0o600)\n    os.utime(p)\n    names = sorted(os.listdir(d))\n"
        "    walked = sum(len(fs) for _, _, fs in os.walk(d))\n    st = os.stat(os.path.join(d, 'l'))\n"
        "    with open(os.path.join(d, 'c.txt'), 'r+b') as fh:\n        fh.seek(0, 2)\n        fh.write(b'!')\n"
        "        fh.flush()\n        os.fsync(fh.fileno())\n        fh.truncate(3)\n"
        "    with tempfile.TemporaryFile() as t:\n        t.write(b'x')\n"
        "    found = len(glob.glob(os.path.join(d, '*.txt')))\n    shutil.rmtree(d)\n"
        "    return names, walked, st.st_size, found, os.path.exists(d), os.getcwd() != ''",
        ["assert f() == (['a.txt', 'c.txt', 'l'], 3, 5, 2, False, True)"],
    ),
    (
        "sqlite",
        "import sqlite3, os, tempfile\ndef f():\n    mem = sqlite3.connect(':memory:')\n"
        "    mem.execute('create table t(x)')\n"
        "    mem.executemany('insert into t values (?)', [(i,) for i in range(10)])\n"
        "    a = mem.execute('select sum(x) from t').fetchone()[0]\n"
        "    path = os.path.join(tempfile.mkdtemp(), 'db.sqlite')\n    db = sqlite3.connect(path)\n"
        "    db.execute('create table t(x)')\n    db.execute('insert into t values (5)')\n    db.commit()\n"
        "    b = db.execute('select x from t').fetchone()[0]\n    db.close()\n    return a, b",
        ["assert f() == (45, 5)"],
    ),
    (
        "mmap_and_memory",
        "import mmap, array, gc, sys\ndef f():\n    m = mmap.mmap(-1, 1 << 20)\n    m[:3] = b'abc'\n"
        "    big = bytearray(32 << 20)\n    big[-1] = 1\n    a = array.array('d', range(100000))\n"
        "    del big\n    gc.collect()\n    return bytes(m[:3]), sum(a), sys.getsizeof(1) > 0",
        ["assert f() == (b'abc', 4999950000.0, True)"],
    ),
    (
        "signals_and_timers",
        "import signal, time\ndef f():\n    got = []\n    signal.signal(signal.SIGALRM, lambda *a: got.append(1))\n"
        "    signal.setitimer(signal.ITIMER_REAL, 0.01)\n    time.sleep(0.05)\n    signal.alarm(0)\n"
        "    signal.signal(signal.SIGUSR1, lambda *a: got.append(2))\n    signal.raise_signal(signal.SIGUSR1)\n"
        "    old = signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR2])\n"
        "    signal.pthread_sigmask(signal.SIG_SETMASK, old)\n    return got",
        ["assert f() == [1, 2]"],
    ),
    (
        "time_and_random",
        "import time, random, secrets, os, uuid, datetime\ndef f():\n    t0 = time.monotonic()\n"
        "    time.sleep(0.002)\n    cpu = time.process_time() >= 0 and time.thread_time() >= 0\n"
        "    return (time.monotonic() > t0, cpu, len(os.urandom(8)), len(secrets.token_hex(4)),\n"
        "            uuid.uuid4().version, datetime.datetime.now().year > 2000, 0 <= random.random() < 1,\n"
        "            time.time() > 0, time.perf_counter_ns() > 0)",
        ["assert f() == (True, True, 8, 8, 4, True, True, True, True)"],
    ),
    (
        "asyncio",
        "import asyncio\nasync def twice(x):\n    await asyncio.sleep(0.001)\n    return 2 * x\n"
        "def f(n):\n    async def main():\n        return await asyncio.gather(*(twice(i) for i in range(n)))\n"
        "    return asyncio.run(main())",
        ["assert f(4) == [0, 2, 4, 6]"],
    ),
    (
        "numpy",
        "import numpy as np\ndef f(n):\n    a = np.arange(n * n, dtype=float).reshape(n, n)\n"
        "    b = a @ a.T + np.eye(n)\n    x = np.linalg.solve(b, np.ones(n))\n"
        "    r = np.random.default_rng(0).integers(0, 10, 5)\n"
        "    return int(round(float((b @ x).sum()))), int(np.sort(r)[0]) >= 0, float(np.fft.fft(np.ones(4))[0].real)",
        ["assert f(40) == (40, True, 4.0)"],
    ),
    (
        "ctypes_and_introspection",
        "import ctypes, faulthandler, tracemalloc, resource, os, sys, platform, locale, getpass, socket\n"
        "import inspect, traceback, io, contextlib\n"
        "def f():\n    faulthandler.enable()\n    tracemalloc.start()\n    _ = [0] * 1000\n"
        "    tracemalloc.stop()\n    buf = ctypes.create_string_buffer(b'abc')\n"
        "    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)\n"
        "    ru = resource.getrusage(resource.RUSAGE_SELF)\n"
        "    info = (platform.system(), bool(platform.platform()), locale.getpreferredencoding() != '',\n"
        "            socket.gethostname() != '', os.cpu_count() >= 1, len(os.sched_getaffinity(0)) >= 1,\n"
        "            os.getpid() > 0, os.getppid() >= 0, os.getuid() >= 0, os.getgid() >= 0,\n"
        "            os.getloadavg() is not None, os.isatty(0), os.nice(0) >= 0, os.umask(0o22) >= 0)\n"
        "    try:\n        getpass.getuser()\n    except (KeyError, OSError):\n        pass\n"
        "    with contextlib.redirect_stdout(io.StringIO()):\n        traceback.print_stack()\n"
        "    return buf.value, soft <= hard, ru.ru_maxrss > 0, info, len(inspect.stack()) > 0",
        [
            "assert f()[:3] == (b'abc', True, True)",
            "assert f()[3][:1] == ('Linux',)",
            "assert all(f()[3][1:11])",
            "assert f()[4]",
        ],
    ),
    (
        "stdio",
        "import sys\nprint('to stdout')\nprint('to stderr', file=sys.stderr)\n"
        "def f():\n    print('inside', flush=True)\n    sys.stdout.flush()\n    try:\n        return input()\n"
        "    except EOFError:\n        return sys.stdin.read()",
        ["assert f() == ''"],
    ),
    (
        "stdlib_mix",
        "import json, re, collections, fractions, decimal, heapq, bisect, itertools, functools, hashlib, zlib\n"
        "import pickle, copy, statistics, struct, textwrap, unicodedata, math, cmath, string, datetime, enum\n"
        "import dataclasses, typing, operator, difflib, base64, csv, io, gzip, lzma, bz2, random, time\n"
        "@functools.lru_cache(None)\ndef fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n"
        "def f():\n    data = json.loads(json.dumps({'a': [1, 2]}))\n    h = [5, 1, 3]\n    heapq.heapify(h)\n"
        "    z = zlib.decompress(zlib.compress(b'x' * 1000))\n    g = gzip.decompress(gzip.compress(b'y'))\n"
        "    l = lzma.decompress(lzma.compress(b'z'))\n    b = bz2.decompress(bz2.compress(b'w'))\n"
        "    rows = list(csv.reader(io.StringIO('a,b\\n1,2')))\n"
        "    return (data, h[0], fib(80), len(z), g + l + b, hashlib.sha256(b'').hexdigest()[:4],\n"
        "            pickle.loads(pickle.dumps(fractions.Fraction(1, 3))), str(decimal.Decimal(1) / 3)[:4],\n"
        "            statistics.mean([1, 2, 3]), rows, re.findall(r'\\d+', 'a1b22'))",
        [
            "assert f()[:4] == ({'a': [1, 2]}, 1, 23416728348467685, 1000)",
            "assert f()[4:] == (b'yzw', 'e3b0', __import__('fractions').Fraction(1, 3), '0.33', 2,"
            " [['a', 'b'], ['1', '2']], ['1', '22'])",
        ],
    ),
]

# kinds that need socketpair() (asyncio's self-pipe): refused where socket buffers are outside every memory
# limit (see agentgrpo.sandbox.seccomp.build); plain Python passes them
NEEDS_SOCKETPAIR = {"asyncio"}
