"""Values across the job boundary: exact builtin types only, in a small tagged format with a strict decoder.

The job (untrusted) encodes what the program's functions return; the worker (trusted) decodes it with
`decode`, which accepts only well-formed data within size, count and depth caps and builds nothing but
``None``, ``bool``, ``int``, ``float``, ``complex``, ``str``, ``bytes``, ``list``, ``tuple``, ``dict``,
``set``, ``frozenset`` and `Handle` references (to an object that stays in the job). It never calls code
of the program: no ``__eq__``, ``__hash__`` or ``__reduce__`` of a foreign type runs. Encoding refuses
subclasses (``type(x) is int``), so an ``int`` subclass with a lying ``__eq__`` becomes a handle, which the
trusted side refuses to compare.

>>> data = encode([1, "two", (3.5, None), {b"k": {True, False}}])
>>> decode(data)
[1, 'two', (3.5, None), {b'k': {False, True}}]
>>> decode(b"l\\x00\\x00\\x00\\x05i")
Traceback (most recent call last):
...
agentgrpo.sandbox.wire.WireError: truncated data
"""

from __future__ import annotations

MAX_BYTES = 1 << 20  # one message
MAX_ITEMS = 100_000  # containers' elements in one message, all levels together
MAX_DEPTH = 64
MAX_INT_DIGITS = 4300  # decimal digits of one int (CPython's own default conversion limit)


class WireError(ValueError):
    """Data that is not a well-formed message within the caps."""


class Handle:
    """A reference to an object that stays in the job (a function, an instance, anything not a value)."""

    __slots__ = ("id", "type_name")

    def __init__(self, id: int, type_name: str):
        self.id, self.type_name = id, type_name

    def __repr__(self) -> str:
        return f"<{self.type_name} object in the sandbox>"


_SCALAR = {type(None): b"N", bool: b"B", int: b"i", float: b"f", complex: b"c", str: b"s", bytes: b"b"}
_CONTAINERS = {list: b"l", tuple: b"t", set: b"S", frozenset: b"Z", dict: b"d"}


def encode(value, handle=None, max_bytes: int = MAX_BYTES) -> bytes:
    """``value`` as bytes. Objects of other types go through ``handle(obj) -> Handle``, or raise WireError."""
    out: list[bytes] = []
    try:
        _put_value(value, 0, out, handle, max_bytes)
    except _Overflow:
        raise WireError(f"value larger than {max_bytes} bytes") from None
    return b"".join(out)


class _Overflow(Exception):
    """The value does not fit in the message (raised as soon as it is known, before encoding the rest)."""


def _put_value(x, depth: int, out: list, handle, room: int) -> int:
    """Append ``x``'s encoding to ``out``; what is left of the ``room`` (bytes) afterwards."""
    if depth > MAX_DEPTH:
        raise WireError(f"value nested deeper than {MAX_DEPTH} levels")
    t = type(x)
    if t is type(None):
        chunk = b"N"
    elif t is bool:
        chunk = b"T" if x else b"F"
    elif t is int:
        text = _int_text(x)
        chunk = b"i" + _len(len(text)) + text
    elif t is float:
        chunk = b"f" + _blob(float.hex(x).encode())
    elif t is complex:
        chunk = b"c" + _blob(float.hex(x.real).encode()) + _blob(float.hex(x.imag).encode())
    elif t is str:
        chunk = b"s" + _blob(x.encode("utf-8", "surrogatepass"))
    elif t is bytes:
        chunk = b"b" + _blob(x)
    elif t is dict:
        room = _room(room, out, b"d" + _len(len(x)))
        for k, v in list(x.items()):
            room = _put_value(k, depth + 1, out, handle, room)
            room = _put_value(v, depth + 1, out, handle, room)
        return room
    elif t in _CONTAINERS:
        items = list(x)
        room = _room(room, out, _CONTAINERS[t] + _len(len(items)))
        for item in items:
            room = _put_value(item, depth + 1, out, handle, room)
        return room
    elif t is Handle:
        chunk = b"H" + _blob(str(x.id).encode()) + _blob(x.type_name.encode("utf-8", "replace")[:200])
    elif handle is not None:
        return _put_value(handle(x), depth, out, handle, room)
    else:
        raise WireError(f"a {_type_name(x)} is not a builtin value")
    return _room(room, out, chunk)


def _room(room: int, out: list, chunk: bytes) -> int:
    room -= len(chunk)
    if room < 0:
        raise _Overflow
    out.append(chunk)
    return room


