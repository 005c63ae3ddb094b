"""Verifiable rewards with TRL's signature ``(completions, **kwargs) -> list[float | None]``.

    from agentgrpo.rewards import build_rewards, get_reward
    reward = get_reward("numeric_answer", rel_tol=1e-6)          # one function, __name__ == "numeric_answer"
    rs = build_rewards([{"name": "numeric_answer", "weight": 1.0},
                        {"name": "tool_call_count", "weight": 0}])  # weight 0: a shadow reward
    GRPOTrainer(..., reward_funcs=rs.funcs, args=GRPOConfig(..., reward_weights=rs.weights))

The catalogue, with each reward's rules and adversarial cases, is in docs/rewards.md.
"""

from agentgrpo.rewards._text import (
    assistant_text,
    completion_text,
    is_tool_error,
    tool_calls,
    tool_messages,
)
from agentgrpo.rewards.combine import RewardSet, build_rewards
from agentgrpo.rewards.guard import GuardedReward, RewardFailureWarning, RewardOutputError, guarded
from agentgrpo.rewards.registry import REWARDS, get_reward

__all__ = [
    "REWARDS",
    "GuardedReward",
    "RewardFailureWarning",
    "RewardOutputError",
    "RewardSet",
    "assistant_text",
    "build_rewards",
    "completion_text",
    "get_reward",
    "guarded",
    "is_tool_error",
    "tool_calls",
    "tool_messages",
]
