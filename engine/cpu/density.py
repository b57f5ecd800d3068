"""rho (cut-off and Gaussian) and delta/parent on the CPU: Numba-parallel queries over the VP-tree.

Queries run in tree order, so neighbouring queries share most of their traversal in cache (GDPC's
calculation-order arrangement). A node's bounding ball decides, before any point of it is touched, whether
the whole node lies inside the query ball (counted at once), outside it (skipped), or must be opened.
Cut-off rho of 2-D data goes to the strip sweep (``strips``) instead, which resolves the ball's edge more
finely than 32-point leaves can. delta reads the index's neighbour graph first (``search``).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ..vptree import GAUSSIAN_UNIT, LEAF_SIZE, NeighbourGraph, VPTree, bound_slack, reach_rule, rho_reach
from . import strips
from .geometry import STACK, ball_distance, chunks, gaussian_units, leaf_sq_dists, node_min, run_start, sq_dist
from .search import nearest_denser


@nb.njit(cache=True, nogil=True)
def leaf_interactions(leaf, coords, leaf_start, center, radius, depth, reach_lo, reach_hi, gaussian, slack, nodes, levels, candidates):
    """One traversal for all queries of a leaf, bounded by the leaf's ball: (points certainly within reach of
    every query, number of leaves left to test query by query, which are written to ``candidates``)."""
    own = (1 << depth) - 1 + leaf
    pad = np.float64(radius[own]) * (1 + slack)  # any query of the leaf is within this of the leaf's centre
    certain, n_candidates = 0, 0
    nodes[0], levels[0], top = 0, 0, 1
    while top > 0:
        top -= 1
        k, level = nodes[top], levels[top]
        lower, upper = ball_distance(center[own], center, radius, k, slack)
        if lower - pad >= reach_hi:
            continue
        j = k - ((1 << level) - 1)
        if not gaussian and upper + pad < reach_lo:
            certain += run_start(leaf_start, depth, level, j + 1) - run_start(leaf_start, depth, level, j)
        elif level == depth:
            candidates[n_candidates] = j
            n_candidates += 1
        else:
            nodes[top], levels[top] = 2 * k + 1, level + 1
            nodes[top + 1], levels[top + 1] = 2 * k + 2, level + 1
            top += 2
    return certain, n_candidates


@nb.njit(parallel=True, nogil=True, cache=True)
def _rho_leaves(coords, leaf_start, center, radius, depth, reach2, reach_lo, reach_hi, inv_dc2, gaussian, slack, first_leaf, last_leaf, rho):
    """rho of every query in leaves [first_leaf, last_leaf): cut-off counts (self excluded) or Gaussian sums."""
    leaf_offset = (1 << depth) - 1
    for leaf in nb.prange(first_leaf, last_leaf):
        nodes = np.empty(STACK, np.int64)
        levels = np.empty(STACK, np.int64)
        candidates = np.empty(1 << depth, np.int64)
        sq = np.empty(LEAF_SIZE, np.float32)
        certain, n_candidates = leaf_interactions(
            leaf, coords, leaf_start, center, radius, depth, reach_lo, reach_hi, gaussian, slack, nodes, levels, candidates
        )
        for p in range(leaf_start[leaf], leaf_start[leaf + 1]):
            q = coords[:, p].copy()
            total = np.float64(certain)
            units = np.int64(0)  # Gaussian: whole units of 1 / GAUSSIAN_UNIT, exact in any order
            for c in range(n_candidates):
                j = candidates[c]
                lower, upper = ball_distance(q, center, radius, leaf_offset + j, slack)
                if lower >= reach_hi:
                    continue
                start, end = leaf_start[j], leaf_start[j + 1]
                if not gaussian and upper < reach_lo:
                    total += end - start
                    continue
                leaf_sq_dists(coords, q, start, end, sq)
                if not gaussian:
                    inside = 0
                    for t in range(end - start):
                        inside += sq[t] < reach2
                    total += inside
                else:
                    for t in range(end - start):
                        if sq[t] < reach2 and start + t != p:
                            units += gaussian_units(sq[t], inv_dc2)
            rho[p] = units / GAUSSIAN_UNIT if gaussian else total - 1.0  # a cut-off count includes the point itself


@nb.njit(parallel=True, nogil=True, cache=True)
def _denser_from_graph(positions, sq_dists, ids, rank, first, delta2, parent):
    """delta2 and parent of the listed rows (tree positions first, first + 1, ...) wherever the row's neighbour
    list holds a denser point (its first is the nearest); which did."""
    n, k = positions.shape
    found = np.zeros(n, np.bool_)
    for p in nb.prange(n):
        for c in range(k):
            t = positions[p, c]
            if t >= 0 and rank[t] < rank[first + p]:
                delta2[p], parent[p], found[p] = sq_dists[p, c], ids[t], True
                break
    return found


@nb.njit(parallel=True, nogil=True, cache=True)
def _leaf_costs(coords, leaf_start, center, radius, depth, reach_lo, reach_hi, gaussian, slack, leaves, once, costs):
    """The cheap pass of ``costs_of_leaves``: one traversal per leaf, no point touched."""
    for i in nb.prange(leaves.shape[0]):
        leaf = leaves[i]
        nodes = np.empty(STACK, np.int64)
        levels = np.empty(STACK, np.int64)
        candidates = np.empty(1 << depth, np.int64)
        n_candidates = leaf_interactions(
            leaf, coords, leaf_start, center, radius, depth, reach_lo, reach_hi, gaussian, slack, nodes, levels, candidates
        )[1]  # fmt: skip
        scanned = 0
        for c in range(n_candidates):
            if not once or candidates[c] >= leaf:
                scanned += leaf_start[candidates[c] + 1] - leaf_start[candidates[c]]
        costs[i] = (leaf_start[leaf + 1] - leaf_start[leaf]) * (scanned + 1)


@nb.njit(parallel=True, nogil=True, cache=True)
def _farthest_d2(coords, p):
    q = coords[:, p].copy()
    best = np.float32(0.0)
    for t in nb.prange(coords.shape[1]):
        best = max(best, sq_dist(q, coords[:, t]))
    return best


def rho(tree: VPTree, dc: float, kernel: str, progress=None) -> np.ndarray:
    """Local density of every point, in original order (float64)."""
    gaussian = kernel == "gaussian"
    if not gaussian and tree.n_dims == 2:
        rho_tree = strips.cutoff_rho(tree.coords, dc, sampled_mean_rho(tree, dc), progress)
    else:
        rho_tree = np.empty(tree.n_points, np.float64)
        for first, last in chunks(1 << tree.depth, progress, min_step=1 << 11):
            _tree_rho(tree, dc, gaussian, first, last, rho_tree)
    out = np.empty_like(rho_tree)
    out[tree.ids] = rho_tree
    return out


def rho_of_leaves(tree: VPTree, dc: float, kernel: str, first_leaf: int, last_leaf: int) -> np.ndarray:
    """rho (float64) of the points of leaves [first_leaf, last_leaf), in tree order: one worker's share of
    ``rho`` (the same values; 2-D cut-off rho too, which ``rho`` takes from the strip sweep)."""
    rho_tree = np.empty(tree.n_points, np.float64)
    _tree_rho(tree, dc, kernel == "gaussian", first_leaf, last_leaf, rho_tree)
    return rho_tree[tree.leaf_start[first_leaf] : tree.leaf_start[last_leaf]]


def sampled_leaves(n_leaves: int, sampled: int = 4096) -> np.ndarray:
    """Every k-th leaf, k = n_leaves // sampled (at least 1): those whose costs are measured, each standing for the
    k leaves from it (neighbours in tree order are neighbours in space): at 2% of 20M points a pass over every leaf
    would cost a good part of rho itself."""
    return np.arange(0, n_leaves, max(1, n_leaves // sampled), dtype=np.int64)


def costs_of_leaves(tree: VPTree, dc: float, kernel: str, leaves: np.ndarray, once: bool = False) -> np.ndarray:
    """An estimate of each listed leaf's share of the work of ``rho_of_leaves``, from a pass that touches no point:
    its points times the points of the leaves it must scan point by point (those its bounds leave undecided; with
    ``once``, only those from its own on, as where each pair is counted once: the GPU's cut-off counts). Dense
    regions cost far more than their count, so Dask's shares are cut by this, not by points."""
    _, reach_lo, reach_hi = reach_rule(rho_reach(dc, kernel), tree.n_dims)
    costs = np.empty(leaves.shape[0], np.int64)
    _leaf_costs(
        tree.coords, tree.leaf_start, tree.center, tree.cover_radius, tree.depth, reach_lo, reach_hi,
        kernel == "gaussian", bound_slack(tree.n_dims), np.ascontiguousarray(leaves, np.int64), once, costs,
    )  # fmt: skip
    return costs


def _tree_rho(tree: VPTree, dc: float, gaussian: bool, first_leaf: int, last_leaf: int, rho_tree: np.ndarray) -> None:
    reach2, reach_lo, reach_hi = reach_rule(rho_reach(dc, "gaussian" if gaussian else "cutoff"), tree.n_dims)
    _rho_leaves(
        tree.coords, tree.leaf_start, tree.center, tree.cover_radius, tree.depth, reach2, reach_lo, reach_hi,
        1.0 / np.float64(dc) ** 2, gaussian, bound_slack(tree.n_dims), first_leaf, last_leaf, rho_tree,
    )  # fmt: skip


def sampled_mean_rho(tree: VPTree, dc: float, n_leaves: int = 16) -> float:
    """Mean cut-off rho over the points of a few leaves spread through the tree (cheap: 16 of 2**depth leaves)."""
    rho_tree = np.full(tree.n_points, np.nan)  # NaN: not sampled
    for leaf in np.unique(np.linspace(0, (1 << tree.depth) - 1, n_leaves).astype(np.int64)):
        _tree_rho(tree, dc, False, leaf, leaf + 1, rho_tree)
    return float(np.nanmean(rho_tree))


def density_order(rho_values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(order, rank): points from densest to sparsest, ties by index; rank[i] = position of i in that order."""
    n = rho_values.shape[0]
    if rho_values.dtype.kind == "u":  # counts from Dask's workers, as uint32: signed, so that -rho means the order
        rho_values = rho_values.astype(np.int64)
    if n and rho_values.max() < n and np.array_equal(rho_values, np.floor(rho_values)) and rho_values.min() >= 0:
        return _counting_order(rho_values.astype(np.int64))  # cut-off counts: O(N), 10x faster than argsort
    order = _ties_by_index(np.argsort(-rho_values), rho_values)
    rank = np.empty_like(order)
    rank[order] = np.arange(n)
    return order, rank


def _ties_by_index(order: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``order`` (an unstable sort of ``values``, which hold no NaN) with each run of equal values in index order:
    the stable sort, at the cost of a quicksort (half a stable one's) and a sort of the tied entries alone."""
    in_order = values[order]
    tie = in_order[1:] == in_order[:-1]
    if tie.any():
        tied = np.flatnonzero(np.concatenate((tie, [False])) | np.concatenate(([False], tie)))
        run = np.cumsum(np.concatenate(([True], ~tie)))[tied]  # which run of equal values each tied entry is in
        order[tied] = order[tied][np.lexsort((order[tied], run))]
    return order


@nb.njit(nogil=True, cache=True)
def _counting_order(counts):
    """density_order of whole-number densities in [0, N): a stable counting sort on the count, largest first."""
    n = counts.shape[0]
    start = np.zeros(n + 1, np.int64)
    for c in counts:
        start[n - c] += 1  # bucket n - 1 - c, shifted by one for the running sum below
    for b in range(n):
        start[b + 1] += start[b]
    order, rank = np.empty(n, np.int64), np.empty(n, np.int64)
    for i in range(n):  # in index order, so ties stay by index
        slot = start[n - 1 - counts[i]]
        start[n - 1 - counts[i]] += 1
        order[slot], rank[i] = i, slot
    return order, rank


def delta(tree: VPTree, rank: np.ndarray, progress=None) -> tuple[np.ndarray, np.ndarray]:
    """(delta, parent) in original order, given every point's density rank (0 = densest).

    Where the tree carries a neighbour graph, a point whose list holds a denser point takes the first such;
    the others (local density maxima at the scale of the list) search the tree.
    """
    rank_tree = np.ascontiguousarray(rank[tree.ids])
    delta2, parent = delta_of_leaves(tree, rank_tree, 0, 1 << tree.depth, tree.neighbours, progress)
    return delta_in_point_order(tree.ids, delta2, parent)


def delta_in_point_order(ids: np.ndarray, delta2: np.ndarray, parent: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(delta as float64, parent as int64) in point order from tree-order squared delta (float32) and parents,
    ``ids`` the tree order's point indices."""
    out_delta = np.empty(ids.shape[0], np.float64)
    out_parent = np.empty(ids.shape[0], np.int64)
    out_delta[ids] = np.sqrt(delta2.astype(np.float64))
    out_parent[ids] = parent
    return out_delta, out_parent


def delta_of_leaves(
    tree: VPTree, rank_tree: np.ndarray, first_leaf: int, last_leaf: int, graph: NeighbourGraph | None = None,
    progress=None,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """(squared delta as float32, parent) of the points of leaves [first_leaf, last_leaf), in tree order, given
    the density rank in tree order (one worker's share of ``delta``); ``graph``: the neighbour lists of exactly
    those points, or None."""
    rank_tree = np.ascontiguousarray(rank_tree, np.int64)
    first, last = int(tree.leaf_start[first_leaf]), int(tree.leaf_start[last_leaf])
    n = last - first
    delta2 = np.empty(n, np.float32)
    parent = np.empty(n, np.int64)
    if graph is None:
        searched = np.ones(n, np.bool_)
    else:
        searched = ~_denser_from_graph(graph.positions, graph.sq_dists, tree.ids, rank_tree, first, delta2, parent)
    densest = int(np.argmin(rank_tree))
    if first <= densest < last:  # nothing is denser: delta is its largest distance
        delta2[densest - first], parent[densest - first] = _farthest_d2(tree.coords, densest), -1
        searched[densest - first] = False
    positions = first + np.flatnonzero(searched)
    min_rank = node_min(rank_tree, tree.leaf_start, tree.depth)
    for start, end in chunks(positions.shape[0], progress):
        chunk = positions[start:end]
        delta2[chunk - first], parent[chunk - first] = nearest_denser(tree, rank_tree, min_rank, chunk)
    return delta2, parent
