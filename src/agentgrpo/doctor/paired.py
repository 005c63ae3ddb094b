"""Paired comparison of two runs' evaluations on the same problems: McNemar's exact test and a paired
bootstrap interval for the difference in success rate."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts (A right & B wrong, A wrong & B right).

    >>> mcnemar_exact(0, 0), round(mcnemar_exact(1, 9), 4), round(mcnemar_exact(5, 5), 4)
    (1.0, 0.0215, 1.0)
    """
    n = only_a + only_b
    if n == 0:
        return 1.0
    k = min(only_a, only_b)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2.0**n
    return min(1.0, 2.0 * tail)


@dataclass
class PairedResult:
    """Success of A and B on the problems both evaluated."""

    n: int
    rate_a: float
    rate_b: float
    only_a: int
    only_b: int
    p_value: float
    diff_ci95: tuple[float, float]

    @property
    def diff(self) -> float:
        return self.rate_b - self.rate_a

    def text(self) -> str:
        lo, hi = self.diff_ci95
        return (
            f"n={self.n} common problems: A {100 * self.rate_a:.1f}% vs B {100 * self.rate_b:.1f}% "
            f"(B − A = {100 * self.diff:+.1f} pts, 95% CI [{100 * lo:+.1f}, {100 * hi:+.1f}]); "
            f"only A right: {self.only_a}, only B right: {self.only_b}; McNemar exact p = {self.p_value:.3g}"
        )


def paired(
    a: dict[str, bool], b: dict[str, bool], resamples: int = 2000, seed: int = 0
) -> PairedResult | None:
    """Compare per-problem successes keyed by problem id; None when no id is shared.

    >>> r = paired({"1": True, "2": False, "3": False}, {"1": True, "2": True, "3": True, "4": True})
    >>> r.n, r.only_a, r.only_b, r.p_value
    (3, 0, 2, 0.5)
    """
    common = sorted(set(a) & set(b))
    if not common:
        return None
    xa = np.array([bool(a[i]) for i in common], dtype=float)
    xb = np.array([bool(b[i]) for i in common], dtype=float)
    only_a = int(np.sum((xa == 1) & (xb == 0)))
    only_b = int(np.sum((xa == 0) & (xb == 1)))
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(common), size=(resamples, len(common)))
    diffs = (xb[idx] - xa[idx]).mean(axis=1)
    lo, hi = np.quantile(diffs, [0.025, 0.975])
    return PairedResult(
        len(common),
        float(xa.mean()),
        float(xb.mean()),
        only_a,
        only_b,
        mcnemar_exact(only_a, only_b),
        (float(lo), float(hi)),
    )


def per_problem(results: dict) -> dict[str, bool]:
    """``{id: success}`` from one eval.json entry (``{"per_problem": [{"id", "success"}, ...]}``)."""
    out = {}
    for item in results.get("per_problem", []) or []:
        if isinstance(item, dict) and "id" in item and "success" in item:
            out[str(item["id"])] = bool(item["success"])
    return out
