"""The terminal summary of a diagnosis."""

from __future__ import annotations

import textwrap

from agentgrpo.doctor.finding import FAILURE, NOT_JUDGED, OK, WARNING

MARK = {FAILURE: "FAIL", WARNING: "WARN", OK: " ok ", NOT_JUDGED: " -- "}


def text(run, report, width: int = 100) -> str:
    """A few lines per failure/warning (evidence, onset, fix), one line per other detector."""
    lines = [
        f"agentgrpo doctor: {run.source}",
        f"  read {report.steps} logged steps ({report.first_step}–{report.last_step}) from {run.fmt}"
        + (f"; shadow rewards: {', '.join(run.table.meta['shadow'])}" if run.table.meta.get("shadow") else ""),
    ]
    sources = {k: v for k, v in run.table.meta.get("sources", {}).items() if not k.startswith("rewards/")}
    if sources:
        lines.append("  columns read: " + ", ".join(f"{k} <- {v}" for k, v in sorted(sources.items())))
    lines += [f"  note: {n}" for n in run.notes]
    lines += ["", report.headline, ""]
    wrap = textwrap.TextWrapper(width=width, initial_indent="", subsequent_indent="          ")
    for f in report.findings:
        head = f"[{MARK[f.status]}] {f.detector:<11} {f.verdict}"
        if f.status in (FAILURE, WARNING):
            head += f"  (confidence {f.confidence:.2f}" + (f", onset step {f.onset})" if f.onset is not None else ")")
        lines.append(head)
        if f.status in (FAILURE, WARNING):
            lines += [wrap.fill("        - " + e) for e in f.evidence]
            if f.fix:
                lines.append(wrap.fill("        fix: " + f.fix))
    return "\n".join(lines)
