"""Exact cut-off rho of 2-D points by a strip sweep (Numba), several times faster than the tree at large dc.

The plane is cut into horizontal strips of height about dc / k, each sorted by x. For a query q and a strip b
near it, the y-gap between q and any point of b lies in [dy_min, dy_max] (from q's y and b's actual extent), so
a point of b is certainly within dc of q when |x - q_x| < w_in = sqrt(dc_lo^2 - dy_max^2) and certainly not
when |x - q_x| >= w_out = sqrt(dc_hi^2 - dy_min^2). Those are counted or skipped by position
alone, and only the two thin bands between them are tested point by point with the float32 rule.

The band edges come from a look-up, not a search: each strip is cut into equal x-bins (about two per point)
and keeps the slot where each bin starts. An edge is rounded outwards to a bin boundary, so a band may take
in a few more points to test, but finding it costs a multiply and a load instead of a mispredicted walk.
Rounding is safe because a point's bin and an edge's bin come from the same monotone float64 expression.

dc_lo and dc_hi are dc shrunk and grown by the tree's slack (``vptree.reach_rule``), far beyond float32 and
float64 rounding, so a point decided by position is decided exactly as the float32 rule decides it.

Identical points share one slot with a weight (their number). Otherwise a crowd of copies fills one bin that no
band edge can split, and each of them would test all the others: 400k zero rows took 40 s. Without copies the
weights are left out (None), and Numba compiles the unweighted loops.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ..vptree import reach_rule
from .geometry import chunks

_BINS_PER_POINT = 2
# Numba's prange hands each thread one contiguous block of lanes. Lane l sweeps the strips whose index is
# bit-reversed(l) modulo 64, so every power-of-two block of lanes gets evenly interleaved strips and a dense
# blob is shared by all threads instead of landing on one.
_LANES = 64
_LANE_OFFSET = np.array([int(f"{lane:06b}"[::-1], 2) for lane in range(_LANES)], np.int64)


def strips_per_dc(mean_rho: float) -> int:
    """k: more strips per dc when balls are full. A query costs about 2k strip visits (each costs about as much as
    testing 500 band points, measured) plus 1.2 mean_rho / k band points, least near k = sqrt(mean_rho) / 28."""
    return int(np.clip(round(np.sqrt(max(mean_rho, 0.0)) / 28), 1, 16))


@nb.njit(nogil=True, cache=True)
def _bucket(y, ymin, inv_height, n_strips):
    """Each point's strip, and where each strip starts in the strip-by-strip layout."""
    n = y.shape[0]
    strip = np.empty(n, np.int64)
    starts = np.zeros(n_strips + 1, np.int64)
    for i in range(n):
        s = min(np.int64((np.float64(y[i]) - ymin) * inv_height), n_strips - 1)
        strip[i] = s
        starts[s + 1] += 1
    for s in range(n_strips):
        starts[s + 1] += starts[s]
    return strip, starts


