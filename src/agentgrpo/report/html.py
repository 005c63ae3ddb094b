"""``report.html``: one self-contained page (inline CSS and SVG, no script, no network) per diagnosed run."""

from __future__ import annotations

from html import escape
from pathlib import Path

from agentgrpo.doctor.finding import FAILURE, NOT_JUDGED, OK, WARNING
from agentgrpo.report import charts as chartlib
from agentgrpo.report import heal, svg

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:24px;color:#222;
  max-width:1200px}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:22px 0 8px}
.meta{color:#555;font-size:13px}
.badge{display:inline-block;padding:4px 10px;border-radius:4px;color:#fff;font-weight:bold}
.failure{background:#d62728} .warning{background:#ff7f0e} .ok{background:#2ca02c} .not_judged{background:#999}
.saturated{background:#ff7f0e} .converged{background:#2ca02c} .healthy{background:#2ca02c}
table{border-collapse:collapse;font-size:13px;width:100%}
td,th{border-bottom:1px solid #ddd;padding:6px;vertical-align:top;text-align:left}
ul{margin:0;padding-left:18px} .grid{display:flex;flex-wrap:wrap;gap:10px} .chart{border:1px solid #eee}
.note{font-size:13px;color:#444}
"""


def page(title: str, body: list[str]) -> str:
    """A complete HTML document around ``body`` parts."""
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            f"<title>{escape(title)}</title><style>{CSS}</style></head><body>",
            *body,
            "</body></html>",
        ]
    )


def findings_table(findings) -> str:
    rows = [
        "<table><tr><th>status</th><th>detector</th><th>verdict</th><th>confidence</th><th>onset step</th>"
        "<th>evidence</th><th>suggested fix</th></tr>"
    ]
    for f in findings:
        evidence = "".join(f"<li>{escape(e)}</li>" for e in f.evidence)
        conf = f"{f.confidence:.2f}" if f.status in (FAILURE, WARNING) else ""
        onset = "" if f.onset is None else str(f.onset)
        rows.append(
            f'<tr><td><span class="badge {f.status}">{escape(f.status)}</span></td>'
            f"<td>{escape(f.detector)}</td><td>{escape(f.verdict)}</td><td>{conf}</td><td>{onset}</td>"
            f"<td><ul>{evidence}</ul></td><td>{escape(f.fix)}</td></tr>"
        )
    rows.append("</table>")
    return "\n".join(rows)


def render(run, report, charts: list[chartlib.Chart] | None = None) -> str:
    """The report page for a `Run` and its `Report`."""
    table = run.table
    charts = charts if charts is not None else chartlib.build(table, report.findings)
    shadows = table.meta.get("shadow", [])
    body = [
        f"<h1>agentgrpo doctor: {escape(run.name)}</h1>",
        f'<div class="meta">{escape(str(run.source))} · {escape(run.fmt)} · {report.steps} logged steps '
        f"({report.first_step}–{report.last_step})"
        + (f" · shadow rewards: {escape(', '.join(shadows))}" if shadows else "")
        + "</div>",
        f'<h2><span class="badge {report.verdict}">{escape(report.verdict.upper())}</span> '
        f"{escape(report.headline.split(': ', 1)[-1])}</h2>",
        "<h2>Findings</h2>",
        findings_table(
            [f for f in report.findings if f.status != OK or f.onset is not None]
            + [f for f in report.findings if f.status == OK and f.onset is None]
        ),
        "<h2>Curves</h2>",
        '<p class="note">Dashed vertical lines mark onsets (red: failure, orange: warning).</p>',
        '<div class="grid">',
        *(svg.render(c) for c in charts),
        "</div>",
        *_preflight(run),
        *heal.section(run.source),
        "<h2>What was read</h2>",
        _read_notes(run, report),
    ]
    return page(f"agentgrpo doctor: {run.name}", body)


def _preflight(run) -> list[str]:
    """The run's preflight.json (reward audit, signal check, token fidelity), when `agentgrpo train` wrote one."""
    from agentgrpo.rundir import PREFLIGHT, read_json

    path = Path(run.source) / PREFLIGHT if Path(run.source).is_dir() else None
    if path is None or not path.is_file():
        return []
    try:
        data = read_json(path)
    except (OSError, ValueError):
        return ["<h2>Preflight</h2>", '<p class="note">preflight.json is present but unreadable</p>']
    items = []
    audit = data.get("audit") or {}
    if audit:
        ok = audit.get("ok")
        items.append(f'<li><span class="badge {"ok" if ok else "failure"}">audit {escape(str(audit.get("verdict")))}'
                     f"</span> {audit.get('prompts')} prompts, threshold {audit.get('threshold')}</li>")
        for f in audit.get("exploits", []):
            items.append(f"<li>exploit: {escape(f['probe'])} ({escape(f['description'])}) on "
                         f"{f['share_of_prompts']:.0%} of prompts</li>")
        for p in (audit.get("gold") or {}).get("problems", []):
            items.append(f"<li>gold: {escape(p)}</li>")
    signal = data.get("signal") or {}
    verdict = signal.get("verdict") or {}
    if verdict:
        mixed = ", ".join(f"g={g}: {m['mixed']:.0%}" for g, m in signal.get("mixed_fraction", {}).items())
        items.append(f"<li>signal: <b>{escape(verdict['verdict'])}</b>; mean pass rate "
                     f"{verdict['mean_pass_rate']:.0%}; mixed groups {escape(mixed)}; recommended group size "
                     f"{verdict.get('recommended_k')}; {escape(verdict.get('advice', ''))}</li>")
    elif signal.get("error"):
        items.append(f"<li>signal: not measured ({escape(signal['error'])})</li>")
    fidelity = signal.get("fidelity") or {}
    if "checked" in fidelity:
        first = fidelity.get("first_mismatch") or fidelity.get("first_prefix_violation")
        items.append(f"<li>token fidelity: {'OK' if fidelity.get('ok') else 'FAILED'} on {fidelity['checked']} "
                     "conversations" + (f"; first: {escape(first['what'])} at token {first['token_index']}"
                                        if first else "") + "</li>")
    return ["<h2>Preflight</h2>", '<ul class="note">' + "".join(items) + "</ul>"]


def _read_notes(run, report) -> str:
    items = [f"metrics: {', '.join(run.table.names())}"]
    items += [f"note: {n}" for n in run.notes]
    items += [f"{f.detector}: {f.verdict}" for f in report.findings if f.status == NOT_JUDGED]
    return '<ul class="note">' + "".join(f"<li>{escape(i)}</li>" for i in items) + "</ul>"


def write(run, report, out_dir: Path, charts=None) -> Path:
    """Write ``report.html`` into ``out_dir``; returns its path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "report.html"
    path.write_text(render(run, report, charts), encoding="utf-8")
    return path
