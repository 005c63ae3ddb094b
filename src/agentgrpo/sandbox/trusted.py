"""Trusted comparison: tests run in the worker; only the solution's own code runs in the job.

Each test step is parsed and executed here (the worker), with the names it takes from the program bound
to what the job reports: builtin values by value, anything else as a `Remote` handle. Calling a handle,
reading one of its attributes or iterating it is done in the job; what comes back is again a builtin
value or a handle. A handle is not a value: comparing it, testing its truth, hashing it or asking its
length raises, so an object with a lying ``__eq__``/``__bool__`` fails the test instead of passing it.
Builtins (``sorted``, ``set``, ``abs``...) and modules the tests import are the worker's own, so a
program that redefines or patches them changes nothing here.

A test that hands the program something that is not a builtin value (a lambda, a class of its own)
cannot be split: it fails with a clear message, or, with ``comparison="auto"``, the whole job is run
again in the in-process mode and reported as forgeable.
"""

from __future__ import annotations

import ast
import builtins
import functools
import importlib
import marshal
import sys

from agentgrpo.sandbox import mirrors, values, wire
from agentgrpo.sandbox.harness import describe

_BUILTIN_NAMES = frozenset(dir(builtins))
_NO_IMPORT = frozenset({"this", "antigravity", "idlelib", "turtledemo", "tkinter", "turtle"})
_OUTPUT_CAP = 64 * 1024


_CACHED_SOURCE = 4096  # characters: longer tests are parsed each time (the caches stay small)


def _per_source(fn):
    """``fn(source, *args)`` remembered for sources up to `_CACHED_SOURCE` characters (the completions of a
    group share their tests: each is worked out once). What it returns must only be read."""
    cached = functools.lru_cache(maxsize=2048)(fn)

    @functools.wraps(fn)
    def call(source: str, *args):
        return cached(source, *args) if len(source) <= _CACHED_SOURCE else fn(source, *args)

    return call


@_per_source
def _parse(source: str) -> ast.Module:
    """The test's syntax tree, to be read only."""
    return ast.parse(source)


@_per_source
def _compile(source: str, name: str):
    return compile(source, name, "exec", dont_inherit=True)  # as plain Python would: not this module's __future__


class JobGone(BaseException):
    """The job died, timed out, overflowed or broke the channel (a BaseException: tests cannot catch it
    with ``except Exception``; the session remembers it whatever the test does)."""


class Unsplittable(BaseException):
    """The test passed the program something that is not a builtin value."""


class ProgramError(Exception):
    """The program's function raised something that is not a builtin exception."""


def free_names(sources: list[str]) -> list[str]:
    """Names the test steps read but never bind and that are not builtins: what they take from the program.

    >>> free_names(["import math\\nassert math.isclose(area(2), 12.56, rel_tol=1e-2)", "x = f(1)\\nassert x"])
    ['area', 'f']
    """
    loaded, bound = set(), set()
    for source in sources:
        step_loaded, step_bound = _names(source)
        loaded.update(step_loaded)
        bound.update(step_bound)
    return sorted(loaded - bound - _BUILTIN_NAMES)


@_per_source
def _names(source: str) -> tuple[frozenset, frozenset]:
    """The names one step reads and the names it binds (both empty if it does not parse)."""
    loaded, bound = set(), set()
    try:
        tree = _parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return frozenset(), frozenset()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (loaded if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.alias):
            bound.add(node.asname or node.name.split(".")[0])
        elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and node.name:
            bound.add(node.name)
    return frozenset(loaded), frozenset(bound)



def plan_calls(steps: list[tuple[bool, str]], names: list[str]) -> list[list[tuple[str, list, dict]]]:
    """Calls the tests will make, to be made up front in one round trip: per test, ``(name, args, kwargs)``.

    Only for tests that are each one ``assert`` of a call of a program name with literal arguments, or of
    one comparison between such calls and literals, possibly under one ``not``: all their calls happen, in
    a fixed order, before anything that could raise here, so making them first (in that order, stopping a
    test's calls at the first that raises) is what running the tests would do. Planning stops at the first
    test that is anything else; its calls and later ones are asked one by one. The asserts themselves are
    still evaluated here, on the answers, and a test only waits for its own calls' answers.

    >>> plan_calls([(True, "assert f(1) == g('a')"), (True, "assert not f(2)"), (True, "x = 1")], ["f", "g"])
    [[('f', [1], {}), ('g', ['a'], {})], [('f', [2], {})]]
    >>> plan_calls([(True, "assert -f(1) == f(2)")], ["f"])  # negating the first answer may raise first
    []
    """
    plan, wanted = [], set(names)
    for is_test, source in steps:
        if not is_test:
            return plan
        calls = _step_calls(source)
        if calls is None:
            return plan
        calls = marshal.loads(calls)  # a fresh copy of the literal arguments for each job
        if not all(name in wanted for name, _, _ in calls):
            return plan
        plan.append(calls)
    return plan


