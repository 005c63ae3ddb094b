"""Turn what a caller hands the sandbox into a job, or into an "invalid" verdict when it cannot run."""

from __future__ import annotations

import ast

from agentgrpo.sandbox.verdict import INVALID, Verdict

MAX_PROGRAM_CHARS = 1_000_000


def prepare(program, tests) -> list[tuple[bool, str]] | Verdict:
    """The job's steps ``(is_test, source)``, or a `Verdict` saying why there is nothing to run.

    >>> prepare("def f(): return 1", ["assert f() == 1", "assert f() != 2"])
    [(True, 'assert f() == 1'), (True, 'assert f() != 2')]
    >>> prepare(42, ["assert True"]).reason
    'program must be a str, got int'
    >>> prepare("   ", ["assert True"]).status
    'invalid'
    """
    if not isinstance(program, str):
        return _invalid(f"program must be a str, got {type(program).__name__}")
    if not program.strip():
        return _invalid("program is empty")
    if len(program) > MAX_PROGRAM_CHARS:
        return _invalid(f"program has {len(program)} characters, more than {MAX_PROGRAM_CHARS}")
    if isinstance(tests, str):
        steps = split_tests(tests)
    elif isinstance(tests, list | tuple) and all(isinstance(t, str) for t in tests):
        steps = [(True, t) for t in tests]
    else:
        return _invalid(f"tests must be a str or a list of str, got {_describe(tests)}")
    if not any(is_test for is_test, _ in steps):
        return _invalid("no tests to run")
    if sum(len(source) for _, source in steps) > MAX_PROGRAM_CHARS:
        return _invalid(f"tests have more than {MAX_PROGRAM_CHARS} characters")
    return steps


def split_tests(text: str) -> list[tuple[bool, str]]:
    """A test script as steps: each top-level ``assert`` is a test, other statements are setup between them.

    A script with no top-level assert (e.g. ``check(candidate)``) is one test.

    >>> split_tests("import math\\nassert math.pi > 3\\nx = 2\\nassert x == 2")
    [(False, 'import math'), (True, 'assert math.pi > 3'), (False, 'x = 2'), (True, 'assert x == 2')]
    >>> split_tests("check(f)")
    [(True, 'check(f)')]
    """
    if not text.strip():
        return []
    try:
        body = ast.parse(text).body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return [(True, text)]  # running it reports the error as a failed test
    if not any(isinstance(node, ast.Assert) for node in body):
        return [(True, text)]
    steps: list[tuple[bool, str]] = []
    for node in body:
        is_test = isinstance(node, ast.Assert)
        source = ast.unparse(node)
        if not is_test and steps and not steps[-1][0]:
            steps[-1] = (False, steps[-1][1] + "\n" + source)
        else:
            steps.append((is_test, source))
    return steps


def _invalid(reason: str) -> Verdict:
    return Verdict(status=INVALID, passed=0, total=0, reason=reason)


def _describe(value) -> str:
    if isinstance(value, list | tuple):
        bad = next((v for v in value if not isinstance(v, str)), None)
        return f"a {type(value).__name__} holding a {type(bad).__name__}"
    return type(value).__name__
