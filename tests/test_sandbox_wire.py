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
    ],
)
def test_caps_hold_on_both_ends(make, needle):
    with pytest.raises(wire.WireError, match=needle):
        wire.encode(make())


def test_ints_of_any_size_cross_within_the_byte_cap():
    for value in (10**5000, -(10**20000) + 7, 2**63, -(2**63) - 1, [2**64] * 10, [-1, 0, 2**63 - 1] * 5):
        assert wire.decode(wire.encode(value)) == value


def test_hash_colliding_keys_are_refused_before_any_set_is_built():
    m = 2**61 - 1  # ints differing by multiples of it share a hash
    for value in ({m * i for i in range(1, 100)}, {m * i: 0 for i in range(1, 100)}, [m * i for i in range(100)],
                  [(m * i, 1) for i in range(100)]):
        with pytest.raises(wire.WireError, match="one hash"):
            wire.decode(wire.encode(value))
    equal_many = [0] * 1000 + [m * i for i in range(wire.MAX_COLLISIONS)]  # repeats are not collisions
    assert wire.decode(wire.encode(equal_many)) == equal_many


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
    b"i\x00\x00\x00\x00",  # an int of no bytes
    b"f\x00\x00\x00\x03xyz",  # not a float
    b"S\x00\x00\x00\x01l\x00\x00\x00\x00",  # an unhashable set member
    b"NN",  # trailing data
    b"?",  # unknown tag
    b"l\x00\x00\x00\x01" * (wire.MAX_DEPTH + 5) + b"N",  # too deep
    b"D\x00\x00\x00\x02" + b"\x00" * 15,  # a packed list cut short
    b"W\x00\x00\x00\x01\x00\x00\x00\x05s\x00\x00\x00\x02ab",  # packed strings of the wrong lengths
    b"X\x00\x00\x00\x01kN" + b"N",  # trailing data after a description
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
