"""The doctor's failure modes: ONE vocabulary for the detectors, the live doctor's ``stop_on``, the CLI,
the labels of the real-run corpus and the docs.

``Mode`` is a ``str`` enum (``Mode.KL == "kl"``): a detector's ``NAME`` is its mode, and every finding's
``detector`` field holds one. ``resolve`` maps what a user writes (a mode or an alias) onto a mode.
"""

from __future__ import annotations

import warnings
from enum import StrEnum


class Mode(StrEnum):
    """What the doctor can report, in precedence order (ties in onset: the earlier mode comes first)."""

    INSTABILITY = "instability"  # NaN / Inf, or an isolated huge spike of the loss or grad_norm
    KL = "kl"  # KL blow-up (sustained growth or huge spikes against the run's own scale)
    COLLAPSE = "collapse"  # entropy / diversity collapse, degenerate fixed output
    REGRESSION = "regression"  # learned, then gave the gain back
    ZERO_VARIANCE = "zero_variance"  # (nearly) every group has identical rewards: no learning signal
    HACKING = "hacking"  # the reward rose through a proxy, not the true objective
    LENGTH = "length"  # length gaming or truncation at the cap
    TOOLS = "tools"  # tool misuse: failing or vanishing calls
    STALL = "stall"  # the reward did not learn
    CONVERGENCE = "convergence"  # converged / saturated (never a failure)


MODES: tuple[str, ...] = tuple(m.value for m in Mode)

# Other spellings accepted wherever a mode is read (stop_on, --stop_on, labels files).
ALIASES: dict[str, str] = {
    "kl_blowup": Mode.KL,
    "kl-blowup": Mode.KL,
    "reward_hacking": Mode.HACKING,
    "length_gaming": Mode.LENGTH,
    "length-gaming": Mode.LENGTH,
    "truncation": Mode.LENGTH,
    "tool_misuse": Mode.TOOLS,
    "tool-misuse": Mode.TOOLS,
    "saturation": Mode.CONVERGENCE,
    "saturated": Mode.CONVERGENCE,
    "nan": Mode.INSTABILITY,
    "numerical_instability": Mode.INSTABILITY,
    "crash": Mode.REGRESSION,
    "no_signal": Mode.ZERO_VARIANCE,
    "zero-variance": Mode.ZERO_VARIANCE,
    "signal": Mode.ZERO_VARIANCE,  # deprecated: the mode's name before issue 20
    "entropy": Mode.COLLAPSE,
}
DEPRECATED = {"signal": "zero_variance"}


def resolve(name: str) -> str:
    """The mode a user-given name means; raises ValueError for an unknown one. A deprecated name still
    resolves, with a DeprecationWarning naming its replacement.

    >>> resolve("length_gaming"), resolve("Collapse"), resolve("zero_variance")
    ('length', 'collapse', 'zero_variance')
    """
    key = str(name).strip().lower()
    if key in DEPRECATED:
        warnings.warn(
            f"failure mode {key!r} is deprecated; use {DEPRECATED[key]!r}", DeprecationWarning, stacklevel=2
        )
    key = str(ALIASES.get(key, key))
    if key not in MODES:
        raise ValueError(f"unknown failure mode {name!r}; choose from {', '.join(MODES)}")
    return key