@_per_source
def _step_calls(source: str) -> bytes | None:
    """The calls a test makes, marshalled, if it is a plannable assert (see `plan_calls`); else None."""
    try:
        tree = _parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    body = tree.body
    if len(body) != 1 or not isinstance(body[0], ast.Assert) or body[0].msg is not None:
        return None
    calls: list = []
    test = body[0].test
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test = test.operand
    if isinstance(test, ast.Compare) and len(test.ops) != 1:
        return None
    operands = [test.left, *test.comparators] if isinstance(test, ast.Compare) else [test]
    if not all(_plannable(operand, calls) for operand in operands):
        return None
    try:
        return marshal.dumps(calls)
    except (ValueError, RecursionError, MemoryError):  # e.g. a literal nested too deeply to copy
        return None



def _plannable(node: ast.expr, calls: list) -> bool:
    """A call of a name with literal arguments (recorded in ``calls``), or a literal."""
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name):
            return False
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            return False
        try:
            args = [ast.literal_eval(a) for a in node.args]
            kwargs = {k.arg: ast.literal_eval(k.value) for k in node.keywords}
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return False
        calls.append((node.func.id, args, kwargs))
        return True
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


class Remote:
    """An object that lives in the job and is not a value (a function, a generator, a file). Calls, attribute
    reads, iteration, ``len``, indexing and truth are forwarded; it equals only itself (interned per job id)."""

    __slots__ = ("_handle", "_session", "_name", "__weakref__")

    def __init__(self, handle: wire.Handle, session, name: str = ""):
        object.__setattr__(self, "_handle", handle)
        object.__setattr__(self, "_session", session)
        object.__setattr__(self, "_name", name)

    def __call__(self, *args, **kwargs):
        reply = self._session.ask(("call", self._handle.id, list(args), kwargs), self._name)
        changed = reply[2] if len(reply) > 2 and type(reply[2]) is list else []
        for arg, new in zip(args, changed, strict=False):
            _write_back(arg, new)
        return reply[1]

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return self._session.ask(("getattr", self._handle.id, name))[1]

    def __iter__(self):
        return self._session.ask(("iter", self._handle.id))[1]

    def __next__(self):
        return self._session.ask(("next", self._handle.id))[1]

    def __bool__(self):
        return self._session.ask(("truth", self._handle.id))[1] is True

    def __len__(self):
        n = self._session.ask(("len", self._handle.id))[1]
        if type(n) is not int:
            raise TypeError("len() of the program's object did not return an int")
        return n

    def __getitem__(self, key):
        return self._session.ask(("getitem", self._handle.id, key))[1]

    def __repr__(self) -> str:
        return f"<{self._handle.type_name} object in the sandbox>"

    def _refuse(self, *_args):
        raise TypeError(
            f"the program returned a {self._handle.type_name} object, not a value: it cannot be compared or "
            "converted here (only builtin values, standard-library values and objects of the program's "
            "own classes can)"
        )

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return self is not other

    __hash__ = object.__hash__
    __lt__ = __le__ = __gt__ = __ge__ = __contains__ = _refuse
    __int__ = __float__ = __index__ = __complex__ = __setattr__ = _refuse


def _write_back(arg, new) -> None:
    """Apply the job's in-place change of a list/dict/set argument to the test's own object."""
    if new is None or type(arg) is not type(new):
        return
    if type(arg) is list:
        arg[:] = new
    elif type(arg) in (dict, set):
        arg.clear()
        arg.update(new)


def to_handle(obj):
    """How a test's argument travels when it is not a builtin value: the job's own objects as handles,
    standard-library values described."""
    if type(obj) is Remote:
        return obj._handle
    found = _MIRRORS[0].ref(obj) if _MIRRORS else None
    if found is not None:
        return wire.Handle(found, "object")
    described = values.describe(obj)
    if described is not None:
        return described
    raise Unsplittable(
        f"the test passes a {type(obj).__name__} to the program, and only values and the program's own "
        "objects can cross into the sandbox; use comparison='auto' or 'in_process' for such tests (forgeable)"
    )


_MIRRORS: list = []  # [the Mirrors of the job being evaluated]


def begin(session) -> None:
    """A new job's session: its mirrors and handles start empty."""
    _mirrors(session)


def _mirrors(session) -> mirrors.Mirrors:
    if not _MIRRORS or _MIRRORS[0].session is not session:
        _MIRRORS[:] = [mirrors.Mirrors(session)]
        session_remotes.clear()
    return _MIRRORS[0]


session_remotes: dict[int, Remote] = {}


