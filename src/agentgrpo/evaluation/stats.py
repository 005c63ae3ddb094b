"""Statistics for evaluation: confidence intervals and pass@k (the paired test lives in doctor/paired.py)."""

from __future__ import annotations

import math


def wilson_interval(successes: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (95% by default).

    >>> lo, hi = wilson_interval(48, 100)
    >>> round(lo, 3), round(hi, 3)
    (0.385, 0.577)
    >>> wilson_interval(0, 0)
    (0.0, 1.0)
    """
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from ``n`` samples of which ``c`` are correct (Chen et al., 2021).

    >>> pass_at_k(10, 0, 1), pass_at_k(10, 10, 5), round(pass_at_k(10, 3, 1), 3)
    (0.0, 1.0, 0.3)
    """
    if n - c < k:
        return 1.0
    return 1.0 - math.prod((n - c - i) / (n - i) for i in range(k))


def intervals_overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """Whether two intervals share any point.

    >>> intervals_overlap((0.1, 0.3), (0.4, 0.6)), intervals_overlap((0.1, 0.45), (0.4, 0.6))
    (False, True)
    """
    return a[0] <= b[1] and b[0] <= a[1]


def episode_statistics(episodes, task=None, rows=None) -> dict:
    """Turns used (mean, max, how many episodes used each count), per-tool calls and failures, tool calls that
    ran past the time limit (``tool_timeouts``), and the
    task's own per-episode statistics (``Task.episode_stats``, e.g. Wordle's invalid moves), averaged."""
    n = max(1, len(episodes))
    histogram: dict[int, int] = {}
    per_tool: dict[str, dict] = {}
    for e in episodes:
        histogram[e.turns] = histogram.get(e.turns, 0) + 1
        for name, (calls, failures) in e.per_tool.items():
            entry = per_tool.setdefault(name, {"calls": 0, "failures": 0})
            entry["calls"] += calls
            entry["failures"] += failures
    for entry in per_tool.values():
        entry["calls_per_episode"] = entry["calls"] / n
        entry["failure_rate"] = entry["failures"] / max(1, entry["calls"])
    out = {"turns": {"mean": sum(e.turns for e in episodes) / n, "max": max((e.turns for e in episodes), default=0),
                     "episodes_by_turns": dict(sorted(histogram.items()))},
           "per_tool": per_tool, "tool_timeouts": sum(getattr(e, "tool_timeouts", 0) for e in episodes)}
    if task is not None and getattr(task, "episode_stats", None) is not None and rows:
        out["task"] = task.episode_stats([e.completion for e in episodes], rows)
    return out
