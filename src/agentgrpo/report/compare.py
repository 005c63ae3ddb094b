"""Two runs side by side: overlaid curves (A solid, B dashed), both diagnoses, paired evaluation tests."""

from __future__ import annotations

from html import escape
from pathlib import Path

from agentgrpo.doctor import names
from agentgrpo.doctor.paired import paired, per_problem
from agentgrpo.report import charts as chartlib
from agentgrpo.report import html, svg

COLORS = ("#1f77b4", "#d62728")


def eval_rows(a, b) -> list[dict]:
    """Per (stage, mode) evaluated in both runs: success rates, CIs and the paired test on common ids."""
    rows = []
    for stage in sorted(set(a.eval) & set(b.eval)):
        ea, eb = a.eval[stage], b.eval[stage]
        if not (isinstance(ea, dict) and isinstance(eb, dict)):
            continue
        for mode in sorted(set(ea) & set(eb)):
            ra, rb = ea[mode], eb[mode]
            if not (isinstance(ra, dict) and isinstance(rb, dict)):
                continue
            test = paired(per_problem(ra), per_problem(rb))
            rows.append(
                {
                    "stage": stage,
                    "mode": mode,
                    "a": {k: ra.get(k) for k in ("n", "success_rate", "ci95")},
                    "b": {k: rb.get(k) for k in ("n", "success_rate", "ci95")},
                    "paired": test,
                    "text": test.text() if test else "no common problem ids: no paired test",
                }
            )
    return rows


def overlay(a, b, report_a, report_b, max_points: int = 600) -> list[chartlib.Chart]:
    """One chart per standard panel either run has: each metric of the panel for A (solid) and B (dashed)."""
    out = []
    for key, title, metrics in chartlib.PANELS:
        series, present = [], []
        for tag, run, color, dashed in (("A", a, COLORS[0], False), ("B", b, COLORS[1], True)):
            shadows = set(run.table.meta.get("shadow", []))
            for metric in chartlib.expand(run.table, metrics)[:4]:
                x, y = chartlib.thin(*run.table.series(metric), max_points)
                label, _ = chartlib.series_label(metric, shadows)
                series.append(chartlib.Series(f"{tag}: {label}", x, y, color, dashed))
                present.append(metric)
        if not series:
            continue
        markers = []
        for tag, rep in (("A", report_a), ("B", report_b)):
            for m in chartlib.markers_for(present, rep.findings):
                markers.append(chartlib.Marker(m.step, f"{tag}: {m.label}", m.color))
        _shade(series)
        out.append(chartlib.Chart(key, title, series, markers, chartlib.wants_log(series)))
    return out


def _shade(series: list[chartlib.Series]) -> None:
    """Several metrics of one run share its colour: lighten all but the first of each run."""
    seen: dict[str, int] = {}
    for s in series:
        k = seen.get(s.color, 0)
        seen[s.color] = k + 1
        if k and s.color == COLORS[0]:
            s.color = ("#6baed6", "#9ecae1", "#c6dbef")[min(k - 1, 2)]
        elif k:
            s.color = ("#fc9272", "#fcbba1", "#fee0d2")[min(k - 1, 2)]


def render(a, b, report_a, report_b, rows: list[dict]) -> str:
    body = [
        f"<h1>agentgrpo compare: A = {escape(a.name)}, B = {escape(b.name)}</h1>",
        f'<div class="meta">A: {escape(str(a.source))} · B: {escape(str(b.source))}</div>',
        "<h2>Diagnoses</h2><table><tr><th>run</th><th>verdict</th><th>headline</th>"
        "<th>final reward</th></tr>",
    ]
    for tag, run, rep in (("A", a, report_a), ("B", b, report_b)):
        _, reward = run.table.series(names.REWARD)
        final = f"{reward[-max(1, len(reward) // 10) :].mean():.4g}" if len(reward) else "n/a"
        body.append(
            f'<tr><td>{tag}</td><td><span class="badge {rep.verdict}">{rep.verdict}</span></td>'
            f"<td>{escape(rep.headline)}</td><td>{final} (mean of the last 10%)</td></tr>"
        )
    body.append("</table><h2>Evaluation (paired on common problems)</h2>")
    if rows:
        body.append("<table><tr><th>stage</th><th>mode</th><th>A</th><th>B</th><th>paired test</th></tr>")
        for r in rows:
            body.append(
                f"<tr><td>{escape(r['stage'])}</td><td>{escape(r['mode'])}</td><td>{_rate(r['a'])}</td>"
                f"<td>{_rate(r['b'])}</td><td>{escape(r['text'])}</td></tr>"
            )
        body.append("</table>")
    else:
        body.append('<p class="note">No evaluation both runs share (eval.json in each run directory).</p>')
    body += [
        "<h2>Curves (A solid, B dashed; onsets marked)</h2>",
        '<div class="grid">',
        *(svg.render(c) for c in overlay(a, b, report_a, report_b)),
        "</div>",
    ]
    return html.page(f"agentgrpo compare: {a.name} vs {b.name}", body)


def _rate(entry: dict) -> str:
    rate, ci = entry.get("success_rate"), entry.get("ci95")
    if not isinstance(rate, int | float):
        return "n/a"
    text = f"{100 * rate:.1f}%"
    if isinstance(ci, list | tuple) and len(ci) == 2:
        text += f" [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]"
    return text + (f" (n={entry['n']})" if entry.get("n") is not None else "")


def write(a, b, report_a, report_b, rows, out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "compare.html"
    path.write_text(render(a, b, report_a, report_b, rows), encoding="utf-8")
    return path
