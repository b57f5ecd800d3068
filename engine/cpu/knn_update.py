"""Every point's k nearest neighbours kept exact through inserts and deletes (Numba), instead of listed again.

Insert: a new point q enters an old point p's list only where it comes before the list's last entry, that is
d2(p, q) < d2_k(p) (a tie goes to the old, smaller index). These p are found by a reverse search over the old
tree: a node is skipped when its ball is farther from q than the largest reach sqrt(d2_k) of its points. Each
found p takes its new points into its sorted list; each new point's own list is a search of the new tree.
Delete: only the lists that held a deleted point are searched again; the others are renumbered (a deletion
keeps the order of the indices left, so ties stay broken the same). Both equal a fresh ``knn`` bit for bit:
the same float32 distance rule and the same (d2, index) order.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ..vptree import LEAF_SIZE, VPTree, bound_slack
from .geometry import BLOCK, STACK, ball_distance, leaf_sq_dists, node_min
from .search import NO_ID, _insert, _nearest_of


def knn_inserted(old_tree: VPTree, tree: VPTree, ids: np.ndarray, sq: np.ndarray, n_old: int) -> tuple[np.ndarray, np.ndarray]:
    """The (ids, sq) lists of ``knn(tree, k)`` from those of ``knn(old_tree, k)``, where ``tree`` holds the old
    points (indices below n_old) and new ones after them; k >= 1."""
    k = ids.shape[1]
    new_ids = np.arange(n_old, tree.n_points)
    position = np.empty(tree.n_points, np.int64)
    position[tree.ids] = np.arange(tree.n_points)
    new_coords = np.ascontiguousarray(tree.coords[:, position[new_ids]].T)
    reach_sq = np.ascontiguousarray(sq[old_tree.ids, k - 1])  # tree order; +inf while lists are not full
    node_reach = -node_min(-np.sqrt(reach_sq.astype(np.float64)), old_tree.leaf_start, old_tree.depth)
    args = (new_coords, old_tree.coords, old_tree.leaf_start, old_tree.center, old_tree.cover_radius, node_reach,
            reach_sq, old_tree.depth, bound_slack(old_tree.n_dims))  # fmt: skip
    counts = np.zeros(new_ids.size + 1, np.int64)
    _reverse_hits(*args, counts[1:], np.empty(0, np.int64), np.empty(0, np.float32))
    starts = np.cumsum(counts)
    hit_pos, hit_sq = np.empty(starts[-1], np.int64), np.empty(starts[-1], np.float32)
    _reverse_hits(*args, starts[:-1].copy(), hit_pos, hit_sq)
    hit_id = old_tree.ids[hit_pos]
    hit_new = np.repeat(new_ids, np.diff(starts))
    by_point = np.lexsort((hit_new, hit_id))  # each old point's new neighbours together, in index order
    out_ids, out_sq = np.empty((tree.n_points, k), np.int64), np.empty((tree.n_points, k), np.float32)
    out_ids[:n_old], out_sq[:n_old] = ids, sq
    _take_in(out_ids, out_sq, hit_id[by_point], hit_new[by_point], hit_sq[by_point])
    out_ids[n_old:], out_sq[n_old:] = _search(tree, position[new_ids], k)
    return out_ids, out_sq


def knn_deleted(tree: VPTree, ids: np.ndarray, sq: np.ndarray, mapping: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The lists of ``knn(tree, k)`` from the lists before a deletion: ``mapping`` takes each old index to its new
    one (-1: deleted), ``tree`` holds the points left."""
    alive = mapping >= 0
    out_ids = np.where(ids >= 0, mapping[np.maximum(ids, 0)], -1)[alive]
    out_sq = sq[alive]
    lost = np.flatnonzero(((out_ids < 0) & (ids[alive] >= 0)).any(axis=1))  # a listed point was deleted
    if lost.size:
        position = np.empty(tree.n_points, np.int64)
        position[tree.ids] = np.arange(tree.n_points)
        out_ids[lost], out_sq[lost] = _search(tree, position[lost], ids.shape[1])
    return out_ids, out_sq


def _search(tree: VPTree, positions: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(ids, sq) of the k nearest other points of the points at these tree positions (as ``knn`` lists them)."""
    m = positions.shape[0]
    d2, pos = np.empty((m, k), np.float32), np.empty((m, k), np.int64)
    _nearest_of(
        positions, np.ones(m, np.int64), np.full(m, np.inf, np.float32), np.full(m, NO_ID, np.int64), k, tree.coords,
        tree.leaf_start, tree.ids, np.zeros(tree.n_points, np.int64), tree.center, tree.cover_radius,
        np.zeros(tree.center.shape[0], np.int64), tree.min_id, tree.depth, bound_slack(tree.n_dims), d2, pos,
    )  # every point counts as denser, as in neighbour_graph  # fmt: skip
    return np.where(pos >= 0, tree.ids[np.maximum(pos, 0)], -1), d2


@nb.njit(parallel=True, nogil=True, cache=True)
def _reverse_hits(queries, coords, leaf_start, center, radius, node_reach, reach_sq, depth, slack, at, hit_pos, hit_sq):
    """For each query point, the tree positions p with d2(p, q) < reach_sq[p]: counted into ``at`` when hit_pos is
    empty, else written from at[i] on."""
    fill = hit_pos.shape[0] > 0
    first_leaf = (1 << depth) - 1
    for b in nb.prange((queries.shape[0] + BLOCK - 1) // BLOCK):
        nodes = np.empty(STACK, np.int64)
        sq = np.empty(LEAF_SIZE, np.float32)
        for i in range(b * BLOCK, min(queries.shape[0], (b + 1) * BLOCK)):
            q = queries[i]
            nodes[0], top = 0, 1
            while top > 0:
                top -= 1
                node = nodes[top]
                if ball_distance(q, center, radius, node, slack)[0] > node_reach[node]:
                    continue  # every point of the node is farther from q than its own k-th neighbour
                if node < first_leaf:
                    nodes[top], nodes[top + 1] = 2 * node + 1, 2 * node + 2
                    top += 2
                    continue
                start, end = leaf_start[node - first_leaf], leaf_start[node - first_leaf + 1]
                leaf_sq_dists(coords, q, start, end, sq)
                for t in range(start, end):
                    if sq[t - start] < reach_sq[t]:
                        if fill:
                            hit_pos[at[i]], hit_sq[at[i]] = t, sq[t - start]
                        at[i] += 1


@nb.njit(parallel=True, nogil=True, cache=True)
def _take_in(ids, sq, point, new_id, new_sq):
    """Insert each (new_sq, new_id) into row ``point`` of the sorted lists; the hits come grouped by point."""
    starts = np.flatnonzero(np.concatenate((np.ones(1, np.bool_), point[1:] != point[:-1]))) if point.size else np.empty(0, np.int64)
    for g in nb.prange(starts.shape[0]):
        first = starts[g]
        last = starts[g + 1] if g + 1 < starts.shape[0] else point.shape[0]
        p = point[first]
        unused = np.empty(ids.shape[1], np.int64)
        for h in range(first, last):
            _insert(new_sq[h], new_id[h], 0, sq[p], ids[p], unused)
