"""The program's classes and objects as the worker sees them: mirrors with the worker's own semantics.

The job describes an object of one of the program's classes (`agentgrpo.sandbox.harness._Describer`) by
its class, the builtin value or exception it is built on and its class's *traits*; here that becomes a
real object of a real class (`Mirrors.klass`, `Mirrors.instance`), built once per job id (so ``is``,
``isinstance``, ``except MyError``, dict keys and sets behave as in the program):

* its ``==``, hash, ordering and truth are those of the builtin it is built on (an ``IntEnum`` member is
  an ``int``, a namedtuple a ``tuple``, a plain object compares by identity), or, for a dataclass, its
  compared fields (a snapshot sent with the object when it crosses, refreshed after each call that changed
  them; never read from the job when compared), with the same class required;
* where the program's class defines them in Python code, ``==``, ``in``, ordering, truth and arithmetic
  raise a TypeError naming the method: they would let the program decide the comparison, or show it the
  value compared against (``abs(x - expected) < eps``);
* attribute reads, method calls, ``len``, indexing and iteration are forwarded to the job, and what comes
  back is again a value or a mirror; calling a mirrored class makes the instance in the job.

The job may describe anything it likes; a description is only a value it chose to return, and its meaning
(how it compares) is decided here.
"""

from __future__ import annotations

import builtins
import struct

from agentgrpo.sandbox import values, wire

_VALUE_BASES = {t.__name__: t for t in (int, float, complex, str, bytes, tuple, list, dict, set, frozenset)}
_IMMUTABLE = (int, float, complex, str, bytes, tuple, frozenset)
_ORDER = ("__lt__", "__le__", "__gt__", "__ge__")
# what a class's traits may name (anything else the job sends there is ignored)
_REFUSABLE = frozenset(("__contains__", "__add__", "__sub__", "__mul__", "__truediv__", "__floordiv__", "__mod__",
                        "__pow__", "__neg__", "__pos__", "__abs__", "__radd__", "__rsub__", "__rmul__", "__rtruediv__",
                        "__matmul__", "__and__", "__or__", "__xor__", "__invert__", "__round__", "__int__",
                        "__float__", "__index__"))
MAX_CLASSES = 1000  # mirrored classes per job: each costs a type() here
# attributes with dunder names that are read from the job like any other (a function's name and
# documentation, an object's attributes for ``vars()``); every other dunder is the worker's own
READABLE_DUNDERS = frozenset(("__dict__", "__name__", "__qualname__", "__doc__", "__module__", "__defaults__",
                              "__kwdefaults__", "__annotations__", "__wrapped__", "__slots__", "__match_args__",
                              "__dataclass_fields__"))


class Unavailable:
    """A value that could not be rebuilt here: every use but ``repr`` fails with the reason."""

    def __init__(self, reason: str):
        object.__setattr__(self, "_reason", reason)

    def __repr__(self) -> str:
        return f"<unavailable: {self._reason}>"

    def _refuse(self, *_args, **_kwargs):
        raise TypeError(f"the program's value cannot be used here: {self._reason}")

    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = __bool__ = __len__ = __iter__ = _refuse
    __contains__ = __getitem__ = __call__ = __getattr__ = _refuse
    __hash__ = None


