"""Values across the job boundary: exact builtin types only, in a small tagged format with a strict decoder.

The job (untrusted) encodes what the program's functions return; the worker (trusted) decodes it with
`decode`, which accepts only well-formed data within size, count and depth caps and builds nothing but
``None``, ``bool``, ``int``, ``float``, ``complex``, ``str``, ``bytes``, ``list``, ``tuple``, ``dict``,
``set``, ``frozenset``, `Handle` references (to an object that stays in the job) and `Ext` descriptions
(a kind and plain data: a ``Fraction``, an instance of the program's class, ...; what they mean is decided
on the trusted side, `agentgrpo.sandbox.trusted`). It never calls code of the program: no ``__eq__``,
``__hash__`` or ``__reduce__`` of a foreign type runs. Encoding refuses subclasses (``type(x) is int``):
the job describes those through its ``handle`` hook.

Decoding is bounded in time as well as size: besides the caps, a set or dict whose keys are crafted to
share one hash (ints that differ by multiples of 2**61 - 1 do) would take quadratic time to build, here
or in a test's own ``set()``; more than `MAX_COLLISIONS` distinct keys, numbers or tuples with one hash in
one message are refused.

>>> data = encode([1, "two", (3.5, None), {b"k": {True, False}}])
>>> decode(data)
[1, 'two', (3.5, None), {b'k': {False, True}}]
>>> decode(b"l\\x00\\x00\\x00\\x05i")
Traceback (most recent call last):
...
agentgrpo.sandbox.wire.WireError: truncated data
"""

from __future__ import annotations

import array
import itertools
import struct
import sys
from collections import Counter

MAX_BYTES = 1 << 20  # one message
MAX_ITEMS = 30_000  # containers' elements in one message, all levels together (a packed list's count as 1/8)
MAX_DEPTH = 200
MAX_COLLISIONS = 32  # distinct hashable values of one message that may share a hash
MAX_HASH_WORK = 600_000  # elements visited hashing the message's tuples, sets and keys (see _hash_work)
MAX_NAME = 200  # characters of a handle's type name or an Ext's kind


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


