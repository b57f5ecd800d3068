"""Approximate k nearest neighbours by NN-descent (Dong, Moses & Li 2011) through pynndescent, the maintained
implementation (an optional dependency: ``pip install 'dpstudio[approximate]'``).

For high dimensions, where no metric tree prunes: KG-DBSCAN's neighbour graph. The lists are re-measured with the
engine's float32 rule and ordered like the exact ones (nearest first, ties by smaller index), so everything
downstream treats them alike.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ..backends import MissingExtra
from .geometry import sq_dist


@nb.njit(parallel=True, nogil=True, cache=True)
def _remeasure(points, candidates, k, out_ids, out_sq):
    """Each row's candidates (self and -1 dropped) by the float32 rule, nearest first, ties by index; k kept."""
    n, width = candidates.shape
    for i in nb.prange(n):
        d2 = np.full(width, np.inf, np.float32)
        ids = np.full(width, np.iinfo(np.int64).max, np.int64)
        for c in range(width):
            j = candidates[i, c]
            if j >= 0 and j != i:
                d2[c], ids[c] = sq_dist(points[i], points[j]), j
        by_id = np.argsort(ids, kind="mergesort")
        order = by_id[np.argsort(d2[by_id], kind="mergesort")]  # stable: ties stay by index
        for c in range(k):
            if c < width and d2[order[c]] < np.inf:
                out_ids[i, c], out_sq[i, c] = ids[order[c]], d2[order[c]]
            else:
                out_ids[i, c], out_sq[i, c] = -1, np.inf


def approximate_knn(points: np.ndarray, k: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(ids (N, k) int64, squared distances (N, k) float32) of approximately the k nearest other points."""
    try:
        from pynndescent import NNDescent  # noqa: PLC0415  (optional, and slow to import)
    except ModuleNotFoundError as exc:
        if exc.name != "pynndescent":  # installed, but something it imports is missing: that error, as it is
            raise
        raise MissingExtra("approximate neighbours need pynndescent: pip install 'dpstudio[approximate]'") from exc
    n = points.shape[0]
    asked = min(k + 1, n)  # NN-descent lists each point first; one more keeps k others
    candidates = NNDescent(points, n_neighbors=asked, random_state=seed).neighbor_graph[0].astype(np.int64)
    ids, sq = np.empty((n, k), np.int64), np.empty((n, k), np.float32)
    _remeasure(np.ascontiguousarray(points, np.float32), candidates, k, ids, sq)
    return ids, sq
