"""Numerical instability: grad_norm, loss, KL, reward or entropy logged as NaN or Inf.

A NaN is not a missing value: from that step the weights (or the statistics) are garbage. The onset is where
the instability began: the first spike of kl or |grad_norm| (``SPIKE`` times its median) before the first
non-finite value (spikes usually precede a NaN), else the NaN's step.
"""

from __future__ import annotations

import numpy as np

from agentgrpo.doctor import names
from agentgrpo.doctor import thresholds as th
from agentgrpo.doctor.curves import Curves
from agentgrpo.doctor.detectors.text import num
from agentgrpo.doctor.finding import FAILURE, OK, Finding, confidence, not_judged
from agentgrpo.doctor.modes import Mode

NAME = Mode.INSTABILITY
WATCHED = (names.GRAD_NORM, names.LOSS, names.KL, names.REWARD, names.ENTROPY)
FIX = (
    "resume from a checkpoint before the onset with a lower learning rate, gradient clipping "
    "(max_grad_norm) and bf16/fp32 instead of fp16; check the reward functions for NaN/Inf outputs"
)


def detect(curves: Curves) -> Finding:
    logged = [m for m in WATCHED if curves.table.has(m) or curves.nonfinite(m)]
    if not logged:
        return not_judged(NAME, "grad_norm, loss and kl")
    bad = {m: curves.nonfinite(m) for m in logged}
    bad = {m: s for m, s in bad.items() if s}
    if not bad:
        return Finding(detector=NAME, status=OK, verdict="no NaN/Inf", evidence=[f"checked {', '.join(logged)}"])
    first = min(s[0] for s in bad.values())
    evidence = [
        f"{m} is NaN/Inf at step {s[0]}" + (f" and {len(s) - 1} later steps" if len(s) > 1 else "")
        for m, s in sorted(bad.items(), key=lambda kv: kv[1][0])
    ]
    onset, precursor = _precursor(curves, first)
    if precursor:
        evidence.append(precursor)
    return Finding(
        detector=NAME,
        status=FAILURE,
        verdict=f"numerical instability: NaN/Inf from step {first}",
        confidence=confidence(2.0, 1.0, [bool(precursor)]),
        onset=onset,
        evidence=evidence,
        fix=FIX,
        metrics=[m for m in (names.GRAD_NORM, names.KL, names.LOSS) if curves.table.has(m)],
    )


def _precursor(curves: Curves, first: int) -> tuple[int, str]:
    """(onset, evidence): the first spike (``SPIKE`` x the median of the finite values before the NaN) of kl
    or grad_norm before the first non-finite value, where the instability began; else the NaN's step."""
    best = None
    for metric in (names.GRAD_NORM, names.KL):
        x, y = curves.table.series(metric)
        keep = x < first
        x, y = x[keep], np.abs(y[keep])
        if len(y) < th.MIN_POINTS:
            continue
        typical = float(np.median(y))
        hot = y >= th.SPIKE * max(typical, 1e-12)
        if hot.any():
            i = int(np.argmax(hot))
            if best is None or x[i] < best[0]:
                text = (
                    f"{metric} spikes began at step {x[i]}: {num(float(y[i]))} ({th.SPIKE:.0f}x its median "
                    f"{num(typical)} before the first NaN; {int(hot.sum())} such spikes)"
                )
                best = (int(x[i]), text)
    return best if best is not None else (first, "")
