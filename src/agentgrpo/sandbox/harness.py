"""Runs inside the job process: compile and run the program, then answer the trusted side's requests.

The job holds only its own program. In the trusted mode (the default) it never sees a test: the worker
asks it for the names the tests use, to call a function, read an attribute or step an iterator, and gets
back each result as a builtin value (`agentgrpo.sandbox.wire`), a description of a standard-library or
numpy value (`agentgrpo.sandbox.values`), a description of an object of the program's own classes (its
class, the builtin value or exception it is built on, and how its class compares: `_Describer`), or a
handle to an object that stays here. Whatever this process does, it can only choose those answers; the
assert is evaluated by the worker, with the worker's own semantics for every value.

The in-process mode (``run_tests``) is the fallback for tests that cannot be split: program and tests
share this interpreter and report per test. Its verdicts are **forgeable** (the program can patch what the
tests use) and are reported as such.

Messages are length-prefixed frames on fd 3 (requests) and fd 4 (replies): wire-encoded tuples, except
the first request (the program), which comes from the trusted side with the job's spec
(`agentgrpo.sandbox.template.first_message`).
"""

from __future__ import annotations

import ast
import builtins
import os
import struct
import sys

from agentgrpo.sandbox import values, wire

REQUEST_FD, REPLY_FD = 3, 4
MAX_REQUEST = 64 << 20
_max_reply = wire.MAX_BYTES


def serve(request: tuple, block: bool, max_bytes: int = wire.MAX_BYTES) -> None:
    """The job's main loop, from its first ``request`` (the program); never returns. ``max_bytes``: the
    largest reply (Limits.value_bytes)."""
    global _max_reply
    _max_reply = max_bytes
    if block:
        sys.addaudithook(_deny)
    namespace = {"__name__": "__main__", "__builtins__": builtins}
    try:
        code = compile(request[1], "<program>", "exec", dont_inherit=True)  # not this module's __future__
        exec(code, namespace)
    except BaseException as exc:  # SystemExit included: the program did not finish
        _send(("error", describe(exc)))
        _exit()
    if request[2] == "in_process":
        run_tests(request[3], namespace)
    objects: dict[int, object] = {}
    loads = [_load(name, namespace) for name in request[4]]
    _reply(("ready", loads), objects)
    for group in request[5]:  # streamed: a job that dies in test 3 has already answered tests 1 and 2
        _reply(("group", _prefetch(group, namespace)), objects)
    while True:
        request = _recv()
        if request[0] == "end":
            _exit()
        _reply(_answer(request, namespace, objects), objects)


def _answer(request: tuple, namespace: dict, objects: dict) -> tuple:
    kind = request[0]
    try:
        target = objects[request[1]]
        if kind == "call":
            args = [_resolve(a, objects) for a in request[2]]
            kwargs = {k: _resolve(v, objects) for k, v in request[3].items()}
            result = target(*args, **kwargs)
            after = [a if type(a) in (list, dict, set) else None for a in args]  # in-place changes go back
            return ("ok", result, after)
        if kind == "getattr":
            return ("ok", getattr(target, request[2]))
        if kind == "iter":
            return ("ok", iter(target))
        if kind == "next":
            return ("ok", next(target))
        if kind == "truth":
            return ("ok", bool(target))
        if kind == "len":
            return ("ok", len(target))
        if kind == "getitem":
            return ("ok", target[_resolve(request[2], objects)])
    except StopIteration:
        return ("stop",)
    except BaseException as exc:
        return ("raise", _builtin_base(exc), describe(exc), exc)
    return ("raise", "RuntimeError", f"unknown request {kind!r}")


def _prefetch(group: list, namespace: dict) -> list:
    """One test's calls made up front, in the order the test makes them; after one raises, the rest of that
    test's calls are not made (as when the test runs), nor any call to a name the program lacks."""
    if any(name not in namespace for name, _, _ in group):
        return []
    out = []
    for name, args, kwargs in group:
        try:
            out.append(("ok", namespace[name](*args, **kwargs), [None] * len(args)))
        except BaseException as exc:
            out.append(("raise", _builtin_base(exc), describe(exc), exc))
            break
    return out


