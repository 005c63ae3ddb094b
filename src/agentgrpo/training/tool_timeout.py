"""Per-tool time limits: a tool call that blocks ends after ``seconds`` and becomes an observation.

Neither TRL nor a task's tools limit how long a call takes; one tool that hangs stops training with no
message. `timed_environment_factory` wraps a task's ``environment_factory`` so each tool method runs in a
helper thread: past the limit the call raises `ToolTimeout`, which TRL's tool loop turns into the tool
message ``{"error": "tool calculate timed out after 5 s"}`` for the model and counts in
``tools/failure_frequency``; `ToolTimeoutCounter` logs ``tools/timeouts`` (calls timed out since the last
log). A timed-out call's thread cannot be killed and is left running as a daemon; it holds no lock of
ours, but an environment it mutates later should not be reused across episodes (TRL resets per episode).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable

from transformers import TrainerCallback

_RESERVED = ("reset", "get_reward")


from agentgrpo.timeouts import TIMEOUTS, ToolTimeout, call_with_timeout  # noqa: F401 - re-exported


def _timed(method: Callable, seconds: float) -> Callable:
    name = method.__name__
    if inspect.iscoroutinefunction(method):

        @functools.wraps(method)
        async def timed_async(self, *args, **kwargs):
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
        if not name.startswith("_") and name not in _RESERVED
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
        try:
            return await asyncio.wait_for(tool(*args, **kwargs), seconds)
        except TimeoutError:
            TIMEOUTS.add()
            raise ToolTimeout(f"tool {tool.__name__} timed out after {seconds:g} s") from None

    return timed


class ToolTimeoutCounter(TrainerCallback):
    """Adds ``tools/timeouts`` (calls timed out since the previous log) to every training log."""

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs is not None and any(k.startswith("tools/") for k in logs):
            logs["tools/timeouts"] = float(TIMEOUTS.take())
