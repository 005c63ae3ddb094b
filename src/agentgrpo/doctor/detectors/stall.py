"""Stall: the reward shows no sustained rise beyond the run's own noise.

A weak rise (trend t >= T_FLAT but no significant ramp) is "inconclusive", unless over the whole run it
moved the reward by less than ``MATERIAL_GROUP`` of the spread of rewards within groups (median
``reward_std``; without it, for a reward that stays in [0, 1], the pass/fail spread sqrt(p(1-p)) at its
median p): a policy that improved by a fraction of what its own samples differ by has not learned.

Two kinds: groups still differ (reward_std real) but the policy does not improve; or the groups carry no
signal at all (most groups identical: everything fails, or everything passes from the start).
"""

from __future__ import annotations

import math

import numpy as np

from agentgrpo.doctor import names, stats
from agentgrpo.doctor import thresholds as th
from agentgrpo.doctor.curves import Curves
from agentgrpo.doctor.detectors.objective import unpaid
from agentgrpo.doctor.detectors.text import num, pct, span
from agentgrpo.doctor.finding import FAILURE, OK, WARNING, Finding, confidence
from agentgrpo.doctor.modes import Mode

NAME = Mode.STALL
FIX_FLAT = (
    "raise the learning rate or train longer; check the reward actually separates good from bad completions "
    "(look at samples); a larger group (num_generations) or higher temperature gives more signal"
)
FIX_UNPAID = (
    "the reward's gain is its shaping terms: the task reward almost never pays. Make it denser (partial credit), "
    "start from a model (or an SFT warm-up) that sometimes solves the task, or use easier prompts first"
)
FIX_NO_SIGNAL = (
    "the groups are identical, so advantages are zero: the task is too hard (all fail) or too easy "
    "(all pass) for the model; make the reward denser (partial credit), adjust task difficulty, or raise "
    "temperature / num_generations so groups differ"
)


def group_spread(curves: Curves) -> tuple[float, str]:
    """The spread of rewards within groups, and where it came from: the median logged ``reward_std``; without
    one, when every logged reward lies in [0, 1] (a success rate), the spread of a pass/fail reward with the
    run's median success rate p, sqrt(p (1 - p)); else 0 (unknown).

    >>> import numpy as np; from agentgrpo.doctor.table import MetricTable
    >>> t = MetricTable(np.arange(1, 21), {"reward": np.full(20, 0.1)}, {})
    >>> spread, how = group_spread(Curves(t)); round(spread, 3), how
    (0.3, 'pass/fail spread sqrt(p(1-p)) at p = 0.1')
    """
    spread = curves.curve(names.REWARD_STD)
    if spread is not None:
        return float(np.median(spread.y)), "reward_std"
    _, y = curves.table.series(names.REWARD)
    if len(y) and float(np.min(y)) >= 0.0 and float(np.max(y)) <= 1.0:
        p = float(np.median(y))
        return math.sqrt(p * (1.0 - p)), f"pass/fail spread sqrt(p(1-p)) at p = {num(p)}"
    return 0.0, "reward_std"


def stalled(curves: Curves) -> bool:
    """The stall's rule on its own: the reward did not learn, is not falling (trend ``t > -T_TREND``), and any
    rise it shows is not a material, significant one (the "inconclusive" case). Shared with the detectors
    that name a stall's cause."""
    facts = curves.reward
    if facts is None or facts.learned:
        return False
    if facts.curve.trend.t <= -th.T_TREND:
        return False
    return not weak_rise_beyond_noise(curves, facts)


def weak_rise_beyond_noise(curves: Curves, facts) -> bool:
    """A rising trend (``t >= T_FLAT``) of at least ``MATERIAL_RISE`` x the per-step noise that is not
    immaterial against the spread within groups (``MATERIAL_GROUP`` x `group_spread`): not yet learning,
    not a stall either."""
    trend = facts.curve.trend
    within, _ = group_spread(curves)
    immaterial = within > 0 and trend.change < th.MATERIAL_GROUP * within
    return trend.t >= th.T_FLAT and trend.change >= th.MATERIAL_RISE * stats.noise(facts.curve.y) and not immaterial


def _moved(facts) -> str:
    return span("reward", facts.curve.early, facts.curve.late)


def detect(curves: Curves) -> Finding:
    facts = curves.reward
    if facts is None:
        return curves.unjudged(NAME)
    return (
        _objective_never_pays(curves, facts)
        or _learning(facts)
        or _falling(facts)
        or _inconclusive(curves, facts)
        or _stall(curves, facts)
    )