def decode(data: bytes, max_bytes: int = MAX_BYTES):
    """The value in ``data`` (see the module doc); WireError for anything malformed or over a cap."""
    if len(data) > max_bytes:
        raise WireError(f"message larger than {max_bytes} bytes")
    data = bytes(data)
    try:
        value, end = _value(data, 0, 0, [0])
    except RecursionError:
        raise WireError("value nested too deeply") from None
    except (TypeError, UnicodeDecodeError, OverflowError) as exc:  # unhashable key, bad UTF-8, ...
        raise WireError(f"malformed value: {type(exc).__name__}: {exc}") from None
    if end != len(data):
        raise WireError("trailing data after the value")
    return value


_BUILD = {b"l": list, b"t": tuple, b"S": set, b"Z": frozenset}


def _value(data: bytes, pos: int, depth: int, items: list):
    """The value encoded at ``pos`` and the position after it; ``items``: [containers' elements so far]."""
    if depth > MAX_DEPTH:
        raise WireError(f"value nested deeper than {MAX_DEPTH} levels")
    tag = data[pos : pos + 1]
    pos += 1
    if tag == b"N":
        return None, pos
    if tag == b"T" or tag == b"F":
        return tag == b"T", pos
    if tag == b"i":
        raw, pos = _blob_at(data, pos)
        return _parse_int(raw), pos
    if tag == b"f":
        raw, pos = _blob_at(data, pos)
        return _parse_float(raw), pos
    if tag == b"s":
        raw, pos = _blob_at(data, pos)
        return raw.decode("utf-8", "surrogatepass"), pos
    if tag == b"b":
        return _blob_at(data, pos)
    if tag in _BUILD or tag == b"d":
        n = _length_at(data, pos)
        pos += 4
        items[0] += n
        if items[0] > MAX_ITEMS:
            raise WireError(f"more than {MAX_ITEMS} items")
        if tag == b"d":
            out = {}
            for _ in range(n):
                key, pos = _value(data, pos, depth + 1, items)
                out[key], pos = _value(data, pos, depth + 1, items)
            return out, pos
        values = []
        for _ in range(n):
            value, pos = _value(data, pos, depth + 1, items)
            values.append(value)
        return (values if tag == b"l" else _BUILD[tag](values)), pos
    if tag == b"c":
        real, pos = _blob_at(data, pos)
        imag, pos = _blob_at(data, pos)
        return complex(_parse_float(real), _parse_float(imag)), pos
    if tag == b"H":
        ident, pos = _blob_at(data, pos)
        name, pos = _blob_at(data, pos)
        return Handle(_parse_int(ident), name.decode("utf-8", "replace")), pos
    if not tag:
        raise WireError("truncated data")
    raise WireError(f"unknown tag {tag!r}")


def _length_at(data: bytes, pos: int) -> int:
    if pos + 4 > len(data):
        raise WireError("truncated data")
    return int.from_bytes(data[pos : pos + 4], "big")


def _blob_at(data: bytes, pos: int) -> tuple[bytes, int]:
    """The length-prefixed bytes at ``pos`` and the position after them."""
    end = pos + 4 + _length_at(data, pos)
    if end > len(data):
        raise WireError("truncated data")
    return data[pos + 4 : end], end


def _len(n: int) -> bytes:
    return n.to_bytes(4, "big")


def _blob(data: bytes) -> bytes:
    return _len(len(data)) + data


def _int_text(x: int) -> bytes:
    try:
        text = str(x).encode()
    except ValueError:  # more digits than the interpreter converts
        raise WireError(f"int with more than {MAX_INT_DIGITS} digits") from None
    if len(text) > MAX_INT_DIGITS + 1:
        raise WireError(f"int with more than {MAX_INT_DIGITS} digits")
    return text


def _parse_int(raw: bytes) -> int:
    digits = raw[1:] if raw[:1] == b"-" else raw
    if not digits or len(digits) > MAX_INT_DIGITS or not digits.isdigit():
        raise WireError("malformed int")
    return int(raw)


def _parse_float(raw: bytes) -> float:
    try:
        return float.fromhex(raw.decode("ascii"))
    except (ValueError, UnicodeDecodeError):
        raise WireError("malformed float") from None


def _type_name(x) -> str:
    try:
        return type(x).__qualname__[:100]
    except BaseException:
        return "object"
