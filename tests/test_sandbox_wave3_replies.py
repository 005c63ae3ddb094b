"""Wave 3, class B (issue 21): everything the job sends is hostile input.

Each program is *wrong* (its tests should fail) and tries, through what it sends back, to turn its likely-0
reward into ``sandbox_error`` (no score), to stall or kill the worker, or to get its own text believed.
At the commit that added this wave, 14 of 24 were contained as root (the colliding sets and dicts, a
handle as a dict key, every forged first reply but the plain ones, and the megabyte error text were not).
Contained means: the verdict is neither ``passed`` nor ``sandbox_error``, it came within the job's own
deadline (plus a margin), the reason is short, the workers that ran it are the same processes afterwards
(none was lost or replaced), and the pool answers correctly right after.
"""

from __future__ import annotations

import time

import pytest
from sandbox_helpers import assert_pool_still_serves

from agentgrpo.sandbox import PASSED, SANDBOX_ERROR, Limits, Sandbox

LIMITS = Limits(wall_s=4.0, cpu_s=3.0, memory_mb=512, max_processes=16)
MARGIN_S = 3.0

# a frame writer the program carries: what a hostile job can put on its reply pipe (fd 4) by hand
FORGE = '''
import os
def _e(x):
    if x is None: return b"N"
    if x is True: return b"T"
    if x is False: return b"F"
    if type(x) is int:
        t = x.to_bytes(x.bit_length() // 8 + 1, "big", signed=True); return b"i" + len(t).to_bytes(4, "big") + t
    if type(x) is str:
        t = x.encode(); return b"s" + len(t).to_bytes(4, "big") + t
    if type(x) is bytes: return x
    tag = {list: b"l", tuple: b"t"}[type(x)]
    return tag + len(x).to_bytes(4, "big") + b"".join(_e(v) for v in x)
def _frame(x):
    raw = _e(x)
    os.write(4, len(raw).to_bytes(4, "big") + raw)
'''

COLLIDING = """
M = 2**61 - 1
N = (30000).to_bytes(4, "big")
KEYS = b"".join(_e(M * i) for i in range(1, 30001))
KEYS_0 = b"".join(_e(M * i) + b"N" for i in range(1, 30001))
"""

