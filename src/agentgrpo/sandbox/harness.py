"""Runs inside the job process: compile and run the program, then answer the trusted side's requests.

The job holds only its own program. In the trusted mode (the default) it never sees a test: the worker
asks it for the names the tests use, to call a function, read an attribute or step an iterator, and gets
back each result as a builtin value (`agentgrpo.sandbox.wire`) or a handle to an object that stays here.
Whatever this process does, it can only choose those answers; the assert is evaluated by the worker.

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
import sys

from agentgrpo.sandbox import wire

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
    except StopIteration:
        return ("stop",)
    except BaseException as exc:
        return ("raise", _builtin_base(exc), describe(exc))
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
            out.append(("raise", _builtin_base(exc), describe(exc)))
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
    """Send the reply; one that does not encode (too large, too deep) is sent as a failure instead."""
    try:
        _send(reply, objects)
    except wire.WireError as exc:
        _send(("raise", "ValueError", f"the result cannot be returned: {exc}"))
    except BaseException as exc:  # e.g. RecursionError or MemoryError while encoding
        _send(("raise", "ValueError", f"the result cannot be returned: {describe(exc)}"))


def _resolve(value, objects: dict):
    if type(value) is wire.Handle:
        return objects[value.id]
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
    handles = None
    if objects is not None:

        def handles(obj):
            ident = len(objects) + 1
            objects[ident] = obj
            return wire.Handle(ident, wire._type_name(obj))

    data = wire.encode(reply, handles, max_bytes=_max_reply)
    _flush()
    _write_all(REPLY_FD, len(data).to_bytes(4, "big") + data)


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