def _load(name: str, namespace: dict):
    if name not in namespace:
        return ("missing",)
    value = namespace[name]
    if type(value) is type(sys):
        return ("module", getattr(value, "__name__", ""), value)
    return ("value", value)


def _reply(reply: tuple, objects: dict) -> None:
    """Send the reply, after the fields of the dataclass objects the worker holds that the program changed
    (`_Describer.changed_fields`). What is over the worker's caps fails only itself: a value as a raised
    ValueError for its call, a name of the "ready" answer as "unavailable", a planned call's answer as a
    raise that ends its test's calls (`_within_caps`)."""
    describer = _Describer.of(objects)
    changed = describer.changed_fields()
    if changed:
        try:
            _send(("fields", changed), objects)
        except BaseException:  # over the caps: the worker keeps the fields it has
            pass
    try:
        _send(reply, objects)
        return
    except BaseException as exc:  # over a cap; or e.g. RecursionError or MemoryError while encoding
        why = f"the result cannot be returned: {exc if isinstance(exc, wire.WireError) else describe(exc)}"
    if reply[0] == "ready":
        reply = ("ready", [_within_caps(load, objects, ("unavailable", why)) for load in reply[1]])
    elif reply[0] == "group":
        answers = []
        for answer in reply[1]:
            answers.append(_within_caps(answer, objects, ("raise", "ValueError", why)))
            if answers[-1][0] == "raise":
                break  # as when the test runs: its later calls are not made
        reply = ("group", answers)
    else:
        reply = ("raise", "ValueError", why)
    try:
        _send(reply, objects)
    except BaseException:  # the parts fit one by one, not together
        _send(("raise", "ValueError", why) if reply[0] not in ("ready", "group") else
              (reply[0], [("unavailable", why)] * len(reply[1]) if reply[0] == "ready" else []))


def _within_caps(part, objects: dict, instead):
    """``part`` if it alone encodes within the worker's caps, else ``instead``."""
    try:
        _encode(part, objects)
    except BaseException:
        return instead
    return part


def _resolve(value, objects: dict):
    if type(value) is wire.Handle:
        return objects[value.id]
    if type(value) is wire.Ext:  # a standard-library value the test passes
        return values.rebuild(value, lambda payload: _resolve(payload, objects))
    if type(value) in (list, tuple, set, frozenset):
        return type(value)(_resolve(v, objects) for v in value)
    if type(value) is dict:
        return {_resolve(k, objects): _resolve(v, objects) for k, v in value.items()}
    return value


def _builtin_base(exc: BaseException) -> str:
    """The first builtin Exception class in the exception's MRO (the worker raises that one)."""
    for cls in type(exc).__mro__:
        if getattr(builtins, cls.__name__, None) is cls and issubclass(cls, Exception):
            return cls.__name__
    return ""


def _send(reply: tuple, objects: dict | None = None) -> None:
    data = _encode(reply, objects)
    _flush()
    _write_all(REPLY_FD, len(data).to_bytes(4, "big") + data)


_CHECKED = 128  # bytes: a message this small cannot break the decoder's item, depth or collision caps


def _encode(reply, objects: dict | None) -> bytes:
    """The reply's wire bytes; a WireError if the worker's strict decoder would refuse them (the same caps,
    checked here, so that an honest value over a cap fails only its own call)."""
    handles = None if objects is None else _Describer.of(objects).describe
    data = wire.encode(reply, handles, max_bytes=_max_reply)
    if len(data) > _CHECKED:
        wire.decode(data, max_bytes=_max_reply)
    return data


_VALUE_BASES = (int, float, complex, str, bytes, tuple, list, dict, set, frozenset)
_COPY = {int: int.__int__, float: float.__float__, complex: complex.__complex__, str: str.__str__,
         bytes: bytes.__bytes__, tuple: lambda x: tuple.__getitem__(x, slice(None)), list: list.copy,
         dict: dict.copy, set: set.copy, frozenset: frozenset.copy}
