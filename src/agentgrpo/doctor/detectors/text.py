"""Evidence in numbers: short, uniform phrases the detectors build their findings from."""

from __future__ import annotations

import math

from agentgrpo.doctor.stats import Ramp


def num(value: float) -> str:
    """A number with 2-3 significant digits.

    >>> num(0.41234), num(1083.29), num(1e-05), num(2.0), num(float("nan"))
    ('0.412', '1083', '1e-05', '2', 'n/a')
    """
    if value is None or not math.isfinite(value):
        return "n/a"
    if value == 0:
        return "0"
    if abs(value) >= 100:
        return f"{value:.0f}"
    text = f"{value:.3g}"
    return text


def moved(metric: str, ramp: Ramp, verb: str | None = None) -> str:
    """``"reward_std fell 0.41 → 0.03 between steps 80 and 140"``.

    >>> moved("entropy", Ramp(80.0, 140.0, 1.1, 0.06, -9.0))
    'entropy fell 1.1 → 0.06 between steps 80 and 140 (t = -9.0)'
    """
    verb = verb or ("rose" if ramp.change > 0 else "fell")
    t = f"{ramp.t:.1f}" if math.isfinite(ramp.t) else ("inf" if ramp.t > 0 else "-inf")
    return (
        f"{metric} {verb} {num(ramp.before)} → {num(ramp.after)} "
        f"between steps {ramp.onset:.0f} and {ramp.settled:.0f} (t = {t})"
    )


def span(metric: str, early: float, late: float) -> str:
    """``"reward 0.21 early → 0.23 late"``."""
    return f"{metric} {num(early)} early → {num(late)} late"


def pct(fraction: float) -> str:
    """``0.963 -> '96%'``."""
    return f"{100 * fraction:.0f}%"
