"""A call with a time limit, in a helper thread: what every tool call gets on every path that calls one
(training, held-out eval, pass@k, the signal check, the reward audit's replay) and every sample call a check
makes of user code (`agentgrpo validate`), so a function that never returns is reported, not a hang.

`timed_environment_factory` and `timed_tools` give a task's tools the limit (one mechanism for every
caller); `TIMEOUTS` counts the calls that ran past it (training logs it as ``tools/timeouts``), and
`TIMEOUTS.apart()` counts a stretch of calls on its own (an eval inside training does not leak into the
training log). The thread of a call past its limit cannot be killed; it is left running as a daemon.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import threading
from collections.abc import Callable, Iterator

DEFAULT_TOOL_TIMEOUT = 60.0  # seconds; the ``tool_timeout`` option's default, and every sampler's without a plan


class ToolTimeout(TimeoutError):
    """A tool call that did not return within its limit."""


class _Counter:
    def __init__(self):
        self._lock = threading.Lock()
        self.count = 0

    def add(self) -> None:
        with self._lock:
            self.count += 1

    def take(self) -> int:
        with self._lock:
            n, self.count = self.count, 0
        return n

    @contextlib.contextmanager
    def apart(self) -> Iterator[list[int]]:
        """Count the timeouts of a stretch of calls on their own: yields a one-item list that holds their
        number on exit; the count from before is restored (calls past a limit are counted in the calling
        thread, so the stretch is exactly the calls made inside the ``with``)."""
        held = self.take()
        box = [0]
        try:
            yield box
        finally:
            box[0] = self.take()
            with self._lock:
                self.count += held


TIMEOUTS = _Counter()


def call_with_timeout(fn: Callable, seconds: float, name: str, /, *args, **kwargs):
    """``fn(*args, **kwargs)`` in a daemon thread; its result, its exception, or `ToolTimeout`
    (``seconds`` None or 0: no limit, called here). The first three are positional-only, so a tool may take
    arguments called ``fn``, ``seconds`` or ``name``.

    >>> call_with_timeout(lambda x: x + 1, 1.0, "inc", 41)
    42
    >>> call_with_timeout(lambda name: name.upper(), 1.0, "lookup", name="standup")
    'STANDUP'
    """
    if not seconds:
        return fn(*args, **kwargs)
    box: dict = {}

    def target():
        try:
            box["value"] = fn(*args, **kwargs)
        except BaseException as exc:  # re-raised in the caller, where TRL counts it
            box["error"] = exc

    thread = threading.Thread(target=target, name=f"tool-{name}", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        TIMEOUTS.add()
        raise ToolTimeout(f"tool {name} timed out after {seconds:g} s")
    if "error" in box:
        raise box["error"]
    return box.get("value")


# Methods of an environment that are not tools (TRL's environment protocol).
RESERVED = ("reset", "get_reward")


def _timed(method: Callable, seconds: float) -> Callable:
    name = method.__name__
    if inspect.iscoroutinefunction(method):

        @functools.wraps(method)
        async def timed_async(self, *args, **kwargs):
            import asyncio

            try:
                return await asyncio.wait_for(method(self, *args, **kwargs), seconds)
            except TimeoutError:
                TIMEOUTS.add()
                raise ToolTimeout(f"tool {name} timed out after {seconds:g} s") from None

        return timed_async

    @functools.wraps(method)
    def timed(self, *args, **kwargs):
        return call_with_timeout(method, seconds, name, self, *args, **kwargs)

    return timed


@functools.lru_cache(maxsize=64)
def timed_class(cls: type, seconds: float) -> type:
    """A subclass of ``cls`` whose public tool methods (not reset/get_reward) have the time limit.

    Signatures, type hints and docstrings are kept, so TRL builds the same tool schemas.
    """
    members = {
        name: _timed(fn, seconds)
        for name, fn in inspect.getmembers(cls, predicate=inspect.isfunction)
        if not name.startswith("_") and name not in RESERVED
    }
    return type(cls.__name__, (cls,), {**members, "__doc__": cls.__doc__, "__module__": cls.__module__})


def timed_environment_factory(factory: Callable[[], object], seconds: float | None) -> Callable[[], object]:
    """Wrap ``factory`` so its environments' tools time out after ``seconds`` (None or <= 0: unchanged)."""
    if factory is None or not seconds or seconds <= 0:
        return factory

    @functools.wraps(factory)
    def make():
        env = factory()
        env.__class__ = timed_class(type(env), float(seconds))
        return env

    return make


def timed_tools(tools, seconds: float | None) -> list[Callable]:
    """Standalone tool functions (TRL's ``tools=``) with the same time limit; signatures and docs kept."""
    tools = list(tools or ())
    if not seconds or seconds <= 0:
        return tools
    out = []
    for tool in tools:
        if inspect.iscoroutinefunction(tool):
            out.append(_timed_async_function(tool, float(seconds)))
            continue

        def timed(*args, _tool=tool, **kwargs):
            return call_with_timeout(_tool, float(seconds), _tool.__name__, *args, **kwargs)

        out.append(functools.wraps(tool)(timed))
    return out


def _timed_async_function(tool: Callable, seconds: float) -> Callable:
    @functools.wraps(tool)
    async def timed(*args, **kwargs):
        import asyncio

        try:
            return await asyncio.wait_for(tool(*args, **kwargs), seconds)
        except TimeoutError:
            TIMEOUTS.add()
            raise ToolTimeout(f"tool {tool.__name__} timed out after {seconds:g} s") from None

    return timed


def timed_task(task, seconds: float | None):
    """``task`` with its environment's tools and its plain tools under the limit (the same wrappers training
    gives TRL); unchanged for no limit."""
    if not seconds or seconds <= 0:
        return task
    import dataclasses

    return dataclasses.replace(task, environment_factory=timed_environment_factory(task.environment_factory, seconds),
                               tool_functions=tuple(timed_tools(task.tool_functions, seconds)))