def localize(value, session):
    """The decoded reply as objects of this interpreter: handles become `Remote`s, descriptions the values
    or mirrors they describe (one object per job id). Never raises for what the job sent: what cannot be
    rebuilt becomes a `mirrors.Unavailable` that fails the test using it."""
    t = type(value)
    if t is wire.Handle:
        _mirrors(session)
        found = session_remotes.get(value.id)
        if found is None:
            found = session_remotes[value.id] = Remote(value, session)
        return found
    if t is wire.Ext:
        return _rebuild(value, session)
    if t is list or t is tuple:
        return t([localize(v, session) for v in value])
    try:
        if t is dict:
            return {localize(k, session): localize(v, session) for k, v in value.items()}
        if t is set or t is frozenset:
            return t([localize(v, session) for v in value])
    except TypeError as exc:  # e.g. a dataclass without a hash as a key
        return mirrors.Unavailable(f"a {t.__name__} whose members cannot be rebuilt here ({str(exc)[:100]})")
    return value


def _rebuild(ext: wire.Ext, session):
    table = _mirrors(session)

    def convert(part):
        return localize(part, session)

    try:
        if ext.kind == "class":
            return table.klass(ext.payload, convert)
        if ext.kind == "object":
            return table.instance(ext.payload, convert)
        return values.rebuild(ext, convert)
    except (TypeError, ValueError, OverflowError, ArithmeticError, ImportError, AttributeError) as exc:
        return mirrors.Unavailable(f"a {ext.kind[:40]} that cannot be rebuilt here ({type(exc).__name__}: {str(exc)[:100]})")


def raise_for(reply: tuple):
    """Raise what the program's function raised: its exception rebuilt here (a builtin exception, or a
    mirror of the program's own exception class), else the builtin exception it derives from."""
    if reply[0] == "stop":
        raise StopIteration
    name, message = reply[1], str(reply[2])[:1000]
    rebuilt = localize(reply[3], None if not _MIRRORS else _MIRRORS[0].session) if len(reply) > 3 else None
    if isinstance(rebuilt, Exception) and not isinstance(rebuilt, StopIteration):
        raise rebuilt
    cls = getattr(builtins, name, None) if type(name) is str else None
    if isinstance(cls, type) and issubclass(cls, Exception) and cls is not StopIteration:
        raise cls(f"(raised in the program) {message}")
    raise ProgramError(message)


def bindings(items: list, names: list[str]) -> dict:
    """The test globals taken from the program (``items``: the job's answer for each of ``names``):
    values, mirrors, handles, or the worker's own copy of a standard-library module. An answer of the
    wrong shape is a `BadReply`."""
    out = {}
    for name, item in zip(names, items, strict=True):
        if type(item) is not tuple or not item or item[0] not in ("value", "module", "missing"):
            raise BadReply(f"a malformed answer for the name {name!r}")
        if item[0] == "value" and len(item) == 2:
            value = item[1]
            if type(value) is Remote and not value._name:
                object.__setattr__(value, "_name", name)  # planned calls are matched by the name used
            out[name] = value
        elif item[0] == "module" and len(item) == 3:
            module = _own_module(item[1], name)
            out[name] = module if module is not None else item[2]
        elif item[0] != "missing":
            raise BadReply(f"a malformed answer for the name {name!r}")
    return out


class BadReply(Exception):
    """The job's reply has the wrong shape (its status is the job's fault: crashed)."""


def _own_module(reported: str, name: str):
    if reported != name or name not in sys.stdlib_module_names or name in _NO_IMPORT:
        return None
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def evaluate(steps: list[tuple[bool, str]], session, names: list[str], loaded: list) -> list[str]:
    """Run the steps here against the job behind ``session``: per test "passed", a failure, or "not run".

    ``loaded``: what the job answered for ``names`` (`free_names` of the steps) once the program had run.
    """
    results = []
    globals_ = {"__name__": "__test__", "__builtins__": builtins, **bindings(loaded, names)}
    out = _Capture()
    saved = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = out
    try:
        for index, (is_test, source) in enumerate(steps):
            if session.gone:
                break
            message = _run(source, globals_, f"<test {index + 1}>" if is_test else "<setup>", session)
            if is_test:
                results.append(message or "passed")
    finally:
        sys.stdout, sys.stderr = saved
    session.test_output = out.text()
    return results


def _run(source: str, globals_: dict, name: str, session) -> str | None:
    try:
        code = _compile(source, name)
    except (SyntaxError, ValueError, OverflowError, RecursionError, MemoryError) as exc:
        return f"the test does not compile: {describe(exc)}"
    before = len(session.unsplittable)
    try:
        exec(code, globals_)
    except JobGone:
        return "not run"
    except BaseException as exc:
        message = describe(exc)
    else:
        message = None
    if len(session.unsplittable) > before:  # even if the test caught it with a bare except
        return f"cannot be split: {session.unsplittable[-1]}"
    return message


class _Capture:
    """What the tests print, kept up to a cap (the worker's own stdout is not theirs)."""

    def __init__(self):
        self.parts, self.size = [], 0

    def write(self, text) -> int:
        text = str(text)
        if self.size < _OUTPUT_CAP:
            self.parts.append(text[: _OUTPUT_CAP - self.size])
            self.size += len(text)
        return len(text)

    def flush(self) -> None:
        pass

    def text(self) -> str:
        return "".join(self.parts)
