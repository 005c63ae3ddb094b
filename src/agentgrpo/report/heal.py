"""A healed run in the report: each rollback marked on every chart, each abandoned segment's curve drawn
(grey, dashed) beside the lineage, and the heal history as a table (heal.jsonl, segments/N/)."""

from __future__ import annotations

from html import escape
from pathlib import Path

from agentgrpo.doctor.table import MetricTable
from agentgrpo.heal import history
from agentgrpo.report import charts as chartlib
from agentgrpo.rundir import SEGMENTS, read_config

ROLLBACK_COLOR = "#9467bd"
ABANDONED_COLOR = "#9a9a9a"


def overlay(panels: list[chartlib.Chart], run_dir: str | Path) -> list[chartlib.Chart]:
    """Add the rollbacks (vertical lines at the rollback step) and the abandoned segments' first curve of each
    panel to ``panels`` (in place; returned)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        return panels
    for rb in history.rollbacks(run_dir):
        abandoned = MetricTable.from_records(rb["abandoned"]) if rb["abandoned"] else None
        for chart in panels:
            chart.markers.append(chartlib.Marker(float(rb["checkpoint_step"]),
                                                 f"rollback {rb['heal']} ({rb.get('mode')})", ROLLBACK_COLOR))
            if abandoned is None:
                continue
            metrics = next((m for key, _t, m in chartlib.PANELS if key == chart.key), ())
            present = chartlib.expand(abandoned, metrics)
            if present:
                x, y = abandoned.series(present[0])
                chart.series.append(chartlib.Series(f"abandoned segment {rb['heal']}", x, y, ABANDONED_COLOR,
                                                    dashed=True))
    return panels


def section(run_dir: str | Path) -> list[str]:
    """The heal history as HTML (nothing for a run without heals)."""
    run_dir = Path(run_dir)
    heals = history.heals(run_dir) if run_dir.is_dir() else []
    if not heals:
        return []
    rows = ["<table><tr><th>heal</th><th>seen at step</th><th>mode</th><th>onset</th><th>rolled back to</th>"
            "<th>action</th><th>settings changed / reason</th><th>abandoned segment</th></tr>"]
    for h in heals:
        changed = "; ".join(f"{k}: {history.short(v[0])} → {history.short(v[1])}"
                            for k, v in (h.get("changes") or {}).items())
        what = changed if h.get("action") == "resume" else h.get("reason", "")
        where = f"checkpoint-{h['checkpoint_step']}" if h.get("checkpoint_step") is not None else "—"
        kept = f"{SEGMENTS}/{h['heal']}/" if (history.segment_dir(run_dir, int(h["heal"]))).is_dir() else "—"
        status = "" if h.get("status") == history.DONE else " (unfinished)"
        rows.append(f"<tr><td>{h['heal']}{status}</td><td>{h.get('step')}</td><td>{escape(str(h.get('mode')))}</td>"
                    f"<td>{h.get('onset')}</td><td>{where}</td><td>{escape(str(h.get('action')))}</td>"
                    f"<td>{escape(what)}</td><td>{kept}</td></tr>")
    rows.append("</table>")
    start = history.final_segment_start(run_dir)
    note = ("The verdict above judges the final segment (steps after the rollback to "
            f"checkpoint-{start}). " if start is not None else "") + (
        "Purple lines mark rollbacks; grey dashed curves are abandoned segments (kept in segments/N/).")
    listed = history.segment_lines(run_dir, completions_per_step(run_dir))
    segments = ["<h3>Segments</h3>", "<ul>", *(f"<li>{escape(line)}</li>" for line in listed), "</ul>"]
    return ["<h2>Heal history</h2>", f'<p class="note">{escape(note)}</p>', "\n".join(rows), "\n".join(segments)]


def completions_per_step(run_dir: Path) -> int | None:
    """Completions one step generates, from config.yaml (None when it does not name the batch size: TRL's
    default is not read here, the report imports no trainer)."""
    config = read_config(run_dir, notes=[])
    try:
        batch = int(config["per_device_train_batch_size"])
        return batch * int(config.get("gradient_accumulation_steps") or 1) * int(config.get("num_processes") or 1)
    except (KeyError, TypeError, ValueError):
        return None
