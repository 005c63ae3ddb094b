"""Canonical metric names, and the mapping from every TRL version's and tracker's spelling to them.

The doctor works on TRL 1.x names (``completions/mean_length``, ``rewards/<f>/mean``, ...). Older TRL
(0.14-0.16) logged ``completion_length``, ``rewards/<f>`` and a single ``clip_ratio``; trackers prefix
``train/``; evaluation rows carry ``eval_`` or ``eval/``. :func:`canonical` maps them all.
"""

from __future__ import annotations

import re

REWARD = "reward"
REWARD_STD = "reward_std"
FRAC_ZERO_STD = "frac_reward_zero_std"
KL = "kl"
ENTROPY = "entropy"
LENGTH = "completions/mean_length"
MIN_LENGTH = "completions/min_length"
MAX_LENGTH = "completions/max_length"
CLIPPED = "completions/clipped_ratio"
TERM_LENGTH = "completions/mean_terminated_length"
GRAD_NORM = "grad_norm"
LOSS = "loss"
LR = "learning_rate"
CLIP_LOW = "clip_ratio/low_mean"
CLIP_HIGH = "clip_ratio/high_mean"
CLIP_REGION = "clip_ratio/region_mean"
TOOL_CALLS = "tools/call_frequency"
TOOL_FAILURES = "tools/failure_frequency"

# Keys that identify the step of a record, in order of preference (after canonical()).
STEP_KEYS = ("step", "global_step", "_step", "trainer/global_step")

# Whole-key renames (after prefixes are stripped).
_RENAMES = {
    "completion_length": LENGTH,
    "completions/mean_len": LENGTH,
    "clip_ratio": CLIP_REGION,
    "Step": "step",
    "global_step": "step",
    "_step": "step",
    "trainer/global_step": "step",
}

_REWARD_COMPONENT = re.compile(r"^rewards/([^/]+)$")
_PREFIXES = ("train/", "train_")

# Keys of the summary record the Trainer logs once at the end; a record with any of them is not a step.
SUMMARY_KEYS = frozenset(
    {"train_runtime", "train_samples_per_second", "train_steps_per_second", "train_loss"}
)


def canonical(key: str) -> str:
    """The canonical name of a logged key.

    >>> canonical("train/rewards/correct/mean"), canonical("completion_length"), canonical("rewards/fmt")
    ('rewards/correct/mean', 'completions/mean_length', 'rewards/fmt/mean')
    >>> canonical("eval_reward"), canonical("eval/rewards/fmt"), canonical("Step")
    ('eval/reward', 'eval/rewards/fmt/mean', 'step')
    """
    key = key.strip()
    if " - " in key:  # W&B CSV exports: "<run name> - train/reward"
        key = key.rsplit(" - ", 1)[1]
    if key in _RENAMES:
        return _RENAMES[key]
    for prefix in ("eval/", "eval_"):
        if key.startswith(prefix) and key not in SUMMARY_KEYS:
            return "eval/" + canonical(key[len(prefix) :])
    for prefix in _PREFIXES:
        if key.startswith(prefix) and key not in SUMMARY_KEYS:
            return canonical(key[len(prefix) :])
    match = _REWARD_COMPONENT.match(key)
    if match:
        return f"rewards/{match.group(1)}/mean"
    return key


def component_of(name: str) -> str | None:
    """The reward function named by a ``rewards/<f>/mean`` column, else None.

    >>> component_of("rewards/format/mean"), component_of("reward")
    ('format', None)
    """
    if name.startswith("rewards/") and name.endswith("/mean") and name.count("/") == 2:
        return name.split("/")[1]
    return None


def is_tracker_extra(key: str) -> bool:
    """Columns a tracker export adds that are not metrics (W&B's ``__MIN``/``__MAX`` bands, timestamps).

    >>> is_tracker_extra("run - train/reward__MIN"), is_tracker_extra("train/reward")
    (True, False)
    """
    return key.endswith(("__MIN", "__MAX")) or key in {"_runtime", "_timestamp", "Wall time", "Relative Time"}
