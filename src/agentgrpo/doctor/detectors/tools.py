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


def detect(sig: Curves) -> Finding:
    fails, calls = sig.curve(names.TOOL_FAILURES), sig.curve(names.TOOL_CALLS)
    if fails is None and calls is None:
        have = sig.count(names.TOOL_FAILURES) or sig.count(names.TOOL_CALLS)
        missing = "tools/call_frequency and tools/failure_frequency" + (
            f" (only {have} logged steps)" if have else " (a run without tools?)"
        )
        return not_judged(NAME, missing)
    findings = []
    if fails is not None:
        r = fails.ramp(+1)
        if (
            r is not None
            and r.t >= th.T_CHANGE
            and fails.late_mean >= th.TOOL_FAIL_HIGH
            and fails.late_mean - r.before >= th.TOOL_FAIL_RISE
        ):
            findings.append((r, [moved("failing share of tool calls", r)], FIX_FAIL, "rising tool failures"))
        elif fails.late_mean >= th.TOOL_FAIL_MOST:
            start = r if r is not None and r.t >= th.T_CHANGE else None
            onset = start.onset if start is not None else float(fails.x[0])
            level = stats.Ramp(onset, onset, fails.early_mean, fails.late_mean, th.T_CHANGE * 2)
            text = f"failing calls {pct(fails.early_mean)} early → {pct(fails.late_mean)} late"
            findings.append((level, [text], FIX_FAIL, "most tool calls fail"))
    if calls is not None:
        r = calls.ramp(-1)
        before = max(calls.early, r.before) if r is not None else calls.early
        if (
            r is not None
            and r.t <= -th.T_CHANGE
            and before >= th.TOOL_CALLS_MIN
            and calls.late <= th.TOOL_CALLS_GONE * before
        ):
            findings.append((r, [moved("tool calls per completion", r)], FIX_GONE, "tool calls collapsing to zero"))
    if not findings:
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
    findings.sort(key=lambda f: f[0].onset)
    ramp, evidence, fix, what = findings[0]
    for extra in findings[1:]:
        evidence += extra[1]
        what += " and " + extra[3]
    errors = [k for k in sig.table.names() if k.startswith("rewards/") and k.endswith("/errors")]
    for k in errors:
        c = sig.curve(k)
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