class Mirrors:
    """One job's mirrored classes and objects, by the job's ids (see the module doc)."""

    def __init__(self, session):
        self.session = session
        self.classes: dict[int, object] = {}
        self.objects: dict[int, object] = {}
        self.ids: dict[int, int] = {}  # id() of a mirror here -> the job's id
        self.nans: dict[int, object] = {}  # the job's NaNs, one object per job id (identity decides equality)

    def nan(self, payload):
        """The job's NaN float (or complex with a NaN part) with this id: the same object each time."""
        ident, raw, is_complex = _fields(payload, 3, "nan")
        found = self.nans.get(ident)
        if found is None:
            if type(raw) is not bytes or len(raw) != 16 or type(is_complex) is not bool:
                raise ValueError("a malformed nan description")
            real, imag = struct.unpack(">dd", raw)
            found = complex(real, imag) if is_complex else real
            if found == found:
                raise ValueError("a nan description of a number")
            self.nans[ident] = found
        return found

    def update_fields(self, changed) -> None:
        """New snapshots of dataclass objects' fields the job sent after a call changed them."""
        if type(changed) is not dict:
            return
        for ident, fields in changed.items():
            obj = self.objects.get(ident)
            if type(fields) is tuple and obj is not None and getattr(type(obj), "_agentgrpo_mirror", False):
                object.__setattr__(obj, "_agentgrpo_fields", fields)

    def ref(self, obj) -> int | None:
        """The job's id of a mirrored object or class, or None."""
        ident = self.ids.get(id(obj))
        if ident is None or (self.objects.get(ident) is not obj and self.classes.get(ident) is not obj):
            return None
        return ident

    def klass(self, payload, localize):
        ident, name, kind, traits = _fields(payload, 4, "class")
        found = self.classes.get(ident)
        if found is not None:
            return found
        if kind == "builtin":
            found = getattr(builtins, name, None) if type(name) is str else None
            found = found if isinstance(found, type) else Unavailable(f"a class {str(name)[:40]!r}")
        elif kind == "stdlib":
            found = values.std_class(name)
        elif len(self.classes) >= MAX_CLASSES:
            found = Unavailable(f"more than {MAX_CLASSES} classes from one program")
        else:
            found = self._mirror_class(ident, str(name)[:100], traits, localize)
        self.classes[ident] = found
        self.ids[id(found)] = ident
        return found

    def _mirror_class(self, ident: int, name: str, traits, localize):
        if type(traits) is not dict:
            return Unavailable(f"the class {name!r} was described wrongly")
        base = _base(traits.get("base"))
        bases = []
        for described in traits.get("bases") or []:
            parent = localize(described) if type(described) is wire.Ext else None
            builtin_exception = (isinstance(parent, type) and issubclass(parent, BaseException)
                                 and getattr(builtins, parent.__name__, None) is parent)
            if isinstance(parent, type) and (getattr(parent, "_agentgrpo_mirror", False) or parent is base
                                             or builtin_exception):
                bases.append(parent)
        if not any(issubclass(b, base) for b in bases):
            bases.append(base)
        namespace = _namespace(self, ident, name, traits, base)
        for attempt in (bases, [base]):  # the program's bases, or just the builtin if they do not combine
            try:
                return _MirrorType(name, tuple(dict.fromkeys(attempt)), dict(namespace))
            except (TypeError, ValueError):
                continue
        return Unavailable(f"the class {name!r} cannot be mirrored")

    def instance(self, payload, localize):
        ident, described, value, args, text, fields = _fields(payload, 6, "object")
        found = self.objects.get(ident)
        if found is not None:
            if type(fields) is tuple and getattr(type(found), "_agentgrpo_mirror", False):
                object.__setattr__(found, "_agentgrpo_fields", localize(fields))  # as it is now, in the job
            return found
        cls = localize(described) if type(described) is wire.Ext else None
        if type(text) is not tuple or len(text) != 2 or not all(type(t) is str for t in text):
            text = ("", "")
        text = (text[0][:1000], text[1][:1000])
        try:
            found = self._build(cls, localize(value), localize(args), text)
            if type(fields) is tuple and getattr(type(found), "_agentgrpo_mirror", False):
                object.__setattr__(found, "_agentgrpo_fields", localize(fields))
        except (TypeError, ValueError, AttributeError) as exc:
            found = Unavailable(f"{text[0][:80] or 'an object'} ({type(exc).__name__}: {str(exc)[:100]})")
        self.objects[ident] = found
        self.ids[id(found)] = ident
        return found

    def _build(self, cls, value, args, text: tuple):
        if not isinstance(cls, type):
            raise TypeError("no class")
        mirror = getattr(cls, "_agentgrpo_mirror", False)
        base = _base(cls._agentgrpo_traits.get("base")) if mirror else cls
        if issubclass(base, BaseException):
            if type(args) is not tuple:
                raise TypeError("an exception without args")
            obj = _new_exception(cls, args)
        elif base in _IMMUTABLE:
            if type(value) is not base:
                raise TypeError(f"not a {base.__name__}")
            obj = base.__new__(cls, value)
        elif base in (list, dict, set):
            if type(value) is not base:
                raise TypeError(f"not a {base.__name__}")
            obj = base.__new__(cls)
            base.__init__(obj, value)
        elif base is object and mirror:
            obj = object.__new__(cls)
        else:
            raise TypeError(f"an object of {cls.__name__}")
        if mirror:
            object.__setattr__(obj, "_agentgrpo_text", text)
        return obj


