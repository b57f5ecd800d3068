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
