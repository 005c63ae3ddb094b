"""Regression: the reward rose significantly, then fell significantly and stayed down (learned, then crashed).

Judged on the two sides of the smoothed reward's peak: a significant rise (ramp t >= T_CHANGE) before it,
a significant fall after it, and at the end at least ``REGRESSION_LOST`` of the gain given back. The onset is
where the fall began, not the run's start: this is not a stall.
"""

from __future__ import annotations

import numpy as np

from agentgrpo.doctor import names, stats
from agentgrpo.doctor import thresholds as th
from agentgrpo.doctor.curves import Curves
from agentgrpo.doctor.detectors.text import moved
from agentgrpo.doctor.finding import FAILURE, OK, Finding, confidence
from agentgrpo.doctor.modes import Mode

NAME = Mode.REGRESSION
FIX = (
    "resume from the checkpoint at the reward's peak (before the onset) with a lower learning rate or a "
    "larger beta; check entropy and samples at the onset for degenerate output"
)


def crash(curves: Curves) -> tuple[stats.Ramp, stats.Ramp, float] | None:
    """(rise before the peak, fall after it, share of the gain lost) when the reward learned then crashed."""
    facts = curves.reward
    if facts is None:
        return None
    curve = facts.curve
    x, y, s = curve.x, curve.y, curve.smooth
    peak = int(np.argmax(s))
    if peak < 3 or len(y) - peak < 4:
        return None
    rise = stats.ramp(x[: peak + 1], y[: peak + 1], +1)
    fall = stats.ramp(x[peak:], y[peak:], -1)
    if rise is None or fall is None or rise.t < th.T_CHANGE or fall.t > -th.T_CHANGE:
        return None
    gain = float(s[peak]) - rise.before
    if gain <= 0:
        return None
    end = stats.level(curve.edges[1])
    lost = (float(s[peak]) - end) / gain
    return (rise, fall, lost) if lost >= th.REGRESSION_LOST else None


def detect(curves: Curves) -> Finding:
    if curves.reward is None:
        return curves.unjudged(NAME)
    found = crash(curves)
    if found is None:
        return Finding(detector=NAME, status=OK, verdict="no regression (the reward kept what it gained)")
    rise, fall, lost = found
    return Finding(
        detector=NAME,
        status=FAILURE,
        verdict="regression: the reward rose, then crashed",
        confidence=confidence(min(rise.t, -fall.t), th.T_CHANGE, [lost >= 0.9]),
        onset=int(round(fall.onset)),
        evidence=[moved("reward", rise), moved("reward", fall), f"{lost:.0%} of the gain lost by the end"],
        fix=FIX,
        metrics=[names.REWARD, names.ENTROPY, names.REWARD_STD],
    )
