"""The spread of rewards within groups, the yardstick of a material reward gain (stall, KL drift)."""

from __future__ import annotations

import math

import numpy as np

from agentgrpo.doctor import names
from agentgrpo.doctor.curves import Curves
from agentgrpo.doctor.detectors.text import num


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
