"""One detector per failure mode. Each module has ``NAME`` and ``detect(curves) -> Finding``.

The order below is the order of precedence when two failures begin at the same step: a numerical
instability or a KL blow-up comes before a collapse, a collapse before a stall. Every name in ``NAMES`` (and
every alias) is a mode ``agentgrpo doctor`` can report and ``--stop_on`` / ``doctor_stop_on`` accepts.
"""

from __future__ import annotations

from agentgrpo.doctor.detectors import (
    collapse,
    convergence,
    hacking,
    instability,
    kl,
    length,
    regression,
    stall,
    tools,
    zero_variance,
)
from agentgrpo.doctor.modes import ALIASES, MODES, resolve  # noqa: F401 (re-exported)

DETECTORS = (instability, kl, collapse, regression, zero_variance, hacking, length, tools, stall, convergence)
NAMES = tuple(str(d.NAME) for d in DETECTORS)

# One vocabulary (agentgrpo.doctor.modes): the detectors' names are its modes, in its order.
if NAMES != MODES:  # a detector added without its mode (or out of order)
    raise ImportError(f"detectors {NAMES} do not match the modes {MODES}")
