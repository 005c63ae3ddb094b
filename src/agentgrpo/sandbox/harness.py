"""Runs inside the job process: the program, then each test, reporting over a private pipe.

Results go to a pipe (not stdout) as JSON lines tagged with a per-job nonce, so printing fake results does
nothing, and the worker only trusts a run that reached the final ``done`` record: ``sys.exit``/``os._exit``
in the program end the run as "error"/"crashed", never as "passed".

Equality asserts (``assert a == b`` / ``!=``) are checked so that a type with a Python-level ``__eq__`` can
only decide a comparison against its own type: the "always-equal object" hack fails the test.
"""

from __future__ import annotations

import ast
import builtins
import json
import os
import sys

_CMP = "__agentgrpo_compare__"


def run(program: str, steps: list[tuple[bool, str]], result_fd: int, nonce: str, block: bool) -> None:
    """Execute ``program`` then each step (``(is_test, source)``); never returns."""
    send = sender(result_fd, nonce)
    if block:
        sys.addaudithook(_deny)
    namespace = {"__name__": "__main__", "__builtins__": builtins}
    try:
        exec(compile(program, "<program>", "exec"), namespace)
    except BaseException as exc:  # SystemExit and KeyboardInterrupt included: the program did not finish
        send({"kind": "error", "message": describe(exc)})
        _exit()
    index = 0
    for is_test, source in steps:
        message = _run_step(source, namespace, f"<test {index + 1}>" if is_test else "<setup>")
        if is_test:
            send({"kind": "test", "index": index, "ok": message is None, "message": message or ""})
            index += 1
    send({"kind": "done"})
    _exit()


def _run_step(source: str, namespace: dict, filename: str) -> str | None:
    try:
        code = compile(guard_comparisons(source), filename, "exec")
        namespace[_CMP] = compare
        exec(code, namespace)
    except BaseException as exc:
        return describe(exc)
    return None


def sender(fd: int, nonce: str):
    def send(record: dict) -> None:
        os.write(fd, (json.dumps({"nonce": nonce, **record}) + "\n").encode())

    return send


def describe(exc: BaseException) -> str:
    """One line: the exception's type and message, cut to 300 characters (and safe if ``__str__`` lies)."""
    try:
        text = f"{type(exc).__name__}: {exc}".strip().rstrip(":")
    except BaseException:
        text = type(exc).__name__
    return text.replace("\n", " ")[:300]


def _exit() -> None:
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            stream.flush()
        except BaseException:
            pass
    os._exit(0)


class _Guard(ast.NodeTransformer):
    def visit_Assert(self, node: ast.Assert) -> ast.Assert:
        test = node.test
        if (
            isinstance(test, ast.Compare)
            and len(test.ops) == 1
            and isinstance(test.ops[0], ast.Eq | ast.NotEq)
        ):
            op = "==" if isinstance(test.ops[0], ast.Eq) else "!="
            call = ast.Call(
                ast.Name(_CMP, ast.Load()), [test.left, test.comparators[0], ast.Constant(op)], []
            )
            node.test = ast.copy_location(call, test)
        return node


def guard_comparisons(source: str):
    """The source's AST with equality asserts routed through `compare` (the source itself if it won't parse).

    >>> tree = guard_comparisons("assert f(1) == 2")
    >>> ast.unparse(tree)
    "assert __agentgrpo_compare__(f(1), 2, '==')"
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return source  # compile() reports the same error as the test's failure
    return ast.fix_missing_locations(_Guard().visit(tree))


def compare(left, right, op: str) -> bool:
    """``left == right`` (or ``!=``), refusing comparisons decided by a foreign Python-level ``__eq__``.

    >>> compare([1, 2], [1, 2], "==")
    True
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
            method = getattr(type(value), slot, None)
            if hasattr(method, "__code__"):
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
    """Audit hook used when there is no network namespace: a deterrent, not a security boundary."""
    if event.startswith(_DENIED):
        raise PermissionError(f"{event} is not allowed in the sandbox")
