"""``curves.png``: a run's main training curves in one picture (matplotlib, Agg), with the doctor's onsets; the
dynamic sampling panel (mixed groups, groups dropped, generation rounds) where the run logged it."""

from __future__ import annotations

import math
from pathlib import Path

MAIN = ("reward", "zero_std", "dynamic_sampling", "kl", "entropy", "length", "tools")  # one without data: left out


def plot_run_curves(run_dir: str | Path, out_path: str | Path) -> Path | None:
    """Draw the main panels of a run into one PNG; None when the run has no readable log yet."""
    from agentgrpo.doctor.readers import read_run
    from agentgrpo.errors import UserError
    from agentgrpo.report import charts

    try:
        run = read_run(run_dir)
    except UserError:
        return None
    from agentgrpo.heal.judge import diagnose_healed
    from agentgrpo.report.heal import overlay

    report = diagnose_healed(run)[1]  # a healed run: its final segment
    panels = overlay([c for c in charts.build(run.table, report.findings) if c.key in MAIN], run_dir)
    if not panels:
        return None
    return _grid(panels, Path(out_path), f"{run.name}: {report.headline}")


def _grid(panels, out_path: Path, title: str) -> Path:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    cols = 2 if len(panels) > 1 else 1
    rows = math.ceil(len(panels) / cols)
    fig = Figure(figsize=(6.2 * cols, 2.8 * rows + 0.5), dpi=90)
    FigureCanvasAgg(fig)
    for i, chart in enumerate(panels):
        ax = fig.add_subplot(rows, cols, i + 1)
        for s in chart.series[:6]:
            ax.plot(
                s.x, s.y, color=s.color, linewidth=1.0, linestyle="--" if s.dashed else "-", label=s.label
            )
        for m in chart.markers:
            ax.axvline(m.step, color=m.color, linestyle="--", linewidth=1.0)
        if chart.log_y:
            ax.set_yscale("log")
        ax.set_title(chart.title, fontsize=8)
        ax.tick_params(labelsize=7)
        if len(chart.series) > 1:
            ax.legend(fontsize=6, loc="best")
    fig.suptitle(title[:140], fontsize=9)
    fig.tight_layout()
    out_path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out_path)
    return out_path
