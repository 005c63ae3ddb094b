"""The history rows of a W&B run file read in bulk: one protobuf parse for the whole run, one JSON parse for
every logged value, columns filled by numpy; no Python object per logged item beyond its key and value.

The ``HistoryRecord`` bodies are joined and parsed with a schema of our own (``google.protobuf``, which wandb
needs) in which ``item`` is a single message: protobuf merges the repeated occurrences of a singular message
field, so the items' ``key``, ``nested_key`` and ``value_json`` come out as three lists over the whole run,
and ``step`` (declared repeated) as one entry per record. Row boundaries come from counting each body's
``value_json`` tags (checked against the parsed total; each body parsed alone where they differ). The rows
are those of `wandbrun._rows` (numbers kept, NaN/Infinity included; ``_runtime`` and ``_timestamp`` dropped;
``_step`` from the record's step where no item gives it), as a `ColumnBlock` whose ``rows()`` builds the same
dicts. None, and wandbrun decodes record by record, whenever an item does not have exactly one key (a key,
or a one-part nested key) and one value, a record has no step, a key repeats within a record, or the values
are not JSON.

Where the optional C extension ``_wirehistory`` is built (setup.py), it decodes the same bodies in one pass
first: keys numbered as first logged, numbers parsed as Python's ``float`` parses them, no Python object per
item; bodies of another shape, and builds without it, take the path above (tested equal).
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import numpy as np

from agentgrpo.doctor.table import ColumnBlock

try:
    import orjson
except ImportError:  # pragma: no cover - orjson is a dependency of the doctor's fast paths, not a must
    orjson = None


def _extension():
    """The C decoder when it is built from the source beside it (a build older than an edited source, as in
    a development checkout, is left unused); None without it: the same rows are then read in Python."""
    try:
        from agentgrpo.doctor.readers import _wirehistory
    except ImportError:
        return None
    source = Path(__file__).with_name("_wirehistory.c")
    if (
        source.exists()
        and getattr(_wirehistory, "SOURCE_SHA256", None) != hashlib.sha256(source.read_bytes()).hexdigest()
    ):
        return None
    return _wirehistory


_wirehistory = _extension()

_VALUE_TAG = b"\x82\x01"  # HistoryItem.value_json: field 16, wire type 2
_NUMBERS = frozenset({int, float})
_flat_class = None


def read(joined: bytes, offsets: np.ndarray, native: bool = True) -> ColumnBlock | None:
    """The rows of the history records whose ``HistoryRecord`` bodies are ``joined`` (body ``i`` from
    ``offsets[i]`` to ``offsets[i + 1]``), or None (see above); decoded by the C extension when it is built
    and the bodies are of its plain shape (``native=False``: never)."""
    if native and _wirehistory is not None:
        block = _decoded(joined, offsets)
        if block is not None:
            return block
    flat_class = _schema()
    if flat_class is None:
        return None
    try:
        flat = flat_class.FromString(joined)
    except Exception:  # protobuf's DecodeError (a body wandb's schema would read item by item)
        return None
    items, steps = flat.item, flat.step
    n, n_bodies = len(items.value_json), len(offsets) - 1
    if len(steps) != n_bodies:
        return None
    if len(items.key) == 0 and len(items.nested_key) == n:
        logged = items.nested_key
    elif len(items.nested_key) == 0 and len(items.key) == n:
        logged = items.key
    else:
        return None
    seen = _Index()  # every key, in the order first logged; each item's key as its number there
    key_of = np.fromiter(map(seen.__getitem__, logged), dtype=np.intp, count=n)
    numbers = [s.num for s in steps]
    counts = _tag_counts(joined, offsets)
    if sum(counts) != n:  # the tag's bytes elsewhere too: in a step's varint (130, 16640-16767, ...), ...
        for i in _tag_in_varint(numbers):
            counts[i] = len(flat_class.FromString(joined[offsets[i] : offsets[i + 1]]).item.value_json)
        if sum(counts) != n:  # ... or in a key: each body parsed alone
            bounds = offsets.tolist()
            counts = [len(flat_class.FromString(joined[a:b]).item.value_json) for a, b in zip(bounds, bounds[1:])]
    items.ClearField("key")
    items.ClearField("nested_key")
    values = _values(_value_text(items.SerializeToString(), n) or b"[" + b",".join(items.value_json) + b"]")
    if values is None:
        return None
    if set(map(type, values)) <= _NUMBERS:
        is_number = None
        cells_at = lambda where: np.array(values, dtype=float)[where]  # noqa: E731
    else:
        is_number = np.fromiter(map(_NUMBERS.__contains__, map(type, values)), dtype=bool, count=n)
        cells_at = lambda where: np.array([values[i] for i in where.tolist()], dtype=float)  # noqa: E731
    return _block(list(seen), key_of, lambda: values, counts, numbers, cells_at, is_number)


def _decoded(joined: bytes, offsets: np.ndarray) -> ColumnBlock | None:
    """`read` through the C extension (`_wirehistory.history`): the keys, each item's key number and value
    (integers of at most 15 digits, other numbers, NaN/Infinity as Python's float parser reads them), the
    few other values parsed here as JSON; None where it or a value's JSON does not read."""
    found = _wirehistory.history(joined, np.ascontiguousarray(offsets, dtype=np.int64))
    if found is None:
        return None
    names, key_of, cells, kinds, others, counts, steps = found
    key_of = np.frombuffer(key_of, dtype=np.int64).astype(np.intp, copy=False)
    cells, kinds = np.frombuffer(cells, dtype=float).copy(), np.frombuffer(kinds, dtype=np.uint8)
    other_at = np.flatnonzero(kinds == 2)
    try:
        parsed = [json.loads(text) for text in others]
        is_number = np.array([type(v) in _NUMBERS for v in parsed], dtype=bool)
        cells[other_at[is_number]] = [float(v) for v, keep in zip(parsed, is_number.tolist()) if keep]
    except (ValueError, OverflowError):  # not JSON (the whole read then gives up), or a number past float
        return None
    mask = None
    if not is_number.all():
        mask = np.ones(len(kinds), dtype=bool)
        mask[other_at[~is_number]] = False

    def values() -> list:
        out = cells.tolist()
        for i in np.flatnonzero(kinds == 0).tolist():
            out[i] = int(out[i])
        for i, value in zip(other_at.tolist(), parsed):
            out[i] = value
        return out

    steps = np.frombuffer(steps, dtype=np.int64).tolist()
    counts = np.frombuffer(counts, dtype=np.int64).tolist()
    return _block(names, key_of, values, counts, steps, cells.__getitem__, mask)


def _value_text(stream: bytes, n: int) -> bytearray | None:
    """The ``n`` values of a serialized message holding only ``value_json`` (each: tag 0x82 0x01, a length,
    the JSON text) as one JSON array, the tags and lengths overwritten by a comma and spaces; None when some
    value is 128 bytes or longer (then the values are joined one by one). A JSON text holds no byte 0x01,
    so the tags are the byte pairs 0x82 0x01, checked against each length.

    >>> _value_text(b"\\x82\\x01\\x031.5\\x82\\x01\\x03NaN", 2)
    bytearray(b'[  1.5,  NaN]')
    """
    buf = np.frombuffer(stream, dtype=np.uint8)
    tags = np.flatnonzero(buf[:-1] == 0x82)
    tags = tags[buf[tags + 1] == 0x01]
    if len(tags) != n or not n:
        return None
    lengths = buf[tags + 2].astype(np.int64)
    ends = np.append(tags[1:], len(buf))
    if (lengths >= 0x80).any() or not np.array_equal(tags + 3 + lengths, ends):
        return None
    text = bytearray(len(buf) + 1)
    out = np.frombuffer(text, dtype=np.uint8)
    out[:-1] = buf
    out[tags] = ord(",")
    out[tags + 1] = out[tags + 2] = ord(" ")
    out[0], out[-1] = ord("["), ord("]")
    return text


def _tag_counts(joined: bytes, offsets: np.ndarray) -> list[int]:
    """Per body, how many times the bytes of a ``value_json`` tag occur in it (each value's tag, and any
    other byte pair 0x82 0x01)."""
    bounds = offsets.tolist()
    count = joined.count
    return [count(_VALUE_TAG, a, b) for a, b in zip(bounds, bounds[1:])]


def _tag_in_varint(numbers: list[int]) -> list[int]:
    """The indexes of the numbers whose varint holds the bytes 0x82 0x01: a 7-bit group 2 followed by a last
    group 1 (numbers below 2**63).

    >>> _tag_in_varint([1, 130, 129, 16384 + 256 + 5, 2**14])
    [1, 3]
    """
    n = np.asarray(numbers, dtype=np.int64)
    hit = np.zeros(len(n), dtype=bool)
    for group in range(9):
        hit |= ((n >> (7 * (group + 1))) == 1) & (((n >> (7 * group)) & 0x7F) == 2)
    return np.flatnonzero(hit).tolist()


def _values(text: bytes | bytearray) -> list | None:
    """The logged values (``NaN`` and ``Infinity`` as floats), in one JSON parse; None when one is not JSON."""
    if orjson is not None and b"Infinity" not in text:
        nan = b"NaN" in text
        if not nan or b"null" not in text:  # NaN read as null, then null as NaN (no null was logged)
            try:
                values = orjson.loads(text.replace(b"NaN", b"null") if nan else text)
            except orjson.JSONDecodeError:
                values = None
            if values is not None:
                return [math.nan if v is None else v for v in values] if nan else values
    try:
        return json.loads(text)
    except ValueError:
        return None


class _Index(dict):
    """A key's number: the count of keys before it, numbered on first sight."""

    def __missing__(self, key: str) -> int:
        self[key] = number = len(self)
        return number


def _block(
    names: list[str], key_of: np.ndarray, values, counts: list[int], steps: list[int], cells_at, is_number
) -> ColumnBlock | None:
    """The rows as columns; ``names`` the keys in the order first logged, ``key_of`` each value's key,
    ``values()`` the values, ``cells_at(where)`` those at ``where`` as floats, ``is_number`` per value
    whether it is an int or float (None: all are)."""
    n_rows, n_items = len(counts), len(key_of)
    ends = np.cumsum(counts)
    wanted = np.array([k == "_step" or not k.startswith("_") for k in names], dtype=bool)  # not _runtime, ...
    numeric = is_number is None
    ok = wanted[key_of]
    if not numeric:
        ok &= is_number
    where = np.flatnonzero(ok)
    if numeric:  # every value of a wanted key is kept: the keys' first-logged order
        order = np.flatnonzero(wanted).tolist()
    else:  # by each key's first kept value
        first = np.full(len(names), n_items)
        np.minimum.at(first, key_of[where], where)
        order = [i for i in np.argsort(first, kind="stable").tolist() if first[i] < n_items]
    header = [names[i] for i in order]
    column = np.full(len(names), -1, dtype=np.intp)
    column[order] = np.arange(len(order))
    if "_step" not in header:
        header.append("_step")
    index = {k: i for i, k in enumerate(header)}
    width = len(header)
    col = column[key_of[where]]
    row = np.repeat(np.arange(n_rows), counts)[where]
    numbers = np.full((width, n_rows), math.nan)
    present = np.zeros((width, n_rows), dtype=bool)
    flat = col * n_rows + row  # one index into the (width x rows) arrays, cheaper than a pair
    numbers.reshape(-1)[flat] = cells_at(where)
    present.reshape(-1)[flat] = True
    if int(present.sum()) != len(where):
        return None  # a key twice in one record (the later value wins there): record by record
    step_row = index["_step"]
    missing = ~present[step_row]
    if missing.any():  # rows get `_step` from their record's step, appended after the first row's keys
        if missing[0] and (not missing.all() or not _only_first_row(header, names, key_of, ok, int(ends[0]))):
            return None  # that place is not where `_step` stands in the header: record by record
        numbers[step_row, missing] = np.asarray(steps, dtype=float)[missing]
        present[step_row, missing] = True
    nan_logged = np.isnan(numbers) & present
    logged_nan = {k: nan_logged[i] for i, k in enumerate(header) if nan_logged[i].any()}

    def rows() -> list[dict]:
        out, start, kept, keys, logged = [], 0, ok.tolist(), [names[i] for i in key_of.tolist()], values()
        for r, end in enumerate(ends.tolist()):
            row = {k: v for k, v, keep in zip(keys[start:end], logged[start:end], kept[start:end]) if keep}
            if "_step" not in row:
                row["_step"] = steps[r]
            out.append(row)
            start = end
        return out

    widest = int(present.sum(axis=0).max()) if n_rows else 0
    return ColumnBlock(header, None, numbers.T, logged_nan=logged_nan, rows=rows, widest=widest)


def _only_first_row(header: list[str], names: list[str], key_of: np.ndarray, kept: np.ndarray, end: int) -> bool:
    """True when every key of the header but ``_step`` is in the first record (the first ``end`` values),
    so the ``_step`` appended to its row comes after them, as in the row-by-row read."""
    first = {names[i] for i in key_of[:end][kept[:end]].tolist()}
    return all(k in first for k in header if k != "_step")


def _schema():
    """The message class that parses joined ``HistoryRecord`` bodies as one (see above); None without
    protobuf."""
    global _flat_class
    if _flat_class is None:
        try:
            from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
        except ImportError:
            return None
        field = descriptor_pb2.FieldDescriptorProto
        proto = descriptor_pb2.FileDescriptorProto(name="agentgrpo_wandb_history.proto", package="agh", syntax="proto3")
        layout = {
            "Step": [("num", 1, field.TYPE_INT64, field.LABEL_OPTIONAL, "")],
            "Items": [
                ("key", 1, field.TYPE_STRING, field.LABEL_REPEATED, ""),
                ("nested_key", 2, field.TYPE_STRING, field.LABEL_REPEATED, ""),
                ("value_json", 16, field.TYPE_BYTES, field.LABEL_REPEATED, ""),
            ],
            "Flat": [
                ("item", 1, field.TYPE_MESSAGE, field.LABEL_OPTIONAL, ".agh.Items"),
                ("step", 2, field.TYPE_MESSAGE, field.LABEL_REPEATED, ".agh.Step"),
            ],
        }
        for name, fields in layout.items():
            message = proto.message_type.add(name=name)
            for fname, number, ftype, label, type_name in fields:
                added = message.field.add(name=fname, number=number, type=ftype, label=label)
                if type_name:
                    added.type_name = type_name
        pool = descriptor_pool.DescriptorPool()
        pool.Add(proto)
        _flat_class = message_factory.GetMessageClass(pool.FindMessageTypeByName("agh.Flat"))
    return _flat_class
