"""Standard-library and numpy values across the job boundary: described as plain data, rebuilt with the
receiving interpreter's own classes.

A ``Fraction``, ``Counter``, ``datetime``, ``range``, dict view or numpy scalar/array is data: the side that
holds one describes it (`describe`: an `Ext` whose payload is builtin values, or values described in turn)
and the other side rebuilds it (`rebuild`) with its own ``fractions.Fraction``, ``collections.Counter``,
numpy... So a value compares, hashes and prints in the worker exactly as in the job, by the worker's code:
a job that describes something else only chooses another value, as returning it would have. Only exact
types are described (a subclass is the program's own class: see `agentgrpo.sandbox.harness`).

>>> import fractions
>>> d = describe(fractions.Fraction(1, 3))
>>> d.kind, d.payload
('Fraction', (1, 3))
>>> rebuild(d) == fractions.Fraction(1, 3)
True
"""

from __future__ import annotations

import sys

from agentgrpo.sandbox.wire import Ext

# (module, attribute) -> the kind's name; looked up only in modules already imported
_KNOWN = {
    ("collections", "Counter"): "Counter",
    ("collections", "OrderedDict"): "OrderedDict",
    ("collections", "defaultdict"): "defaultdict",
    ("collections", "deque"): "deque",
    ("fractions", "Fraction"): "Fraction",
    ("decimal", "Decimal"): "Decimal",
    ("datetime", "date"): "date",
    ("datetime", "datetime"): "datetime",
    ("datetime", "time"): "time",
    ("datetime", "timedelta"): "timedelta",
}
_BUILTIN_KINDS = {range: "range", bytearray: "bytearray", type({}.keys()): "dict_keys",
                  type({}.values()): "dict_values", type({}.items()): "dict_items"}
_types: dict = {}
_seen_modules = -1
# builtin classes that cross by name (``defaultdict(list)``'s factory, ``assert f() is int``): rebuilt as the
# receiving interpreter's own class
_BUILTIN_TYPES = {cls: cls.__name__ for cls in (int, float, complex, str, bytes, bool, list, dict, set, frozenset,
                                                tuple, bytearray, object, type(None))}
_BUILTIN_TYPE_NAMES = {name: cls for cls, name in _BUILTIN_TYPES.items()}


def kind_of(cls) -> str | None:
    """The kind name of a standard-library value class, or None."""
    global _seen_modules
    if len(sys.modules) != _seen_modules:  # the program may import more as it runs
        _seen_modules = len(sys.modules)
        for (module, name), kind in _KNOWN.items():
            found = getattr(sys.modules.get(module), name, None)
            if isinstance(found, type) and found not in _types:  # no write otherwise: a job's pages stay shared
                _types[found] = kind
    return _BUILTIN_KINDS.get(cls) or _types.get(cls)


def describe(obj) -> Ext | None:
    """``obj`` as an `Ext` if it is (exactly) a standard-library value or a numpy value; else None."""
    cls = type(obj)
    if isinstance(obj, type):
        if cls.__hash__ is not type.__hash__:  # a metaclass of the program's: never called here
            return None
        name = _BUILTIN_TYPES.get(obj)
        if name is None:
            kind = kind_of(obj)  # a standard-library value class itself (``defaultdict(Counter)``)
            return Ext("type", kind) if kind is not None else None
        return Ext("type", name)
    kind = kind_of(cls)
    if kind is None:
        numpy = sys.modules.get("numpy")
        if numpy is not None and cls.__module__ == "numpy":
            return _describe_numpy(obj, numpy)
        return None
    if kind in ("Counter", "OrderedDict"):
        return Ext(kind, dict.copy(obj))
    if kind == "defaultdict":
        return Ext(kind, (obj.default_factory, dict.copy(obj)))
    if kind == "deque":
        return Ext(kind, (list(obj), obj.maxlen))
    if kind == "Fraction":
        return Ext(kind, (obj.numerator, obj.denominator))
    if kind == "Decimal":
        return Ext(kind, str(obj))
    if kind == "date":
        return Ext(kind, obj.toordinal())
    if kind in ("datetime", "time"):
        offset = obj.utcoffset() if kind == "datetime" else None
        if obj.tzinfo is not None and offset is None:
            return None  # a time zone that is not a fixed offset: a handle
        fields = (obj.hour, obj.minute, obj.second, obj.microsecond, obj.fold)
        if kind == "datetime":
            fields = (obj.year, obj.month, obj.day, *fields, None if offset is None else offset.total_seconds())
        return Ext(kind, fields)
    if kind == "timedelta":
        return Ext(kind, (obj.days, obj.seconds, obj.microseconds))
    if kind == "range":
        return Ext(kind, (obj.start, obj.stop, obj.step))
    if kind == "bytearray":
        return Ext(kind, bytes(obj))
    return Ext(kind, list(obj))  # dict views


def _describe_numpy(obj, numpy) -> Ext | None:
    if isinstance(obj, numpy.generic) and not obj.dtype.hasobject:
        return Ext("numpy", (obj.dtype.str, obj.tobytes()))
    if type(obj) is numpy.ndarray:
        if obj.dtype.hasobject:
            return Ext("ndarray_object", (list(obj.shape), obj.ravel().tolist()))
        return Ext("ndarray", (obj.dtype.str, list(obj.shape), obj.tobytes()))
    return None


