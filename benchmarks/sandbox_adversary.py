"""An adversary for the sandbox: generated hostile programs, each checked against the sandbox's invariants.

A seeded grammar combines hostile primitives (`PRIMITIVES`): exceptions with odd names, bases and messages
(every status word, "", whitespace); lying dunders and ``__getattribute__``; huge, lazy, deeply nested and
hash-colliding values; side effects in constructors; resource hogs (CPU, memory, fork, output, files,
sockets, pipes, threads, signals, the job's own channel). Each program faces tests whose expected values
are drawn at test time (`random.SystemRandom`), so no program can know them. Every example must hold:

* ``never_passed``: no test passes and the status is not ``passed``;
* ``never_sandbox_error``: the status is not ``sandbox_error``;
* ``in_time``: the verdict arrives within the job's ``wall_s`` plus ``--margin`` seconds;
* ``trusted_memory``: every trusted process (each worker and the comparison processes it forks) stays under
  its bound: the worker's peak RSS at most its RSS after start-up plus ``--worker-growth-mb``; a comparison
  process's peak RSS at most the worker's plus ``compare_mb`` (sampled every few ms from /proc: VmHWM);
* ``honest_after``: the next honest jobs on the same pool (a pass and a failure, values drawn at random)
  get plain Python's verdicts.

A failing example is shrunk (primitives dropped, tests cut, while it still fails) and printed as JSON, the
form ``tests/data/sandbox_adversary_cases.json`` keeps for ``tests/test_sandbox_adversary.py`` to replay.

    python benchmarks/sandbox_adversary.py --examples 5000            # prints the invariant counts
    python benchmarks/sandbox_adversary.py --examples 300 --seed 7 --workers 2
    python benchmarks/sandbox_adversary.py --show 5                   # print 5 generated programs, run none
"""

from __future__ import annotations

import argparse
import json
import keyword
import os
import random
import re
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

STATUS_WORDS = (
    "passed",
    "failed",
    "error",
    "timeout",
    "crashed",
    "output_limit",
    "invalid",
    "sandbox_error",
    "not run",
    "ok",
    "True",
    "pass",
    "PASSED",
    "all 1 tests passed",
)
ODD_NAMES = (*STATUS_WORDS, "", " ", "\t", "\n", "AssertionError", "StopIteration", "SystemExit", "x" * 300)
MESSAGES = (
    *STATUS_WORDS,
    "",
    " ",
    "\t",
    "\n",
    "\x00",
    "passed\nfailed",
    "x" * 1_000_000,
    "\u2028passed",
    "'passed'",
    None,
)
BASES = (
    "Exception",
    "ValueError",
    "AssertionError",
    "BaseException",
    "KeyboardInterrupt",
    "SystemExit",
    "GeneratorExit",
    "StopIteration",
    "ValueError, TypeError",
    "ArithmeticError",
    "OSError",
    "RecursionError",
    "MemoryError",
    "UnicodeDecodeError",
    "LookupError",
)


@dataclass(frozen=True)
class Primitive:
    """One hostile ingredient: definitions at module level, code run at import, code run in ``f`` before it
    returns, and what ``f`` returns (an expression) or raises (a statement), as source text."""

    name: str
    kind: str  # "value" (f's result), "effect" (runs at import or in f), "hog"
    defs: str = ""
    at_import: str = ""
    in_call: str = ""
    value: str = ""  # an expression f returns, or a statement starting with "raise"/"import"/... that ends f


