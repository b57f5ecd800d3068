"""rho (cut-off and Gaussian) and delta/parent on the CPU: Numba-parallel queries over the VP-tree.

Queries run in tree order, so neighbouring queries share most of their traversal in cache (GDPC's
calculation-order arrangement). A node's bounding ball decides, before any point of it is touched, whether
the whole node lies inside the query ball (counted at once), outside it (skipped), or must be opened.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ..vptree import LEAF_SIZE, VPTree, bound_slack, gaussian_reach, reach_rule
from .geometry import leaf_sq_dists, segment_start, sq_dist

_BLOCK = 256  # queries per parallel task: one traversal stack per task
_STACK = 128  # deeper than any tree: depth <= 58 for int64 sizes, and each level adds at most one entry
_NO_ID = np.iinfo(np.int64).max


@nb.njit(cache=True)
def _ball_distance(q, center, radius, k, slack):
    """(lower, upper) bounds on the distance from q to any point of node k, widened by the slack."""
    s = np.sqrt(np.float64(sq_dist(q, center[k])))
    r = np.float64(radius[k])
    pad = (s + r) * slack
    return s - r - pad, s + r + pad


@nb.njit(cache=True)
def _leaf_interactions(leaf, coords, center, radius, depth, reach_lo, reach_hi, gaussian, slack, nodes, levels, candidates):
    """One traversal for all queries of a leaf, bounded by the leaf's ball: (points certainly within reach of
    every query, number of leaves left to test query by query, which are written to ``candidates``)."""
    n = coords.shape[1]
    own = (1 << depth) - 1 + leaf
    pad = np.float64(radius[own]) * (1 + slack)  # any query of the leaf is within this of the leaf's centre
    certain, n_candidates = 0, 0
    nodes[0], levels[0], top = 0, 0, 1
    while top > 0:
        top -= 1
        k, level = nodes[top], levels[top]
        lower, upper = _ball_distance(center[own], center, radius, k, slack)
        if lower - pad >= reach_hi:
            continue
        j = k - ((1 << level) - 1)
        if not gaussian and upper + pad < reach_lo:
            certain += segment_start(n, level, j + 1) - segment_start(n, level, j)
        elif level == depth:
            candidates[n_candidates] = j
            n_candidates += 1
        else:
            nodes[top], levels[top] = 2 * k + 1, level + 1
            nodes[top + 1], levels[top + 1] = 2 * k + 2, level + 1
            top += 2
    return certain, n_candidates


@nb.njit(parallel=True, nogil=True, cache=True)
def _rho_leaves(coords, center, radius, depth, reach2, reach_lo, reach_hi, inv_dc2, gaussian, slack, first_leaf, last_leaf, rho):
    """rho of every query in leaves [first_leaf, last_leaf): cut-off counts (self excluded) or Gaussian sums."""
    n = coords.shape[1]
    leaf_offset = (1 << depth) - 1
    for leaf in nb.prange(first_leaf, last_leaf):
        nodes = np.empty(_STACK, np.int64)
        levels = np.empty(_STACK, np.int64)
        candidates = np.empty(1 << depth, np.int64)
        sq = np.empty(LEAF_SIZE, np.float32)
        certain, n_candidates = _leaf_interactions(
            leaf, coords, center, radius, depth, reach_lo, reach_hi, gaussian, slack, nodes, levels, candidates
        )
        for p in range(segment_start(n, depth, leaf), segment_start(n, depth, leaf + 1)):
            q = coords[:, p].copy()
            total = np.float64(certain)
            for c in range(n_candidates):
                j = candidates[c]
                lower, upper = _ball_distance(q, center, radius, leaf_offset + j, slack)
                if lower >= reach_hi:
                    continue
                start, end = segment_start(n, depth, j), segment_start(n, depth, j + 1)
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
                            total += np.exp(-np.float64(sq[t]) * inv_dc2)
            rho[p] = total if gaussian else total - 1.0  # a cut-off count includes the point itself


@nb.njit(cache=True)
def _node_min(values, depth):
    """Minimum of ``values`` (tree order) over every node's run, leaves first, then bottom-up."""
    n = values.shape[0]
    out = np.empty((2 << depth) - 1, values.dtype)
    first_leaf = (1 << depth) - 1
    for j in range(1 << depth):
        out[first_leaf + j] = values[segment_start(n, depth, j) : segment_start(n, depth, j + 1)].min()
    for k in range(first_leaf - 1, -1, -1):
        out[k] = min(out[2 * k + 1], out[2 * k + 2])
    return out


@nb.njit(cache=True)
def _leaf_of(n, depth, p):
    j = (np.int64(p) << depth) // n
    while segment_start(n, depth, j + 1) <= p:
        j += 1
    while segment_start(n, depth, j) > p:
        j -= 1
    return j


@nb.njit(cache=True)
def _scan_denser(q, r, start, end, coords, ids, rank, best_d2, best_id, sq):
    leaf_sq_dists(coords, q, start, end, sq)
    for t in range(start, end):
        d2 = sq[t - start]
        if rank[t] < r and (d2 < best_d2 or (d2 == best_d2 and ids[t] < best_id)):
            best_d2, best_id = d2, ids[t]
    return best_d2, best_id


