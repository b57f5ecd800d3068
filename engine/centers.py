"""Choosing cluster centers on the decision graph. Arrays may live on any backend (NumPy or CuPy)."""

from __future__ import annotations

import numpy as np

MAX_SUGGESTED = 32


def ranking_gamma(rho, delta, densest: int, xp=np):
    """gamma = rho * delta, with the densest point's delta (its largest distance) capped at the others' maximum.

    The densest point's delta is a convention, not a distance to a denser point; capping it keeps the ranking
    about the real peaks.
    """
    others = delta.copy()
    others[densest] = -xp.inf
    return rho * xp.minimum(delta, others.max())


def graph_coordinates(rho, delta, log_axes: bool = False, xp=np):
    """Where each point sits on the decision graph: at (rho, delta), or at their log10 for log axes (where the bulk
    of points, squashed onto delta ~ 0 at large N, spreads out); a 0 is drawn at half its axis's smallest positive
    value. Lasso polygons are tested in these coordinates, so a selection is what the graph showed."""
    if not log_axes:
        return rho, delta
    return _log10_above_zero(rho, xp), _log10_above_zero(delta, xp)


def _log10_above_zero(values, xp):
    positive = values[values > 0]
    floor = float(positive.min()) / 2 if positive.size else 1.0
    return xp.log10(xp.maximum(values, floor))


def by_gamma(candidates, gamma, xp=np):
    """Candidate indices ordered by decreasing gamma, ties by index."""
    candidates = xp.sort(xp.asarray(candidates, dtype=xp.int64))
    return candidates[xp.argsort(-gamma[candidates], kind="stable")]


def suggest_count(gamma, xp=np) -> int:
    """Number of centers at the largest relative drop among the top MAX_SUGGESTED + 1 gammas.

    A density peak stands far above the points that follow it in gamma, so the drop from the k-th to the
    (k+1)-th largest gamma, g_k / g_(k+1), is largest right after the last real peak.
    """
    n = gamma.shape[0]
    if n < 3:
        return 1
    top = xp.sort(gamma)[::-1][: min(n, MAX_SUGGESTED + 1)]
    top = np.asarray(top.get() if xp is not np else top, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        drops = np.where(top[1:] > 0, top[:-1] / top[1:], np.where(top[:-1] > 0, np.inf, 1.0))
    return int(np.argmax(drops)) + 1
