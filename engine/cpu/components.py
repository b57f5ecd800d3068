"""DBSCAN labels at one eps from the cached single-linkage chain and neighbour lists on the CPU (Numba).

No distance is computed: the clusters of core points are the runs of the chain (``hierarchy.single_linkage_chain``)
joined by gaps <= eps2, and a border point finds its core neighbours in its neighbour list.
"""

from __future__ import annotations

import numba as nb
import numpy as np


@nb.njit(nogil=True, cache=True)
def _core_labels(chain, gap, core, eps2):
    """Label of every core point (-1 elsewhere), clusters numbered by their smallest index as scikit-learn does."""
    n = chain.shape[0]
    run_of = np.empty(n, np.int64)
    run = 0
    for t in range(n):
        if t > 0 and gap[t - 1] > eps2:
            run += 1
        run_of[chain[t]] = run
    run_label = np.full(run + 1, -1, np.int64)
    labels = np.full(n, -1, np.int64)
    next_label = 0
    for i in range(n):  # index order: a run is numbered when its smallest core index comes up
        if not core[i]:
            continue
        r = run_of[i]
        if run_label[r] < 0:
            run_label[r] = next_label
            next_label += 1
        labels[i] = run_label[r]
    return labels


@nb.njit(parallel=True, nogil=True, cache=True)
def _border_labels(labels, core, knn_ids, knn_sq, eps2):
    """A non-core point joins the smallest label among the core points within eps in its list (-1: noise)."""
    n, k = knn_ids.shape
    out = labels.copy()
    for i in nb.prange(n):
        if core[i]:
            continue
        best = -1
        for c in range(k):
            if knn_sq[i, c] > eps2:
                break  # the list is nearest first: the rest is farther still
            j = knn_ids[i, c]
            if j >= 0 and core[j] and (best < 0 or labels[j] < best):
                best = labels[j]
        out[i] = best
    return out


def dbscan_labels(chain, gap, core_sq, knn_ids, knn_sq, eps2) -> np.ndarray:
    """Labels at ``eps2`` (float32 eps^2): scikit-learn's DBSCAN labels, noise -1.

    ``knn_ids``/``knn_sq`` must hold at least the min_samples - 1 nearest neighbours: a non-core point has fewer
    than that many within eps, so all of them are there.
    """
    core = core_sq <= eps2
    return _border_labels(_core_labels(chain, gap, core, eps2), core, knn_ids, knn_sq, eps2)