# --- the grammar -------------------------------------------------------------------------------------------
def _exception(rng: random.Random) -> Primitive:
    name, base, message = rng.choice(ODD_NAMES), rng.choice(BASES), rng.choice(MESSAGES)
    how = rng.choice(["type", "class", "str", "repr", "getattribute", "args", "class_attr", "raise_in_str"])
    arg = "" if message is None else repr(message)
    if how == "type" or not name.isidentifier() or keyword.iskeyword(name):
        defs = f"E = type({name!r}, ({base},), {{}})\n"
    elif how == "str":
        defs = f"class {name}({base}):\n    def __str__(self):\n        return {message!r}\nE = {name}\n"
    elif how == "repr":
        defs = f"class {name}({base}):\n    def __repr__(self):\n        return {message!r}\nE = {name}\n"
    elif how == "getattribute":
        defs = f"class {name}({base}):\n    def __getattribute__(self, n):\n        return {message!r}\nE = {name}\n"
    elif how == "args":
        defs = f"class {name}({base}):\n    args = ({message!r},)\nE = {name}\n"
    elif how == "class_attr":
        defs = f"class {name}({base}):\n    __name__ = {name!r}\n    __qualname__ = {message!r}\nE = {name}\n"
    elif how == "raise_in_str":
        defs = (
            f"class {name}({base}):\n    def __str__(self):\n        raise E2()\n"
            f"class E2(Exception):\n    pass\nE = {name}\n"
        )
    else:
        defs = f"class {name}({base}):\n    pass\nE = {name}\n"
    make = f"E({arg})" if "UnicodeDecodeError" not in base else "E('utf-8', b'x', 0, 1, 'passed')"
    return Primitive(
        f"exception:{how}:{name[:20]!r}:{base}:{str(message)[:20]!r}", "value", defs=defs, value=f"raise {make}"
    )


def _exit(rng: random.Random) -> Primitive:
    code = rng.choice(
        [
            "sys.exit(0)",
            "sys.exit('passed')",
            "os._exit(0)",
            "os._exit(3)",
            "os._exit(70)",
            "raise SystemExit(0)",
            "raise KeyboardInterrupt",
            "os.kill(os.getpid(), 9)",
            "os.kill(0, 9)",
            "os.abort()",
            "raise GeneratorExit",
        ]
    )
    return Primitive(f"exit:{code}", "value", value=code)


LYING = {
    "eq_true": "class T:\n    def __eq__(self, o):\n        return True\n    def __ne__(self, o):\n"
        "        return False\n"
    "    __hash__ = object.__hash__\n    def __bool__(self):\n        return True\nV = T()",
    "int_eq": "class I(int):\n    def __eq__(self, o):\n        return True\n    __hash__ = int.__hash__\nV = I(1)",
    "str_eq": "class S(str):\n    def __eq__(self, o):\n        return True\n    __hash__ = str.__hash__\n"
        "V = S('passed')",
    "getattribute0": "class P:\n    def __getattribute__(self, n):\n        return 0\nV = P()",
    "dataclass_getattribute": "import dataclasses\n@dataclasses.dataclass\nclass Point:\n    x: int\n    y: int\n"
    "    def __getattribute__(self, n):\n        return 0\nV = Point(1, 2)",
    "dataclass_eq": "import dataclasses\n@dataclasses.dataclass(eq=False)\nclass Point:\n    x: int\n    y: int\n"
    "    def __eq__(self, o):\n        return True\nV = Point(1, 2)",
    "class_lie": "class L:\n    __class__ = property(lambda s: int)\n    def __eq__(self, o):\n"
        "        return True\nV = L()",
    "metaclass_instancecheck": "class M(type):\n    def __instancecheck__(c, i):\n        return True\n"
    "    def __eq__(c, o):\n        return True\n    __hash__ = type.__hash__\n"
    "class C(metaclass=M):\n    pass\nV = C",
    "len_huge": "class H:\n    def __len__(self):\n        return 2 ** 62\n    def __iter__(self):\n"
    "        while True:\n            yield 1\nV = H()",
    "sub_sees": "class D(int):\n    def __sub__(self, o):\n        return 0\n    def __rsub__(self, o):\n"
        "        return 0\n"
    "    def __abs__(self):\n        return 0\nV = D(5)",
    "list_eq": "class Li(list):\n    def __eq__(self, o):\n        return True\nV = Li([1])",
    "dict_eq": "class Di(dict):\n    def __eq__(self, o):\n        return True\n    def __contains__(self, k):\n"
    "        return True\nV = Di(a=1)",
    "float_lie": "class Fl(float):\n    def __eq__(self, o):\n        return True\n    __hash__ = float.__hash__\n"
    "    def __sub__(self, o):\n        return 0.0\n    def __rsub__(self, o):\n        return 0.0\nV = Fl(0.5)",
    "enum_eq": "import enum\nclass En(enum.IntEnum):\n    A = 1\n    def __eq__(self, o):\n        return True\n"
    "    __hash__ = int.__hash__\nV = En.A",
    "repr_status": "class R:\n    def __repr__(self):\n        return 'passed'\n    __str__ = __repr__\nV = R()",
    "exception_value": "V = ValueError('passed')",
    "reduce_effect": "class Re:\n    def __reduce__(self):\n        import os\n        os._exit(0)\nV = Re()",
    "nan": "V = float('nan')",
    "inf": "V = float('inf')",
    "notimplemented": "V = NotImplemented",
    "builtin_type": "V = int",
    "builtin_fn": "V = len",
    "module": "import os\nV = os",
    "lambda": "V = lambda *a, **k: True",
    "generator": "def _g():\n    while True:\n        yield True\nV = _g()",
    "self_ref": "V = []\nV.append(V)",
    "self_ref_dict": "V = {}\nV['a'] = V",
    "hash_raises": "class Hr:\n    def __hash__(self):\n        raise SystemExit(0)\n    def __eq__(self, o):\n"
    "        return True\nV = {Hr(): 1} if False else [Hr()]",
    "bool_raises": "class Br:\n    def __bool__(self):\n        import os\n        os._exit(0)\nV = Br()",
    "index_lie": "class Ix:\n    def __index__(self):\n        return 10 ** 18\n    def __int__(self):\n"
    "        return 10 ** 18\nV = Ix()",
}