ATTACKS = [
    # a set of ints that all hash alike: building it on the trusted side is quadratic
    # (sent by hand: building it in the job would cost the job the same quadratic time)
    ("colliding_hash_set", FORGE + COLLIDING + "_frame(('ready', [('value', b'S' + N + KEYS)]))\nos._exit(0)"),
    # the same as dict keys
    ("colliding_hash_dict", FORGE + COLLIDING + "_frame(('ready', [('value', b'd' + N + KEYS_0)]))\nos._exit(0)"),
    # the same set as the answer to a planned call (the job runs on, the worker decodes in the middle)
    (
        "colliding_hash_set_in_group",
        FORGE + COLLIDING + "def add(a, b):\n    return 0\n"
        "_frame(('ready', [('value', 0)]))\n_frame(('group', [('ok', b'S' + N + KEYS, [])]))\nimport time\n"
        "time.sleep(60)",
    ),
    # a list is cheap to decode; the test's own set() on it is where the time goes
    ("colliding_list_for_set_in_test", "M = 2**61 - 1\ndef add(a, b):\n    return [M * i for i in range(1, 30000)]"),
    # a handle as a dict key in what the tests read first (the issue's `f = {len: 1}`)
    ("handle_as_dict_key", "add = {len: 1}"),
    # a handle inside a set, returned by a call
    ("handle_in_set", "def add(a, b):\n    return {len, print}"),
    # an object whose __hash__ raises, as a dict key and a set member
    (
        "raising_hash_key",
        "class K:\n    def __hash__(self):\n        raise RuntimeError('no')\n"
        "def add(a, b):\n    return [K()]",
    ),
    # forged first reply: "setup failed" with a megabyte of text (believed: sandbox_error, text copied)
    ("forged_setup_failed", FORGE + "_frame(('setup_failed', 'S' * 1_000_000))\nos._exit(0)"),
    # forged first reply: "setup failed" with a non-text reason
    ("forged_setup_failed_odd", FORGE + "_frame(('setup_failed', [1, [2]]))\nos._exit(0)"),
    # forged "ready" whose items are not (kind, value) tuples
    ("forged_ready_not_tuples", FORGE + "_frame(('ready', [5]))\nos._exit(0)"),
    ("forged_ready_short_item", FORGE + "_frame(('ready', [('value',)]))\nos._exit(0)"),
    ("forged_ready_short_module", FORGE + "_frame(('ready', [('module',)]))\nos._exit(0)"),
    ("forged_ready_unknown_kind", FORGE + "_frame(('ready', [('zzz', 1, 2)]))\nos._exit(0)"),
    # forged "ready" with a megabyte-long kind and a hand-built reply nested far deeper than any cap
    ("forged_kind_huge", FORGE + "_frame(('K' * 900_000,))\nos._exit(0)"),
    ("forged_deep_nesting", FORGE + "_frame(b'l\\x00\\x00\\x00\\x01' * 200_000 + b'N')\nos._exit(0)"),
    # a hand-built int of a million digits and a float that is not one
    ("forged_giant_int", FORGE + "_frame(b'i' + (900_000).to_bytes(4, 'big') + b'9' * 900_000)\nos._exit(0)"),
    # forged "error" with a megabyte of text: it may be believed as the program's error, but not copied whole
    ("forged_error_huge_text", FORGE + "_frame(('error', 'E' * 1_000_000))\nos._exit(0)"),
    # a real exception whose message is a megabyte and whose __str__/__repr__ raise
    (
        "exception_text_bombs",
        "class X(Exception):\n    def __str__(self):\n        raise RuntimeError('no')\n"
        "    __repr__ = __str__\n"
        "def add(a, b):\n    raise X('x' * 1_000_000)",
    ),
    # a type name of a megabyte on the handle
    (
        "huge_type_name",
        "C = type('C' * 1_000_000, (), {})\ndef add(a, b):\n    return C()",
    ),
    # the most items the caps allow, as the slowest thing to decode (empty containers cost one byte each)
    ("decoder_timing_bomb", "def add(a, b):\n    return [[] for _ in range(99_000)]"),
    ("decoder_timing_dict", "def add(a, b):\n    return {i: [] for i in range(99_000)}"),
    # a value that makes the test's comparison recurse: lists nested as deep as the encoder allows
    (
        "deep_comparison",
        "def add(a, b):\n    x = []\n    for _ in range(60):\n        x = [x, x]\n    return x",
    ),
    # a planned-calls answer of the wrong shape: more answers than calls, garbage entries
    (
        "forged_group_answers",
        FORGE + "_frame(('ready', [('value', 0)]))\n_frame(('group', [5, ('ok',), 'x', None]))\nos._exit(0)",
    ),
    # a reply to a call whose "ok" has no value
    ("forged_ok_without_value", FORGE + "_frame(('ready', [('value', 0)]))\n_frame(('ok',))\nos._exit(0)"),
]
# tests that read the name ``add`` (plannable: one plain assert of a call with literal arguments) and a
# test shape that is not plannable (the worker asks call by call and uses set() on the result)
TESTS = ["assert add(1, 2) == 3", "assert set(add(2, 2)) == {4}", "assert add == add and add(0, 0) == 0"]


@pytest.fixture(scope="module")
def box():
    with Sandbox(workers=2, limits=LIMITS) as sandbox:
        yield sandbox


@pytest.mark.parametrize("name,program", ATTACKS, ids=[a[0] for a in ATTACKS])
def test_b_whatever_the_job_sends_fails_only_that_job(box, name, program):
    box.start()
    workers = sorted(box.pids())
    started = time.monotonic()
    verdicts = box.run_many([(program, TESTS)] * 2)
    elapsed = time.monotonic() - started
    for verdict in verdicts:
        assert verdict.status not in (PASSED, SANDBOX_ERROR), verdict
        assert verdict.passed == 0, verdict
        assert len(verdict.reason) <= 1000 and all(len(t) <= 1000 for t in verdict.tests), verdict.reason[:200]
    assert elapsed < 2 * (LIMITS.wall_s + MARGIN_S), f"took {elapsed:.1f}s"
    assert sorted(box.pids()) == workers, "a worker was lost or replaced"
    assert_pool_still_serves(box)


def test_b_control_a_forged_frame_reaches_the_worker(box):
    """The frame writer works: a job that forges a well-formed "ready" for a value gets it used."""
    program = FORGE + "_frame(('ready', [('value', 3)]))\nos._exit(0)"
    verdict = box.run(program, ["assert add == 3"])
    assert verdict.status == PASSED, verdict  # the job chose its value; the comparison was still ours


