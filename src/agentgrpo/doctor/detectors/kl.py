"""KL blow-up: KL grows by a large factor over the run's own baseline, or spikes together with grad_norm.

Per-token KL starts at 0 (the policy is the reference) and a stable run settles at some level; that level
differs between recipes, so a fixed limit alone says nothing. A blow-up is either

* a sustained level (rolling median of ``KL_SMOOTH`` logs) of at least ``KL_BLOWUP`` that is at least
  ``KL_GROWTH`` times the run's baseline (the smaller of its early level and its median): the early level
  catches growth, the median catches a run whose first logs are already the explosion; or
* at least ``SPIKES_MIN`` logged steps where KL and grad_norm both spike (``SPIKE`` times their medians).

KL that is high from the start but flat is a warning with context, not a blow-up, and explains nothing else.
"""

from __future__ import annotations

import numpy as np

from agentgrpo.doctor.modes import Mode
from agentgrpo.doctor import names, stats
from agentgrpo.doctor import thresholds as th
from agentgrpo.doctor.detectors.text import num
from agentgrpo.doctor.finding import FAILURE, OK, WARNING, Finding, confidence, not_judged
from agentgrpo.doctor.signals import Signals

NAME = Mode.KL
FIX = (
    "lower the learning rate (or warm it up), clip gradients (max_grad_norm), raise beta to hold the "
    "policy near the reference; check generation settings (a broken sampler or grammar constraint can "
    "make KL explode)"
)
FIX_HIGH = (
    "KL is high but not growing: check beta and the reference model (a different tokenizer/chat template or "
    "a LoRA reference mismatch gives a constant KL offset); judge the run by its other detectors"
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


def _raw_peak(sig: Signals) -> tuple[float, int]:
    x, y = sig.table.series(names.KL)
    i = int(np.argmax(y))
    return float(y[i]), int(x[i])


def _spikes(sig: Signals, base: float) -> list[int]:
    """Steps where KL (>= SPIKE x its median and x the baseline) and grad_norm (>= SPIKE x median) both spike."""
    pair = sig.pair(names.KL, names.GRAD_NORM)
    if pair is None:
        return []
    ca, cb = sig.table.columns[names.KL], sig.table.columns[names.GRAD_NORM]
    ok = np.isfinite(ca) & np.isfinite(cb)
    x, kl, grad = sig.table.steps[ok], ca[ok], np.abs(cb[ok])
    k_med, g_med = float(np.median(kl)), float(np.median(grad))
    hot = (kl >= th.SPIKE * max(k_med, base, 1e-12)) & (grad >= th.SPIKE * max(g_med, 1e-12))
    return [int(s) for s in x[hot]]


def detect(sig: Signals) -> Finding:
    if not sig.table.has(names.KL):
        return not_judged(NAME, "kl (TRL logs it only when beta > 0)")
    curve = sig.curve(names.KL)
    if curve is None:
        return sig.unjudged(NAME, names.KL)
    x, y = curve.x, curve.y
    smooth = rolling_median(y, th.KL_SMOOTH)
    peak = int(np.argmax(smooth))
    base = max(min(curve.early, float(np.median(y))), 1e-6)
    raw, raw_step = _raw_peak(sig)
    quoted = (
        f"raw kl peaked at {num(raw)} at step {raw_step}; its rolling median of {th.KL_SMOOTH} logs "
        f"peaked at {num(smooth[peak])} at step {x[peak]:.0f} ({num(curve.early)} early, {num(curve.late)} late)"
    )
    grown = smooth[peak] >= th.KL_BLOWUP and smooth[peak] >= th.KL_GROWTH * base
    spikes = _spikes(sig, base)
    if not grown and len(spikes) < th.SPIKES_MIN:
        if curve.early >= th.KL_HIGH:
            return Finding(
                detector=NAME,
                status=WARNING,
                verdict=f"KL high but flat: about {num(curve.early)} from the start, not growing",
                confidence=0.6,
                evidence=[
                    quoted,
                    f"peak is {smooth[peak] / base:.1f}x the run's baseline (a blow-up needs {th.KL_GROWTH:.0f}x)",
                ],
                fix=FIX_HIGH,
                metrics=[names.KL],
                state="high_flat",
            )
        return Finding(
            detector=NAME,
            status=OK,
            verdict=f"KL stable: rolling median at most {num(smooth[peak])}",
            evidence=[quoted],
            metrics=[names.KL],
        )
    evidence = [quoted]
    if grown:
        first = int(np.argmax((smooth >= th.KL_BLOWUP) & (smooth >= th.KL_GROWTH * base)))
        onset = float(x[first])
        pos = y[: first + 1] > 0  # a KL of exactly 0 (before the first update) has no logarithm to fit
        if pos.sum() >= 4:
            rise = stats.ramp(x[: first + 1][pos], np.log10(y[: first + 1][pos]), +1)
            if rise is not None and rise.t >= th.T_CHANGE:
                onset = rise.onset
        evidence.append(f"sustained kl {smooth[peak] / base:.0f}x the run's baseline {num(base)}")
    else:
        onset = float(spikes[0])
    if spikes:
        evidence.append(
            f"kl and grad_norm spiked together ({th.SPIKE:.0f}x their medians) at steps "
            + ", ".join(str(s) for s in spikes[:6])
            + (" ..." if len(spikes) > 6 else "")
        )
    supports = []
    for metric in (names.GRAD_NORM, names.LOSS):
        other = sig.curve(metric)
        if other is not None:
            typical = float(np.median(np.abs(other.y))) or 1e-12
            top = float(np.max(np.abs(other.y)))
            spiked = top >= th.SPIKE * typical
            supports.append(spiked)
            if spiked:
                evidence.append(f"{metric} peaked at {num(top)} (median {num(typical)})")
    ratio = max(smooth[peak], raw if spikes else 0.0) / max(base * th.KL_GROWTH, 1e-12)
    return Finding(
        detector=NAME,
        status=FAILURE,
        verdict="KL blow-up",
        confidence=confidence(3.0 * min(max(ratio, 1.0), 10.0) ** 0.5, 3.0, supports),
        onset=int(round(onset)),
        evidence=evidence,
        fix=FIX,
        metrics=[names.KL, names.GRAD_NORM],
    )
