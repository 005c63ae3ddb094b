"""Fuzzing the trusted side (issue 21 B): the wire decoder, the rebuilding of what the job describes, the
comparisons the tests make on it, and the whole worker with hostile frames from a real job.

Properties: the decoder raises nothing but `WireError` and spends at most `DECODE_CPU_S` of CPU on any
message; rebuilding never raises (what cannot be rebuilt fails the test that uses it); a comparison on
rebuilt values raises at most an ordinary ``Exception`` (the test fails), never anything that would end the
worker; and through a real pool no frame a job writes gives ``sandbox_error`` or loses a worker.
The worst decode times are measured by ``benchmarks/wire_decode.py``.
"""

from __future__ import annotations

import signal
import time

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agentgrpo.sandbox import PASSED, SANDBOX_ERROR, Limits, Sandbox, mirrors, trusted, values, wire

DECODE_CPU_S = 0.1  # generous: the benchmark's worst case is far below it (docs/sandbox.md)
# derandomize: the same examples on every CI run (a red CI must be reproducible); widen locally with
# HYPOTHESIS settings profiles or more max_examples.
FUZZ = settings(max_examples=300, deadline=None, database=None, derandomize=True,
                suppress_health_check=list(HealthCheck))


def _u32(n: int) -> bytes:
    return (n % 2**32).to_bytes(4, "big")


def _blob(raw: bytes) -> bytes:
    return _u32(len(raw)) + raw


# frames built from the format's grammar, with hostile counts, lengths and kinds
leaf = st.one_of(
    st.sampled_from([b"N", b"T", b"F"]),
    st.binary(max_size=12).map(lambda b: b"i" + _blob(b)),
    st.binary(min_size=8, max_size=8).map(lambda b: b"f" + b),
    st.binary(min_size=16, max_size=16).map(lambda b: b"c" + b),
    st.text(max_size=8).map(lambda t: b"s" + _blob(t.encode("utf-8", "surrogatepass"))),
    st.binary(max_size=8).map(lambda b: b"b" + _blob(b)),
    st.tuples(st.integers(-5, 2**40), st.text(max_size=5)).map(
        lambda t: b"H" + _blob(str(t[0]).encode()) + _blob(t[1].encode())),
    st.lists(st.integers(-(2**63), 2**63 - 1), max_size=10).map(
        lambda xs: b"I" + _u32(len(xs)) + b"".join(x.to_bytes(8, "big", signed=True) for x in xs)),
    st.tuples(st.integers(0, 2**32 - 1), st.binary(max_size=20)).map(lambda t: b"D" + _u32(t[0]) + t[1]),
    st.tuples(st.lists(st.integers(0, 6), max_size=4), st.text(max_size=12)).map(
        lambda t: b"W" + _u32(len(t[0])) + b"".join(_u32(n) for n in t[0]) + b"s" + _blob(t[1].encode())),
)
KINDS = sorted(values.KINDS | {"class", "object", "zzz"})


def _container(children):
    return st.one_of(
        st.tuples(st.sampled_from(b"ltSZ"), st.lists(children, max_size=5), st.integers(-2, 2)).map(
            lambda t: bytes([t[0]]) + _u32(len(t[1]) + (t[2] if t[2] != 2 else 2**31)) + b"".join(t[1])),
        st.lists(st.tuples(children, children), max_size=4).map(
            lambda kv: b"d" + _u32(len(kv)) + b"".join(k + v for k, v in kv)),
        st.tuples(st.sampled_from(KINDS), children).map(lambda t: b"X" + _blob(t[0].encode()) + t[1]),
    )


frames = st.recursive(leaf, _container, max_leaves=25)


def _decode(data: bytes):
    started = time.thread_time()
    try:
        return wire.decode(data, max_bytes=1 << 24)
    except wire.WireError:
        return None
    finally:
        assert time.thread_time() - started < DECODE_CPU_S


@FUZZ
@given(st.binary(max_size=300))
def test_random_bytes_decode_to_a_value_or_a_wire_error(data):
    _decode(data)


seeds = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=6), st.binary(max_size=6)),
    lambda c: st.one_of(st.lists(c, max_size=12), st.tuples(c, c), st.dictionaries(st.integers(), c, max_size=4),
                        st.frozensets(st.integers(), max_size=4)),
    max_leaves=30,
)


@FUZZ
@given(seeds, st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), max_size=6))
def test_mutated_encodings_decode_to_a_value_or_a_wire_error(value, flips):
    data = bytearray(wire.encode(value))
    for at, byte in flips:
        data[at % len(data)] = byte
    _decode(bytes(data))


