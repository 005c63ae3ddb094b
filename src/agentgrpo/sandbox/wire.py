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
    size = [0]

    def put(chunk: bytes) -> None:
        size[0] += len(chunk)
        if size[0] > max_bytes:
            raise WireError(f"value larger than {max_bytes} bytes")
        out.append(chunk)

    def walk(x, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise WireError(f"value nested deeper than {MAX_DEPTH} levels")
        t = type(x)
        if t is type(None):
            put(b"N")
        elif t is bool:
            put(b"T" if x else b"F")
        elif t is int:
            text = _int_text(x)
            put(b"i" + _len(len(text)) + text)
        elif t is float:
            put(b"f" + _blob(float.hex(x).encode()))
        elif t is complex:
            put(b"c" + _blob(float.hex(x.real).encode()) + _blob(float.hex(x.imag).encode()))
        elif t is str:
            put(b"s" + _blob(x.encode("utf-8", "surrogatepass")))
        elif t is bytes:
            put(b"b" + _blob(x))
        elif t is dict:
            put(b"d" + _len(len(x)))
            for k, v in list(x.items()):
                walk(k, depth + 1)
                walk(v, depth + 1)
        elif t in _CONTAINERS:
            items = list(x)
            put(_CONTAINERS[t] + _len(len(items)))
            for item in items:
                walk(item, depth + 1)
        elif t is Handle:
            put(b"H" + _blob(str(x.id).encode()) + _blob(x.type_name.encode("utf-8", "replace")[:200]))
        elif handle is not None:
            walk(handle(x), depth)
        else:
            raise WireError(f"a {_type_name(x)} is not a builtin value")

    walk(value, 0)
    return b"".join(out)


def decode(data: bytes, max_bytes: int = MAX_BYTES):
    """The value in ``data`` (see the module doc); WireError for anything malformed or over a cap."""
    if len(data) > max_bytes:
        raise WireError(f"message larger than {max_bytes} bytes")
    reader = _Reader(bytes(data))
    try:
        value = reader.value(0)
    except RecursionError:
        raise WireError("value nested too deeply") from None
    except (TypeError, UnicodeDecodeError, OverflowError) as exc:  # unhashable key, bad UTF-8, ...
        raise WireError(f"malformed value: {type(exc).__name__}: {exc}") from None
    if reader.pos != len(reader.data):
        raise WireError("trailing data after the value")
    return value


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.pos, self.items = data, 0, 0

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise WireError("truncated data")
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def length(self) -> int:
        return int.from_bytes(self.take(4), "big")

    def blob(self) -> bytes:
        return self.take(self.length())

    def count(self) -> int:
        n = self.length()
        self.items += n
        if self.items > MAX_ITEMS:
            raise WireError(f"more than {MAX_ITEMS} items")
        return n

    def value(self, depth: int):
        if depth > MAX_DEPTH:
            raise WireError(f"value nested deeper than {MAX_DEPTH} levels")
        tag = self.take(1)
        if tag == b"N":
            return None
        if tag in (b"T", b"F"):
            return tag == b"T"
        if tag == b"i":
            return _parse_int(self.blob())
        if tag == b"f":
            return _parse_float(self.blob())
        if tag == b"c":
            return complex(_parse_float(self.blob()), _parse_float(self.blob()))
        if tag == b"s":
            return self.blob().decode("utf-8", "surrogatepass")
        if tag == b"b":
            return self.blob()
        if tag == b"d":
            n = self.count()
            out = {}
            for _ in range(n):
                key = self.value(depth + 1)
                out[key] = self.value(depth + 1)
            return out
        if tag in (b"l", b"t", b"S", b"Z"):
            items = [self.value(depth + 1) for _ in range(self.count())]
            return {b"l": list, b"t": tuple, b"S": set, b"Z": frozenset}[tag](items)
        if tag == b"H":
            ident = _parse_int(self.blob())
            return Handle(ident, self.blob().decode("utf-8", "replace"))
        raise WireError(f"unknown tag {tag!r}")


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
