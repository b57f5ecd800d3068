"""Nearest-point searches over the VP-tree on the CPU (Numba): the K nearest neighbours of every point (the
neighbour graph of the CPU index) and the nearest denser point of chosen points (delta where the graph has none).

Both are one search: the K nearest points among those of lower density rank than the query, ordered by
(squared distance, original index), so distance ties go to the smaller index. The neighbour graph is the case
where every other point counts as denser. The list is exact: every point left out is farther, or as far with a
larger index.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ..vptree import LEAF_SIZE, NeighbourGraph, VPTree, bound_slack
from .geometry import BLOCK, STACK, ball_distance, chunks, leaf_of, leaf_sq_dists

NEIGHBOURS = 8  # K of the graph: on blobs, all but 0.5% (2% rule) to 7% (small dc) find a denser point in it
NO_ID = np.iinfo(np.int64).max


@nb.njit(inline="always", cache=True)
def _insert(d2, ident, pos, best_d2, best_id, best_pos):
    """Put (d2, ident) into the sorted lists if it comes before their last entry."""
    last = best_d2.shape[0] - 1
    if d2 > best_d2[last] or (d2 == best_d2[last] and ident >= best_id[last]):
        return
    i = last
    while i > 0 and (best_d2[i - 1] > d2 or (best_d2[i - 1] == d2 and best_id[i - 1] > ident)):
        best_d2[i], best_id[i], best_pos[i] = best_d2[i - 1], best_id[i - 1], best_pos[i - 1]
        i -= 1
    best_d2[i], best_id[i], best_pos[i] = d2, ident, pos


@nb.njit(inline="always", cache=True)
def _scan_leaf(q, p, r, j, coords, leaf_start, ids, rank, sq, best_d2, best_id, best_pos):
    start, end = leaf_start[j], leaf_start[j + 1]
    leaf_sq_dists(coords, q, start, end, sq)
    worst = best_d2[best_d2.shape[0] - 1]
    for t in range(start, end):
        if sq[t - start] <= worst and rank[t] < r and t != p:
            _insert(sq[t - start], ids[t], t, best_d2, best_id, best_pos)
            worst = best_d2[best_d2.shape[0] - 1]


@nb.njit(inline="always", cache=True)
def _nearest(p, r, coords, leaf_start, ids, rank, center, radius, min_rank, min_id, depth, slack, nodes, levels, lowers, sq, best_d2, best_id, best_pos):
    """Improve the sorted (d2, id, position) lists with the points nearest to position p among those ranked below r."""
    q = coords[:, p].copy()
    last = best_d2.shape[0] - 1
    own_leaf = leaf_of(leaf_start, p)
    _scan_leaf(q, p, r, own_leaf, coords, leaf_start, ids, rank, sq, best_d2, best_id, best_pos)  # a good bound first
    own_leaf += (1 << depth) - 1
    nodes[0], levels[0], lowers[0], top = 0, 0, 0.0, 1
    while top > 0:
        top -= 1
        k, level, lower = nodes[top], levels[top], lowers[top]
        worst = np.sqrt(np.float64(best_d2[last]))
        # nothing denser here, everything strictly farther, or at best a tie lost to a smaller id
        if min_rank[k] >= r or lower > worst or (lower >= worst and min_id[k] > best_id[last]) or k == own_leaf:
            continue
        if level == depth:
            _scan_leaf(q, p, r, k - ((1 << depth) - 1), coords, leaf_start, ids, rank, sq, best_d2, best_id, best_pos)
            continue
        near, far = 2 * k + 1, 2 * k + 2
        near_lower = ball_distance(q, center, radius, near, slack)[0]
        far_lower = ball_distance(q, center, radius, far, slack)[0]
        if far_lower < near_lower:
            near, far, near_lower, far_lower = far, near, far_lower, near_lower
        nodes[top], levels[top], lowers[top] = far, level + 1, far_lower
        nodes[top + 1], levels[top + 1], lowers[top + 1] = near, level + 1, near_lower
        top += 2


@nb.njit(parallel=True, nogil=True, cache=True)
def _nearest_of(positions, below, bound_d2, bound_id, k, coords, leaf_start, ids, rank, center, radius, min_rank, min_id, depth, slack, out_d2, out_pos):
    """For each listed position, the k nearest points ranked under ``below[i]`` that come before (bound_d2[i],
    bound_id[i]) in (d2, id) order, into out_d2 / out_pos (-1 and the bound where none does)."""
    for b in nb.prange((positions.shape[0] + BLOCK - 1) // BLOCK):
        nodes = np.empty(STACK, np.int64)
        levels = np.empty(STACK, np.int64)
        lowers = np.empty(STACK, np.float64)
        sq = np.empty(LEAF_SIZE, np.float32)
        best_d2, best_id, best_pos = np.empty(k, np.float32), np.empty(k, np.int64), np.empty(k, np.int64)
        for i in range(b * BLOCK, min(positions.shape[0], (b + 1) * BLOCK)):
            best_d2[:] = bound_d2[i]
            best_id[:] = bound_id[i]
            best_pos[:] = -1
            _nearest(
                positions[i], below[i], coords, leaf_start, ids, rank, center, radius, min_rank, min_id, depth, slack,
                nodes, levels, lowers, sq, best_d2, best_id, best_pos,
            )  # fmt: skip
            out_d2[i] = best_d2
            out_pos[i] = best_pos


def nearest_denser(tree: VPTree, rank_tree: np.ndarray, min_rank: np.ndarray, positions: np.ndarray):
    """(squared distance, original index) of the nearest denser point of each listed position (not the densest)."""
    m = positions.shape[0]
    d2 = np.empty((m, 1), np.float32)
    pos = np.empty((m, 1), np.int64)
    _nearest_of(
        positions, rank_tree[positions], np.full(m, np.inf, np.float32), np.full(m, NO_ID, np.int64), 1, tree.coords,
        tree.leaf_start, tree.ids, rank_tree, tree.center, tree.cover_radius, min_rank, tree.min_id, tree.depth,
        bound_slack(tree.n_dims), d2, pos,
    )  # fmt: skip
    return d2[:, 0], tree.ids[pos[:, 0]]


def neighbour_graph(tree: VPTree, k: int = NEIGHBOURS, progress=None, first: int = 0, last: int | None = None) -> NeighbourGraph:
    """The k nearest neighbours of every tree position, or of positions [first, last) (fewer than k points: the
    lists end in -1)."""
    n = tree.n_points
    last = n if last is None else last
    # every point counts as denser: all ranked 0, under every query's bound of 1, and no node pruned by rank
    rank = np.zeros(n, np.int64)
    min_rank = np.zeros(tree.n_nodes, np.int64)
    d2 = np.empty((last - first, k), np.float32)
    pos = np.empty((last - first, k), np.int32)  # tree positions; half the memory of int64
    for start, end in chunks(last - first, progress):
        chunk_pos = np.empty((end - start, k), np.int64)
        unbounded = np.full(end - start, np.inf, np.float32), np.full(end - start, NO_ID, np.int64)
        _nearest_of(
            np.arange(first + start, first + end), np.ones(end - start, np.int64), *unbounded, k, tree.coords,
            tree.leaf_start, tree.ids, rank, tree.center, tree.cover_radius, min_rank, tree.min_id, tree.depth,
            bound_slack(tree.n_dims), d2[start:end], chunk_pos,
        )  # fmt: skip
        pos[start:end] = chunk_pos
    return NeighbourGraph(pos, d2)


def knn(tree: VPTree, k: int, progress=None) -> tuple[np.ndarray, np.ndarray]:
    """The k nearest other points of every point, in original order: (ids (N, k) int64, squared distances (N, k)
    float32), nearest first, ties by smaller index; rows end in -1 / inf when N - 1 < k.

    The index's own graph answers k up to its K without a search."""
    graph = tree.neighbours
    if graph is None or graph.positions.shape[1] < k:
        graph = neighbour_graph(tree, k, progress)
    positions = graph.positions[:, :k]
    ids = np.where(positions >= 0, tree.ids[positions], -1)
    out_ids = np.empty_like(ids, dtype=np.int64)
    out_sq = np.empty((tree.n_points, k), np.float32)
    out_ids[tree.ids], out_sq[tree.ids] = ids, graph.sq_dists[:, :k]
    return out_ids, out_sq
