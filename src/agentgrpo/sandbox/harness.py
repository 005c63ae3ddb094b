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
import os
import sys

_CMP = "__agentgrpo_compare__"


class Compiled:
    """A job's program and steps compiled by the worker before it forks (parsing and compiling untrusted
    source runs no code; doing it before the fork spares the child the copy-on-write faults)."""

    def __init__(self, program: str, steps: list[tuple[bool, str]]):
        self.program = _compile(program, "<program>", guard=False)
        self.steps = []
        index = 0
        for is_test, source in steps:
            name = f"<test {index + 1}>" if is_test else "<setup>"
            self.steps.append((is_test, _compile(source, name, guard=True)))
            index += is_test


def _compile(source: str, filename: str, guard: bool):
    """A code object, or the exception compiling raised (reported by the job as its own failure)."""
    try:
        return compile(guard_comparisons(source) if guard else source, filename, "exec")
    except (SyntaxError, ValueError, TypeError, OverflowError, RecursionError, MemoryError) as exc:
        return exc


def run(job: Compiled, result_fd: int, nonce: str, block: bool) -> None:
    """Execute the program, then each step (setup or test); never returns."""
    send = sender(result_fd, nonce)
    if block:
        sys.addaudithook(_deny)
    namespace = {"__name__": "__main__", "__builtins__": builtins}
    try:
        _exec(job.program, namespace)
    except BaseException as exc:  # SystemExit and KeyboardInterrupt included: the program did not finish
        send({"kind": "error", "message": describe(exc)})
        _exit()
    index = 0
    for is_test, code in job.steps:
        message = _run_step(code, namespace)
        if is_test:
            send({"kind": "test", "index": index, "ok": message is None, "message": message or ""})
            index += 1
    send({"kind": "done"})
    _exit()


def _exec(code, namespace: dict) -> None:
    if isinstance(code, BaseException):
        raise code
    exec(code, namespace)


def _run_step(code, namespace: dict) -> str | None:
    try:
        namespace[_CMP] = compare
        _exec(code, namespace)
    except BaseException as exc:
        return describe(exc)
    return None


def sender(fd: int, nonce: str):
    """A function writing one record as a line: nonce, kind, index, ok, message, tab-separated."""

    def send(record: dict) -> None:
        fields = (
            nonce,
            record["kind"],
            record.get("index", -1),
            int(bool(record.get("ok"))),
            record.get("message", ""),
        )
        line = "\t".join(str(f).replace("\t", " ").replace("\n", " ").replace("\r", " ") for f in fields)
        os.write(fd, (line + "\n").encode("utf-8", "replace"))

    return send


def parse_records(raw: bytes, nonce: str) -> list[dict]:
    r"""The records in ``raw`` that carry ``nonce`` (anything else a program wrote there is ignored).

    >>> records = parse_records(b"n\ttest\t0\t1\t\nforged\tdone\t-1\t0\t\nn\tdone\t-1\t0\t\n", "n")
    >>> [(r["kind"], r["index"], r["ok"]) for r in records]
    [('test', 0, True), ('done', -1, False)]
    """
    records = []
    for line in raw.decode("utf-8", "replace").split("\n"):
        parts = line.split("\t", 4)
        if len(parts) != 5 or parts[0] != nonce or not parts[2].lstrip("-").isdigit():
            continue
        records.append({"kind": parts[1], "index": int(parts[2]), "ok": parts[3] == "1", "message": parts[4]})
    return records


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


def guard_comparisons(source: str):
    """The source's AST with equality asserts routed through `compare` (the source itself when there is
    nothing to guard or it will not parse; compiling it then reports the error as the test's failure).

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
        if isinstance(node, ast.Assert) and _guardable(node.test):
            test = node.test
            op = "==" if isinstance(test.ops[0], ast.Eq) else "!="
            args = [test.left, test.comparators[0], ast.copy_location(ast.Constant(op), test)]
            func = ast.copy_location(ast.Name(_CMP, ast.Load()), test)
            node.test = ast.copy_location(ast.Call(func, args, []), test)
    return tree


def _guardable(test: ast.expr) -> bool:
    return (
        isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq | ast.NotEq)
    )


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
