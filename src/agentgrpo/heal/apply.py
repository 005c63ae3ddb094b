"""One heal, applied: the plan a remedy leaves. The training loop of ``agentgrpo train`` (`agentgrpo.heal.loop`)
and `resume_healed` (a user's own TRL script, `agentgrpo.training.heal_callbacks`) both go through `apply`, so
a remedy changes the same settings on either path: GRPOConfig fields, the dynamic sampling settings, the rewards.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def changes_of(record: Mapping[str, Any]) -> dict[str, Any]:
    """The settings a heal record (a heal.jsonl line) changes: option -> new value."""
    return {key: new for key, (_old, new) in (record.get("changes") or {}).items()}


def apply(plan, record: Mapping[str, Any]):
    """The plan of the segment after the heal ``record`` (its ``changes`` and the ``checkpoint`` it resumes from,
    relative to the run directory): ``plan`` with the remedy applied, resuming from that checkpoint.

    ``plan`` is a `RunPlan` (agentgrpo's own runs), or a user's trainer seen as a plan
    (`agentgrpo.training.heal_callbacks.ScriptPlan`); each makes its settings again as it made them first
    (``with_changes``): a new GRPOConfig and `DynamicSampling`, and for a `RunPlan` the rewards.
    """
    return plan.with_changes(changes_of(record), record["checkpoint"])