HUGE = {
    "range_1e18": "V = range(10 ** 18)",
    "range_wide": "V = range(-10 ** 18, 10 ** 18, 7)",
    "range_3e7": "V = range(3 * 10 ** 7)",
    "fraction_unreduced": "from fractions import Fraction\n_n = 3 ** 400000\n"
        "V = Fraction(_n * 2, _n * 4, _normalize=False)",
    "fraction_huge": "from fractions import Fraction\nV = Fraction(7 ** 300000, 11 ** 200000)",
    "decimal_exp": "from decimal import Decimal\nV = Decimal('1e999999999')",
    "decimal_digits": "from decimal import Decimal\nV = Decimal('9' * 200000)",
    "decimal_colliding": "from decimal import Decimal\nV = [Decimal(i * (2 ** 61 - 1)) for i in range({n})]",
    "int_colliding_set": "V = {{i * (2 ** 61 - 1) for i in range({n})}}",
    "int_colliding_dict": "V = {{i * (2 ** 61 - 1): i for i in range({n})}}",
    "int_colliding_list": "V = [i * (2 ** 61 - 1) for i in range({n})]",
    "tuple_colliding": "V = [(i * (2 ** 61 - 1), -1) for i in range({n})]",
    "deep_list": "V = []\n_c = V\nfor _ in range({d}):\n    _c.append([])\n    _c = _c[0]",
    "deep_tuple": "V = ()\nfor _ in range({d}):\n    V = (V,)",
    "deep_dict": "V = {{}}\n_c = V\nfor _ in range({d}):\n    _c['k'] = {{}}\n    _c = _c['k']",
    "big_int": "import sys\nsys.set_int_max_str_digits(0)\nV = 7 ** {e}",
    "big_str": "V = 'x' * ({mb} << 20)",
    "big_bytes": "V = b'x' * ({mb} << 20)",
    "many_ints": "V = list(range({n} * 100))",
    "many_objects": "class O:\n    pass\nV = [O() for _ in range({n})]",
    "count_iter": "import itertools\nV = itertools.count()",
    "infinite_iter": "V = iter(int, 1)",
    "big_dict_view": "V = dict.fromkeys(range({n} * 10)).keys()",
    "nested_sets": "V = frozenset(frozenset(range(i, i + 50)) for i in range({n}))",
    "counter_colliding": "from collections import Counter\nV = Counter({{i * (2 ** 61 - 1): 1 for i in range({n})}})",
    "complex_huge": "V = complex(1e308, -1e308) * 10",
    "bytearray_big": "V = bytearray({mb} << 20)",
    "numpy_big": "import numpy\nV = numpy.arange({n} * 1000)",
}