# operations of the program's own classes the worker forwards here: reads and calls, which hand the
# program no value to compare against (``==``, ``in``, ordering, arithmetic and truth in Python code are
# refused in the worker: ``x - expected`` would show the program the expected value)
_FORWARDED = ("__iter__", "__next__", "__len__", "__getitem__", "__call__")
_ORDER = ("__lt__", "__le__", "__gt__", "__ge__")
_OPERATORS = ("__contains__", "__add__", "__sub__", "__mul__", "__truediv__", "__floordiv__", "__mod__", "__pow__",
              "__neg__", "__pos__", "__abs__", "__radd__", "__rsub__", "__rmul__", "__rtruediv__", "__matmul__",
              "__and__", "__or__", "__xor__", "__invert__", "__round__", "__int__", "__float__", "__index__")
_TEXT_CAP = 1000
_NAN_PARTS = struct.Struct(">dd")
_DOC_CAP = 10_000
MAX_TRACKED = 1000  # dataclass objects whose fields are followed after they crossed


class _Describer:
    """How objects that are not builtin values go to the worker (the ``handle`` hook of `wire.encode`).

    Standard-library and numpy values are described by `agentgrpo.sandbox.values`. A class the program
    defined (or any Python class) is described with its bases and *traits*: whether its ``==``, hash,
    ordering and truth are those of the builtin it is built on (``object``: identity), generated by
    ``dataclasses`` (compared by fields), or its own Python code (which the worker refuses to run: the
    program would decide the comparison), and which operators the worker forwards here. An instance of
    such a class is described with its class, the builtin value it is built on (an ``int`` for an
    ``IntEnum`` member, a ``tuple`` for a namedtuple), its ``args`` for an exception, and its text. Anything
    else (a function, a generator, a socket) is a handle. Each object keeps one id for the job's life.
    """

    _current: _Describer | None = None

    def __init__(self, objects: dict):
        self.objects, self.ids, self.traits = objects, {}, {}
        self.snapshots: dict[int, bytes] = {}  # a dataclass object's id -> its fields as last sent

    def changed_fields(self) -> dict:
        """{id: compared fields} of the dataclass objects sent before whose fields changed since (in place
        too: compared by their encoding), so that the worker's snapshot follows the program's calls; what
        the worker compares is always a snapshot taken here, never read at comparison time."""
        changed = {}
        for ident, last in list(self.snapshots.items()):
            try:
                fields = _fields(self.objects[ident])
                data = wire.encode(fields, self.describe, max_bytes=_max_reply)
            except BaseException:
                continue
            if data != last:
                changed[ident] = fields
                self.snapshots[ident] = data
        return changed

    @classmethod
    def of(cls, objects: dict) -> _Describer:
        if cls._current is None or cls._current.objects is not objects:
            cls._current = cls(objects)
        return cls._current

    def describe(self, obj):
        if type(obj) is float or type(obj) is complex:  # a NaN: equal to itself only by identity
            raw = _NAN_PARTS.pack(obj.real, obj.imag)  # bytes: the NaN itself would come back here
            return wire.Ext("nan", (self._id(obj), raw, type(obj) is complex))
        try:
            found = values.describe(obj)
            if found is None:
                found = self._class(obj) if isinstance(obj, type) else self._instance(obj)
        except Exception:
            found = None
        return found if found is not None else self._handle(obj)

    describe.nan_identity = True  # `wire.encode` sends NaNs here (identity decides their equality)

    def _id(self, obj) -> int:
        ident = self.ids.get(id(obj))
        if ident is None:
            ident = self.ids[id(obj)] = len(self.objects) + 1
            self.objects[ident] = obj  # kept alive: the id stays its own
        return ident

    def _handle(self, obj) -> wire.Handle:
        return wire.Handle(self._id(obj), wire._type_name(obj))

    def _class(self, cls: type):
        name = str(getattr(cls, "__name__", "class"))[:100]
        if getattr(cls, "__module__", None) == "builtins" and getattr(builtins, name, None) is cls:
            return wire.Ext("class", (self._id(cls), name, "builtin", None))
        kind = values.kind_of(cls)
        if kind is not None:
            return wire.Ext("class", (self._id(cls), kind, "stdlib", None))
        if not cls.__flags__ & (1 << 9):  # not a heap type: a C class of some module (a handle)
            return None
        return wire.Ext("class", (self._id(cls), name, "mirror", self._traits(cls)))

    def _traits(self, cls: type) -> dict:
        traits = self.traits.get(cls)
        if traits is None:
            base = next((b for b in cls.__mro__ if b in _VALUE_BASES), None)
            if base is None:
                base = next((b for b in cls.__mro__ if issubclass(b, BaseException) and _is_builtin(b)), object)
            params = _lookup(cls, "__dataclass_params__")
            eq = _lookup(cls, "__eq__")
            if eq is _lookup(base, "__eq__") and _lookup(cls, "__ne__") is _lookup(base, "__ne__"):
                eq_kind = "base"
            elif params is not None and params.eq and getattr(getattr(eq, "__code__", None), "co_filename", "") in (
                "<string>",  # generated by dataclasses (a program that fakes it only chooses field equality)
            ):
                eq_kind = "dataclass"
            else:
                eq_kind = "python"
            hash_ = _lookup(cls, "__hash__")
            hash_kind = "none" if hash_ is None else ("base" if eq_kind == "base" else eq_kind)
            order = [_lookup(cls, n) for n in _ORDER]
            if order == [_lookup(base, n) for n in _ORDER]:
                order_kind = "base"
            elif params is not None and params.order:
                order_kind = "dataclass"
            else:
                order_kind = "python"
            truth = [_lookup(cls, n) for n in ("__bool__", "__len__")]
            truth_kind = "base" if truth == [_lookup(base, n) for n in ("__bool__", "__len__")] else "python"
            if truth_kind == "python" and truth[0] is None:
                truth_kind = "len"  # truth from __len__, forwarded like len() itself
            forwarded = [n for n in _FORWARDED if _lookup(cls, n) not in (None, _lookup(base, n))]
            refused = [n for n in _OPERATORS if _lookup(cls, n) is not _lookup(base, n)]
            bases = [self.describe(b) for b in cls.__bases__ if b is not object]
            str_kind = "base" if _lookup(cls, "__str__") is _lookup(base, "__str__") else "python"
            doc = cls.__dict__.get("__doc__")
            traits = self.traits[cls] = {
                "base": base.__name__, "bases": bases, "eq": eq_kind, "hash": hash_kind, "order": order_kind,
                "truth": truth_kind, "forward": forwarded, "refuse": refused, "str": str_kind,
                "qualname": str(getattr(cls, "__qualname__", ""))[:200],
                "module": str(cls.__dict__.get("__module__", ""))[:200],
                "doc": doc[:_DOC_CAP] if type(doc) is str else None,
            }
        return traits

    def _instance(self, obj):
        cls = type(obj)
        if not cls.__flags__ & (1 << 9) and not isinstance(obj, BaseException):
            return None  # a C type's object (a function, a generator, a socket): a handle
        described = self._class(cls)
        if described is None or described.payload[2] != "mirror":
            if not (isinstance(obj, BaseException) and described is not None):
                return None
        traits = described.payload[3] if described.payload[2] == "mirror" else None
        base = getattr(builtins, traits["base"]) if traits is not None else cls
        value = _COPY[base](obj) if base in _COPY else None
        args = tuple(obj.args) if isinstance(obj, BaseException) else None
        ident, fields = self._id(obj), None
        if traits is not None and "dataclass" in (traits["eq"], traits["order"], traits["hash"]):
            fields = _fields(obj)  # the snapshot the worker compares (refreshed by `changed_fields`)
            if len(self.snapshots) < MAX_TRACKED:
                self.snapshots[ident] = wire.encode(fields, self.describe, max_bytes=_max_reply)
        return wire.Ext("object", (ident, described, value, args, _text(obj), fields))