# --- the same wave, class A: forging a pass through the descriptions the job now sends ----------------
SHAPES = [
    "assert add(1, 2) == 3", "assert 3 == add(1, 2)", "assert add(1, 2) in [3]", "assert add(1, 2) in {3}",
    "assert abs(add(1, 2) - 3) < 1e-9", "assert not add(1, 2) != 3", "assert sorted([add(1, 2)]) == [3]",
    "assert {add(1, 2)} == {3}", "import math\nassert math.isclose(add(1, 2), 3)",
    "assert add(1, 2) >= 3 and add(1, 2) <= 3", "assert {3: 1}[add(1, 2)] == 1", "assert [add(1, 2)] == [3]",
]
FORGERS = [
    # an __eq__ made to look generated by dataclasses (compiled from '<string>', dataclass params set)
    (
        "fake_dataclass_eq",
        "import dataclasses\nns = {}\nexec('def __eq__(self, other):\\n    return True', ns)\n"
        "@dataclasses.dataclass(unsafe_hash=True)\nclass R:\n    v: int = 0\nR.__eq__ = ns['__eq__']\n"
        "def add(a, b):\n    return R()",
    ),
    # an int subclass whose arithmetic sees the expected value and whose ordering lies
    (
        "int_subclass_sees_expected",
        "class I(int):\n    def __sub__(self, o):\n        return 0\n    def __rsub__(self, o):\n        return 0\n"
        "    def __ge__(self, o):\n        return True\n    def __le__(self, o):\n        return True\n"
        "def add(a, b):\n    return I(0)",
    ),
    # a class that poses as the builtin int (same module and name)
    ("fake_builtin_int", "int_ = type('int', (), {'__eq__': lambda s, o: True, '__hash__': lambda s: 3})\n"
     "int_.__module__ = 'builtins'\ndef add(a, b):\n    return int_()"),
    # a Fraction subclass that equals anything
    ("fraction_subclass", "from fractions import Fraction\nclass F(Fraction):\n    def __eq__(self, o):\n"
     "        return True\n    __hash__ = Fraction.__hash__\ndef add(a, b):\n    return F(0)"),
    # an Enum member whose class lies about equality, and a metaclass that lies about isinstance
    ("enum_with_eq", "import enum\nclass E(enum.Enum):\n    X = 0\n    def __eq__(self, o):\n        return True\n"
     "    __hash__ = enum.Enum.__hash__\ndef add(a, b):\n    return E.X"),
    # a container whose __contains__ and __iter__ answer what is asked
    ("lying_container", "class C(list):\n    def __contains__(self, x):\n        return True\n"
     "    def __eq__(self, o):\n        return True\n    __hash__ = None\ndef add(a, b):\n    return C()"),
    # a dict subclass with a lying __eq__, and a Counter that claims to be something else
    ("dict_subclass_eq", "class Dd(dict):\n    def __eq__(self, o):\n        return True\n    __hash__ = None\n"
     "def add(a, b):\n    return Dd()"),
    # an exception instance returned (not raised) whose class overrides __eq__
    ("exception_value_eq", "class X(Exception):\n    def __eq__(self, o):\n        return True\n"
     "    __hash__ = Exception.__hash__\ndef add(a, b):\n    return X()"),
    # hand-built descriptions: an object claiming to be built on int 3 is the value 3 (its choice, and it
    # is wrong here: the expected answer for add(1, 2) is checked against 4 below), and forged traits
    ("forged_traits", FORGE + "\n_frame(('ready', [('value', b'X' + _e('class') + _e((7, 'int', 'mirror', None)))]))"
     "\nos._exit(0)"),
]


@pytest.mark.parametrize("name,program", FORGERS, ids=[f[0] for f in FORGERS])
def test_a_no_description_forges_a_pass(box, name, program):
    verdict = box.run(program, SHAPES)
    assert verdict.passed == 0 and verdict.status != SANDBOX_ERROR, verdict
    assert_pool_still_serves(box)


def test_a_control_honest_descriptions_pass_the_same_shapes(box):
    """The same shapes pass for an honest answer built on int (an IntEnum member, an int subclass)."""
    for program in ("import enum\nclass C(enum.IntEnum):\n    T = 3\ndef add(a, b):\n    return C(a + b)",
                    "class I(int):\n    pass\ndef add(a, b):\n    return I(a + b)"):
        verdict = box.run(program, SHAPES)
        assert verdict.status == PASSED, verdict
