"""`diagnose(table) -> Report`: run every detector and reach one verdict for the run."""

from __future__ import annotations

from dataclasses import dataclass, field

from agentgrpo.doctor import detectors
from agentgrpo.doctor import thresholds as th
from agentgrpo.doctor.curves import Curves
from agentgrpo.doctor.finding import CONVERGED as CONVERGED_STATE
from agentgrpo.doctor.finding import FAILURE, FALLING, STATUS_ORDER, THROUGHOUT, TOO_SHORT, WARNING, Finding
from agentgrpo.doctor.finding import SATURATED as SATURATED_STATE
from agentgrpo.doctor.table import MetricTable

# A failure of the key is a consequence of a failure of any of the values (reported, but not as a failure):
# a collapse, KL blow-up, NaN, crash or signal-less groups stall the reward (truncation does not: a run can
# learn while every completion is truncated, so a stall beside it is a failure of its own); length gaming is how
# a proxy was hacked; tool calls that vanish while the true objective falls are how it was hacked; a policy
# that collapses stops calling (or garbles) its tool with everything else; a crash of the reward is what a
# collapse, a blow-up or a NaN looks like in the reward; a blown-up policy emits identical, truncated text.
EXPLAINED_BY = {
    "stall": ("instability", "kl", "collapse", "regression", "zero_variance", "tools"),
    "regression": ("instability", "kl", "collapse"),
    "zero_variance": ("instability", "kl", "collapse"),
    "length": ("instability", "kl", "collapse"),
    "hacking": ("length",),
    "tools": ("hacking", "collapse"),
}
# A cause that begins after its effect (by more than CONSEQUENCE_NEAR of the run) explains nothing: a stall
# present from the first step is not the consequence of an instability first seen 90 steps later. A failure at
# full strength from the first log (state THROUGHOUT: every group identical early and late) is explained by
# nothing: no cause was seen before it (batch 8: identical groups from step 1 and a "fixed output" dated at
# step 4 are not its cause).
# (consequence, cause) pairs that hold only when both begin together: onsets within CONSEQUENCE_NEAR of the
# run's length (tool misuse or truncation that began well before or after a collapse is a failure of its
# own; a policy that collapses to one token repeated to the cap truncates with it).
TOGETHER = {("tools", "collapse"), ("length", "collapse")}
# A failure in this state is named beside the others and explains none of them (most, not nearly all, groups
# without a signal: the stall is a failure of its own too).
BESIDE = "majority"

HEALTHY, WARNED, CONVERGED, SATURATED, FAILED = "healthy", "warning", "converged", "saturated", "failure"
UNJUDGED = "too_short"  # the reward was logged, but on too few steps to judge anything
# Exit codes of `agentgrpo doctor`: 0 judged without a failure, 1 a failure, 2 too short to judge.
EXIT = {FAILED: 1, UNJUDGED: 2}


@dataclass
class Report:
    """All findings on a run, and one verdict (in this precedence): ``failure`` (any detector failed),
    ``too_short`` (the reward has too few logged steps to judge), ``saturated``, ``converged``, ``warning``
    (a warning, no failure), ``healthy``. The verdict reads the findings' structured fields only."""

    findings: list[Finding]
    steps: int
    first_step: int
    last_step: int
    meta: dict = field(default_factory=dict)

    @property
    def failures(self) -> list[Finding]:
        """Failure findings, earliest onset first (ties: detector precedence)."""
        order = {name: i for i, name in enumerate(detectors.NAMES)}
        found = [f for f in self.findings if f.status == FAILURE]
        return sorted(found, key=lambda f: (f.onset if f.onset is not None else 1 << 62, order[f.detector]))

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.status == WARNING]

    @property
    def verdict(self) -> str:
        conv, stall = self.get("convergence"), self.get("stall")
        if self.failures:
            return FAILED
        if stall is not None and stall.state == TOO_SHORT:
            return UNJUDGED
        if conv is not None and conv.state == SATURATED_STATE:
            return SATURATED
        if conv is not None and conv.state == CONVERGED_STATE:
            return CONVERGED
        return WARNED if self.warnings else HEALTHY

    @property
    def exit_code(self) -> int:
        """0: judged, no failure; 1: a failure; 2: too short to judge (never a silent 'healthy')."""
        return EXIT.get(self.verdict, 0)

    @property
    def headline(self) -> str:
        """One line: the verdict, its main finding, and the other failures or warnings."""
        if self.failures:
            first, rest = self.failures[0], self.failures[1:]
            also = f" (also: {', '.join(f.verdict for f in rest)})" if rest else ""
            return f"FAILURE: {first.verdict} from step {first.onset}{also}"
        verdict = self.verdict
        if verdict == UNJUDGED:
            return f"TOO SHORT TO JUDGE: {self.get('stall').verdict.split(': ', 1)[-1]}"
        main = {SATURATED: "convergence", CONVERGED: "convergence"}.get(verdict, "stall")
        if verdict == WARNED:
            main = self.warnings[0].detector
        finding = self.get(main)
        detail = finding.verdict if finding is not None else "no failure found"
        others = [f.verdict for f in self.warnings if f.detector != main]
        return f"{verdict.upper()}: {detail}" + (f" (warnings: {'; '.join(others)})" if others else "")

    def get(self, detector: str) -> Finding | None:
        return next((f for f in self.findings if f.detector == detector), None)

    def to_dict(self) -> dict:
        return {
            "verdict": self.verdict,
            "headline": self.headline,
            "steps": self.steps,
            "first_step": self.first_step,
            "last_step": self.last_step,
            "exit_code": self.exit_code,
            "failures": [f.detector for f in self.failures],
            "modes": [f.mode for f in self.failures],
            "warnings": [f.detector for f in self.warnings],
            "findings": [f.to_dict() for f in self.findings],
            "meta": {k: v for k, v in self.meta.items() if k != "summary"},
        }