@nb.njit(cache=True)
def _nearest_denser(q, p, coords, ids, rank, center, radius, min_rank, min_id, depth, slack, nodes, levels, lowers, sq):
    """(squared distance, original id) of the nearest point denser than position p; ties go to the smaller id."""
    n = coords.shape[1]
    r = rank[p]
    own_leaf = (1 << depth) - 1 + _leaf_of(n, depth, p)
    j = own_leaf - ((1 << depth) - 1)
    best_d2, best_id = _scan_denser(
        q, r, segment_start(n, depth, j), segment_start(n, depth, j + 1), coords, ids, rank, np.float32(np.inf), _NO_ID, sq
    )
    nodes[0], levels[0], lowers[0], top = 0, 0, 0.0, 1
    while top > 0:
        top -= 1
        k, level, lower = nodes[top], levels[top], lowers[top]
        best = np.sqrt(np.float64(best_d2))
        # nothing denser here, everything strictly farther, or at best a tie lost to a smaller id
        if min_rank[k] >= r or lower > best or (lower >= best and min_id[k] > best_id) or k == own_leaf:
            continue
        if level == depth:
            j = k - ((1 << depth) - 1)
            best_d2, best_id = _scan_denser(
                q, r, segment_start(n, depth, j), segment_start(n, depth, j + 1), coords, ids, rank, best_d2, best_id, sq
            )
            continue
        near, far = 2 * k + 1, 2 * k + 2
        near_lower = _ball_distance(q, center, radius, near, slack)[0]
        far_lower = _ball_distance(q, center, radius, far, slack)[0]
        if far_lower < near_lower:
            near, far, near_lower, far_lower = far, near, far_lower, near_lower
        nodes[top], levels[top], lowers[top] = far, level + 1, far_lower
        nodes[top + 1], levels[top + 1], lowers[top + 1] = near, level + 1, near_lower
        top += 2
    return best_d2, best_id


@nb.njit(parallel=True, nogil=True, cache=True)
def _delta_range(coords, ids, rank, center, radius, min_rank, min_id, depth, slack, first, last, delta2, parent):
    n_blocks = (last - first + _BLOCK - 1) // _BLOCK
    for b in nb.prange(n_blocks):
        nodes = np.empty(_STACK, np.int64)
        levels = np.empty(_STACK, np.int64)
        lowers = np.empty(_STACK, np.float64)
        sq = np.empty(LEAF_SIZE, np.float32)
        for p in range(first + b * _BLOCK, min(last, first + (b + 1) * _BLOCK)):
            if rank[p] == 0:
                continue  # the densest point has no denser point; set by the caller
            q = coords[:, p].copy()
            d2, i = _nearest_denser(
                q, p, coords, ids, rank, center, radius, min_rank, min_id, depth, slack, nodes, levels, lowers, sq
            )
            delta2[p], parent[p] = d2, i


@nb.njit(parallel=True, nogil=True, cache=True)
def _farthest_d2(coords, p):
    q = coords[:, p].copy()
    best = np.float32(0.0)
    for t in nb.prange(coords.shape[1]):
        best = max(best, sq_dist(q, coords[:, t]))
    return best


def _chunks(n: int, progress, min_step: int = 1 << 16):
    """Ranges of n items small enough to report progress, large enough to keep every core busy."""
    step = max(min_step, -(-n // 50))
    for first in range(0, n, step):
        yield first, min(n, first + step)
        if progress is not None:
            progress(min(n, first + step) / n)


def rho(tree: VPTree, dc: float, kernel: str, progress=None) -> np.ndarray:
    """Local density of every point, in original order (float64)."""
    gaussian = kernel == "gaussian"
    reach2, reach_lo, reach_hi = reach_rule(gaussian_reach(dc) if gaussian else dc, tree.n_dims)
    slack = bound_slack(tree.n_dims)
    rho_tree = np.empty(tree.n_points, np.float64)
    for first, last in _chunks(1 << tree.depth, progress, min_step=1 << 11):
        _rho_leaves(
            tree.coords, tree.center, tree.cover_radius, tree.depth, reach2,
            reach_lo, reach_hi, 1.0 / np.float64(dc) ** 2, gaussian, slack,
            first, last, rho_tree,
        )  # fmt: skip
    out = np.empty_like(rho_tree)
    out[tree.ids] = rho_tree
    return out


def delta(tree: VPTree, rank: np.ndarray, progress=None) -> tuple[np.ndarray, np.ndarray]:
    """(delta, parent) in original order, given every point's density rank (0 = densest)."""
    rank_tree = np.ascontiguousarray(rank[tree.ids])
    min_rank = _node_min(rank_tree, tree.depth)
    delta2 = np.empty(tree.n_points, np.float32)
    parent = np.empty(tree.n_points, np.int64)
    densest = int(np.argmin(rank_tree))
    delta2[densest] = _farthest_d2(tree.coords, densest)
    parent[densest] = -1
    slack = bound_slack(tree.n_dims)
    for first, last in _chunks(tree.n_points, progress):
        _delta_range(
            tree.coords, tree.ids, rank_tree, tree.center, tree.cover_radius, min_rank, tree.min_id,
            tree.depth, slack, first, last, delta2, parent,
        )  # fmt: skip
    out_delta = np.empty(tree.n_points, np.float64)
    out_parent = np.empty(tree.n_points, np.int64)
    out_delta[tree.ids] = np.sqrt(delta2.astype(np.float64))
    out_parent[tree.ids] = parent
    return out_delta, out_parent
