"""`Finding`: what one detector concluded about a run, as structured fields (status, mode, onset, confidence).

Decisions (the run's verdict, which failure explains which, the live doctor's stop) read these fields, never
the prose in ``verdict``/``evidence``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum


class Status(StrEnum):
    """How a detector judged the run. A ``str`` enum: ``Status.FAILURE == "failure"``, JSON writes the value.

    >>> Status.FAILURE == "failure", f"{Status.WARNING}", Status("ok") is Status.OK
    (True, 'warning', True)
    """

    FAILURE = "failure"  # a failure mode is present: act on it
    WARNING = "warning"  # worth a look, not a failure (saturation, a possible shortcut, high-but-flat KL)
    OK = "ok"  # judged, nothing wrong
    NOT_JUDGED = "not_judged"  # the inputs the detector needs are missing or too short


FAILURE, WARNING, OK, NOT_JUDGED = Status.FAILURE, Status.WARNING, Status.OK, Status.NOT_JUDGED
STATUS_ORDER = {FAILURE: 0, WARNING: 1, OK: 2, NOT_JUDGED: 3}

# Structured states a detector can report besides its status (``Finding.state``); the verdict reads these.
CONVERGED = "converged"  # convergence: learned, at its plateau, with positive evidence
SATURATED = "saturated"  # convergence: at its plateau and most groups identical
TOO_SHORT = "too_short"  # not judged: too few logged steps
MISSING = "missing"  # not judged: an input metric is not logged
THROUGHOUT = "throughout"  # a failure at full strength from the first log (no later failure caused it)
FALLING = "falling"  # stall: the reward fell materially from where the fall began (a later cause explains nothing)


@dataclass(kw_only=True)
class Finding:
    """One detector's verdict, with the numbers behind it.

    ``mode`` is the failure mode named (the detector's name unless it names a narrower one, e.g. the stall
    detector's ``"no_signal"`` kind); ``onset`` is the step where the sustained change began (None when
    nothing began); ``state`` a structured sub-verdict (`CONVERGED`, `SATURATED`, `TOO_SHORT`, ...);
    ``explained_by`` names the failures this one is a consequence of (then its status is a warning);
    ``metrics`` names the curves the report marks the onset on; ``first_sign`` the step where the earliest
    curve the evidence cites began to change, when that is before the onset (a heal rolls back before it).

    >>> f = Finding(detector="kl", status=FAILURE, verdict="KL blow-up", onset=12)
    >>> f.is_failure, f.mode, f.to_dict()["status"]
    (True, 'kl', 'failure')
    """

    detector: str
    status: Status
    verdict: str
    confidence: float = 0.0
    onset: int | None = None
    evidence: list[str] = field(default_factory=list)
    fix: str = ""
    metrics: list[str] = field(default_factory=list)
    mode: str = ""
    state: str = ""
    explained_by: list[str] = field(default_factory=list)
    first_sign: int | None = None  # the earliest step a cited curve changed, where before the onset (or None)

    def __post_init__(self):
        self.status = Status(self.status)
        if not self.mode:
            self.mode = self.detector

    @property
    def is_failure(self) -> bool:
        return self.status == FAILURE

    def to_dict(self) -> dict:
        out = asdict(self)
        out["status"] = self.status.value
        return out


def not_judged(detector: str, missing: str) -> Finding:
    """The finding of a detector that lacks its inputs.

    >>> not_judged("kl", "kl (not logged; beta = 0?)").verdict
    'not judged: missing kl (not logged; beta = 0?)'
    """
    return Finding(detector=detector, status=NOT_JUDGED, verdict=f"not judged: missing {missing}", state=MISSING)


def too_short(detector: str, metric: str, have: int, need: int) -> Finding:
    """The finding of a detector whose input has too few logged steps.

    >>> too_short("stall", "reward", 3, 10).state
    'too_short'
    """
    return Finding(
        detector=detector,
        status=NOT_JUDGED,
        verdict=f"too short to judge: {metric} has {have} logged steps, need {need}",
        state=TOO_SHORT,
    )


def confidence(t: float, threshold: float, supports: list[bool]) -> float:
    """Confidence of a finding: 0.6 when the primary statistic just crosses its threshold, up to 0.9 as it
    reaches twice that, plus up to 0.09 for the share of supporting curves that agree.

    >>> confidence(3.0, 3.0, []), confidence(6.0, 3.0, [True, True]), confidence(4.5, 3.0, [True, False])
    (0.6, 0.99, 0.8)
    """
    strength = min(max(abs(t) / threshold - 1.0, 0.0), 1.0) if threshold > 0 else 1.0
    share = sum(supports) / len(supports) if supports else 0.0
    return round(0.6 + 0.3 * strength + 0.09 * share, 2)
