"""What to draw: chart specs (series + onset markers) built from a run's table and its diagnosis.

Renderers (`svg`, `png`) draw a `Chart` without knowing where it came from; `compare` overlays two runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from agentgrpo.doctor import names
from agentgrpo.doctor.finding import FAILURE, WARNING
from agentgrpo.doctor.table import MetricTable

PALETTE = ("#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#17becf", "#bcbd22", "#e377c2", "#7f7f7f")
STATUS_COLOR = {FAILURE: "#d62728", WARNING: "#ff7f0e"}


@dataclass
class Series:
    label: str
    x: np.ndarray
    y: np.ndarray
    color: str
    dashed: bool = False


@dataclass
class Marker:
    step: float
    label: str
    color: str


@dataclass
class Chart:
    """One panel: a title, its lines, vertical onset markers, and whether the y axis is logarithmic."""

    key: str
    title: str
    series: list[Series]
    markers: list[Marker] = field(default_factory=list)
    log_y: bool = False


# (key, title, metrics) of the standard panels, in page order. "rewards/*" expands to the components.
PANELS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (
        "reward",
        "Reward: total and per component (dashed: shadow rewards, not trained)",
        (names.REWARD, "rewards/*"),
    ),
    ("reward_std", "Reward std within the batch", (names.REWARD_STD,)),
    ("zero_std", "Share of groups with identical rewards (frac_reward_zero_std)", (names.FRAC_ZERO_STD,)),
    (
        "dynamic_sampling",
        "Dynamic sampling per step: mixed groups trained on, groups dropped, generation rounds",
        (names.DS_MIXED, "dynamic_sampling/groups_dropped",
         "dynamic_sampling/generation_rounds"),
    ),
    ("kl", "KL to the reference (per token)", (names.KL,)),
    ("entropy", "Entropy (per token)", (names.ENTROPY,)),
    (
        "length",
        "Completion length (tokens)",
        (names.LENGTH, names.MIN_LENGTH, names.MAX_LENGTH, names.TERM_LENGTH),
    ),
    ("truncation", "Truncated share (completions/clipped_ratio)", (names.CLIPPED,)),
    ("clip", "Policy ratio clipping", (names.CLIP_LOW, names.CLIP_HIGH, names.CLIP_REGION)),
    ("tools", "Tool use: calls per completion, failing share", (names.TOOL_CALLS, names.TOOL_FAILURES)),
    ("distinct", "Distinct completions among samples", ("completions/distinct_frac",)),
    ("grad_norm", "Gradient norm", (names.GRAD_NORM,)),
    ("loss", "Loss", (names.LOSS,)),
    ("eval", "Evaluation reward", ("eval/reward",)),
)


def expand(table: MetricTable, metrics: tuple[str, ...]) -> list[str]:
    """The concrete metric names of a panel that the table holds."""
    out = []
    for m in metrics:
        if m == "rewards/*":
            out += [f"rewards/{c}/mean" for c in table.components()]
        elif table.has(m):
            out.append(m)
    return out


def series_label(metric: str, shadows: set[str]) -> tuple[str, bool]:
    comp = names.component_of(metric)
    if comp is None:
        return metric, False
    return (f"{comp} (shadow)", True) if comp in shadows else (comp, False)


def build(table: MetricTable, findings=(), max_points: int = 600) -> list[Chart]:
    """Charts for every standard panel the table has data for, with the findings' onsets marked."""
    shadows = set(table.meta.get("shadow", []))
    charts = []
    for key, title, metrics in PANELS:
        present = [m for m in expand(table, metrics) if not _repeats_total(table, m)]
        if not present:
            continue
        series = []
        for i, metric in enumerate(present):
            x, y = table.series(metric)
            x, y = thin(x, y, max_points)
            label, dashed = series_label(metric, shadows)
            series.append(Series(label, x, y, PALETTE[(i - 1) % len(PALETTE)] if i else "#000000", dashed))
        charts.append(Chart(key, title, series, markers_for(present, findings), wants_log(series)))
    return charts


def _repeats_total(table: MetricTable, metric: str) -> bool:
    """A lone reward component equal to the total reward (drawn once, as the total)."""
    if names.component_of(metric) is None or len(table.components()) != 1 or not table.has(names.REWARD):
        return False
    a, b = table[metric], table[names.REWARD]
    ok = np.isfinite(a) & np.isfinite(b)
    return bool(ok.any() and np.allclose(a[ok], b[ok]))


def markers_for(present: list[str], findings) -> list[Marker]:
    marks = []
    for f in findings:
        if f.onset is None or f.status not in STATUS_COLOR:
            continue
        if set(f.metrics) & set(present):
            marks.append(Marker(float(f.onset), f"{f.detector} onset", STATUS_COLOR[f.status]))
    return marks


def wants_log(series: list[Series]) -> bool:
    values = np.concatenate([s.y for s in series]) if series else np.empty(0)
    positive = values[values > 0]
    return bool(len(positive) == len(values) and len(values) and positive.max() / positive.min() > 1e3)


def thin(x: np.ndarray, y: np.ndarray, max_points: int) -> tuple[np.ndarray, np.ndarray]:
    """At most ``max_points`` points: each bucket keeps its min and max, so spikes survive.

    >>> x, y = thin(np.arange(1000), np.where(np.arange(1000) == 500, 9.0, 0.0), 100)
    >>> len(x) <= 100, float(y.max())
    (True, 9.0)
    """
    n = len(y)
    if n <= max_points:
        return x, y
    buckets = max_points // 2
    width = -(-n // buckets)
    padded = np.full(buckets * width, np.nan)
    padded[:n] = y
    grid = padded.reshape(buckets, width)
    filled = ~np.isnan(grid).all(axis=1)
    starts = np.arange(buckets)[filled] * width
    lo = starts + np.nanargmin(grid[filled], axis=1)
    hi = starts + np.nanargmax(grid[filled], axis=1)
    idx = np.unique(np.concatenate([lo, hi]))
    return x[idx], y[idx]
