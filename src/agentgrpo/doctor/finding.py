"""`Finding`: what one detector concluded about a run."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

FAILURE = "failure"  # a failure mode is present: act on it
WARNING = "warning"  # worth a look, not a failure (saturation, truncation, a possible shortcut)
OK = "ok"  # judged, nothing wrong
NOT_JUDGED = "not_judged"  # the inputs the detector needs are missing or too short

STATUS_ORDER = {FAILURE: 0, WARNING: 1, OK: 2, NOT_JUDGED: 3}


@dataclass
class Finding:
    """One detector's verdict, with the numbers behind it.

    ``onset`` is the step where the sustained change began (None when nothing began); ``metrics`` names the
    curves the report marks the onset on.
    """

    detector: str
    status: str
    verdict: str
    confidence: float = 0.0
    onset: int | None = None
    evidence: list[str] = field(default_factory=list)
    fix: str = ""
    metrics: list[str] = field(default_factory=list)

    @property
    def is_failure(self) -> bool:
        return self.status == FAILURE

    def to_dict(self) -> dict:
        return asdict(self)


def not_judged(detector: str, missing: str) -> Finding:
    """The finding of a detector that lacks its inputs.

    >>> not_judged("kl", "kl (not logged; beta = 0?)").verdict
    'not judged: missing kl (not logged; beta = 0?)'
    """
    return Finding(detector, NOT_JUDGED, f"not judged: missing {missing}")


def too_short(detector: str, metric: str, have: int, need: int) -> Finding:
    """The finding of a detector whose input has too few logged steps."""
    return Finding(detector, NOT_JUDGED, f"not judged: {metric} has {have} logged steps, need {need}")


def confidence(t: float, threshold: float, supports: list[bool]) -> float:
    """Confidence of a finding: 0.6 when the primary statistic just crosses its threshold, up to 0.9 as it
    reaches twice that, plus up to 0.09 for the share of supporting signals that agree.

    >>> confidence(3.0, 3.0, []), confidence(6.0, 3.0, [True, True]), confidence(4.5, 3.0, [True, False])
    (0.6, 0.99, 0.8)
    """
    strength = min(max(abs(t) / threshold - 1.0, 0.0), 1.0) if threshold > 0 else 1.0
    share = sum(supports) / len(supports) if supports else 0.0
    return round(0.6 + 0.3 * strength + 0.09 * share, 2)
