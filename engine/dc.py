"""The classic dc rule: dc such that the average point has ``percent`` % of N neighbours.

The average cut-off rho is ``2/N * #{pairs closer than dc}``, so dc is the ``percent`` quantile of all pairwise
distances. Up to ``EXACT_PAIRS`` pairs (N <= 1448) every pair is used. Beyond that, ``SAMPLE_PAIRS`` pairs are
drawn uniformly (seeded, so every run and every backend picks the same dc). The fraction of all pairs closer
than the estimated dc then has a standard error of sqrt(p (1 - p) / SAMPLE_PAIRS): 0.014 percentage points at
p = 2 %, so the mean number of neighbours lands within +-2.1 % of its target with 99.7 % probability.

Tied distances. On integer-valued or gridded data the percentile often lands on a distance that a whole shell of
pairs shares, and ``d < dc`` then drops the entire shell (0.67x the intended neighbour count on one such set).
So dc is one of two thresholds around that tied distance t: t itself (pairs with d < t count) or the dc
whose float32 square is the next float32 above t's (``d < dc`` then means ``d <= t``: the shell counts),
whichever gives the number of (used) pairs closer than dc nearer to ``percent`` % of them; on equal distance,
t. Without ties the shell is one pair, so dc moves by at most one float32 step. If t is 0 (duplicates fill the
percentile), dc is the smallest positive distance, which counts the same pairs as the shell rule.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from .notation import short
from .vptree import rho_reach

EXACT_PAIRS = 1 << 20
SAMPLE_PAIRS = 1 << 20


def check_number(name: str, value) -> None:
    """A clear TypeError for a parameter given as text (or anything else) instead of a real number."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {value!r}")


def check_dc(dc, kernel: str) -> None:
    """dc must be a number whose reach squares to a positive, finite float32 (the distance rule's type): below
    about 1e-19 it squares to 0 and no point would count even itself; above about 1e19 it squares to inf."""
    check_number("dc", dc)
    if not (math.isfinite(dc) and dc > 0):
        raise ValueError(f"dc must be a finite positive number, got {dc}")
    reach = rho_reach(float(dc), kernel)
    reach2 = reach * reach  # inf past float64, where ** raises OverflowError
    low, high = float(np.finfo(np.float32).tiny), float(np.finfo(np.float32).max)
    if not low <= reach2 < high:
        scale = rho_reach(1.0, kernel)
        raise ValueError(f"dc = {short(dc, 3)} is outside what float32 distances resolve (about {short(math.sqrt(low) / scale, 2)} "
                         f"to {short(math.sqrt(high) / scale, 2)}); rescale the data")  # fmt: skip


def pair_indices(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Every pair i < j when there are few, else a seeded uniform sample of pairs with i != j."""
    if n * (n - 1) // 2 <= EXACT_PAIRS:
        i, j = np.triu_indices(n, 1)
        return i.astype(np.int64), j.astype(np.int64)
    rng = np.random.default_rng(seed)
    i = rng.integers(0, n, SAMPLE_PAIRS)
    j = rng.integers(0, n - 1, SAMPLE_PAIRS)
    return i, j + (j >= i)


def pair_sq_distances(points, i, j, xp=np):
    """Float32-rule squared distances (see dpstudio.engine.vptree) of the pairs (i, j)."""
    acc = xp.zeros(i.shape[0], xp.float32)
    for c in range(points.shape[1]):
        diff = points[i, c] - points[j, c]
        acc += diff * diff
    return acc


def dc_from_percent(points, percent: float, xp=np, seed: int = 0) -> float:
    """dc for which about ``percent`` % of pairs are closer than dc (exact for small N, sampled above)."""
    check_number("dc_percent", percent)
    if not 0 < percent < 100:
        raise ValueError(f"dc_percent must be in (0, 100), got {percent}")
    i, j = pair_indices(points.shape[0], seed)
    sq = pair_sq_distances(points, xp.asarray(i), xp.asarray(j), xp)
    target = percent / 100 * sq.shape[0]
    k = min(sq.shape[0] - 1, max(0, math.ceil(target) - 1))
    tied = np.float32(float(xp.partition(sq, k)[k]))  # a host scalar, exact: float32 -> float -> float32
    if tied > 0:
        below, shell = int((sq < tied).sum()), int((sq == tied).sum())
        if abs(below + shell - target) < abs(below - target):
            return _dc_above(tied)
        return float(np.sqrt(np.float64(tied)))
    # duplicates fill the quantile: fall back to the smallest positive distance; all points identical -> any dc
    positive = sq[sq > 0]
    return float(np.sqrt(float(positive.min()))) if positive.shape[0] else 1.0


def _dc_above(tied_sq: np.float32) -> float:
    """A dc whose float32 square is the next float32 above tied_sq: ``d < dc`` then holds exactly when
    d^2 <= tied_sq under the float32 rule (``vptree.reach_rule`` squares dc the same way)."""
    dc = np.sqrt(np.float64(np.nextafter(tied_sq, np.float32(np.inf))))
    while np.float32(dc * dc) <= tied_sq:  # a sqrt rounded down could square back onto tied_sq
        dc = np.nextafter(dc, np.inf)
    return float(dc)