def _new_exception(cls: type, args: tuple):
    """An instance of ``cls`` made by the builtin exception class whose memory layout it has (with several
    builtin bases, ``class E(ArithmeticError, OSError)``, only ``OSError.__new__`` may make it)."""
    for klass in cls.__mro__:
        if issubclass(klass, BaseException) and getattr(builtins, klass.__name__, None) is klass:
            try:
                obj = klass.__new__(cls, *args)
            except TypeError:
                continue
            obj.args = args
            return obj
    raise TypeError(f"no builtin exception class can make a {cls.__name__}")


def _fields(payload, n: int, what: str) -> tuple:
    if type(payload) is not tuple or len(payload) != n or type(payload[0]) is not int:
        raise ValueError(f"a malformed {what} description")
    return payload


def _base(name) -> type:
    found = _VALUE_BASES.get(name) if type(name) is str else None
    if found is None and type(name) is str:
        exc = getattr(builtins, name, None)
        found = exc if isinstance(exc, type) and issubclass(exc, BaseException) else None
    return found or object


class _MirrorType(type):
    """The metaclass of mirrored classes: calling one makes the object in the job; other class attributes
    (``Color.RED``, a static method) are read from the job."""

    def __call__(cls, *args, **kwargs):
        return cls._agentgrpo_mirrors.session.ask(("call", cls._agentgrpo_id, list(args), kwargs), cls.__name__)[1]

    def __getattr__(cls, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return cls._agentgrpo_mirrors.session.ask(("getattr", cls._agentgrpo_id, name))[1]

    def __repr__(cls) -> str:
        return f"<class '{cls.__name__}' (the program's, in the sandbox)>"


def _ask(obj, *request):
    mirrors = type(obj)._agentgrpo_mirrors
    ident = mirrors.ref(obj)
    if ident is None:
        raise TypeError(f"a {type(obj).__name__} made here, not by the program")
    return mirrors.session.ask((request[0], ident, *request[1:]))[1]


def _refusal(name: str, method: str):
    def refuse(self, *_args, **_kwargs):
        raise TypeError(
            f"{name}.{method} is the program's own Python code: it would decide the comparison (or see the "
            "value compared against), so the sandbox does not run it for a test"
        )

    return refuse


def _namespace(mirrors: Mirrors, ident: int, name: str, traits: dict, base: type) -> dict:
    ns = {
        "_agentgrpo_mirror": True, "_agentgrpo_id": ident, "_agentgrpo_mirrors": mirrors,
        "_agentgrpo_traits": traits, "__qualname__": str(traits.get("qualname") or name)[:200],
        "__module__": traits["module"] if type(traits.get("module")) is str else "sandbox",
        "__doc__": traits["doc"] if type(traits.get("doc")) is str else None,
        "__dict__": property(lambda self: _ask(self, "getattr", "__dict__")),  # vars(obj): the job's attributes
    }
    eq, hash_kind = traits.get("eq"), traits.get("hash")
    if eq == "base":
        ns["__eq__"], ns["__ne__"] = base.__eq__, base.__ne__
    elif eq == "dataclass":
        ns["__eq__"], ns["__ne__"] = _dataclass_eq, _dataclass_ne
    else:
        ns["__eq__"] = ns["__ne__"] = _refusal(name, "__eq__")
    if hash_kind == "none" or base in (list, dict, set):
        ns["__hash__"] = None
    elif hash_kind == "base":
        ns["__hash__"] = base.__hash__
    elif hash_kind == "dataclass":
        ns["__hash__"] = _dataclass_hash
    else:
        ns["__hash__"] = _refusal(name, "__hash__")
    order = traits.get("order")
    for method in _ORDER:
        if order == "base":
            ns[method] = getattr(base, method)
        elif order == "dataclass":
            ns[method] = _dataclass_order(method)
        else:
            ns[method] = _refusal(name, method)
    truth = traits.get("truth")
    if truth == "python":
        ns["__bool__"] = _refusal(name, "__bool__")
    elif truth == "len":
        ns["__bool__"] = lambda self: bool(_ask(self, "len"))
    refused = traits.get("refuse")
    for method in refused if type(refused) is list else ():
        if type(method) is str and method in _REFUSABLE:
            ns[method] = _refusal(name, method)
    forwarded = traits.get("forward")
    forwarded = {m for m in forwarded if type(m) is str} if type(forwarded) is list else set()
    if "__len__" in forwarded:
        ns["__len__"] = lambda self: _int(_ask(self, "len"))
    if "__getitem__" in forwarded:
        ns["__getitem__"] = lambda self, key: _ask(self, "getitem", key)
    if "__iter__" in forwarded:
        ns["__iter__"] = lambda self: _ask(self, "iter")
    if "__next__" in forwarded:
        ns["__next__"] = lambda self: _ask(self, "next")
    if "__call__" in forwarded:
        ns["__call__"] = lambda self, *args, **kwargs: _call(self, args, kwargs)
    ns["__getattr__"] = _getattr
    ns["__repr__"] = lambda self: _own(self, "_agentgrpo_text", ("",))[0] or f"<{name} object in the sandbox>"
    if traits.get("str") == "python":
        ns["__str__"] = lambda self: _own(self, "_agentgrpo_text", ("", ""))[1]
    return ns


def _int(value) -> int:
    if type(value) is not int:
        raise TypeError("__len__ of the program's object did not return an int")
    return value


def _call(self, args, kwargs):
    method = _getattr(self, "__call__")
    return method(*args, **kwargs)


def _getattr(self, name: str):
    if name.startswith("_agentgrpo") or (name.startswith("__") and name != "__call__" and name not in READABLE_DUNDERS):
        raise AttributeError(name)
    return _ask(self, "getattr", name)


def _own(obj, name: str, default):
    """An attribute the worker set on a mirror (never read from the job)."""
    try:
        return object.__getattribute__(obj, name)
    except AttributeError:
        return default


def _snapshot(obj) -> tuple:
    """A dataclass object's compared fields as they were when it last crossed (never read from the job now)."""
    fields = _own(obj, "_agentgrpo_fields", None)
    if type(fields) is not tuple:
        raise TypeError(f"the program's {type(obj).__name__} object came without its fields")
    return fields


def _dataclass_eq(self, other):
    if other.__class__ is not self.__class__:
        return NotImplemented
    return _snapshot(self) == _snapshot(other)


def _dataclass_ne(self, other):
    result = _dataclass_eq(self, other)
    return result if result is NotImplemented else not result


def _dataclass_hash(self):
    return hash(_snapshot(self))


def _dataclass_order(method: str):
    def compare(self, other):
        if other.__class__ is not self.__class__:
            return NotImplemented
        return getattr(_snapshot(self), method)(_snapshot(other))

    return compare