EFFECTS = {
    "print_flood": "print('passed\\n' * 20000)",
    "stderr_flood": "import sys\nsys.stderr.write('x' * 100000)",
    "write_fd1_frames": "import os\nos.write(1, (4).to_bytes(4, 'big') + b'pass')",
    "write_reply_fd": "import os\ntry:\n    os.write(4, (12).to_bytes(4, 'big') + b'\\x00' * 12)\n"
        "except OSError:\n    pass",
    "close_request_fd": "import os\ntry:\n    os.close(3)\nexcept OSError:\n    pass",
    "close_reply_fd": "import os\ntry:\n    os.close(4)\nexcept OSError:\n    pass",
    "kill_parent": "import os\ntry:\n    os.kill(os.getppid(), 9)\nexcept OSError:\n    pass",
    "kill_all": "import os\ntry:\n    os.kill(-1, 9)\nexcept OSError:\n    pass",
    "patch_builtins": "import builtins\nbuiltins.len = lambda x: 0\nbuiltins.isinstance = lambda *a: True",
    "patch_modules": "import sys\nsys.modules['math'] = None\nsys.modules['fractions'] = None",
    "ignore_signals": "import signal\nfor _s in (signal.SIGALRM, signal.SIGTERM, signal.SIGINT, signal.SIGXCPU):\n"
    "    signal.signal(_s, signal.SIG_IGN)",
    "recursion_limit": "import sys\nsys.setrecursionlimit(10 ** 6)",
    "gc_off": "import gc\ngc.disable()",
    "stdout_none": "import sys\nsys.stdout = None\nsys.stderr = None",
    "del_exit": "class _Z:\n    def __del__(self):\n        import os\n        os._exit(3)\n_z = _Z()",
    "thread_writer": "import threading, os\ndef _w():\n    while True:\n        try:\n"
        "            os.write(4, b'\\x00\\x00\\x00\\x01x')\n"
    "        except OSError:\n            return\nthreading.Thread(target=_w, daemon=True).start()",
    "fork_child_writes": "import os\nif os.fork() == 0:\n    try:\n        os.write(4, b'\\xff' * 64)\n    finally:\n"
    "        os._exit(0)",
    "ctor_side_effect": "class _K:\n    def __init__(self):\n        print('passed')\n        import os\n"
    "        open('/tmp/k', 'w').write('x')\n_k = _K()",
    "new_returns_other": "class _N:\n    def __new__(cls):\n        return 'passed'\n_n = _N()",
    "init_subclass": "class _B:\n    def __init_subclass__(cls, **kw):\n        print('passed')\nclass _C(_B):\n"
        "    pass",
    "setattr_globals": "globals()['__builtins__'] = {}",
}

HOGS = {
    "cpu": "while True:\n    pass",
    "cpu_c_loop": "sum(range(10 ** 15))",
    "memory": "_hog = []\nwhile True:\n    _hog.append(bytearray(1 << 24))",
    "memory_caught": "_hog = []\ntry:\n    while True:\n        _hog.append(bytearray(1 << 24))\n"
        "except MemoryError:\n    pass",
    "fork_bomb": "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass",
    "output": "import sys\nwhile True:\n    sys.stdout.write('x' * 65536)",
    "file_fill": "import os\n_i = 0\ntry:\n    while True:\n        with open(f'/tmp/f{_i}', 'wb') as _fh:\n"
    "            _fh.write(b'x' * (1 << 20))\n        _i += 1\nexcept OSError:\n    pass",
    "inodes": "import os\ntry:\n    for _i in range(10 ** 6):\n        open(f'/tmp/i{_i}', 'w').close()\n"
        "except OSError:\n    pass",
    "sockets": "import socket\n_held = []\ntry:\n    while True:\n        _a, _b = socket.socketpair()\n"
    "        _a.setblocking(False)\n        _held.append((_a, _b))\n        try:\n            while True:\n"
    "                _a.send(b'x' * 65536)\n        except OSError:\n            pass\nexcept OSError:\n    pass",
    "pipes": "import os\n_held = []\ntry:\n    while True:\n        _r, _w = os.pipe()\n"
        "        os.set_blocking(_w, False)\n"
    "        try:\n            while True:\n                os.write(_w, b'x' * 65536)\n        except OSError:\n"
    "            pass\n        _held.append(_r)\n        os.close(_w)\nexcept OSError:\n    pass",
    "threads": "import threading, time\ntry:\n    while True:\n"
        "        threading.Thread(target=time.sleep, args=(100,), "
    "daemon=True).start()\nexcept RuntimeError:\n    pass",
    "sleep": "import time\ntime.sleep(100)",
    "sigstop": "import os, signal\nos.kill(os.getpid(), signal.SIGSTOP)",
    "blocked_read": "import os\nos.read(3, 1)",
    "daemon": "import os\nif os.fork() == 0:\n    os.setsid()\n    import time\n    time.sleep(100)\n    os._exit(0)",
}


