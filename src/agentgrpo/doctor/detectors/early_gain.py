"""An early gain: the reward's significant rise that settled within the first ``EARLY_GAIN_SPAN`` of the run and
was kept. The early-vs-late comparison cannot see it (the early window already holds its plateau): the stall
detector judges the plateau after it, the hacking detector counts it as the trained reward's rise."""

from __future__ import annotations

from dataclasses import dataclass

from agentgrpo.doctor import names, stats
from agentgrpo.doctor import thresholds as th
from agentgrpo.doctor.curves import Curves


@dataclass(frozen=True)
class EarlyGain:
    """A significant rise that settled within the first ``EARLY_GAIN_SPAN`` of the run, and the plateau after it:
    its change (fitted trend), its step-to-step noise, its share of the run."""

    rise: stats.Ramp
    change: float
    t: float
    noise: float
    share: float

    @property
    def at_ceiling(self) -> bool:
        """The plateau's noise vanished against the gain (every sample scores alike, as at a ceiling) and the
        plateau kept its level."""
        bound = th.PLATEAU_NOISE_KEPT * self.rise.change
        return self.noise < bound and abs(self.change) < bound

    @property
    def flat(self) -> bool:
        """The plateau moved by less than its own step-to-step noise, or its trend is not significant
        (``|t| < T_TREND``)."""
        return abs(self.change) < self.noise or abs(self.t) < th.T_TREND


def early_gain(curves: Curves) -> EarlyGain | None:
    """The reward's rise when it was significant (ramp t >= ``T_CHANGE``), settled within the first
    ``EARLY_GAIN_SPAN`` of the run's steps and was kept (late level above the level before it), with at least
    ``PLATEAU_MIN_POINTS`` logged points after it; else None. A rise that early is inside the "early" window, so
    the early-vs-late comparison (`RewardFacts.learned`) cannot see it."""
    facts = curves.reward
    rise = facts.rise if facts is not None else None
    if rise is None or rise.t < th.T_CHANGE or rise.change <= 0:
        return None
    curve = facts.curve
    first, last = float(curve.x[0]), float(curve.x[-1])
    if rise.settled - first > th.EARLY_GAIN_SPAN * max(last - first, 1.0) or curve.late <= rise.before:
        return None
    x, y = curves.table.series(names.REWARD)
    on = x >= rise.settled
    if int(on.sum()) < th.PLATEAU_MIN_POINTS:
        return None
    share = (last - rise.settled) / max(last - first, 1.0)
    plateau = stats.trend(x[on], y[on])
    return EarlyGain(rise, plateau.change, plateau.t, stats.noise(y[on]), share)
