"""Small statistics without scipy: medians with spread, Spearman's rho, geometric means."""

from __future__ import annotations

import math
import statistics
from typing import Sequence


def summary(samples: Sequence[float]) -> dict:
    """Median and spread of repeated measurements (seconds in, seconds out)."""
    xs = sorted(float(x) for x in samples)
    if not xs:
        raise ValueError("no samples")
    q = statistics.quantiles(xs, n=4, method="inclusive") if len(xs) > 1 else [xs[0]] * 3
    med = statistics.median(xs)
    return {
        "n": len(xs),
        "median": med,
        "min": xs[0],
        "max": xs[-1],
        "q1": q[0],
        "q3": q[2],
        # interquartile range relative to the median: the noise figure printed next to medians
        "iqr_rel": (q[2] - q[0]) / med if med > 0 else 0.0,
        "samples": list(samples),
    }


def ranks(xs: Sequence[float]) -> list[float]:
    """1-based ranks, ties get the average rank (as scipy.stats.rankdata)."""
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    out = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return out


def pearson(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    n = len(xs)
    if n != len(ys) or n < 2:
        return None
    mx, my = sum(xs) / n, sum(ys) / n
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    if sxx == 0 or syy == 0:
        return None
    return sxy / math.sqrt(sxx * syy)


def spearman(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Spearman's rank correlation (Pearson on tie-averaged ranks); None if undefined (n < 3 or constant)."""
    if len(xs) != len(ys) or len(xs) < 3:
        return None
    return pearson(ranks(xs), ranks(ys))


def geomean(xs: Sequence[float]) -> float | None:
    xs = [x for x in xs if x > 0]
    if not xs:
        return None
    return math.exp(sum(math.log(x) for x in xs) / len(xs))
