"""Replay a completion's tool calls in a fresh environment, outside training (the reward audit, the signal
check and the check that rewards vary use it): rewards that read ``environments`` then see what the
completion did, each call limited in time as in training."""

from __future__ import annotations

from agentgrpo.rewards._text import tool_calls
from agentgrpo.timeouts import DEFAULT_TOOL_TIMEOUT, call_with_timeout


def replay_environments(task, rows, items, timeout: float | None = DEFAULT_TOOL_TIMEOUT) -> list | None:
    """One fresh environment per completion, reset on its row, with the completion's tool calls replayed, each
    call limited to ``timeout`` seconds as in training (a call past it counts in `TIMEOUTS`, as a failed call
    does nothing more)."""
    envs = []
    for i, _, completion in items:
        try:
            env = task.environment_factory()
            if hasattr(env, "reset"):
                env.reset(**rows[i])
        except Exception:
            return None  # an environment that cannot start outside training: rewards get none
        for call in tool_calls(completion):
            method = getattr(env, call.name, None)
            if callable(method) and not call.name.startswith("_"):
                try:
                    call_with_timeout(method, timeout, call.name, **(call.arguments or {}))
                except Exception:  # a failing (or timed-out) tool call is what the completion did; keep going
                    pass
        envs.append(env)
    return envs
