"""One detector per failure mode. Each module has ``NAME`` and ``detect(signals) -> Finding``.

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
    signal,
    stall,
    tools,
)

DETECTORS = (instability, kl, collapse, regression, signal, hacking, length, tools, stall, convergence)
NAMES = tuple(d.NAME for d in DETECTORS)

# Other spellings accepted by --stop_on and the validation suite.
ALIASES = {
    "kl_blowup": "kl",
    "kl-blowup": "kl",
    "reward_hacking": "hacking",
    "length_gaming": "length",
    "length-gaming": "length",
    "tool_misuse": "tools",
    "tool-misuse": "tools",
    "saturation": "convergence",
    "saturated": "convergence",
    "truncation": "length",
    "nan": "instability",
    "numerical_instability": "instability",
    "crash": "regression",
    "no_signal": "signal",
    "zero_variance": "signal",
    "zero-variance": "signal",
    "entropy": "collapse",
}


def resolve(name: str) -> str:
    """The detector a user-given name means; raises ValueError for an unknown one.

    >>> resolve("length_gaming"), resolve("collapse")
    ('length', 'collapse')
    """
    key = name.strip().lower()
    key = ALIASES.get(key, key)
    if key not in NAMES:
        raise ValueError(f"unknown failure mode {name!r}; choose from {', '.join(NAMES)}")
    return key
