"""KL blow-up: the policy leaves the reference model (per-token KL far above what a stable run reaches)."""

from __future__ import annotations

import numpy as np

from agentgrpo.doctor import names, stats
from agentgrpo.doctor import thresholds as th
from agentgrpo.doctor.detectors.text import num
from agentgrpo.doctor.finding import FAILURE, OK, Finding, confidence, not_judged, too_short
from agentgrpo.doctor.signals import Signals

NAME = "kl"
FIX = (
    "lower the learning rate (or warm it up), clip gradients (max_grad_norm), raise beta to hold the "
    "policy near the reference; check generation settings (a broken sampler or grammar constraint can "
    "make KL explode)"
)


def rolling_median(y: np.ndarray, k: int) -> np.ndarray:
    """Median of each point with its neighbours (window k, edges padded).

    >>> rolling_median(np.array([0.1, 0.1, 9.0, 0.1, 0.1]), 3).tolist()
    [0.1, 0.1, 0.1, 0.1, 0.1]
    """
    if len(y) < k:
        return y.copy()
    pad = np.pad(y, k // 2, mode="edge")
    return np.median(np.lib.stride_tricks.sliding_window_view(pad, k), axis=1)


def detect(sig: Signals) -> Finding:
    if not sig.table.has(names.KL):
        return not_judged(NAME, "kl (TRL logs it only when beta > 0)")
    curve = sig.curve(names.KL)
    if curve is None:
        return too_short(NAME, names.KL, sig.count(names.KL), th.MIN_POINTS)
    x, y = curve.x, curve.y
    smooth = rolling_median(y, th.KL_SMOOTH)
    peak = int(np.argmax(smooth))
    if smooth[peak] < th.KL_BLOWUP:
        return Finding(
            NAME,
            OK,
            f"KL stable: at most {num(smooth[peak])} (limit {num(th.KL_BLOWUP)})",
            0.0,
            None,
            [f"kl {num(curve.early)} early → {num(curve.late)} late"],
            "",
            [names.KL],
        )
    first = int(np.argmax(smooth >= th.KL_BLOWUP))
    onset = float(x[first])
    if first >= 3:
        rise = stats.ramp(x[: first + 1], np.log10(np.maximum(y[: first + 1], 1e-8)), +1)
        if rise is not None and rise.t >= th.T_CHANGE:
            onset = rise.onset
    evidence = [
        f"kl reached {num(smooth[peak])} at step {x[peak]:.0f} (limit {num(th.KL_BLOWUP)}; "
        f"{num(curve.early)} early, {num(curve.late)} late)"
    ]
    supports = []
    for metric in (names.GRAD_NORM, names.LOSS):
        other = sig.curve(metric)
        if other is not None:
            typical = float(np.median(np.abs(other.y))) or 1e-12
            top = float(np.max(np.abs(other.y)))
            spiked = top >= 10 * typical
            supports.append(spiked)
            if spiked:
                evidence.append(f"{metric} peaked at {num(top)} (median {num(typical)})")
    ratio = smooth[peak] / th.KL_BLOWUP
    return Finding(
        NAME,
        FAILURE,
        "KL blow-up",
        confidence(3.0 * min(ratio, 10.0) ** 0.5, 3.0, supports),
        int(round(onset)),
        evidence,
        FIX,
        [names.KL, names.GRAD_NORM],
    )