def _sort_keys(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """A uint64 per point that sorts as (x, y) do; -0.0 is made 0.0 first, so copies of a point get one key."""

    def ordered(v):
        bits = (v + np.float32(0.0)).view(np.uint32).astype(np.uint64)
        return np.where(bits >> 31, bits ^ 0xFFFFFFFF, bits | 0x80000000)  # negative floats sort reversed

    return ordered(x) << np.uint64(32) | ordered(y)


@nb.njit(parallel=True, nogil=True, cache=True)
def _sort_strips(x, y, key, strip, starts, xs, ys, source, y_low, y_high, distinct):
    """Lay the points out strip by strip, each strip sorted by x then y (so copies of a point are neighbours),
    and count each strip's distinct points."""
    n_strips = starts.shape[0] - 1
    fill = starts[:-1].copy()
    for i in range(x.shape[0]):
        source[fill[strip[i]]] = i
        fill[strip[i]] += 1
    for s in nb.prange(n_strips):
        begin, end = starts[s], starts[s + 1]
        members = source[begin:end].copy()
        keys = key[members]
        by_key = np.argsort(keys)
        low, high = np.inf, -np.inf
        distinct[s] = 0
        for t in range(end - begin):
            i = members[by_key[t]]
            source[begin + t], xs[begin + t], ys[begin + t] = i, x[i], y[i]
            low, high = min(low, np.float64(y[i])), max(high, np.float64(y[i]))
            distinct[s] += t == 0 or keys[by_key[t]] != keys[by_key[t - 1]]
        y_low[s], y_high[s] = low, high


@nb.njit(parallel=True, nogil=True, cache=True)
def _merge_copies(xs, ys, starts, merged_starts, slot, merged_xs, merged_ys, weight):
    """One slot per distinct point, weighted by its copies; ``slot`` maps each sorted point to its merged slot."""
    for s in nb.prange(starts.shape[0] - 1):
        u = merged_starts[s] - 1
        for t in range(starts[s], starts[s + 1]):
            if t == starts[s] or xs[t] != xs[t - 1] or ys[t] != ys[t - 1]:
                u += 1
                merged_xs[u], merged_ys[u], weight[u] = xs[t], ys[t], 0
            weight[u] += 1
            slot[t] = u


@nb.njit(inline="always", cache=True)
def _bin_of(x, x0, inv_width, n_bins):
    """The bin of x in a strip, clamped to [-1, n_bins] (its points lie in bins 0 .. n_bins - 1)."""
    return np.int64(min(max(np.floor((x - x0) * inv_width), -1.0), np.float64(n_bins)))


@nb.njit(parallel=True, nogil=True, cache=True)
def _bin_strips(xs, starts, x0, inv_width, bin_offsets, bin_start):
    """bin_start[bin_offsets[s] + i]: first slot of strip s whose bin is >= i, for i = 0 .. n_bins (the end)."""
    for s in nb.prange(starts.shape[0] - 1):
        begin, end, first = starts[s], starts[s + 1], bin_offsets[s]
        n_bins = bin_offsets[s + 1] - first - 1
        i = 0
        for t in range(begin, end):
            b = _bin_of(np.float64(xs[t]), x0[s], inv_width[s], n_bins)
            while i <= b:
                bin_start[first + i] = t
                i += 1
        while i <= n_bins:
            bin_start[first + i] = end
            i += 1


@nb.njit(nogil=True, cache=True)
def _bin_layout(xs, starts):
    """Per strip: its smallest x, the bin width's inverse (about two bins per point), and where its bins start."""
    n_strips = starts.shape[0] - 1
    x0, inv_width = np.zeros(n_strips), np.zeros(n_strips)
    bin_offsets = np.zeros(n_strips + 1, np.int64)
    for s in range(n_strips):
        begin, end = starts[s], starts[s + 1]
        n_bins = 0
        if end > begin:
            x0[s] = xs[begin]
            width = np.float64(xs[end - 1]) - x0[s]
            inv_width[s] = _BINS_PER_POINT * (end - begin) / width if width > 0 else 0.0
            n_bins = np.int64((np.float64(xs[end - 1]) - x0[s]) * inv_width[s]) + 1  # the last point's bin + 1
        bin_offsets[s + 1] = bin_offsets[s] + n_bins + 1
    return x0, inv_width, bin_offsets


@nb.njit(inline="always", cache=True)
def _count_within(xs, ys, weight, begin, end, qx, qy, reach2):
    """Points of slots [begin, end) within reach of (qx, qy) by the float32 rule, each slot counting its weight
    (unsigned slots and an int32 count let LLVM use 8-wide vectors)."""
    if weight is None:
        total = np.uint32(0)
        for t in range(np.uint64(begin), np.uint64(end)):
            dx = xs[t] - qx
            dy = ys[t] - qy
            total = np.uint32(total + np.uint32(dx * dx + dy * dy < reach2))
        return np.int64(total)
    weighted = np.int64(0)
    for t in range(begin, end):
        dx = xs[t] - qx
        dy = ys[t] - qy
        weighted += weight[t] * np.int64(dx * dx + dy * dy < reach2)
    return weighted


@nb.njit(inline="always", cache=True)
def _count_all(cumulative, begin, end):
    """Points of slots [begin, end): their number, or their weights' sum from its prefix sums."""
    return end - begin if cumulative is None else cumulative[end] - cumulative[begin]


@nb.njit(parallel=True, nogil=True, cache=True)
def _sweep(xs, ys, weight, cumulative, starts, y_low, y_high, x0, inv_width, bin_offsets, bin_start, span, reach2,
           reach_lo, reach_hi, first, last, first_lane, last_lane, counts):  # fmt: skip
    """counts[slot] = points within reach of the slot's point, itself included, for query strips [first, last)
    of lanes [first_lane, last_lane)."""
    n_strips = starts.shape[0] - 1
    for lane in nb.prange(first_lane, last_lane):
        for a in range(first + _LANE_OFFSET[lane], last, _LANES):
            q_begin, q_end = starts[a], starts[a + 1]
            counts[q_begin:q_end] = 0
            if q_begin == q_end:
                continue
            for b in range(max(0, a - span), min(n_strips, a + span + 1)):
                if starts[b] == starts[b + 1]:
                    continue
                if max(0.0, y_low[b] - y_high[a], y_low[a] - y_high[b]) >= reach_hi:
                    continue
                bins, low, inv = bin_offsets[b], x0[b], inv_width[b]
                n_bins = bin_offsets[b + 1] - bins - 1
                for p in range(q_begin, q_end):
                    qx, qy = np.float64(xs[p]), np.float64(ys[p])
                    # the query's own y, not its strip's extent, bounds the y-gap: half as wide a band to test
                    dy_min = max(0.0, y_low[b] - qy, qy - y_high[b])
                    dy_max = max(y_high[b] - qy, qy - y_low[b])
                    if dy_min >= reach_hi:
                        continue
                    w_out = np.sqrt(reach_hi * reach_hi - dy_min * dy_min)
                    w_in = np.sqrt(reach_lo * reach_lo - dy_max * dy_max) if dy_max < reach_lo else 0.0
                    # slots before `out_left` and from `out_right` are certainly outside, [in_left, in_right) inside
                    out_left = bin_start[bins + max(_bin_of(qx - w_out, low, inv, n_bins), 0)]
                    out_right = bin_start[bins + min(_bin_of(qx + w_out, low, inv, n_bins) + 1, n_bins)]
                    in_left = bin_start[bins + min(_bin_of(qx - w_in, low, inv, n_bins) + 1, n_bins)]
                    in_right = bin_start[bins + max(_bin_of(qx + w_in, low, inv, n_bins), 0)]
                    if in_left < in_right:
                        counts[p] += (
                            _count_all(cumulative, in_left, in_right)
                            + _count_within(xs, ys, weight, out_left, in_left, xs[p], ys[p], reach2)
                            + _count_within(xs, ys, weight, in_right, out_right, xs[p], ys[p], reach2)
                        )
                    else:
                        counts[p] += _count_within(xs, ys, weight, out_left, out_right, xs[p], ys[p], reach2)


def cutoff_rho(coords: np.ndarray, dc: float, mean_rho: float, progress=None, part: int = 0, parts: int = 1) -> np.ndarray:
    """Cut-off rho (self excluded) of 2-D points ``coords`` (2, N) float32, in their order, as float64.

    ``mean_rho`` (a rough estimate) only sets the strip height; the result is exact whatever it is. ``part`` of
    ``parts``: only that share of the lanes is swept (one worker's share: interleaved strips, so a dense region
    is shared by all), and rho is NaN for the other points; the strips depend only on the points, dc and
    mean_rho, so the parts of one call together give every point once.
    """
    reach2, reach_lo, reach_hi = reach_rule(dc, 2)
    x, y = coords[0], coords[1]
    n = x.shape[0]
    y_min, y_range = float(y.min()), float(y.max()) - float(y.min())
    height = max(reach_hi / strips_per_dc(mean_rho), y_range / n)  # never more strips than points
    n_strips = int(y_range / height) + 1
    span = int(reach_hi / height) + 2  # strips b within reach of strip a lie in a - span .. a + span
    strip, starts = _bucket(y, y_min, 1.0 / height, n_strips)
    xs, ys = np.empty(n, np.float32), np.empty(n, np.float32)
    source = np.empty(n, np.int64)
    y_low, y_high = np.empty(n_strips), np.empty(n_strips)
    distinct = np.empty(n_strips, np.int64)
    _sort_strips(x, y, _sort_keys(x, y), strip, starts, xs, ys, source, y_low, y_high, distinct)
    weight = cumulative = slot = None
    if distinct.sum() < n:
        merged_starts = np.concatenate([[0], np.cumsum(distinct)])
        slot = np.empty(n, np.int64)
        merged_xs, merged_ys = np.empty(merged_starts[-1], np.float32), np.empty(merged_starts[-1], np.float32)
        weight = np.empty(merged_starts[-1], np.int64)
        _merge_copies(xs, ys, starts, merged_starts, slot, merged_xs, merged_ys, weight)
        xs, ys, starts, cumulative = merged_xs, merged_ys, merged_starts, np.concatenate([[0], np.cumsum(weight)])
    x0, inv_width, bin_offsets = _bin_layout(xs, starts)
    bin_start = np.empty(bin_offsets[-1], np.int64)
    _bin_strips(xs, starts, x0, inv_width, bin_offsets, bin_start)
    counts = np.empty(xs.shape[0], np.int64)
    first_lane, last_lane = part * _LANES // parts, (part + 1) * _LANES // parts
    # chunks of whole blocks of _LANES strips, so that strip a is always swept by the lane of offset a % _LANES
    for first_block, last_block in chunks(-(-n_strips // _LANES), progress, min_step=4):
        first, last = first_block * _LANES, min(n_strips, last_block * _LANES)
        _sweep(xs, ys, weight, cumulative, starts, y_low, y_high, x0, inv_width, bin_offsets, bin_start, span, reach2,
               reach_lo, reach_hi, first, last, first_lane, last_lane, counts)  # fmt: skip
    rho = np.empty(n, np.float64)
    rho[source] = (counts if slot is None else counts[slot]) - 1  # each point counted itself
    if parts > 1:
        swept = np.zeros(n_strips, np.bool_)
        for lane in range(first_lane, last_lane):
            swept[_LANE_OFFSET[lane] :: _LANES] = True
        rho[~swept[strip]] = np.nan
    return rho
