"""Helpers shared by the CPU kernels: the float32 distance rule, the tree's run arithmetic, node bounds, and the
Gaussian kernel's term."""

import numba as nb
import numpy as np

from ..vptree import GAUSSIAN_UNIT

BLOCK = 256  # queries per parallel task: one traversal stack per task
STACK = 128  # deeper than any tree: depth <= 58 for int64 sizes, and each level adds at most one entry


@nb.njit(inline="always", cache=True)
def sq_dist(a, b):
    """Squared distance, summed in float32 dimension by dimension (no fastmath, so no fused multiply-add)."""
    acc = np.float32(0.0)
    for c in range(a.shape[0]):
        diff = np.float32(a[c] - b[c])
        acc += diff * diff
    return acc


@nb.njit(inline="always", cache=True)
def gaussian_units(sq, inv_dc2):
    """A Gaussian rho term exp(-d^2 / dc^2) in whole units of 1 / GAUSSIAN_UNIT (vptree.py), nearest, ties to even."""
    return np.int64(np.rint(np.exp(-np.float64(sq) * inv_dc2) * GAUSSIAN_UNIT))


@nb.njit(inline="always", cache=True)
def segment_start(n, level, j):
    """First tree position of node j of ``level`` in a freshly built tree of n points (see dpstudio.engine.vptree)."""
    return (np.int64(j) * n) >> level


@nb.njit(inline="always", cache=True)
def run_start(leaf_start, depth, level, j):
    """First tree position owned by node j of ``level``: the first of its leftmost leaf (j = 2**level: the end)."""
    return leaf_start[np.int64(j) << (depth - level)]


@nb.njit(inline="always", cache=True)
def leaf_sq_dists(coords, q, start, end, out):
    """out[t - start] = squared distance from q to tree position t, for a run of at most len(out) positions.

    Dimension-major, so the inner loop is unit stride and vectorizes; each point still sums its dimensions
    in order, which keeps the float32 rule of sq_dist bit for bit.
    """
    m = end - start
    for t in range(m):
        out[t] = np.float32(0.0)
    for c in range(coords.shape[0]):
        row = coords[c, start:end]
        qc = q[c]
        for t in range(m):
            diff = np.float32(row[t] - qc)
            out[t] += diff * diff


@nb.njit(inline="always", cache=True)
def leaf_of(leaf_start, p):
    """The leaf (0 .. 2**depth - 1) holding tree position p (the last of equal starts: empty leaves come first)."""
    return np.searchsorted(leaf_start, p, side="right") - 1


@nb.njit(cache=True, nogil=True)
def ball_distance(q, center, radius, k, slack):
    """(lower, upper) bounds on the distance from q to any point of node k, widened by the slack."""
    s = np.sqrt(np.float64(sq_dist(q, center[k])))
    r = np.float64(radius[k])
    pad = (s + r) * slack
    return s - r - pad, s + r + pad


@nb.njit(cache=True, nogil=True)
def node_min(values, leaf_start, depth):
    """Minimum of ``values`` (tree order) over every node's run, leaves first, then bottom-up; an empty node (after
    deletions) gets the largest value, which no pruning test passes."""
    out = np.empty((2 << depth) - 1, values.dtype)
    first_leaf = (1 << depth) - 1
    largest = values.max() if values.shape[0] else 0
    for j in range(1 << depth):
        start, end = leaf_start[j], leaf_start[j + 1]
        out[first_leaf + j] = values[start:end].min() if end > start else largest
    for k in range(first_leaf - 1, -1, -1):
        out[k] = min(out[2 * k + 1], out[2 * k + 2])
    return out


def chunks(n: int, progress, min_step: int = 1 << 16):
    """Ranges of n items small enough to report progress, large enough to keep every core busy."""
    step = max(min_step, -(-n // 50))
    for first in range(0, n, step):
        yield first, min(n, first + step)
        if progress is not None:
            progress(min(n, first + step) / n)