def std_class(kind):
    """This interpreter's class for a kind name (a standard-library value class), or a TypeError."""
    import importlib

    for (module, name), known in _KNOWN.items():
        if known == kind:
            return getattr(importlib.import_module(module), name)
    for cls, known in _BUILTIN_KINDS.items():
        if known == kind:
            return cls
    raise TypeError(f"unknown class {str(kind)[:40]!r}")


KINDS = frozenset(set(_KNOWN.values()) | set(_BUILTIN_KINDS.values())
                  | {"numpy", "ndarray", "ndarray_object", "type"})


def rebuild(ext: Ext, convert=lambda value: value):
    """The value ``ext`` describes, built with this interpreter's classes; ``convert`` turns the payload's
    parts into local objects first (handles, nested descriptions). ValueError/TypeError if malformed."""
    kind, payload = ext.kind, ext.payload
    if kind not in KINDS:
        raise ValueError(f"unknown kind of value {kind[:40]!r}")
    if kind.startswith(("numpy", "ndarray")):
        return _rebuild_numpy(kind, payload, convert)
    if kind == "type":
        _need(type(payload) is str, kind)
        found = _BUILTIN_TYPE_NAMES.get(payload)
        return found if found is not None else std_class(payload)
    payload = convert(payload)
    if kind in ("Counter", "OrderedDict", "defaultdict", "deque"):
        return _rebuild_collection(kind, payload)
    if kind == "Fraction":
        import fractions

        num, den = payload
        _need(type(num) is int and type(den) is int and den > 0, kind)
        return fractions.Fraction(num, den)
    if kind == "Decimal":
        import decimal

        _need(type(payload) is str and len(payload) < 10_000, kind)
        return decimal.Decimal(payload)
    if kind in ("date", "datetime", "time", "timedelta"):
        return _rebuild_datetime(kind, payload)
    if kind == "range":
        _need(type(payload) is tuple and len(payload) == 3 and all(type(v) is int for v in payload), kind)
        return range(*payload)
    if kind == "bytearray":
        _need(type(payload) is bytes, kind)
        return bytearray(payload)
    _need(type(payload) is list, kind)
    if kind == "dict_keys":
        return dict.fromkeys(payload).keys()
    if kind == "dict_values":
        return dict(enumerate(payload)).values()
    _need(all(type(p) is tuple and len(p) == 2 for p in payload), kind)
    return dict(payload).items()


def _rebuild_collection(kind: str, payload):
    """`rebuild` of a `collections` value (Counter, OrderedDict, defaultdict, deque) from its converted payload."""
    import collections

    if kind == "defaultdict":
        factory, items = payload
        _need(callable(factory) or factory is None, kind)
        return collections.defaultdict(factory, _mapping(items, kind))
    if kind == "deque":
        items, maxlen = payload
        _need(type(items) is list and (maxlen is None or type(maxlen) is int), kind)
        return collections.deque(items, maxlen)
    return getattr(collections, kind)(_mapping(payload, kind))


def _rebuild_datetime(kind: str, payload):
    """`rebuild` of a `datetime` value (date, datetime, time, timedelta) from its converted payload."""
    import datetime

    if kind == "date":
        _need(type(payload) is int, kind)
        return datetime.date.fromordinal(payload)
    _need(type(payload) is tuple and all(type(v) in (int, float, type(None)) for v in payload), kind)
    if kind == "timedelta":
        return datetime.timedelta(*payload)
    if kind == "time":
        *fields, fold = payload
        return datetime.time(*fields, fold=fold)
    *fields, fold, offset = payload
    tz = None if offset is None else datetime.timezone(datetime.timedelta(seconds=offset))
    return datetime.datetime(*fields, tzinfo=tz, fold=fold)


def _mapping(items, kind: str) -> dict:
    _need(type(items) is dict, kind)
    return items


def _need(ok: bool, kind: str) -> None:
    if not ok:
        raise ValueError(f"malformed {kind}")


def _rebuild_numpy(kind: str, payload, convert):
    import numpy

    _need(type(payload) is tuple and len(payload) == (3 if kind == "ndarray" else 2), kind)
    if kind == "ndarray_object":
        shape, items = payload
        _need(type(shape) is list and all(type(n) is int and n >= 0 for n in shape) and type(items) is list, kind)
        array = numpy.empty(len(items), dtype=object)
        array[:] = convert(items)
        return array.reshape(shape)
    dtype = numpy.dtype(payload[0]) if type(payload[0]) is str and len(payload[0]) < 64 else None
    _need(dtype is not None and not dtype.hasobject and dtype.itemsize > 0, kind)
    if kind == "numpy":
        _need(len(payload) == 2 and type(payload[1]) is bytes and len(payload[1]) == dtype.itemsize, kind)
        return numpy.frombuffer(payload[1], dtype=dtype)[0]
    _, shape, raw = payload
    _need(type(shape) is list and all(type(n) is int and n >= 0 for n in shape) and type(raw) is bytes, kind)
    return numpy.frombuffer(raw, dtype=dtype).reshape(shape).copy()
