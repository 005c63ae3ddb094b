"""Tool misuse: failing tool calls rise, most calls fail (rising or not: a tool failing 100% of its calls is
not healthy), or tool calls collapse toward zero (the policy stops using tools)."""

from __future__ import annotations

from agentgrpo.doctor import names, stats
from agentgrpo.doctor import thresholds as th
from agentgrpo.doctor.curves import Curves
from agentgrpo.doctor.detectors.text import moved, num, pct
from agentgrpo.doctor.finding import FAILURE, OK, Finding, confidence, not_judged
from agentgrpo.doctor.modes import Mode

NAME = Mode.TOOLS
FIX_FAIL = (
    "look at failing calls in the samples; reward valid calls (or penalise failed ones), show the tool's "
    "schema and an example call in the prompt, return clearer tool errors"
)
FIX_GONE = (
    "the policy learned to answer without tools: reward tool use that leads to correct answers, make "
    "problems need the tool, or raise the group size / temperature so tool-using completions keep being "
    "sampled"
)


def detect(curves: Curves) -> Finding:
    fails, calls = curves.curve(names.TOOL_FAILURES), curves.curve(names.TOOL_CALLS)
    if fails is None and calls is None:
        return _not_logged(curves)
    findings = [f for f in (_failures_rose(fails), _most_calls_fail(fails), _calls_gone(calls)) if f]
    if not findings:
        return _healthy(fails, calls)
    return _misuse(curves, findings)


def _not_logged(curves: Curves) -> Finding:
    have = curves.count(names.TOOL_FAILURES) or curves.count(names.TOOL_CALLS)
    missing = "tools/call_frequency and tools/failure_frequency" + (
        f" (only {have} logged steps)" if have else " (a run without tools?)"
    )
    return not_judged(NAME, missing)


def _failures_rose(fails):
    """(ramp, evidence, fix, what) when the failing share rose significantly, by ``TOOL_FAIL_RISE``, to at
    least ``TOOL_FAIL_HIGH``."""
    r = fails.ramp(+1) if fails is not None else None
    if (
        r is not None
        and r.t >= th.T_CHANGE
        and fails.late_mean >= th.TOOL_FAIL_HIGH
        and fails.late_mean - r.before >= th.TOOL_FAIL_RISE
    ):
        return r, [moved("failing share of tool calls", r)], FIX_FAIL, "rising tool failures"
    return None


def _most_calls_fail(fails):
    """(level, evidence, fix, what) when most late calls fail, with or without a rise (and no rise counted)."""
    if fails is None or _failures_rose(fails) or fails.late_mean < th.TOOL_FAIL_MOST:
        return None
    r = fails.ramp(+1)
    start = r if r is not None and r.t >= th.T_CHANGE else None
    onset = start.onset if start is not None else float(fails.x[0])
    level = stats.Ramp(onset, onset, fails.early_mean, fails.late_mean, th.T_CHANGE * 2)
    text = f"failing calls {pct(fails.early_mean)} early → {pct(fails.late_mean)} late"
    return level, [text], FIX_FAIL, "most tool calls fail"


def _calls_gone(calls):
    """(ramp, evidence, fix, what) when tool calls per completion fell to ``TOOL_CALLS_GONE`` of a real level."""
    if calls is None:
        return None
    r = calls.ramp(-1)
    before = max(calls.early, r.before) if r is not None else calls.early
    gone = r is not None and r.t <= -th.T_CHANGE and calls.late <= th.TOOL_CALLS_GONE * before
    if gone and before >= th.TOOL_CALLS_MIN:
        return r, [moved("tool calls per completion", r)], FIX_GONE, "tool calls collapsing to zero"
    return None


def _healthy(fails, calls) -> Finding:
    evidence = []
    if calls is not None:
        evidence.append(f"tool calls per completion {num(calls.early)} early → {num(calls.late)} late")
    if fails is not None:
        evidence.append(f"failing calls {pct(fails.early_mean)} early → {pct(fails.late_mean)} late")
    return Finding(
        detector=NAME,
        status=OK,
        verdict="tool use healthy",
        confidence=0.0,
        onset=None,
        evidence=evidence,
        fix="",
        metrics=[],
    )


def _misuse(curves: Curves, findings: list) -> Finding:
    """The failure, dated by the earliest sign, with the reward functions' rising error counts as evidence."""
    findings.sort(key=lambda f: f[0].onset)
    ramp, evidence, fix, what = findings[0]
    for extra in findings[1:]:
        evidence += extra[1]
        what += " and " + extra[3]
    errors = [k for k in curves.table.names() if k.startswith("rewards/") and k.endswith("/errors")]
    for k in errors:
        c = curves.curve(k)
        if c is not None and c.late > c.early:
            evidence.append(f"{k} {num(c.early)} early → {num(c.late)} late")
    return Finding(
        detector=NAME,
        status=FAILURE,
        verdict=f"tool misuse: {what}",
        confidence=confidence(ramp.t, th.T_CHANGE, [len(findings) > 1]),
        onset=int(round(ramp.onset)),
        evidence=evidence,
        fix=fix,
        metrics=[names.TOOL_CALLS, names.TOOL_FAILURES],
    )