def _lookup(cls: type, name: str):
    """``name`` as the class's instances find it (its MRO's dicts only, not the metaclass)."""
    for klass in cls.__mro__:
        if name in klass.__dict__:
            return klass.__dict__[name]
    return None


def _is_builtin(cls) -> bool:
    return getattr(cls, "__module__", None) == "builtins" and getattr(builtins, cls.__name__, None) is cls


def _text(obj) -> tuple[str, str]:
    """The object's ``repr`` and ``str``, each capped (text for messages and ``str()``; never a status)."""
    out = []
    for show in (repr, str):
        try:
            text = show(obj)
            text = str.__str__(text)[:_TEXT_CAP] if isinstance(text, str) else ""
        except BaseException:
            text = f"<{wire._type_name(obj)} object>"
        out.append(text)
    return out[0], out[1]


def _fields(obj) -> tuple:
    import dataclasses

    return tuple(getattr(obj, f.name) for f in dataclasses.fields(obj) if f.compare)


def _recv() -> tuple:
    size = int.from_bytes(read_exact(4), "big")
    if size > MAX_REQUEST:
        _exit()
    return wire.decode(read_exact(size), max_bytes=MAX_REQUEST)


def read_exact(n: int, fd: int = REQUEST_FD) -> bytes:
    """``n`` bytes from ``fd``; the process exits quietly if the other end closes first."""
    chunks, got = [], 0
    while got < n:
        chunk = os.read(fd, n - got)
        if not chunk:
            _exit()  # the worker is done with us
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass


def _exit() -> None:
    _flush()
    os._exit(0)


# in-process mode (forgeable) --------------------------------------------------------------------------
def run_tests(steps: list, namespace: dict) -> None:
    """Run each step ``(is_test, source)`` here and report ``("test", ok, message)`` per test; never returns."""
    for is_test, source in steps:
        message = _run_step(source, namespace)
        if is_test:
            _send(("test", message is None, message or ""))
    _send(("done",))
    _exit()


def _run_step(source: str, namespace: dict) -> str | None:
    try:
        namespace[_CMP] = compare
        exec(compile(guard_comparisons(source), "<test>", "exec", dont_inherit=True), namespace)
    except BaseException as exc:
        return describe(exc)
    return None


def describe(exc: BaseException) -> str:
    """One line: the exception's type and message, cut to 300 characters (and safe if ``__str__`` lies)."""
    try:
        text = f"{type(exc).__name__}: {exc}".strip().rstrip(":")
    except BaseException:
        text = type(exc).__name__
    return text.replace("\n", " ")[:300]


_CMP = "__agentgrpo_compare__"


def guard_comparisons(source: str):
    """The source's AST with equality asserts routed through `compare` (in-process mode only).

    >>> tree = guard_comparisons("assert f(1) == 2")
    >>> ast.unparse(tree)
    "assert __agentgrpo_compare__(f(1), 2, '==')"
    """
    if "==" not in source and "!=" not in source:
        return source
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return source
    for node in ast.walk(tree):
        test = getattr(node, "test", None)
        if isinstance(node, ast.Assert) and isinstance(test, ast.Compare) and len(test.ops) == 1:
            if isinstance(test.ops[0], ast.Eq | ast.NotEq):
                op = "==" if isinstance(test.ops[0], ast.Eq) else "!="
                args = [test.left, test.comparators[0], ast.copy_location(ast.Constant(op), test)]
                func = ast.copy_location(ast.Name(_CMP, ast.Load()), test)
                node.test = ast.copy_location(ast.Call(func, args, []), test)
    return tree


def compare(left, right, op: str) -> bool:
    """``left == right`` (or ``!=``), refusing comparisons decided by a foreign Python-level ``__eq__``.

    >>> class AlwaysEqual:
    ...     def __eq__(self, other): return True
    >>> compare(AlwaysEqual(), 5, "==")
    Traceback (most recent call last):
    ...
    AssertionError: comparison decided by AlwaysEqual.__eq__ (Python code) against a different type, int
    """
    if type(left) is not type(right):
        slot = "__eq__" if op == "==" else "__ne__"
        for value, other in ((left, right), (right, left)):
            if hasattr(getattr(type(value), slot, None), "__code__"):
                raise AssertionError(
                    f"comparison decided by {type(value).__name__}.{slot} (Python code) "
                    f"against a different type, {type(other).__name__}"
                )
    return left == right if op == "==" else left != right


_DENIED = (
    "socket.",
    "subprocess.",
    "os.exec",
    "os.posix_spawn",
    "os.spawn",
    "os.system",
    "os.fork",
    "ctypes.dlopen",
    "pty.spawn",
)


def _deny(event: str, args) -> None:
    """Audit hook used when there is neither a network namespace nor seccomp: a deterrent, not a boundary."""
    if event.startswith(_DENIED):
        raise PermissionError(f"{event} is not allowed in the sandbox")
