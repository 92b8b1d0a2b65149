"""Small statistics without scipy (not in the lock): tie-averaged ranks, Pearson, Spearman, Kendall's
tau, medians with spread and a distribution-free interval of the median, geometric means,
non-negative least squares.

Shared by every stage that compares a prediction with a measurement: perf.explore ranks accelerator
variants with them, bench times and fits with them, results/ renders with them (one place, below
every stage that uses it).
"""

from __future__ import annotations

import math
import statistics
from typing import Sequence


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


def geomean(xs: Sequence[float]) -> float | None:
    xs = [x for x in xs if x > 0]
    if not xs:
        return None
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def kendall_tau(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Kendall's tau-b (ties handled as scipy.stats.kendalltau); None if undefined."""
    n = len(xs)
    if n != len(ys) or n < 2:
        return None
    concordant = discordant = ties_x = ties_y = 0
    for i in range(n):
        for j in range(i + 1, n):
            dx, dy = xs[i] - xs[j], ys[i] - ys[j]
            if dx == 0 and dy == 0:
                continue
            if dx == 0:
                ties_x += 1
            elif dy == 0:
                ties_y += 1
            elif (dx > 0) == (dy > 0):
                concordant += 1
            else:
                discordant += 1
    denom = math.sqrt((concordant + discordant + ties_x) * (concordant + discordant + ties_y))
    return (concordant - discordant) / denom if denom else None


def nnls(a, b, iterations: int = 200):
    """argmin ||a x - b|| subject to x >= 0 (Lawson-Hanson active set), numpy arrays in/out."""
    import numpy as np

    a, b = np.asarray(a, float), np.asarray(b, float)
    n = a.shape[1]
    passive = np.zeros(n, bool)
    x = np.zeros(n)
    for _ in range(iterations):
        w = a.T @ (b - a @ x)
        candidates = np.where(~passive & (w > 1e-12))[0]
        if not len(candidates):
            break
        passive[candidates[np.argmax(w[candidates])]] = True
        while True:
            z = np.zeros(n)
            z[passive] = np.linalg.lstsq(a[:, passive], b, rcond=None)[0]
            if (z[passive] > 0).all():
                x = z
                break
            mask = passive & (z <= 0)
            alpha = np.min(x[mask] / (x[mask] - z[mask]))
            x = x + alpha * (z - x)
            passive &= x > 1e-12
    return x


def median_ci(xs: Sequence[float], level: float = 0.95) -> tuple[float, float]:
    """A distribution-free confidence interval of the median of `xs`: the order statistics
    x_(k) and x_(n+1-k) with the largest k whose binomial coverage is still >= `level`
    (no assumption on the distribution, so one slow outlier round cannot move it)."""
    s = sorted(float(x) for x in xs)
    n = len(s)
    if n < 6:
        raise ValueError(f"{n} samples: too few for a {level:.0%} interval of the median")
    cdf = 0.0
    k = 0  # P(Bin(n, 1/2) <= k - 1) summed while the two tails stay below 1 - level
    for j in range(n):
        p = math.comb(n, j) / 2 ** n
        if 2 * (cdf + p) > 1 - level:
            break
        cdf += p
        k = j + 1
    k = max(k, 1)
    return s[k - 1], s[n - k]


def interval_verdict(low: float, high: float) -> str:
    """A ratio (this / baseline) is `slower` / `faster` only when its interval excludes 1."""
    return "slower" if low > 1 else "faster" if high < 1 else "within noise"