class Ext:
    """A described object: ``kind`` (short text) and ``payload`` (a decoded value). Only data."""

    __slots__ = ("kind", "payload")

    def __init__(self, kind: str, payload):
        self.kind, self.payload = kind, payload

    def __repr__(self) -> str:
        return f"Ext({self.kind!r}, {self.payload!r})"


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
        chunk = b"i" + _blob(x.to_bytes(x.bit_length() // 8 + 1, "big", signed=True))
    elif (t is float or t is complex) and x != x and getattr(handle, "nan_identity", False):
        return _put_value(handle(x), depth, out, handle, room)  # a NaN: described with its identity
    elif t is float:
        chunk = b"f" + _pack_f64(x)
    elif t is complex:
        chunk = b"c" + _pack_f64(x.real) + _pack_f64(x.imag)
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
    elif t is list and len(x) >= _PACK_MIN and (packed := _packed(x)) is not None:
        chunk = packed
    elif t in _CONTAINERS:
        items = list(x)
        room = _room(room, out, _CONTAINERS[t] + _len(len(items)))
        for item in items:
            room = _put_value(item, depth + 1, out, handle, room)
        return room
    elif t is Handle:
        chunk = b"H" + _blob(str(x.id).encode()) + _blob(x.type_name[:MAX_NAME].encode("utf-8", "replace"))
    elif t is Ext:
        room = _room(room, out, b"X" + _blob(x.kind[:MAX_NAME].encode("utf-8", "replace")))
        return _put_value(x.payload, depth + 1, out, handle, room)
    elif handle is not None:
        return _put_value(handle(x), depth, out, handle, room)
    else:
        raise WireError(f"a {_type_name(x)} is not a builtin value")
    return _room(room, out, chunk)


_PACK_MIN = 8
_pack_f64 = struct.Struct(">d").pack


def _packed(x: list) -> bytes | None:
    """A list of only ints in int64, only floats, or only strs, packed (decoded without a call per item)."""
    kinds = set(map(type, x))
    if len(kinds) != 1:
        return None
    kind = kinds.pop()
    if kind is int and -(1 << 63) <= min(x) and max(x) < (1 << 63):
        packed = array.array("q", x)
    elif kind is float:
        total = sum(x)
        if total != total:  # a NaN (or infinities of both signs): element by element, NaNs by identity
            return None
        packed = array.array("d", x)
    elif kind is str:
        lengths = array.array("I", map(len, x))
        if _NATIVE_LITTLE:
            lengths.byteswap()
        text = "".join(x).encode("utf-8", "surrogatepass")
        return b"W" + _len(len(x)) + lengths.tobytes() + b"s" + _blob(text)
    else:
        return None
    if _NATIVE_LITTLE:
        packed.byteswap()
    return (b"I" if kind is int else b"D") + _len(len(x)) + packed.tobytes()


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
    hashed: list = []  # numbers and tuples anywhere in the message: what a test could put in a set
    try:
        value, end = _value(data, 0, 0, [0, 0], hashed)
        if end != len(data):
            raise WireError("trailing data after the value")
        _guard(hashed, "numbers or tuples")
    except RecursionError:
        raise WireError("value nested too deeply") from None
    except IndexError:
        raise WireError("truncated data") from None
    except (TypeError, UnicodeDecodeError, OverflowError, ValueError, struct.error) as exc:  # bad UTF-8, ...
        if isinstance(exc, WireError):
            raise
        raise WireError(f"malformed value: {type(exc).__name__}: {str(exc)[:200]}") from None
    return value


def _guard(keys: list, what: str) -> None:
    """Refuse more than `MAX_COLLISIONS` distinct ``keys`` with one hash (before they are put in a set)."""
    if len(keys) <= MAX_COLLISIONS:
        return
    try:
        hashes = list(map(hash, keys))
    except TypeError:  # a description's tuple holding a dict: only what can be hashed can collide
        keys = [k for k in keys if _hashable(k)]
        hashes = list(map(hash, keys))
    for h, n in Counter(hashes).items():
        if n <= MAX_COLLISIONS:
            continue
        seen: set = set()  # at most MAX_COLLISIONS + 1 distinct members: each lookup stays cheap
        for key, key_hash in zip(keys, hashes):
            if key_hash == h and key not in seen:
                seen.add(key)
                if len(seen) > MAX_COLLISIONS:
                    raise WireError(
                        f"more than {MAX_COLLISIONS} distinct {what} with one hash (built to make sets and "
                        "dicts take quadratic time)"
                    )


def _hash_work(items: list, before: float) -> None:
    """Count the elements a hash of this container goes through (hashes of tuples are not cached: a chain
    of nested tuples costs depth x size); refuse a message past `MAX_HASH_WORK`."""
    items[1] += items[0] - before
    if items[1] > MAX_HASH_WORK:
        raise WireError(f"tuples, sets or keys nested too heavily to hash (more than {MAX_HASH_WORK} element visits)")


def _hashable(key) -> bool:
    try:
        hash(key)
    except TypeError:
        return False
    return True


_U32 = struct.Struct(">I").unpack_from
_F64 = struct.Struct(">d").unpack_from
_N, _T, _F, _I, _FL, _S, _B, _C, _H, _X = (ord(c) for c in "NTFifsbcHX")
_L, _TU, _SE, _FZ, _D = (ord(c) for c in "ltSZd")
_PI, _PD, _PW = (ord(c) for c in "IDW")  # packed lists: int64, float64, str
_NATIVE_LITTLE = sys.byteorder == "little"


def _value(data: bytes, pos: int, depth: int, items: list, hashed: list):
    """The value encoded at ``pos`` and the position after it; ``items``: [containers' elements so far];
    ``hashed``: numbers and tuples decoded so far (see `_guard`). IndexError/struct.error: truncated.

    Long because: it is the decoding loop every value of every message goes through (hostile programs' replies
    included), one branch per tag. Kept whole, a nesting level costs one Python frame (`MAX_DEPTH` levels stay
    far below the recursion limit, so a deep message is refused by `WireError`, never a RecursionError) and a
    scalar no call beyond this one; helpers per tag would add a frame per level and a call per container.
    """
    if depth > MAX_DEPTH:
        raise WireError(f"value nested deeper than {MAX_DEPTH} levels")
    tag = data[pos]
    pos += 1
    if tag == _N:
        return None, pos
    if tag == _T or tag == _F:
        return tag == _T, pos
    if tag == _S or tag == _B or tag == _I:
        (n,) = _U32(data, pos)
        end = pos + 4 + n
        if end > len(data):
            raise WireError("truncated data")
        raw = data[pos + 4 : end]
        if tag == _S:
            return raw.decode("utf-8", "surrogatepass"), end
        if tag == _B:
            return raw, end
        if not raw:
            raise WireError("malformed int")
        value = int.from_bytes(raw, "big", signed=True)
        hashed.append(value)
        return value, end
    if tag == _FL:
        (value,) = _F64(data, pos)
        hashed.append(value)
        return value, pos + 8
    if tag == _L or tag == _TU or tag == _SE or tag == _FZ or tag == _D:
        (n,) = _U32(data, pos)
        pos += 4
        before = items[0]
        items[0] += n
        if items[0] > MAX_ITEMS:
            raise WireError(f"more than {MAX_ITEMS} items")
        if n > len(data) - pos:  # every element takes a byte at least
            raise WireError("truncated data")
        depth += 1
        if tag == _D:
            keys, values = [], []
            for _ in range(n):
                key, pos = _value(data, pos, depth, items, hashed)
                value, pos = _value(data, pos, depth, items, hashed)
                keys.append(key)
                values.append(value)
            _hash_work(items, before)
            _guard(keys, "dict keys")
            return dict(zip(keys, values)), pos
        values = []
        append = values.append
        for _ in range(n):
            value, pos = _value(data, pos, depth, items, hashed)
            append(value)
        if tag == _L:
            return values, pos
        _hash_work(items, before)  # a tuple is hashed for the guard; a set's members are
        if tag == _TU:
            values = tuple(values)
            hashed.append(values)
            return values, pos
        _guard(values, "set members")
        return (set(values) if tag == _SE else frozenset(values)), pos
    if tag == _PI or tag == _PD or tag == _PW:
        (n,) = _U32(data, pos)
        items[0] += n / 8
        if items[0] > MAX_ITEMS:
            raise WireError(f"more than {MAX_ITEMS} items")
    if tag == _PI or tag == _PD:
        end = pos + 4 + 8 * n
        if end > len(data):
            raise WireError("truncated data")
        packed = array.array("q" if tag == _PI else "d")
        packed.frombytes(data[pos + 4 : end])
        if _NATIVE_LITTLE:
            packed.byteswap()
        return packed.tolist(), end
    if tag == _PW:
        (n,) = _U32(data, pos)
        end = pos + 4 + 4 * n
        if end > len(data):
            raise WireError("truncated data")
        lengths = array.array("I")
        lengths.frombytes(data[pos + 4 : end])
        if _NATIVE_LITTLE:
            lengths.byteswap()
        text, end = _value(data, end, depth + 1, items, hashed)
        if type(text) is not str:
            raise WireError("malformed packed strings")
        ends = list(itertools.accumulate(lengths))
        if ends and ends[-1] != len(text):
            raise WireError("malformed packed strings")
        return [text[a:b] for a, b in zip([0, *ends], ends)], end
    if tag == _C:
        real, imag = _F64(data, pos)[0], _F64(data, pos + 8)[0]
        value = complex(real, imag)
        hashed.append(value)
        return value, pos + 16
    if tag == _H:
        ident, pos = _blob_at(data, pos)
        name, pos = _blob_at(data, pos)
        return Handle(_parse_int(ident), name[: 4 * MAX_NAME].decode("utf-8", "replace")[:MAX_NAME]), pos
    if tag == _X:
        kind, pos = _blob_at(data, pos)
        if len(kind) > MAX_NAME:
            raise WireError("malformed description")
        payload, pos = _value(data, pos, depth + 1, items, hashed)
        return Ext(kind.decode("utf-8", "replace"), payload), pos
    raise WireError(f"unknown tag {bytes([tag])!r}")


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


def _parse_int(raw: bytes) -> int:
    """A handle's id (decimal, at most 20 digits)."""
    digits = raw[1:] if raw[:1] == b"-" else raw
    if not digits or len(digits) > 20 or not digits.isdigit():
        raise WireError("malformed int")
    return int(raw)


def _type_name(x) -> str:
    try:
        return type(x).__qualname__[:100]
    except BaseException:
        return "object"
