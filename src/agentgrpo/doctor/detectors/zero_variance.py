"""No learning signal: (nearly) every group has identical rewards from the start and through the run.

GRPO's advantage is a reward minus its group's mean: when all completions of a prompt score the same, the
prompt contributes no gradient. The share of identical groups (``frac_reward_zero_std``; when that is not
logged, the share of steps whose batch ``reward_std`` is 0; without either, a reward exactly constant on
every logged step, which no batch of differing samples gives) at or above ``NO_SIGNAL_ZERO_STD`` in the first
and in the last ``EDGE_FRAC`` of the run and over the whole run is a failure: the run never had anything to
learn from. (A run that learned first and then saturated is the convergence detector's "saturated" warning, unless the
late mean reward sits well below the best a sample earns (`below_best`): the groups are then identical at
several levels, each prompt stuck on one answer, and that is a failure.)

Beside a stall: when a majority (``NO_SIGNAL_MAJORITY``) of groups carry no signal early, late and over the
run and the reward stalled (the stall detector's own rule), the missing signal is the actionable cause and is
named as a failure too (state ``majority``): the minority that carries a signal did not make the run learn
either, so the stall stays a failure of its own beside it (not reported as this finding's consequence).
"""

from __future__ import annotations

import numpy as np

from agentgrpo.doctor import names, stats
from agentgrpo.doctor import thresholds as th
from agentgrpo.doctor.curves import Curves
from agentgrpo.doctor.detectors.stall import stalled
from agentgrpo.doctor.detectors.text import num, pct
from agentgrpo.doctor.finding import FAILURE, OK, THROUGHOUT, Finding, confidence
from agentgrpo.doctor.modes import Mode

MAJORITY = "majority"  # state: most (not nearly all) groups are silent, beside a reward that did not learn

NAME = Mode.ZERO_VARIANCE
FIX = (
    "the groups are identical, so advantages are zero: the task is too hard (all fail) or too easy "
    "(all pass) for the model, or generation is degenerate; make the reward denser (partial credit), adjust "
    "task difficulty, or raise temperature / num_generations so groups differ"
)


def _silent(curves: Curves) -> tuple[np.ndarray, np.ndarray, str] | None:
    """(steps, per-step share of signal-less groups, what it is) from frac_reward_zero_std or reward_std."""
    x, z = curves.table.series(names.FRAC_ZERO_STD)
    if len(z) >= th.MIN_POINTS:
        return x, z, "groups with identical rewards (frac_reward_zero_std)"
    x, s = curves.table.series(names.REWARD_STD)
    if len(s) >= th.MIN_POINTS:
        return x, (np.abs(s) <= 1e-9).astype(float), "steps with reward_std = 0 (every completion scored the same)"
    x, r = curves.table.series(names.REWARD)
    if len(r) >= th.MIN_POINTS and float(np.ptp(r)) == 0.0:
        # a batch mean that never changes by a single bit, step after step: every sample scored the same
        return x, np.ones(len(r)), f"steps whose mean reward is exactly {r[0]:.6g}, as on every other step"
    return None


def detect(curves: Curves) -> Finding:
    found = _silent(curves)
    if found is None:
        return curves.unjudged(NAME, names.FRAC_ZERO_STD)
    x, share, how = found
    early, late = (float(np.mean(w)) for w in stats.windows(share, th.EDGE_FRAC))
    whole = float(np.mean(share))
    evidence = [f"{how}: {pct(early)} early, {pct(late)} late, {pct(whole)} over the run"]
    lowest = min(early, late, whole)
    return (
        _no_signal_throughout(curves, int(x[0]), lowest, evidence)
        or _majority_beside_a_stall(curves, int(x[0]), lowest, whole, evidence)
        or _identical_below_best(curves, x, share, late, evidence)
        or Finding(detector=NAME, status=OK, verdict="groups carry a learning signal", evidence=evidence)
    )


