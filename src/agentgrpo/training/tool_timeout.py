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

from transformers import TrainerCallback

from agentgrpo.timeouts import (  # noqa: F401 - re-exported: the one mechanism lives in agentgrpo.timeouts
    TIMEOUTS,
    ToolTimeout,
    call_with_timeout,
    timed_class,
    timed_environment_factory,
    timed_tools,
)


class ToolTimeoutCounter(TrainerCallback):
    """Adds ``tools/timeouts`` (calls timed out since the previous log) to every training log."""

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs is not None and any(k.startswith("tools/") for k in logs):
            logs["tools/timeouts"] = float(TIMEOUTS.take())