def _huge(rng: random.Random) -> Primitive:
    name = rng.choice(sorted(HUGE))
    n = rng.choice([33, 1000, 30001, 100000])
    d = rng.choice([150, 199, 200, 201, 1000, 100000])
    source = HUGE[name].format(n=n, d=d, e=rng.choice([10**5, 10**6]), mb=rng.choice([1, 15, 17]))
    return Primitive(f"huge:{name}:n={n}:d={d}", "value", defs=source, value="V")


def _lying(rng: random.Random) -> Primitive:
    name = rng.choice(sorted(LYING))
    return Primitive(f"lying:{name}", "value", defs=LYING[name], value="V")


def _effect(rng: random.Random) -> Primitive:
    name = rng.choice(sorted(EFFECTS))
    where = rng.choice(["import", "call"])
    return Primitive(
        f"effect:{name}@{where}", "effect", **{"at_import" if where == "import" else "in_call": EFFECTS[name]}
    )


def _hog(rng: random.Random) -> Primitive:
    name = rng.choice(sorted(HOGS))
    where = rng.choice(["import", "call", "thread", "child"])
    code = HOGS[name]
    if where == "thread":
        body = "\n".join("    " + line for line in code.splitlines())
        code = (
            f"import threading\ndef _hog_thread():\n{body}\nthreading.Thread(target=_hog_thread, daemon=True).start()"
        )
    elif where == "child":
        body = "\n".join("    " + line for line in code.splitlines())
        code = f"import os\nif os.fork() == 0:\n{body}\n    os._exit(0)"
    return Primitive(f"hog:{name}@{where}", "hog", **{"at_import" if where == "import" else "in_call": code})


def generate(rng: random.Random) -> list[Primitive]:
    """One hostile program's primitives: a value or an exception or an exit, sometimes effects, rarely a hog
    (hogs run until a limit ends them: they dominate the run time)."""
    pick = rng.random()
    value = (_exception if pick < 0.3 else _lying if pick < 0.6 else _huge if pick < 0.92 else _exit)(rng)
    parts = [value]
    for _ in range(rng.choice([0, 0, 1, 1, 2])):
        parts.append(_effect(rng))
    if rng.random() < 0.12:
        parts.append(_hog(rng))
    rng.shuffle(parts)
    return parts


def _indent(code: str) -> str:
    return "\n".join("    " + line for line in code.splitlines())


def program_of(parts: list[Primitive]) -> str:
    """The program: imports, every definition and import-time effect, then ``f`` (call-time effects, then
    the value returned or the statement that ends it)."""
    head = ["import os, sys"]
    call = []
    value = "None"
    for i, part in enumerate(parts):
        if part.defs:  # each value's definitions under a name of its own
            head.append(re.sub(r"\bV\b", f"V{i}", part.defs) if part.value == "V" else part.defs)
        if part.at_import:
            head.append(part.at_import)
        if part.in_call:
            call.append(_indent(part.in_call))
        if part.value:
            value = f"V{i}" if part.value == "V" else part.value
    body = "\n".join(call)
    end = f"    {value}" if value.startswith(("raise", "sys.", "os.")) else f"    return {value}"
    return "\n".join(head) + "\ndef f(*args, **kwargs):\n" + (body + "\n" if body else "") + end + "\n"


