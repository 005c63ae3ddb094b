"""PNG files of the report's charts, with matplotlib (Agg, imported only when PNGs are asked for)."""

from __future__ import annotations

from pathlib import Path

from agentgrpo.report.charts import Chart


def write(charts: list[Chart], out_dir: Path, dpi: int = 90) -> list[Path]:
    """One ``<key>.png`` per chart in ``out_dir``; returns the paths."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for chart in charts:
        fig = Figure(figsize=(6.4, 3.0), dpi=dpi)
        FigureCanvasAgg(fig)
        ax = fig.add_subplot()
        for s in chart.series:
            ax.plot(
                s.x, s.y, color=s.color, linewidth=1.1, linestyle="--" if s.dashed else "-", label=s.label
            )
        for m in chart.markers:
            ax.axvline(m.step, color=m.color, linestyle="--", linewidth=1.2)
            ax.annotate(
                f"{m.label} @ {m.step:.0f}",
                (m.step, 1),
                xycoords=("data", "axes fraction"),
                xytext=(3, -10),
                textcoords="offset points",
                fontsize=7,
                color=m.color,
            )
        if chart.log_y:
            ax.set_yscale("log")
        ax.set_title(chart.title, fontsize=9)
        ax.set_xlabel("step", fontsize=8)
        ax.tick_params(labelsize=7)
        if len(chart.series) > 1:
            ax.legend(fontsize=7, loc="best")
        fig.tight_layout()
        path = out_dir / f"{chart.key}.png"
        fig.savefig(path)
        paths.append(path)
    return paths