def diagnose(table: MetricTable, only: tuple[str, ...] | None = None) -> Report:
    """Run the detectors (all, or those named in ``only``) on a table. Never raises for missing metrics."""
    curves = Curves(table)
    findings = [_short_not_missing(d.detect(curves), curves) for d in detectors.DETECTORS
                if only is None or d.NAME in only]
    steps = table.steps
    _explain(findings, float(steps[-1] - steps[0]) if len(steps) else 0.0, table)
    findings.sort(key=lambda f: STATUS_ORDER[f.status])
    return Report(
        findings,
        len(table),
        int(steps[0]) if len(steps) else 0,
        int(steps[-1]) if len(steps) else 0,
        dict(table.meta),
    )


def _short_not_missing(finding: Finding, curves: Curves) -> Finding:
    """A detector that says its input is missing when the input is logged, on fewer steps than it needs
    (`Curves.curve` gives None for both), is too short to judge: say that, naming the metric and its count.
    One rule here for every detector."""
    import re

    from agentgrpo.doctor.finding import MISSING, too_short

    if finding.state != MISSING:
        return finding
    named = []  # (where the verdict names it, metric, logged steps) for each short metric it names
    for metric in curves.table.columns:
        have = curves.count(metric)
        found = re.search(rf"(?<![\w/]){re.escape(metric)}(?![\w/])", finding.verdict) if have else None
        if found is not None and have < th.MIN_POINTS:
            named.append((found.start(), metric, have))
    if not named:
        return finding
    _, metric, have = min(named)
    return too_short(finding.detector, metric, have, th.MIN_POINTS)


def stalled_before(table: MetricTable, step: float) -> bool:
    """The reward was already flat before ``step`` (at least ``MIN_POINTS`` logs, trend ``|t| < T_FLAT``, the
    stall detector's own rule): a stall of its own, not the consequence of a failure that began there."""
    from agentgrpo.doctor import names, stats

    x, y = table.series(names.REWARD)
    keep = x < step
    if keep.sum() < th.MIN_POINTS:
        return False
    bx, by = stats.bin_means(x[keep], y[keep])
    return abs(stats.trend(bx, by).t) < th.T_FLAT


def _from_the_start(onset: int | None, table: MetricTable, near: float) -> bool:
    """An onset within ``near`` (onsets are known to within it) of the run's first logged step."""
    return onset is not None and len(table.steps) > 0 and onset <= int(table.steps[0]) + near


def _explain(findings: list[Finding], span: float, table: MetricTable | None = None) -> None:
    failed = {f.detector: f for f in findings if f.status == FAILURE}

    near = th.CONSEQUENCE_NEAR * max(span, 1.0)

    def explains(cause: str, f: Finding) -> bool:
        if cause not in failed or failed[cause].state == BESIDE:
            return False
        a, b = f.onset, failed[cause].onset
        if f.detector != "stall" and f.state == THROUGHOUT:
            return False  # at full strength from the first log: no cause was seen before it
        if f.detector != "stall" and table is not None and _from_the_start(a, table, near) and _from_the_start(
            b, table, near
        ):
            return False  # both there from the first logs: neither developed, so neither is seen causing the other
        if a is not None and b is not None and b > a + near:
            # a cause never comes after its effect (onsets are known to within `near`). A stall is dated at the
            # first step by definition: it is the later failure's doing unless the reward was flat before it
            return f.detector == "stall" and f.state != FALLING and table is not None and not stalled_before(
                table, b
            )
        if (f.detector, cause) not in TOGETHER:
            return True
        return a is not None and b is not None and abs(a - b) <= near

    for f in findings:
        causes = [c for c in EXPLAINED_BY.get(f.detector, ()) if explains(c, f)]
        if f.status == FAILURE and causes:
            f.status, f.explained_by = WARNING, causes
            f.verdict += f" (a consequence of the {' and '.join(causes)} failure)"
