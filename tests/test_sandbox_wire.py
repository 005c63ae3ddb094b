"""The value format across the job boundary: exact builtin types only, and a decoder that nothing breaks."""

import math
import random

import pytest

from agentgrpo.sandbox import wire

VALUES = [
    None,
    True,
    False,
    0,
    -1,
    10**4000,
    1.5,
    -0.0,
    math.inf,
    complex(1, -2),
    "",
    "ünï\ud800code",
    b"\x00\xff",
    [],
    (),
    {},
    set(),
    frozenset({1}),
    [1, [2, [3, (4, {"k": {5, 6}})]]],
    {(1, 2): [b"x"], 3: None},
]


@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
def test_builtin_values_round_trip_exactly(value):
    back = wire.decode(wire.encode(value))
    assert back == value and type(back) is type(value)


def test_nan_round_trips():
    assert math.isnan(wire.decode(wire.encode(float("nan"))))


class LyingInt(int):
    def __eq__(self, other):
        return True


@pytest.mark.parametrize("value", [LyingInt(3), [LyingInt(3)], {"a": object()}, type("S", (str,), {})("x")])
def test_anything_but_exact_builtins_is_refused_or_becomes_a_handle(value):
    with pytest.raises(wire.WireError, match="not a builtin value"):
        wire.encode(value)
    handles = []
    data = wire.encode(value, lambda obj: handles.append(obj) or wire.Handle(len(handles), type(obj).__name__))
    assert handles and wire.Handle in {type(v) for v in _walk(wire.decode(data))}


def _walk(value):
    yield value
    if isinstance(value, list | tuple):
        for v in value:
            yield from _walk(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _walk(v)


@pytest.mark.parametrize(
    "make,needle",
    [
        (lambda: _nested(wire.MAX_DEPTH + 5), "nested deeper"),
        (lambda: "x" * (wire.MAX_BYTES + 1), "larger than"),
        (lambda: 10 ** (wire.MAX_INT_DIGITS + 10), "digits"),
    ],
)
def test_caps_hold_on_both_ends(make, needle):
    with pytest.raises(wire.WireError, match=needle):
        wire.encode(make())


def _nested(depth):
    value = []
    for _ in range(depth):
        value = [value]
    return value


MALFORMED = [
    b"",  # nothing
    b"l\x00\x00\x00\x05i",  # truncated
    b"l\xff\xff\xff\xff",  # a count past the item cap
    b"s\x00\x00\x00\x02\xff\xfe",  # invalid UTF-8
    b"i\x00\x00\x00\x031x2",  # not digits
    b"f\x00\x00\x00\x03xyz",  # not a float
    b"S\x00\x00\x00\x01l\x00\x00\x00\x00",  # an unhashable set member
    b"NN",  # trailing data
    b"?",  # unknown tag
    b"l\x00\x00\x00\x01" * 200 + b"N",  # too deep
]


@pytest.mark.parametrize("data", MALFORMED)
def test_malformed_data_is_a_wire_error(data):
    with pytest.raises(wire.WireError):
        wire.decode(data)


def test_random_bytes_never_raise_anything_else():
    rng = random.Random(0)
    seeds = [wire.encode(v) for v in VALUES]
    for _ in range(3000):
        data = bytearray(rng.choice(seeds))
        for _ in range(rng.randint(1, 4)):
            if data:
                data[rng.randrange(len(data))] = rng.randrange(256)
        try:
            wire.decode(bytes(data))
        except wire.WireError:
            pass