class FakeSession:
    """What `trusted.localize` and the mirrors need of a session: every request answers with a value the
    fuzzer chose (or the job's last decoded frame)."""

    gone = ""

    def __init__(self, answer):
        self.answer = answer

    def ask(self, message, name=""):
        return trusted.localize(("ok", self.answer, []), self)


def _use(value) -> None:
    """What tests do with a returned value; each may fail the test (an Exception), nothing else."""
    expected = [1, "a", (1, 2), {1: 2}, {1}, None, 1.5, b"x", [1, [2]]]
    for op in (
        lambda: value == expected[0], lambda: value != expected[2], lambda: expected[3] == value,
        lambda: value in expected, lambda: hash(value), lambda: {value: 1}, lambda: len(value),
        lambda: sorted(value), lambda: set(value), lambda: bool(value), lambda: str(value), lambda: repr(value),
        lambda: list(value), lambda: value[0], lambda: value.x, lambda: abs(value - 1) < 1e-9,
        lambda: isinstance(value, int | str), lambda: value < 3, lambda: value(1),
    ):
        try:
            op()
        except Exception:
            pass


def _within_the_jobs_deadline(use, seconds: float = 1.0) -> None:
    """Run ``use`` as the worker runs a test: under the job's deadline, which ends it with `trusted.JobGone`
    (`worker._Deadline`). A test that loops forever over what a job returned (a mirrored iterator that never
    ends, ``set(range(10**12))``) is the job's timeout, as it would be under plain Python with a time limit."""

    def expire(*_):
        raise trusted.JobGone("timeout")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        use()
    except trusted.JobGone:
        pass
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@FUZZ
@given(frames, frames)
# malformed numpy descriptions a CI run found (a str and a dict where a tuple belongs)
@example(b"X\x00\x00\x00\x07ndarrays\x00\x00\x00\x00", b"d\x00\x00\x00\x00")
@example(b"X\x00\x00\x00\x07ndarrayd\x00\x00\x00\x00", b"d\x00\x00\x00\x00")
@example(b"X\x00\x00\x00\x05numpyt\x00\x00\x00\x00", b"d\x00\x00\x00\x00")
def test_rebuilding_and_comparing_what_a_job_describes_fails_only_tests(frame, answer):
    value = _decode(frame)
    if value is None:
        return
    session = FakeSession(_decode(answer))
    trusted.begin(session)
    started = time.thread_time()
    local = trusted.localize(value, session)  # never raises
    assert time.thread_time() - started < 1.0

    def use():
        _use(local)
        if isinstance(local, list | tuple):
            for item in local[:5]:
                _use(item)

    _within_the_jobs_deadline(use)


def test_unrebuildable_descriptions_fail_the_test_with_a_reason():
    session = FakeSession(None)
    trusted.begin(session)
    broken = trusted.localize(wire.Ext("Fraction", (1, 0)), session)
    assert isinstance(broken, mirrors.Unavailable)
    with pytest.raises(TypeError, match="cannot be used here"):
        broken == 1  # noqa: B015
    assert isinstance(trusted.localize(wire.Ext("object", (1, 2, 3)), session), mirrors.Unavailable)


# the whole worker: a job that writes the fuzzer's frames as its replies
WRITER = '''
import os
for raw in {frames!r}:
    os.write(4, len(raw).to_bytes(4, "big") + raw)
os._exit(0)
'''
READY = b"t" + _u32(2) + b"s" + _blob(b"ready") + b"l" + _u32(1)  # ("ready", [ <the frame> ]) once wrapped


@pytest.fixture(scope="module")
def box():
    with Sandbox(workers=2, limits=Limits(wall_s=4, cpu_s=3)) as sandbox:
        yield sandbox


@settings(max_examples=60, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(st.lists(frames, min_size=1, max_size=3), st.booleans())
def test_no_frame_a_job_writes_gives_sandbox_error_or_loses_a_worker(box, replies, wrap_first):
    if wrap_first:  # the first as the value of the one name the tests read, the rest as answers to calls
        replies = [READY + b"t" + _u32(2) + b"s" + _blob(b"value") + replies[0], *replies[1:]]
    workers = sorted(box.pids())
    verdict = box.run(WRITER.format(frames=replies), ["assert f(1) == 2", "assert f == f and f.x == 1"])
    assert verdict.status not in (PASSED, SANDBOX_ERROR), verdict
    assert sorted(box.pids()) == workers
    assert len(verdict.reason) <= 1000