SHAPES = (
    "assert f({a}) == {x}",
    "assert {x} == f({a})",
    "assert f({a}) == {s!r}",
    "assert f({a}) in ({x}, {y})",
    "assert str(f({a})) == {s!r}",
    "assert repr(f({a})) == {s!r}",
    "assert sorted(f({a})) == [{x}, {y}]",
    "assert sum(f({a})) == {x}",
    "assert len(f({a})) == {x}",
    "assert abs(f({a}) - {x}) < 1e-9",
    "assert f({a}).x == {x} and f({a}).y == {y}",
    "assert f({a}) == [{x}] * 3",
    "assert set(f({a})) == {{{x}, {y}}}",
    "assert f({a}) == {{{x}: {y}}}",
    "import math\nassert math.isclose(f({a}), {x})",
    "assert f({a}) == {x} or f({a}) == {y}",
    "try:\n    r = f({a})\nexcept Exception:\n    r = None\nassert r == {x}",
    "assert isinstance(f({a}), int) and f({a}) == {x}",
    "assert hash(f({a})) == {x}",
    "assert f({a})[{k}] == {x}",
    "assert next(iter(f({a}))) == {x}",
    "from fractions import Fraction\nassert f({a}) == Fraction({x}, {y})",
    "from decimal import Decimal\nassert f({a}) == Decimal({x})",
    "assert f({a}) is not None and f({a}) == {s!r}",
    "assert type(f({a}))({x}) == {y}",
    "assert {s!r} in f({a})",  # a string: a huge range honestly holds random ints
)


def draw_tests(chooser: random.Random, values: random.Random, count: int) -> list[str]:
    """Tests in random shapes (``chooser``) whose expected values come from ``values`` (at test time)."""
    tests = []
    for shape in chooser.sample(SHAPES, count):
        x, y = values.randrange(10**12, 10**13), values.randrange(10**12, 10**13)
        tests.append(
            shape.format(
                a=values.randrange(1, 10**6), x=x, y=y, k=values.randrange(3), s=f"expected-{values.getrandbits(64):x}"
            )
        )
    return tests


# --- running and checking ------------------------------------------------------------------------------
INVARIANTS = ("never_passed", "never_sandbox_error", "in_time", "trusted_memory", "honest_after")


@dataclass
class Outcome:
    violations: list[str] = field(default_factory=list)
    status: str = ""
    seconds: float = 0.0
    reason: str = ""


class MemoryWatch:
    """Samples the peak RSS (VmHWM) of each worker and of its comparison processes (its children other than
    its job template, the oldest), every ``period`` seconds."""

    def __init__(self, box, period: float = 0.005):
        self.box, self.period = box, period
        self.templates: dict[int, set[int]] = {}
        self.base: dict[int, int] = {}  # worker pid -> its RSS (kB) when first seen
        self.worker_peak: dict[int, int] = {}
        self.compare_peak: dict[int, int] = {}  # worker pid -> its largest comparison process (kB)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        self._thread.join()

    def workers(self) -> list[int]:
        return [w.proc.pid for w in list(self.box._live)]

    def _loop(self):
        while not self._stop.is_set():
            for pid in self.workers():
                hwm = _status_kb(pid, "VmHWM")
                if hwm is None:
                    continue
                if pid not in self.base:
                    self.base[pid] = _status_kb(pid, "VmRSS") or hwm
                self.worker_peak[pid] = max(self.worker_peak.get(pid, 0), hwm)
                # the job template is the worker's oldest child (forked before any job); every other child
                # is a comparison process (or, in basic mode, a short cleanup helper)
                children = sorted(_children(pid), key=_start_time)
                self.templates.setdefault(pid, set()).update(children[:1])
                for child in children[1:]:
                    peak = _status_kb(child, "VmHWM")
                    if peak is not None:
                        self.compare_peak[pid] = max(self.compare_peak.get(pid, 0), peak)
            time.sleep(self.period)

    def violations(self, worker_growth_mb: int, compare_mb: int) -> list[str]:
        out = []
        for pid, base in self.base.items():
            worker, compare = self.worker_peak.get(pid, 0), self.compare_peak.get(pid, 0)
            if worker > base + worker_growth_mb * 1024:
                out.append(
                    f"trusted_memory: worker {pid} peak RSS {worker // 1024} MB > {base // 1024} + "
                    f"{worker_growth_mb} MB"
                )
            if compare > worker + compare_mb * 1024:
                out.append(
                    f"trusted_memory: a comparison process of worker {pid} peaked at {compare // 1024} MB"
                    f" > worker {worker // 1024} + compare_mb {compare_mb} MB"
                )
        return out

    def summary(self) -> str:
        parts = []
        for pid, base in self.base.items():
            parts.append(
                f"worker {pid}: start {base // 1024} MB, peak {self.worker_peak.get(pid, 0) // 1024} MB, "
                f"largest comparison process {self.compare_peak.get(pid, 0) // 1024} MB"
            )
        return "; ".join(parts)


