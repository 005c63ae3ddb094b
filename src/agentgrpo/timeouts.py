"""A call with a time limit, in a helper thread: what a tool call gets in training and every sample call a
check makes of user code (`agentgrpo validate`), so a function that never returns is reported, not a hang.

The thread of a call past its limit cannot be killed; it is left running as a daemon.
"""

from __future__ import annotations

import threading
from collections.abc import Callable


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


TIMEOUTS = _Counter()


def call_with_timeout(fn: Callable, seconds: float, name: str, *args, **kwargs):
    """``fn(*args, **kwargs)`` in a daemon thread; its result, its exception, or `ToolTimeout`
    (``seconds`` None or 0: no limit, called here).

    >>> call_with_timeout(lambda x: x + 1, 1.0, "inc", 41)
    42
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
