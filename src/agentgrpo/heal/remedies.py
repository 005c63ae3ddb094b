"""The remedy table: for each failure mode the doctor reports, the settings a heal changes, or a stop with
the reason. ONE table (`REMEDIES`), covering every `Mode`; the doctor's fix lines made executable.

A remedy reads the run as it stands (`Situation`: the settings now, the fallback rewards, the metrics logged
up to the checkpoint it resumes from) and returns the settings to change, or None to stop. Values are
absolute (``{"learning_rate": 0.005}``), so applying a heal twice changes nothing more.

>>> from agentgrpo.doctor.modes import Mode
>>> situation = Situation(setting={"learning_rate": 0.05, "temperature": 1.0, "beta": 0.0}.get)
>>> REMEDIES[Mode.COLLAPSE].changes(situation)
{'learning_rate': 0.0015, 'beta': 0.04}
>>> REMEDIES[Mode.HACKING].changes(situation) is None     # no fallback reward named: stop
True
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agentgrpo.doctor.modes import Mode

# How much a heal lowers the learning rate, per mode, from the rate the policy broke at
# (`Situation.rate_it_broke_at`). A collapse cuts a decade and a half: the policy is destroyed, not drifting,
# and a decade is not enough to stay clear of it (measured on `agentgrpo demo --failure collapse --heal`,
# broken at 0.01: healed at 0.001, seeds 1-3 each blew up KL or collapsed again (seed 2 also at beta 0.2); at 3e-4
# all held; docs/heal.md). KL, instability and regression are drifts the doctor's fix line answers with less.
COLLAPSE_LR = 0.03
KL_LR = 0.5
INSTABILITY_LR = 0.3
REGRESSION_LR = 0.3
KL_BETA = 2.0  # beta multiplied by this (a run with beta 0 logs no KL, so the KL mode never fires there)
KL_BETA_MIN = 0.04  # TRL's earlier default, where beta is 0 or tiny
MAX_GRAD_NORM = 0.5  # instability: clip at least this hard
LENGTH_HEADROOM = 1.25  # length: the new cap is the longest completion before the onset, times this


@dataclass(frozen=True)
class Situation:
    """What a remedy reads: ``setting(name)`` the GRPOConfig value now (TRL's default when unset);
    ``heal_rewards`` the fallback rewards the config names (None: none); ``rows`` the metrics.jsonl records
    up to the checkpoint the run resumes from (before the onset); ``broke`` the records after it, up to the
    onset (the updates that broke the policy); ``relapse``: the learning rate now is one an earlier heal set
    (the failure came back under it)."""

    setting: Callable[[str], Any]
    heal_rewards: list | None = None
    rows: list[Mapping] = field(default_factory=list)
    broke: list[Mapping] = field(default_factory=list)
    relapse: bool = False

    def rate_it_broke_at(self) -> float:
        """The rate the policy broke at, never above the configured peak.

        A first failure: the lowest positive learning rate logged in ``broke`` (the logged rate of step s is
        the rate of update s; the onset, a change point, can be a step early or late, so the window runs to
        it): a policy that broke in the warm-up broke at a fraction of the peak. A relapse: the peak, the
        rate the earlier heal set; the segment's warm-up fractions of it are the heal's own schedule, not
        evidence of a lower rate that broke it (a relapse dated in the warm-up would otherwise cut the healed
        rate twice, by the warm-up fraction and by the remedy)."""
        peak = self.setting("learning_rate")
        if self.relapse:
            return peak
        logged = [r["learning_rate"] for r in self.broke if isinstance(r.get("learning_rate"), int | float)
                  and math.isfinite(r["learning_rate"]) and r["learning_rate"] > 0]
        return min([peak, *logged])


@dataclass(frozen=True)
class Remedy:
    """``fix``: the remedy in words (what heal.jsonl and the CLI say); ``change(situation)``: the settings to
    change, or None to stop (then ``stop_reason`` says why); ``change=None``: this mode always stops."""

    fix: str
    change: Callable[[Situation], dict | None] | None = None
    stop_reason: str = ""

    def changes(self, situation: Situation) -> dict | None:
        """The settings to change (only those that differ from now; empty: the remedy is already in place),
        or None: stop (`stop_reason`)."""
        if self.change is None:
            return None
        changed = self.change(situation)
        if changed is None:
            return None
        return {k: v for k, v in changed.items() if k == "rewards" or v != situation.setting(k)}


def _lower_lr(factor: float) -> Callable[[Situation], dict]:
    """The new peak learning rate: ``factor`` times the rate the policy broke at (the peak, or lower where the
    failure began while the schedule was below it)."""
    return lambda s: {"learning_rate": _round(s.rate_it_broke_at() * factor)}


def _collapse(s: Situation) -> dict:
    out = _lower_lr(COLLAPSE_LR)(s)
    temperature = s.setting("temperature")
    if temperature is not None and temperature < 1.0:  # sample at least the model's own distribution
        out["temperature"] = 1.0
    if not s.setting("beta"):  # "keep beta > 0": a KL term holds the policy near the reference
        out["beta"] = KL_BETA_MIN
    return out


def _kl(s: Situation) -> dict:
    beta = s.setting("beta") or 0.0
    return {"beta": _round(max(beta * KL_BETA, KL_BETA_MIN)), **_lower_lr(KL_LR)(s)}


def _instability(s: Situation) -> dict:
    out = _lower_lr(INSTABILITY_LR)(s)
    clip = s.setting("max_grad_norm")
    if clip is None or clip <= 0 or clip > MAX_GRAD_NORM:
        out["max_grad_norm"] = MAX_GRAD_NORM
    if s.setting("fp16"):
        out["fp16"] = False
    return out


def _fallback_rewards(s: Situation) -> dict | None:
    return {"rewards": list(s.heal_rewards)} if s.heal_rewards else None


def _length(s: Situation) -> dict:
    """Truncated completions leave the loss; the cap comes down to what the policy wrote before the onset;
    the fallback rewards, where the config names them, replace the gamed ones."""
    out = {"mask_truncated_completions": True}
    cap = s.setting("max_completion_length")
    longest = max((r["completions/max_length"] for r in s.rows
                   if isinstance(r.get("completions/max_length"), int | float)
                   and math.isfinite(r["completions/max_length"])), default=None)
    if longest is not None and cap:
        out["max_completion_length"] = int(min(cap, max(8, math.ceil(longest * LENGTH_HEADROOM))))
    return {**out, **(_fallback_rewards(s) or {})}


def _round(x: float) -> float:
    """Three significant digits: 0.05 * 0.1 is recorded as 0.005, not 0.005000000000000001."""
    return float(f"{x:.3g}")


NO_REMEDY = "changing it is your call"

# Every mode the doctor reports -> its remedy. tests/test_heal.py checks the table covers `Mode`.
REMEDIES: dict[Mode, Remedy] = {
    Mode.INSTABILITY: Remedy("learning rate x0.3 (of the rate it broke at), clip gradients (max_grad_norm <= 0.5), "
                             "no fp16", _instability),
    Mode.KL: Remedy("raise beta x2 (at least 0.04); learning rate x0.5 (of the rate it broke at)", _kl),
    Mode.COLLAPSE: Remedy("learning rate x0.03 (of the rate it broke at); beta >= 0.04 where it was 0; sample at "
                          "temperature >= 1.0", _collapse),
    Mode.REGRESSION: Remedy("learning rate x0.3 (of the rate it broke at)", _lower_lr(REGRESSION_LR)),
    Mode.ZERO_VARIANCE: Remedy("stop", None, "identical groups: the task's difficulty or the reward must change; "
                               + NO_REMEDY),
    Mode.HACKING: Remedy("switch to heal_rewards when the config names them, else stop", _fallback_rewards,
                         "the trained reward is gamed and no heal_rewards are named; " + NO_REMEDY),
    Mode.LENGTH: Remedy("mask truncated completions out of the loss; lower max_completion_length to the longest "
                        "completion before the onset x1.25; heal_rewards when named", _length),
    Mode.TOOLS: Remedy("stop", None, "tool misuse: the reward or the tool must change; " + NO_REMEDY),
    Mode.STALL: Remedy("stop", None, "the reward does not learn: nothing to roll back from; " + NO_REMEDY),
    Mode.CONVERGENCE: Remedy("stop", None, "convergence is never a failure: nothing to heal"),
}


# Failures whose remedy reads heal_rewards (a heal_rewards setting is of use only when one of them can stop a run).
USES_HEAL_REWARDS: tuple[Mode, ...] = (Mode.HACKING, Mode.LENGTH)
# Failures that leave the model no worse than where the segment began (nothing was learned, or nothing was left
# to learn): a run that stops on one may end at any checkpoint of its lineage, not only one before the onset.
HARMLESS: tuple[Mode, ...] = (Mode.STALL, Mode.ZERO_VARIANCE, Mode.CONVERGENCE)


def remedy_for(mode: str) -> Remedy:
    """The table's remedy for ``mode`` (a `Mode` or its value)."""
    return REMEDIES[Mode(mode)]
