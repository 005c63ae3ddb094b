"""Convergence and saturation: the reward rose and now sits at the top of its range.

Converged is not a failure. *Saturated* (most late groups identical, so most updates carry no signal) is a
warning: the run is done with these prompts, and further steps mostly do nothing.
"""

from __future__ import annotations

import numpy as np

from agentgrpo.doctor import names
from agentgrpo.doctor import thresholds as th
from agentgrpo.doctor.curves import Curves
from agentgrpo.doctor.detectors.objective import unpaid
from agentgrpo.doctor.detectors.stall import stalled_after_early_gain
from agentgrpo.doctor.detectors.text import num, pct, span
from agentgrpo.doctor.detectors.zero_variance import below_best
from agentgrpo.doctor.finding import CONVERGED, OK, SATURATED, WARNING, Finding
from agentgrpo.doctor.modes import Mode

NAME = Mode.CONVERGENCE
FIX_SATURATED = (
    "nothing left to learn from these prompts: stop here (keep the best checkpoint), or move to harder "
    "prompts / a curriculum, or raise num_generations or temperature to restore within-group differences"
)


def detect(curves: Curves) -> Finding:
    facts = curves.reward
    if facts is None:
        return curves.unjudged(NAME)
    return (
        _no_sustained_rise(facts)
        or _below_peak(facts)
        or _contradicted(curves, facts)
        or _saturated(curves, facts)
        or _still_rising(curves, facts)
        or _converged(curves, facts)
    )


def _not_converged(verdict: str, evidence: list[str]) -> Finding:
    return Finding(
        detector=NAME,
        status=OK,
        verdict=verdict,
        confidence=0.0,
        onset=None,
        evidence=evidence,
        fix="",
        metrics=[],
    )


def _no_sustained_rise(facts) -> Finding | None:
    if facts.learned:
        return None
    return _not_converged("not converged (no sustained rise)", [span("reward", facts.curve.early, facts.curve.late)])


def _below_peak(facts) -> Finding | None:
    if facts.near_peak:
        return None
    curve = facts.curve
    return _not_converged(
        "not converged: reward below its peak", [f"{span('reward', curve.early, curve.late)} (peak {num(facts.peak)})"]
    )


def _contradicted(curves: Curves, facts) -> Finding | None:
    """At its peak, but a sign contradicts convergence (`_against`)."""
    against = _against(curves)
    if not against:
        return None
    return Finding(
        detector=NAME,
        status=OK,
        verdict="not converged: the reward is at its peak, but " + "; ".join(against),
        evidence=[span("reward", facts.curve.early, facts.curve.late)] + against,
    )


def _plateau_evidence(curves: Curves, facts) -> list[str]:
    curve = facts.curve
    evidence = [
        f"{span('reward', curve.early, curve.late)}, at the top of its range ({num(facts.low)}–{num(facts.peak)})"
    ]
    entropy, zero = curves.curve(names.ENTROPY), curves.curve(names.FRAC_ZERO_STD)
    if entropy is not None:
        evidence.append(span("entropy", entropy.early, entropy.late))
    if zero is not None:
        evidence.append(f"{pct(zero.late_mean)} of late groups have identical rewards")
    return evidence


def _saturated(curves: Curves, facts) -> Finding | None:
    """Converged with most late groups identical: nothing left to learn from these prompts (a warning)."""
    zero = curves.curve(names.FRAC_ZERO_STD)
    if zero is None or zero.late_mean < th.SATURATED_ZERO_STD or below_best(curves) is not None:
        return None  # identical groups below the best a sample earns are the zero-variance detector's failure
    evidence = _plateau_evidence(curves, facts)
    grad = curves.curve(names.GRAD_NORM)
    if grad is not None:
        evidence.append(f"grad_norm is 0 on {pct(float(np.mean(grad.edges[1] == 0)))} of late logs")
    return Finding(
        detector=NAME,
        status=WARNING,
        verdict="converged/saturated: zero-variance groups, nothing left to learn",
        confidence=0.8,
        onset=_plateau_start(facts),
        evidence=evidence,
        fix=FIX_SATURATED,
        metrics=[names.REWARD, names.FRAC_ZERO_STD],
        state=SATURATED,
    )


def _still_rising(curves: Curves, facts) -> Finding | None:
    if _late_trend(facts.curve) <= th.T_TREND:
        return None
    return Finding(
        detector=NAME,
        status=OK,
        verdict="learning: reward still rising",
        confidence=0.0,
        onset=None,
        evidence=_plateau_evidence(curves, facts),
        fix="",
        metrics=[],
    )


def _converged(curves: Curves, facts) -> Finding:
    zero = curves.curve(names.FRAC_ZERO_STD)
    agree = zero is not None and zero.late_mean >= th.CONVERGED_ZERO_STD
    verdict = "converged: reward at its plateau" + (", groups mostly agree" if agree else "")
    return Finding(
        detector=NAME,
        status=OK,
        verdict=verdict,
        confidence=0.7,
        onset=_plateau_start(facts),
        evidence=_plateau_evidence(curves, facts)
        + ["completions terminate, entropy not exploding, no reward component fell"],
        fix="",
        metrics=[names.REWARD],
        state=CONVERGED,
    )


def _against(curves: Curves) -> list[str]:
    """Signs that contradict convergence (a plateau is not enough): completions that do not terminate,
    entropy that exploded, a reward component that fell while the total rose, a plateau reached early and held
with no sign that the groups agree (`stalled_after_early_gain`)."""
    out = []
    clipped, term, length = curves.curve(names.CLIPPED), curves.curve(names.TERM_LENGTH), curves.curve(names.LENGTH)
    if clipped is not None and clipped.late >= th.TRUNCATION_HIGH:
        out.append(f"{pct(clipped.late)} of late completions are truncated (they do not terminate)")
    elif term is not None and length is not None and term.late <= th.TERMINATED_NONE * max(length.late, 1e-9):
        out.append("no completion terminates (mean terminated length ~0)")
    entropy = curves.curve(names.ENTROPY)
    if entropy is not None and entropy.early > 0 and entropy.late >= th.ENTROPY_EXPLOSION * entropy.early:
        out.append(f"entropy rose {num(entropy.early)} → {num(entropy.late)}")
    for comp in curves.table.components():
        curve = curves.curve(f"rewards/{comp}/mean")
        if curve is None:
            continue
        fall = curve.ramp(-1)
        if fall is not None and fall.t <= -th.T_CHANGE and curve.late < curve.early:
            out.append(f"reward component {comp} fell {num(curve.early)} → {num(curve.late)}")
    never = unpaid(curves)
    if never:
        out.append(never)
    early = stalled_after_early_gain(curves)
    if early:
        out.append(f"it stalled after an early gain: {early}")
    return out


def _late_trend(curve) -> float:
    half = len(curve.x) // 2
    from agentgrpo.doctor import stats

    return stats.trend(curve.x[half:], curve.y[half:]).t


def _plateau_start(facts) -> int | None:
    return int(round(facts.rise.settled)) if facts.rise is not None else None
