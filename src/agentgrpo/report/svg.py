"""Draw a `Chart` as inline SVG: no library, no script, so the report opens anywhere, offline, fast."""

from __future__ import annotations

import math
from html import escape

import numpy as np

from agentgrpo.report.charts import Chart

WIDTH, HEIGHT = 560, 250
LEFT, RIGHT, TOP, BOTTOM = 58, 12, 34, 30


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round tick values covering [lo, hi].

    >>> nice_ticks(0.0, 1.0)
    [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    >>> nice_ticks(3.0, 3.0)
    [3.0]
    """
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo] if math.isfinite(lo) else []
    raw = (hi - lo) / count
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step - 1e-9) * step
    ticks, v = [], first
    while v <= hi + 1e-9 * step:
        ticks.append(round(v, 12))
        v += step
    return ticks


def _fmt(v: float) -> str:
    if v == 0:
        return "0"
    if abs(v) >= 1e4 or abs(v) < 1e-3:
        return f"{v:.0e}"
    return f"{v:.4g}"


def render(chart: Chart, width: int = WIDTH, height: int = HEIGHT) -> str:
    """The chart as an ``<svg>`` element (string)."""
    pw, ph = width - LEFT - RIGHT, height - TOP - BOTTOM
    xs = np.concatenate([s.x for s in chart.series]).astype(float)
    ys = np.concatenate([s.y for s in chart.series]).astype(float)
    ok = np.isfinite(ys) & (ys > 0 if chart.log_y else True)
    tf = np.log10 if chart.log_y else (lambda v: v)
    if not ok.any():
        return _empty(chart, width, height)
    x0, x1 = float(xs.min()), float(xs.max())
    y0, y1 = float(tf(ys[ok]).min()), float(tf(ys[ok]).max())
    if x1 == x0:
        x1 = x0 + 1
    if y1 == y0:
        y0, y1 = y0 - 0.5 * (abs(y0) or 1), y1 + 0.5 * (abs(y1) or 1)
    pad = 0.05 * (y1 - y0)
    y0, y1 = y0 - pad, y1 + pad

    def px(v):
        return LEFT + (np.asarray(v, float) - x0) / (x1 - x0) * pw

    def py(v):
        return TOP + (1 - (np.asarray(v, float) - y0) / (y1 - y0)) * ph

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" class="chart" role="img" aria-label="{escape(chart.title)}">',
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="#fff"/>',
        f'<text x="{LEFT}" y="14" font-size="12" font-weight="bold">{escape(chart.title)}</text>',
    ]
    out += _axes(chart, x0, x1, y0, y1, px, py, pw, ph)
    for s in chart.series:
        keep = np.isfinite(s.y) & ((s.y > 0) if chart.log_y else True)
        if not keep.any():
            continue
        pts = " ".join(f"{a:.1f},{b:.1f}" for a, b in zip(px(s.x[keep]), py(tf(s.y[keep]))))
        dash = ' stroke-dasharray="5,3"' if s.dashed else ""
        out.append(f'<polyline fill="none" stroke="{s.color}" stroke-width="1.3"{dash} points="{pts}"/>')
    for i, m in enumerate(chart.markers):
        if x0 <= m.step <= x1:
            xm = float(px(m.step))
            anchor, dx = ("end", -3) if xm > LEFT + 0.7 * pw else ("start", 3)
            out.append(
                f'<line x1="{xm:.1f}" y1="{TOP}" x2="{xm:.1f}" y2="{TOP + ph}" stroke="{m.color}" '
                f'stroke-width="1.5" stroke-dasharray="4,3" class="onset"/>'
            )
            out.append(
                f'<text x="{xm + dx:.1f}" y="{TOP + 11 + 11 * i}" font-size="10" fill="{m.color}" '
                f'text-anchor="{anchor}">{escape(m.label)} @ {m.step:.0f}</text>'
            )
    out += _legend(chart, width)
    out.append("</svg>")
    return "\n".join(out)


def _axes(chart, x0, x1, y0, y1, px, py, pw, ph) -> list[str]:
    out = [f'<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" stroke="#999"/>']
    for t in nice_ticks(y0, y1):
        yv = float(py(t))
        label = _fmt(10**t) if chart.log_y else _fmt(t)
        out.append(f'<line x1="{LEFT}" y1="{yv:.1f}" x2="{LEFT + pw}" y2="{yv:.1f}" stroke="#eee"/>')
        out.append(f'<text x="{LEFT - 4}" y="{yv + 3:.1f}" font-size="10" text-anchor="end">{label}</text>')
    for t in nice_ticks(x0, x1, 6):
        xv = float(px(t))
        out.append(
            f'<text x="{xv:.1f}" y="{TOP + ph + 13}" font-size="10" text-anchor="middle">{_fmt(t)}</text>'
        )
    out.append(
        f'<text x="{LEFT + pw / 2:.0f}" y="{TOP + ph + 26}" font-size="10" text-anchor="middle">step'
        + (" (log y)" if chart.log_y else "")
        + "</text>"
    )
    return out


def _legend(chart: Chart, width: int) -> list[str]:
    out, x = [], LEFT
    for s in chart.series[:8]:
        label = escape(s.label if len(s.label) <= 28 else s.label[:27] + "…")
        dash = ' stroke-dasharray="5,3"' if s.dashed else ""
        out.append(
            f'<line x1="{x}" y1="24" x2="{x + 14}" y2="24" stroke="{s.color}" stroke-width="2"{dash}/>'
        )
        out.append(f'<text x="{x + 17}" y="27" font-size="10">{label}</text>')
        x += 24 + 6 * len(label)
        if x > width - 60:
            break
    return out


def _empty(chart: Chart, width: int, height: int) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" class="chart"><text x="10" y="20">{escape(chart.title)}: no data</text></svg>'
    )
