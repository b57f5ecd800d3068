"""Exact cut-off rho of 2-D points by a strip sweep (Numba), several times faster than the tree at large dc.

The plane is cut into horizontal strips of height about dc / k, each sorted by x. For a query strip a and a
strip b near it, the y-gap between any of their points lies in [dy_min, dy_max] (from the strips' actual
extents), so a point of b is certainly within dc of a query q when |x - q_x| < w_in = sqrt(dc_lo^2 - dy_max^2)
and certainly not when |x - q_x| >= w_out = sqrt(dc_hi^2 - dy_min^2). Those are counted or skipped by position
alone, and only the two thin bands between them are tested point by point with the float32 rule. As q walks
strip a in x order, the four band edges in strip b only move right, so finding them is a merge.

dc_lo and dc_hi are dc shrunk and grown by the tree's slack (``vptree.reach_rule``), far beyond float32 and
float64 rounding, so a point decided by position is decided exactly as the float32 rule decides it.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ..vptree import reach_rule
from .geometry import chunks

_LANES = 64  # strips are dealt to parallel tasks round-robin, so dense and sparse strips mix in every task


def strips_per_dc(mean_rho: float) -> int:
    """k: more strips per dc when balls are full; cost ~ 2k strip visits + (8/pi) mean_rho / k band points."""
    return int(np.clip(round(np.sqrt(max(mean_rho, 0.0)) / 18), 1, 16))


@nb.njit(nogil=True, cache=True)
def _bucket(y, ymin, inv_height, n_strips):
    """Each point's strip, and where each strip starts in the sorted layout (one +inf sentinel after each)."""
    n = y.shape[0]
    strip = np.empty(n, np.int64)
    starts = np.zeros(n_strips + 1, np.int64)
    for i in range(n):
        s = min(np.int64((np.float64(y[i]) - ymin) * inv_height), n_strips - 1)
        strip[i] = s
        starts[s + 1] += 1
    for s in range(n_strips):
        starts[s + 1] += starts[s] + 1
    return strip, starts


@nb.njit(parallel=True, nogil=True, cache=True)
def _sort_strips(x, y, strip, starts, xs, ys, source, y_low, y_high):
    """Lay the points out strip by strip, each strip sorted by x and closed by an x = +inf sentinel."""
    n_strips = starts.shape[0] - 1
    fill = starts[:-1].copy()
    for i in range(x.shape[0]):
        source[fill[strip[i]]] = i
        fill[strip[i]] += 1
    for s in nb.prange(n_strips):
        begin, end = starts[s], starts[s + 1] - 1
        members = source[begin:end].copy()
        by_x = np.argsort(x[members], kind="mergesort")
        low, high = np.inf, -np.inf
        for t in range(end - begin):
            i = members[by_x[t]]
            source[begin + t], xs[begin + t], ys[begin + t] = i, x[i], y[i]
            low, high = min(low, np.float64(y[i])), max(high, np.float64(y[i]))
        source[end], xs[end], ys[end] = -1, np.inf, np.inf
        y_low[s], y_high[s] = low, high


@nb.njit(inline="always", cache=True)
def _first_above(xs, i, edge):
    """First slot from i with x > edge; the strip's sentinel stops the walk."""
    while np.float64(xs[i]) <= edge:
        i += 1
    return i


@nb.njit(inline="always", cache=True)
def _first_at_or_above(xs, i, edge):
    while np.float64(xs[i]) < edge:
        i += 1
    return i


@nb.njit(inline="always", cache=True)
def _count_within(xs, ys, begin, end, qx, qy, reach2):
    """Points of slots [begin, end) within reach of (qx, qy) by the float32 rule (unsigned slots vectorize)."""
    total = 0
    for t in range(np.uint64(begin), np.uint64(end)):
        dx = xs[t] - qx
        dy = ys[t] - qy
        total += dx * dx + dy * dy < reach2
    return total


@nb.njit(parallel=True, nogil=True, cache=True)
def _sweep(xs, ys, starts, y_low, y_high, span, reach2, reach_lo, reach_hi, first, last, counts):
    """counts[slot] = points within reach of the slot's point, itself included, for query strips [first, last)."""
    n_strips = starts.shape[0] - 1
    for lane in nb.prange(_LANES):
        for a in range(first + lane, last, _LANES):
            q_begin, q_end = starts[a], starts[a + 1] - 1
            counts[q_begin:q_end] = 0
            if q_begin == q_end:
                continue
            for b in range(max(0, a - span), min(n_strips, a + span + 1)):
                begin = starts[b]
                if begin == starts[b + 1] - 1:
                    continue
                dy_min = max(0.0, y_low[b] - y_high[a], y_low[a] - y_high[b])
                dy_max = max(y_high[b] - y_low[a], y_high[a] - y_low[b])
                if dy_min >= reach_hi:
                    continue
                w_out = np.sqrt(reach_hi * reach_hi - dy_min * dy_min)
                w_in = np.sqrt(reach_lo * reach_lo - dy_max * dy_max) if dy_max < reach_lo else 0.0
                # band edges in strip b: [out_left, in_left) and [in_right, out_right) are tested point by point
                out_left = in_left = in_right = out_right = begin
                for p in range(q_begin, q_end):
                    qx = np.float64(xs[p])
                    out_left = _first_above(xs, out_left, qx - w_out)
                    in_left = _first_above(xs, max(in_left, out_left), qx - w_in)
                    in_right = _first_at_or_above(xs, max(in_right, in_left), qx + w_in)
                    out_right = _first_at_or_above(xs, max(out_right, in_right), qx + w_out)
                    counts[p] += (
                        in_right - in_left
                        + _count_within(xs, ys, out_left, in_left, xs[p], ys[p], reach2)
                        + _count_within(xs, ys, in_right, out_right, xs[p], ys[p], reach2)
                    )


def cutoff_rho(coords: np.ndarray, dc: float, mean_rho: float, progress=None) -> np.ndarray:
    """Cut-off rho (self excluded) of 2-D points ``coords`` (2, N) float32, in their order, as float64.

    ``mean_rho`` (a rough estimate) only sets the strip height; the result is exact whatever it is.
    """
    reach2, reach_lo, reach_hi = reach_rule(dc, 2)
    x, y = coords[0], coords[1]
    n = x.shape[0]
    y_min, y_range = float(y.min()), float(y.max()) - float(y.min())
    height = max(reach_hi / strips_per_dc(mean_rho), y_range / n)  # never more strips than points
    n_strips = int(y_range / height) + 1
    span = int(reach_hi / height) + 2  # strips b within reach of strip a lie in a - span .. a + span
    strip, starts = _bucket(y, y_min, 1.0 / height, n_strips)
    slots = int(starts[-1])
    xs, ys = np.empty(slots, np.float32), np.empty(slots, np.float32)
    source = np.empty(slots, np.int64)
    y_low, y_high = np.empty(n_strips), np.empty(n_strips)
    _sort_strips(x, y, strip, starts, xs, ys, source, y_low, y_high)
    counts = np.empty(slots, np.int64)
    for first, last in chunks(n_strips, progress, min_step=256):
        _sweep(xs, ys, starts, y_low, y_high, span, reach2, reach_lo, reach_hi, first, last, counts)
    rho = np.empty(n, np.float64)
    points = source >= 0
    rho[source[points]] = counts[points] - 1  # each point counted itself
    return rho