def _majority_beside_a_stall(curves: Curves, onset: int, lowest: float, whole: float, evidence: list[str]):
    """Most groups (not nearly all) without a signal beside a reward that did not learn: the stall's cause."""
    if lowest < th.NO_SIGNAL_MAJORITY or not stalled(curves):
        return None
    return Finding(
        detector=NAME,
        status=FAILURE,
        verdict=f"most groups carry no learning signal ({pct(whole)}): the cause of the stall",
        confidence=confidence(2.0 * lowest / th.NO_SIGNAL_MAJORITY, 2.0, []),
        onset=onset,
        evidence=evidence + ["the reward is flat: the groups that differ were too few to move it"],
        fix=FIX,
        metrics=[names.FRAC_ZERO_STD, names.REWARD_STD],
        state=MAJORITY,
    )


def _no_signal_throughout(curves: Curves, onset: int, lowest: float, evidence: list[str]):
    """Nearly every group identical early, late and over the run (``NO_SIGNAL_ZERO_STD``): a failure."""
    if lowest < th.NO_SIGNAL_ZERO_STD:
        return None
    evidence = list(evidence)
    grad = curves.curve(names.GRAD_NORM)
    if grad is not None:
        evidence.append(f"grad_norm median {num(float(np.median(grad.y)))}")
    std = curves.curve(names.REWARD_STD)
    if std is not None:
        evidence.append(f"reward_std median {num(float(np.median(std.y)))}")
    return Finding(
        detector=NAME,
        status=FAILURE,
        verdict="no learning signal: zero-variance groups throughout",
        confidence=confidence(2.0 * lowest / th.NO_SIGNAL_ZERO_STD, 2.0, [lowest >= th.SATURATED_ZERO_STD]),
        onset=onset,
        evidence=evidence,
        fix=FIX,
        metrics=[names.FRAC_ZERO_STD, names.REWARD_STD, names.GRAD_NORM],
        state=THROUGHOUT,
    )


def below_best(curves: Curves) -> tuple[float, float, float] | None:
    """(late mean reward, late best sample, late worst sample) when the batch's best and worst samples are
    logged (``reward_max``, ``reward_min``) and the late mean sits below the best by at least
    ``BELOW_BEST`` of their range: the samples do not all earn the most any sample earns, so groups that are
    identical there are identical at several levels (each prompt gets one answer, right or wrong), not a task
    solved. None otherwise."""
    best, worst, mean = (curves.curve(n) for n in (names.REWARD_MAX, names.REWARD_MIN, names.REWARD))
    if best is None or worst is None or mean is None:
        return None
    top, bottom, level = best.late, worst.late, mean.late
    if not top - bottom > 0 or top - level < th.BELOW_BEST * (top - bottom):
        return None
    return level, top, bottom


def _identical_below_best(curves: Curves, x, share, late: float, evidence: list[str]) -> Finding | None:
    """Most late groups identical (``SATURATED_ZERO_STD``) while the mean reward sits well below the best a
    sample earns (`below_best`): the groups stopped carrying a signal before the task was solved. Dated where
    the share of identical groups first reached half of its late level."""
    gap = below_best(curves) if late >= th.SATURATED_ZERO_STD else None
    if gap is None:
        return None
    level, top, bottom = gap
    onset = int(x[int(np.argmax(share >= 0.5 * late))])
    return Finding(
        detector=NAME,
        status=FAILURE,
        verdict=f"no learning signal: {pct(late)} of late groups identical below the best reward",
        confidence=confidence(2.0 * late / th.SATURATED_ZERO_STD, 2.0, []),
        onset=onset,
        evidence=evidence + [
            f"late mean reward {num(level)} against a best sample of {num(top)} (worst {num(bottom)}): the "
            "identical groups are not all at the top, so the task is not solved; each prompt gets one answer"
        ],
        fix=FIX,
        metrics=[names.FRAC_ZERO_STD, names.REWARD, names.REWARD_MAX],
    )