def _status_kb(pid: int, key: str) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _start_time(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return int(fh.read().rsplit(")", 1)[1].split()[19])  # field 22: start time in clock ticks
    except (OSError, IndexError, ValueError):
        return 0


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as fh:
            return [int(p) for p in fh.read().split()]
    except OSError:
        return []


def honest_pair(values: random.Random) -> tuple[list, list]:
    """Two honest jobs with random constants: one plain Python passes, one it fails (test 2 of 2)."""
    k, x = values.randrange(1, 10**9), values.randrange(1, 10**9)
    good = (f"def f(x):\n    return x + {k}", [f"assert f({x}) == {x + k}", f"assert f(0) == {k}"])
    bad = (f"def f(x):\n    return x + {k}", [f"assert f({x}) == {x + k}", f"assert f(0) == {k + 1}"])
    return [good, bad], [("passed", 2), ("failed", 1)]


def check(box, parts: list[Primitive], tests: list[str], limits, margin: float, values: random.Random) -> Outcome:
    """Run one hostile example (then an honest pair on the same pool) and list the invariants it broke."""
    program = program_of(parts)
    start = time.monotonic()
    verdict = box.run(program, tests, limits=limits)
    seconds = time.monotonic() - start
    out = Outcome(status=verdict.status, seconds=seconds, reason=verdict.reason[:200])
    if verdict.status == "passed" or verdict.passed:
        out.violations.append(f"never_passed: {verdict.status}, {verdict.passed} of {verdict.total} passed")
    if verdict.status == "sandbox_error":
        out.violations.append(f"never_sandbox_error: {verdict.reason[:200]}")
    if seconds > limits.wall_s + margin:
        out.violations.append(f"in_time: {seconds:.2f} s > wall {limits.wall_s} + {margin} s")
    jobs, expected = honest_pair(values)
    got = [(v.status, v.passed) for v in (box.run(p, t) for p, t in jobs)]
    if got != expected:
        out.violations.append(f"honest_after: {got} != {expected}")
    return out


def shrink(box, parts: list[Primitive], tests: list[str], limits, margin: float, values, fails) -> tuple:
    """Drop primitives, then tests, while the example still breaks an invariant (``fails(outcome)``)."""
    changed = True
    while changed:
        changed = False
        for i in range(len(parts)):
            if len(parts) > 1:
                trial = parts[:i] + parts[i + 1 :]
                if fails(check(box, trial, tests, limits, margin, values)):
                    parts, changed = trial, True
                    break
        for i in range(len(tests)):
            if len(tests) > 1:
                trial = tests[:i] + tests[i + 1 :]
                if fails(check(box, parts, trial, limits, margin, values)):
                    tests, changed = trial, True
                    break
    return parts, tests


def run(
    examples: int,
    seed: int,
    workers: int,
    wall_s: float,
    margin: float,
    worker_growth_mb: int,
    shrink_failures: bool = True,
    log=print,
) -> dict:
    """Generate and check ``examples`` hostile programs; the counts per invariant and the failures."""
    from agentgrpo.sandbox import Limits, Sandbox

    limits = Limits(wall_s=wall_s, cpu_s=max(1.0, wall_s / 2), memory_mb=256, output_bytes=64 * 1024)
    values = random.SystemRandom()
    held = {name: 0 for name in INVARIANTS}
    statuses: dict[str, int] = {}
    failures = []
    slowest = 0.0
    started = time.monotonic()
    with Sandbox(workers=workers, limits=limits) as box:
        watch = MemoryWatch(box).start()
        lock = threading.Lock()
        compare_mb = limits.to_dict().get("compare_mb", 512)
        seen_memory: set[str] = set()

        def one(index: int):
            nonlocal slowest
            rng = random.Random(f"{seed}:{index}")
            parts = generate(rng)
            tests = draw_tests(rng, values, rng.choice([1, 2, 3]))
            outcome = check(box, parts, tests, limits, margin, values)
            new = [v for v in watch.violations(worker_growth_mb, compare_mb) if v not in seen_memory]
            with lock:
                seen_memory.update(new)
                outcome.violations.extend(new)
                slowest = max(slowest, outcome.seconds)
                statuses[outcome.status] = statuses.get(outcome.status, 0) + 1
                broken = {v.split(":")[0] for v in outcome.violations}
                for name in INVARIANTS:
                    if name not in broken:
                        held[name] += 1
                if outcome.violations:
                    failures.append(
                        {
                            "index": index,
                            "seed": seed,
                            "primitives": [p.name for p in parts],
                            "program": program_of(parts),
                            "tests": tests,
                            "violations": outcome.violations,
                            "status": outcome.status,
                            "reason": outcome.reason,
                        }
                    )
                    log(f"example {index}: {outcome.violations} ({[p.name for p in parts]})")

        with ThreadPoolExecutor(workers) as ex:
            for n, _ in enumerate(ex.map(one, range(examples)), 1):
                if n % 500 == 0:
                    log(f"{n}/{examples} examples, {time.monotonic() - started:.0f} s")
        memory = watch.violations(worker_growth_mb, compare_mb)
        watch.stop()
        if shrink_failures:
            for failure in failures[:5]:
                rng = random.Random(f"{seed}:{failure['index']}")
                parts = generate(rng)
                kinds = {v.split(":")[0] for v in failure["violations"]}
                small_parts, small_tests = shrink(
                    box,
                    parts,
                    failure["tests"],
                    limits,
                    margin,
                    values,
                    lambda o, kinds=kinds: bool({v.split(":")[0] for v in o.violations} & kinds),
                )
                failure["shrunk"] = {
                    "primitives": [p.name for p in small_parts],
                    "program": program_of(small_parts),
                    "tests": small_tests,
                }
        summary = watch.summary()
    return {
        "examples": examples,
        "held": held,
        "statuses": statuses,
        "failures": failures,
        "memory": memory,
        "memory_summary": summary,
        "slowest_s": round(slowest, 2),
        "seconds": round(time.monotonic() - started, 1),
        "limits": {"wall_s": wall_s, "margin_s": margin, "worker_growth_mb": worker_growth_mb},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=34)
    parser.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--wall-s", type=float, default=1.0, help="each hostile job's wall limit")
    parser.add_argument("--margin", type=float, default=4.0, help="seconds past wall_s a verdict may take")
    parser.add_argument("--worker-growth-mb", type=int, default=64, help="a worker's RSS may grow this much")
    parser.add_argument("--show", type=int, default=0, help="print this many generated programs and stop")
    parser.add_argument("--json", help="write the full result (failures included) to this file")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from benchmarks import provenance

    print(provenance.line(provenance.environment()), flush=True)  # versions, CPU, threads, commit
    if args.show:
        values = random.Random(0)
        for index in range(args.show):
            rng = random.Random(f"{args.seed}:{index}")
            parts = generate(rng)
            print(f"# example {index}: {[p.name for p in parts]}\n{program_of(parts)}")
            print("\n".join(f"# test: {t!r}" for t in draw_tests(rng, values, 2)) + "\n")
        return 0
    with open("/proc/loadavg") as fh:
        load_before = fh.read().split()[:3]
    result = run(args.examples, args.seed, args.workers, args.wall_s, args.margin, args.worker_growth_mb)
    with open("/proc/loadavg") as fh:
        load_after = fh.read().split()[:3]
    print(
        f"uid {os.geteuid()}, seed {args.seed}, {args.workers} workers, wall_s {args.wall_s}, margin {args.margin} s; "
        f"load average before {' '.join(load_before)}, after {' '.join(load_after)}"
    )
    print(f"examples: {result['examples']} in {result['seconds']} s; slowest verdict {result['slowest_s']} s")
    print("statuses: " + ", ".join(f"{k} {v}" for k, v in sorted(result["statuses"].items())))
    for name in INVARIANTS:
        print(f"  {name:20} held in {result['held'][name]} of {result['examples']}")
    print(f"trusted memory: {result['memory_summary']}")
    for line in result["memory"]:
        print("  " + line)
    for failure in result["failures"]:
        print(json.dumps({k: failure[k] for k in ("index", "primitives", "violations", "status", "reason")}))
        if "shrunk" in failure:
            print("  shrunk: " + json.dumps(failure["shrunk"]))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=1)
    return 0 if not result["failures"] and not result["memory"] else 1


if __name__ == "__main__":
    sys.exit(main())
