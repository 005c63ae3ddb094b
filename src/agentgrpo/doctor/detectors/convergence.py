"""Convergence and saturation: the reward rose and now sits at the top of its range.

Converged is not a failure. *Saturated* (most late groups identical, so most updates carry no signal) is a
warning: the run is done with these prompts, and further steps mostly do nothing.
"""

from __future__ import annotations

import numpy as np

from agentgrpo.doctor import names
from agentgrpo.doctor import thresholds as th
from agentgrpo.doctor.detectors.text import num, pct, span
from agentgrpo.doctor.finding import OK, WARNING, Finding, not_judged
from agentgrpo.doctor.signals import Signals

NAME = "convergence"
FIX_SATURATED = (
    "nothing left to learn from these prompts: stop here (keep the best checkpoint), or move to harder "
    "prompts / a curriculum, or raise num_generations or temperature to restore within-group differences"
)


def detect(sig: Signals) -> Finding:
    facts = sig.reward
    if facts is None:
        return not_judged(NAME, "reward")
    curve = facts.curve
    if not facts.learned:
        return Finding(
            NAME,
            OK,
            "not converged (no sustained rise)",
            0.0,
            None,
            [span("reward", curve.early, curve.late)],
            "",
            [],
        )
    if not facts.near_peak:
        return Finding(
            NAME,
            OK,
            "not converged: reward below its peak",
            0.0,
            None,
            [f"{span('reward', curve.early, curve.late)} (peak {num(facts.peak)})"],
            "",
            [],
        )
    late_trend = _late_trend(curve)
    evidence = [
        f"{span('reward', curve.early, curve.late)}, at the top of its range "
        f"({num(facts.low)}–{num(facts.peak)})"
    ]
    zero = sig.curve(names.FRAC_ZERO_STD)
    entropy = sig.curve(names.ENTROPY)
    if entropy is not None:
        evidence.append(span("entropy", entropy.early, entropy.late))
    if zero is not None:
        evidence.append(f"{pct(zero.late_mean)} of late groups have identical rewards")
        if zero.late_mean >= th.SATURATED_ZERO_STD:
            grad = sig.curve(names.GRAD_NORM)
            if grad is not None:
                evidence.append(f"grad_norm is 0 on {pct(float(np.mean(grad.edges[1] == 0)))} of late logs")
            return Finding(
                NAME,
                WARNING,
                "converged/saturated: zero-variance groups, nothing left to learn",
                0.8,
                _plateau_start(facts),
                evidence,
                FIX_SATURATED,
                [names.REWARD, names.FRAC_ZERO_STD],
            )
    if late_trend > th.T_TREND:
        return Finding(NAME, OK, "learning: reward still rising", 0.0, None, evidence, "", [])
    agree = zero is not None and zero.late_mean >= th.CONVERGED_ZERO_STD
    verdict = "converged: reward at its plateau" + (", groups mostly agree" if agree else "")
    return Finding(NAME, OK, verdict, 0.7, _plateau_start(facts), evidence, "", [names.REWARD])


def _late_trend(curve) -> float:
    half = len(curve.x) // 2
    from agentgrpo.doctor import stats

    return stats.trend(curve.x[half:], curve.y[half:]).t


def _plateau_start(facts) -> int | None:
    return int(round(facts.rise.settled)) if facts.rise is not None else None
