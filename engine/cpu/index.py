"""Level-synchronous construction of the GDPC VP-tree on the CPU (Numba)."""

from __future__ import annotations

import dataclasses

import numba as nb
import numpy as np

from ..vptree import VPTree, tree_depth
from .geometry import run_start, segment_start, sq_dist
from .search import neighbour_graph


@nb.njit(parallel=True, nogil=True, cache=True)
def _split_level(points, order, vantage_pos, level, split_radius, next_vantage):
    """Sort each node's run of one level by distance to its vantage point and pick the children's vantage points.

    ``order`` maps tree positions to rows of ``points`` and is permuted in place. Stable sorting keeps equal
    distances in index order, so duplicate points end up in runs of increasing index.
    """
    n = order.shape[0]
    n_nodes = 1 << level
    first_node = n_nodes - 1
    for j in nb.prange(n_nodes):
        start = segment_start(n, level, j)
        end = segment_start(n, level, j + 1)
        mid = segment_start(n, level + 1, 2 * j + 1)
        vp = points[vantage_pos[j]]
        dist2 = np.empty(end - start, np.float32)
        for t in range(start, end):
            dist2[t - start] = sq_dist(points[order[t]], vp)
        by_distance = np.argsort(dist2, kind="mergesort")
        run = order[start:end].copy()
        for t in range(end - start):
            order[start + t] = run[by_distance[t]]
        split_radius[first_node + j] = np.sqrt(np.float64(dist2[by_distance[mid - start - 1]]))
        # the farthest point of each half from the parent's vantage point is a good corner to split from next
        next_vantage[2 * j] = order[mid - 1]
        next_vantage[2 * j + 1] = order[end - 1]


@nb.njit(cache=True, nogil=True)
def node_ball(coords, ids, start, end, center, cover_radius, min_id, k):
    """Node k's bounding ball (centre: the mean, radius: the farthest point) and smallest original index, over
    tree positions [start, end); an empty node bounds nothing, and a point routed to it later grows the ball."""
    if end == start:
        center[k], cover_radius[k], min_id[k] = 0, 0, np.iinfo(np.int64).max
        return
    d = coords.shape[0]
    acc = np.zeros(d, np.float64)
    smallest = ids[start]
    for t in range(start, end):
        for c in range(d):
            acc[c] += coords[c, t]
        smallest = min(smallest, ids[t])
    for c in range(d):
        center[k, c] = np.float32(acc[c] / (end - start))
    radius2 = np.float32(0.0)
    for t in range(start, end):
        radius2 = max(radius2, sq_dist(coords[:, t], center[k]))
    cover_radius[k] = np.float32(np.sqrt(np.float64(radius2)))
    min_id[k] = smallest


@nb.njit(parallel=True, nogil=True, cache=True)
def _bounding_balls(coords, ids, leaf_start, depth, center, cover_radius, min_id):
    """Bounding ball and smallest original index of every node, one level at a time (all nodes of a level at once)."""
    for level in range(depth + 1):
        first_node = (1 << level) - 1
        for j in nb.prange(1 << level):
            start, end = run_start(leaf_start, depth, level, j), run_start(leaf_start, depth, level, j + 1)
            node_ball(coords, ids, start, end, center, cover_radius, min_id, first_node + j)


@nb.njit(cache=True, nogil=True)
def _farthest_from(points, origin):
    best, best_d2 = 0, np.float32(-1.0)
    for i in range(points.shape[0]):
        d2 = sq_dist(points[i], origin)
        if d2 > best_d2:
            best, best_d2 = i, d2
    return best


def build_vptree(points: np.ndarray, progress=None, depth: int | None = None, graph: bool = True) -> VPTree:
    """The tree over float32 points (N, d), with its neighbour graph unless ``graph`` is False; ``depth`` levels
    (default: the fewest with full leaves, ``tree_depth``); ``progress(fraction)`` as it goes."""
    n, d = points.shape
    depth = tree_depth(n) if depth is None else depth
    order = np.arange(n, dtype=np.int64)
    n_internal = (1 << depth) - 1
    split_radius = np.zeros(n_internal, np.float32)
    vantage = np.zeros(n_internal, np.int64)
    vantage_pos = np.array([_farthest_from(points, points[0])], np.int64)
    for level in range(depth):
        vantage[(1 << level) - 1 : (2 << level) - 1] = vantage_pos
        next_vantage = np.empty(2 << level, np.int64)
        _split_level(points, order, vantage_pos, level, split_radius, next_vantage)
        vantage_pos = next_vantage
        if progress is not None:
            progress(0.5 * (level + 1) / (depth + 1))
    coords = np.ascontiguousarray(points[order].T)
    n_nodes = (2 << depth) - 1
    center = np.empty((n_nodes, d), np.float32)
    cover_radius = np.empty(n_nodes, np.float32)
    min_id = np.empty(n_nodes, np.int64)
    leaf_start = (np.arange((1 << depth) + 1, dtype=np.int64) * n) >> depth
    _bounding_balls(coords, order, leaf_start, depth, center, cover_radius, min_id)
    tree = VPTree(coords, order, vantage, split_radius, center, cover_radius, min_id, depth, leaf_start)
    if not graph:
        return tree
    graph = neighbour_graph(tree, progress=None if progress is None else lambda fraction: progress(0.5 + fraction / 2))
    return dataclasses.replace(tree, neighbours=graph)
