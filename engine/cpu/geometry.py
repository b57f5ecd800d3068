"""Scalar helpers shared by the CPU kernels: the float32 distance rule and the tree's run arithmetic."""

import numba as nb
import numpy as np


@nb.njit(inline="always", cache=True)
def sq_dist(a, b):
    """Squared distance, summed in float32 dimension by dimension (no fastmath, so no fused multiply-add)."""
    acc = np.float32(0.0)
    for c in range(a.shape[0]):
        diff = np.float32(a[c] - b[c])
        acc += diff * diff
    return acc


@nb.njit(inline="always", cache=True)
def segment_start(n, level, j):
    """First tree position owned by node j of ``level`` (see dpstudio.engine.vptree)."""
    return (np.int64(j) * n) >> level


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