def _objective_never_pays(curves: Curves, facts) -> Finding | None:
    """The reward rose (or rose weakly), but on its shaping terms: the task objective almost never pays."""
    trend = facts.curve.trend
    if trend.t <= -th.T_TREND or not (facts.learned or trend.t >= th.T_FLAT):
        return None
    never = unpaid(curves)
    if not never:
        return None
    return Finding(
        detector=NAME,
        status=FAILURE,
        verdict="stall: the task objective almost never pays",
        confidence=0.7,
        onset=int(facts.curve.x[0]),
        evidence=[f"{_moved(facts)}: the reward rose on its shaping terms", never],
        fix=FIX_UNPAID,
        metrics=[names.REWARD],
    )


def _learning(facts) -> Finding | None:
    if not facts.learned:
        return None
    rise = facts.rise
    return Finding(
        detector=NAME,
        status=OK,
        verdict="learning: reward rose beyond noise",
        confidence=0.0,
        onset=None,
        evidence=[f"{_moved(facts)}; rise begins at step {rise.onset:.0f} (t = {rise.t:.1f})"],
        fix="",
        metrics=[],
    )


def _falling(facts) -> Finding | None:
    trend = facts.curve.trend
    if trend.t > -th.T_TREND:
        return None
    return Finding(
        detector=NAME,
        status=WARNING,
        verdict="reward falling",
        confidence=confidence(trend.t, th.T_TREND, []),
        onset=int(facts.curve.x[0]),
        evidence=[f"{_moved(facts)} (trend t = {trend.t:.1f})"],
        fix=FIX_FLAT,
        metrics=[names.REWARD],
    )


def _inconclusive(curves: Curves, facts) -> Finding | None:
    if not weak_rise_beyond_noise(curves, facts):
        return None
    return Finding(
        detector=NAME,
        status=WARNING,
        verdict="inconclusive: a weak rise, not yet beyond noise",
        confidence=0.5,
        onset=None,
        evidence=[
            f"{_moved(facts)} (trend t = {facts.curve.trend.t:.1f}; a stall needs |t| < {th.T_FLAT:.0f}, "
            f"learning a ramp with t >= {th.T_CHANGE:.0f})"
        ],
        fix="train longer (or log more often) before judging",
        metrics=[names.REWARD],
    )


def _stall(curves: Curves, facts) -> Finding:
    """The failure: no sustained rise (or an immaterial one), with its cause: no signal, or flat within noise."""
    trend = facts.curve.trend
    evidence = [_how_flat(curves, facts)]
    supports = _no_learning_signal(curves, evidence)
    if supports:
        verdict, fix = "stall: no learning signal (zero-variance groups)", FIX_NO_SIGNAL
    else:
        evidence += _groups_still_differ(curves)
        verdict, fix = "stall: reward flat within noise", FIX_FLAT
    return Finding(
        detector=NAME,
        status=FAILURE,
        verdict=verdict,
        confidence=confidence(2 * th.T_FLAT - abs(trend.t), th.T_FLAT, supports or [False]),
        onset=int(facts.curve.x[0]),
        evidence=evidence,
        fix=fix,
        metrics=[names.REWARD, names.FRAC_ZERO_STD],
    )


def _how_flat(curves: Curves, facts) -> str:
    trend = facts.curve.trend
    if trend.t < th.T_FLAT:
        return f"{_moved(facts)}: no sustained rise (trend t = {trend.t:.1f}, below {th.T_FLAT:.0f})"
    within, within_how = group_spread(curves)
    return (
        f"{_moved(facts)}: a weak rise (trend t = {trend.t:.1f}) of {num(trend.change)} over the run, under "
        f"{th.MATERIAL_GROUP:.0%} of the reward spread within groups ({within_how} ≈ {num(within)})"
    )


def _no_learning_signal(curves: Curves, evidence: list[str]) -> list[bool]:
    """The supports of a stall without signal (most late groups identical; grad_norm near 0), their evidence
    added to ``evidence``; [] when the groups carry a signal."""
    zero = curves.curve(names.FRAC_ZERO_STD)
    if zero is None or zero.late_mean < th.NO_SIGNAL_ZERO_STD:
        return []
    evidence.append(
        f"{pct(zero.late_mean)} of groups have identical rewards late in the run (zero advantage, no gradient)"
    )
    supports = [True]
    grad = curves.curve(names.GRAD_NORM)
    if grad is not None:
        small = float(np.mean(grad.edges[1] <= 0.01 * max(float(np.median(np.abs(grad.y))), 1e-12)))
        evidence.append(f"grad_norm {num(grad.early)} early → {num(grad.late)} late")
        supports.append(small > 0)
    return supports


def _groups_still_differ(curves: Curves) -> list[str]:
    std = curves.curve(names.REWARD_STD)
    if std is None:
        return []
    if std.late > 0:
        return [f"groups do differ (reward_std ≈ {num(std.late)}), yet the policy does not improve"]
    return ["reward_std ≈ 0 late: completions score alike, so there is little to learn from"]
