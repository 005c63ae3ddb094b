"""One detector per failure mode. Each module has ``NAME`` and ``detect(signals) -> Finding``.

The order below is the order of precedence when two failures begin at the same step: a KL blow-up
explains a collapse, a collapse explains a stall.
"""

from __future__ import annotations

from agentgrpo.doctor.detectors import collapse, convergence, hacking, kl, length, stall, tools

DETECTORS = (kl, collapse, hacking, length, tools, stall, convergence)
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
