"""Incremental updates on the CPU (Numba): the tree takes new points and gives up deleted ones in place (GDPC §5.1),
and the queries that an update of rho and delta needs, for a few points instead of all of them.

The tree: a new point is routed top-down to the child whose ball it enlarges least, and every ball on its way
grows to hold it, so every node's ball stays a valid bound. It joins the end of its leaf's run; the runs after it
shift (one pass over the arrays, cheaper than any search). A leaf pushed past LEAF_SIZE points hands its points to
the smallest enclosing subtree with room (at most ROOM points per leaf), which is rebuilt as a fresh VP-tree of the
same height; where only the root's would do, every leaf is split in two first (the tree grows a level, GDPC's way). A deleted point leaves its leaf's run; balls keep their size (still
valid bounds) and the tree is rebuilt smaller once it holds fewer than a quarter of its capacity.
"""

from __future__ import annotations

import dataclasses

import numba as nb
import numpy as np

from ..vptree import GAUSSIAN_UNIT, LEAF_SIZE, VPTree, bound_slack, reach_rule, rho_reach, tree_depth
from .geometry import BLOCK, STACK, ball_distance, gaussian_units, leaf_sq_dists, node_min, run_start, sq_dist
from .index import build_vptree, node_ball
from .search import nearest_denser

NO_ID = np.iinfo(np.int64).max


# -- the tree --------------------------------------------------------------------------------------------------
@nb.njit(parallel=True, nogil=True, cache=True)
def _route(points, center, radius, min_id, depth, slack):
    """The leaf each point goes to: down the child whose ball grows least (then the nearer centre, then the left);
    an empty child (min_id = NO_ID) takes a point at no growth only if its sibling would have to grow."""
    m = points.shape[0]
    leaves = np.empty(m, np.int64)
    for i in nb.prange(m):
        k = 0
        for _ in range(depth):
            best, best_growth, best_near = 2 * k + 1, np.inf, np.inf
            for child in (2 * k + 1, 2 * k + 2):
                s = np.sqrt(np.float64(sq_dist(points[i], center[child])))
                growth = np.inf if min_id[child] == NO_ID else max(0.0, s - np.float64(radius[child]))
                if growth < best_growth or (growth == best_growth and s < best_near):
                    best, best_growth, best_near = child, growth, s
            if best_growth == np.inf:  # both children empty
                best = 2 * k + 1
            k = best
        leaves[i] = k - ((1 << depth) - 1)
    return leaves


@nb.njit(nogil=True, cache=True)
def _grow_balls(points, ids, leaves, center, radius, min_id, depth):
    """Every ball from each new point's leaf up to the root grows to hold it; an empty node takes it as its ball."""
    for i in range(points.shape[0]):
        k = (1 << depth) - 1 + leaves[i]
        while True:
            if min_id[k] == NO_ID:
                center[k] = points[i]
                radius[k] = 0
            else:
                r = np.float32(np.sqrt(np.float64(sq_dist(points[i], center[k]))))
                radius[k] = max(radius[k], r)
            min_id[k] = min(min_id[k], ids[i])
            if k == 0:
                break
            k = (k - 1) // 2


@nb.njit(parallel=True, nogil=True, cache=True)
def _splice(coords, ids, leaf_start, new_start, new_coords, new_ids, first_new, out_coords, out_ids):
    """Each leaf's old run, then its new points (``first_new[j]`` onwards in the new-point arrays), at new_start."""
    d = coords.shape[0]
    for j in nb.prange(leaf_start.shape[0] - 1):
        s, e, o = leaf_start[j], leaf_start[j + 1], new_start[j]
        for t in range(s, e):
            out_ids[o + t - s] = ids[t]
            for c in range(d):
                out_coords[c, o + t - s] = coords[c, t]
        for i in range(first_new[j], first_new[j + 1]):
            slot = o + (e - s) + i - first_new[j]
            out_ids[slot] = new_ids[i]
            for c in range(d):
                out_coords[c, slot] = new_coords[i, c]


def insert(tree: VPTree, points: np.ndarray, n_old: int) -> VPTree:
    """The tree over ``points`` (original order), of which the first ``n_old`` are in ``tree`` and the rest new."""
    new_points = np.ascontiguousarray(points[n_old:])
    new_ids = np.arange(n_old, points.shape[0], dtype=np.int64)
    if new_points.shape[0] > n_old:  # more new points than old: a fresh tree is better balanced and no slower
        return build_vptree(points, graph=False)
    center, radius, min_id = tree.center.copy(), tree.cover_radius.copy(), tree.min_id.copy()
    vantage, split_radius = tree.vantage.copy(), tree.split_radius.copy()  # subtree rebuilds write them
    leaves = _route(new_points, center, radius, min_id, tree.depth, bound_slack(tree.n_dims))
    _grow_balls(new_points, new_ids, leaves, center, radius, min_id, tree.depth)
    by_leaf = np.argsort(leaves, kind="stable")  # stable: each leaf takes its new points in index order
    added = np.bincount(leaves, minlength=1 << tree.depth)
    first_new = np.concatenate(([0], np.cumsum(added)))
    new_start = tree.leaf_start + first_new
    coords = np.empty((tree.n_dims, points.shape[0]), np.float32)
    ids = np.empty(points.shape[0], np.int64)
    _splice(tree.coords, tree.ids, tree.leaf_start, new_start, new_points[by_leaf], new_ids[by_leaf], first_new, coords, ids)
    grown = dataclasses.replace(tree, coords=coords, ids=ids, center=center, cover_radius=radius, min_id=min_id,
                                vantage=vantage, split_radius=split_radius, leaf_start=new_start, neighbours=None)  # fmt: skip
    return _rebuild_overflowing(grown, points)


ROOM = LEAF_SIZE * 3 // 4  # a rebuilt subtree fills its leaves to at most this, so the next points find room


def _rebuild_overflowing(tree: VPTree, points: np.ndarray) -> VPTree:
    """For every leaf past LEAF_SIZE, rebuild the smallest subtree above it that its points fill to at most ROOM
    per leaf; where only the root would do, split every leaf in two first (GDPC: the tree grows a level)."""
    while True:
        start, depth = tree.leaf_start, tree.depth
        roots = set()
        for leaf in np.flatnonzero(np.diff(start) > LEAF_SIZE):
            level, j = depth, int(leaf)
            while level > 0 and start[(j + 1) << (depth - level)] - start[j << (depth - level)] > ROOM << (depth - level):
                level, j = level - 1, j >> 1
            roots.add((level, j))
        if (0, 0) not in roots:
            break
        tree = split_leaves(tree)
    for level, j in sorted(roots):  # top-down: a subtree inside one rebuilt already fits
        if not any((level - up, j >> up) in roots for up in range(1, level + 1)):
            _rebuild_subtree(tree, points, level, j)
    return tree


@nb.njit(parallel=True, nogil=True, cache=True)
def _split_leaves(coords, ids, leaf_start, out_coords, out_ids, out_start, center, radius, min_id, vantage, split_radius):
    """Split every leaf's run by distance to its vantage point (the farthest from its first point): the nearer
    half (rounded up) becomes the left child. Writes the children's runs, balls and smallest ids."""
    for j in nb.prange(leaf_start.shape[0] - 1):
        s, e = leaf_start[j], leaf_start[j + 1]
        mid = s + (e - s + 1) // 2
        out_start[2 * j], out_start[2 * j + 1] = s, mid
        vantage[j], split_radius[j] = -1, 0
        if e > s:
            far, far_d2 = s, np.float32(-1)
            for t in range(s, e):
                d2 = sq_dist(coords[:, t], coords[:, s])
                if d2 > far_d2:
                    far, far_d2 = t, d2
            dist2 = np.empty(e - s, np.float32)
            for t in range(s, e):
                dist2[t - s] = sq_dist(coords[:, t], coords[:, far])
            by_distance = np.argsort(dist2, kind="mergesort")
            for t in range(e - s):
                out_ids[s + t] = ids[s + by_distance[t]]
                out_coords[:, s + t] = coords[:, s + by_distance[t]]
            vantage[j], split_radius[j] = ids[far], np.sqrt(np.float64(dist2[by_distance[mid - s - 1]]))
        node_ball(out_coords, out_ids, s, mid, center, radius, min_id, 2 * j)
        node_ball(out_coords, out_ids, mid, e, center, radius, min_id, 2 * j + 1)


def split_leaves(tree: VPTree) -> VPTree:
    """The tree one level deeper: every leaf becomes a node with two leaves (its ball stays as it is)."""
    n_leaves, d = 1 << tree.depth, tree.n_dims
    coords, ids = np.empty_like(tree.coords), np.empty_like(tree.ids)
    start = np.empty(2 * n_leaves + 1, np.int64)
    start[-1] = tree.n_points
    center, radius = np.empty((2 * n_leaves, d), np.float32), np.empty(2 * n_leaves, np.float32)
    min_id, vantage, split_radius = np.empty(2 * n_leaves, np.int64), np.empty(n_leaves, np.int64), np.empty(n_leaves, np.float32)
    _split_leaves(tree.coords, tree.ids, tree.leaf_start, coords, ids, start, center, radius, min_id, vantage, split_radius)
    return dataclasses.replace(
        tree, coords=coords, ids=ids, leaf_start=start, depth=tree.depth + 1,
        center=np.concatenate((tree.center, center)), cover_radius=np.concatenate((tree.cover_radius, radius)),
        min_id=np.concatenate((tree.min_id, min_id)), vantage=np.concatenate((tree.vantage, vantage)),
        split_radius=np.concatenate((tree.split_radius, split_radius)),
    )  # fmt: skip


def _rebuild_subtree(tree: VPTree, points: np.ndarray, level: int, j: int) -> None:
    """Rebuild node j of ``level`` in place as a fresh VP-tree of its points (the ancestors' balls still hold them)."""
    height = tree.depth - level
    first_leaf = j << height
    s, e = int(tree.leaf_start[first_leaf]), int(tree.leaf_start[(j + 1) << height])
    members = np.sort(tree.ids[s:e])  # in index order, so the build's ties by position are ties by index
    sub = build_vptree(points[members], depth=height, graph=False)
    tree.coords[:, s:e] = sub.coords
    tree.ids[s:e] = members[sub.ids]
    tree.leaf_start[first_leaf : first_leaf + (1 << height) + 1] = s + sub.leaf_start
    for rel in range(height + 1):
        into = slice((1 << (level + rel)) - 1 + (j << rel), (1 << (level + rel)) - 1 + ((j + 1) << rel))
        of = slice((1 << rel) - 1, (2 << rel) - 1)
        tree.center[into], tree.cover_radius[into] = sub.center[of], sub.cover_radius[of]
        tree.min_id[into] = np.where(sub.min_id[of] == NO_ID, NO_ID, members[np.minimum(sub.min_id[of], len(members) - 1)])
        if rel < height:
            tree.vantage[into], tree.split_radius[into] = members[sub.vantage[of]], sub.split_radius[of]


def delete(tree: VPTree, points: np.ndarray, mapping: np.ndarray) -> VPTree:
    """The tree without the points whose ``mapping`` (old index -> new index) is -1; ``points`` are the survivors."""
    if points.shape[0] * 4 < LEAF_SIZE << tree.depth:  # a quarter full: rebuilt to fit
        return build_vptree(points, graph=False, depth=tree_depth(points.shape[0]))
    new_ids = mapping[tree.ids]
    keep = new_ids >= 0
    removed = np.concatenate(([0], np.cumsum(~keep)))
    # a min_id whose point went becomes the next survivor's index: a lower bound still, safe for tie tests
    next_survivor = np.minimum.accumulate(np.where(mapping >= 0, mapping, NO_ID)[::-1])[::-1]
    alive = tree.min_id != NO_ID
    min_id = tree.min_id.copy()
    min_id[alive] = next_survivor[tree.min_id[alive]]
    return dataclasses.replace(
        tree, coords=np.ascontiguousarray(tree.coords[:, keep]), ids=new_ids[keep],
        min_id=min_id, leaf_start=tree.leaf_start - removed[tree.leaf_start], neighbours=None,
    )  # fmt: skip


# -- queries for a few points ----------------------------------------------------------------------------------
@nb.njit(nogil=True, cache=True)
def _count_near(coords, leaf_start, center, radius, depth, positions, reach2, reach_lo, reach_hi, slack):
    """For every tree position, how many of the query positions lie within reach (itself included); whole nodes
    inside the reach are counted once per node and pushed down at the end."""
    n = coords.shape[1]
    node_count = np.zeros((2 << depth) - 1, np.int64)
    count = np.zeros(n, np.int64)
    nodes = np.empty(STACK, np.int64)
    levels = np.empty(STACK, np.int64)
    sq = np.empty(LEAF_SIZE, np.float32)
    for p in positions:
        q = coords[:, p].copy()
        nodes[0], levels[0], top = 0, 0, 1
        while top > 0:
            top -= 1
            k, level = nodes[top], levels[top]
            lower, upper = ball_distance(q, center, radius, k, slack)
            if lower >= reach_hi:
                continue
            if upper < reach_lo:
                node_count[k] += 1
            elif level == depth:
                j = k - ((1 << depth) - 1)
                start, end = leaf_start[j], leaf_start[j + 1]
                leaf_sq_dists(coords, q, start, end, sq)
                for t in range(start, end):
                    count[t] += sq[t - start] < reach2
            else:
                nodes[top], levels[top] = 2 * k + 1, level + 1
                nodes[top + 1], levels[top + 1] = 2 * k + 2, level + 1
                top += 2
    for k in range(1, node_count.shape[0]):  # parents first: breadth-first order
        node_count[k] += node_count[(k - 1) // 2]
    first_leaf = (1 << depth) - 1
    for j in range(1 << depth):
        for t in range(leaf_start[j], leaf_start[j + 1]):
            count[t] += node_count[first_leaf + j]
    return count


def count_near(tree: VPTree, positions: np.ndarray, reach: float) -> np.ndarray:
    """Per tree position, the number of listed positions closer than ``reach`` (the float32 rule of d < dc)."""
    reach2, lo, hi = reach_rule(reach, tree.n_dims)
    return _count_near(tree.coords, tree.leaf_start, tree.center, tree.cover_radius, tree.depth, positions, reach2, lo, hi, bound_slack(tree.n_dims))


@nb.njit(parallel=True, nogil=True, cache=True)
def _rho_at(coords, leaf_start, center, radius, depth, positions, reach2, reach_lo, reach_hi, inv_dc2, gaussian, slack, out):
    """rho of each listed position by its own walk: the cut-off count (self excluded) or the Gaussian sum."""
    for b in nb.prange((positions.shape[0] + BLOCK - 1) // BLOCK):
        nodes = np.empty(STACK, np.int64)
        levels = np.empty(STACK, np.int64)
        sq = np.empty(LEAF_SIZE, np.float32)
        for i in range(b * BLOCK, min(positions.shape[0], (b + 1) * BLOCK)):
            p = positions[i]
            q = coords[:, p].copy()
            total = 0.0
            units = np.int64(0)  # Gaussian: whole units of 1 / GAUSSIAN_UNIT, as density's rho sums them
            nodes[0], levels[0], top = 0, 0, 1
            while top > 0:
                top -= 1
                k, level = nodes[top], levels[top]
                lower, upper = ball_distance(q, center, radius, k, slack)
                if lower >= reach_hi:
                    continue
                j = k - ((1 << level) - 1)
                if not gaussian and upper < reach_lo:
                    total += run_start(leaf_start, depth, level, j + 1) - run_start(leaf_start, depth, level, j)
                elif level == depth:
                    start, end = leaf_start[j], leaf_start[j + 1]
                    leaf_sq_dists(coords, q, start, end, sq)
                    for t in range(start, end):
                        if sq[t - start] >= reach2:
                            continue
                        if not gaussian:
                            total += 1.0
                        elif t != p:
                            units += gaussian_units(sq[t - start], inv_dc2)
                else:
                    nodes[top], levels[top] = 2 * k + 1, level + 1
                    nodes[top + 1], levels[top + 1] = 2 * k + 2, level + 1
                    top += 2
            out[i] = units / GAUSSIAN_UNIT if gaussian else total - 1.0  # a cut-off count includes the point itself


def rho_at(tree: VPTree, positions: np.ndarray, dc: float, kernel: str) -> np.ndarray:
    """rho (as ``density.rho`` defines it) of the listed tree positions only."""
    gaussian = kernel == "gaussian"
    reach2, lo, hi = reach_rule(rho_reach(dc, kernel), tree.n_dims)
    out = np.empty(positions.shape[0], np.float64)
    _rho_at(tree.coords, tree.leaf_start, tree.center, tree.cover_radius, tree.depth, positions, reach2, lo, hi,
            1.0 / np.float64(dc) ** 2, gaussian, bound_slack(tree.n_dims), out)  # fmt: skip
    return out


@nb.njit(cache=True, nogil=True)
def _open_leaves(origin, pad, center, radius, depth, slack, reach, node_reach, node_bands, bands, nodes, levels, out):
    """The leaves that a walk for queries within ``pad`` of ``origin`` cannot rule out: a node stays open while it
    holds one of the density ``bands`` (a bit mask, see ``_density_bands``) and its ball comes within
    min(reach, node_reach[k]) of the queries."""
    n_open = 0
    nodes[0], levels[0], top = 0, 0, 1
    while top > 0:
        top -= 1
        k, level = nodes[top], levels[top]
        if node_bands[k] & bands == 0:
            continue
        if ball_distance(origin, center, radius, k, slack)[0] - pad > min(reach, node_reach[k]):
            continue
        if level == depth:
            out[n_open] = k - ((1 << depth) - 1)
            n_open += 1
        else:
            nodes[top], levels[top] = 2 * k + 1, level + 1
            nodes[top + 1], levels[top + 1] = 2 * k + 2, level + 1
            top += 2
    return n_open


LEAVES_PER_TASK = 16  # leaves of sources per parallel task


@nb.njit(parallel=True, nogil=True, cache=True)
def _mark_newly_outranked(coords, leaf_start, center, radius, depth, slack, leaves, first, sources, bands, rank_old, rank_new,
                          reach2, node_reach, node_bands, node_first_old, node_last_new, marked):  # fmt: skip
    """marked[t] = True for each position t that a source s newly outranks (rank_old[s] > rank_old[t] and
    rank_new[s] < rank_new[t]) within t's reach (sq_dist <= reach2[t]). Walks are pruned by distance and by
    density: ``node_bands[k]`` has bit b set where node k holds a target of old-rank band b, and ``bands[i]`` the
    bands that source i can newly outrank. Sources come grouped by leaf (sources[first[g]:first[g + 1]] lie in
    leaf leaves[g]): each group shares one walk, and each source then tests the leaves it left open, by its exact
    ranks against the leaf's first old rank and last new rank, then by distance; a leaf's points are compared
    by rank before their distance is computed (few pass)."""
    first_leaf = (1 << depth) - 1
    for task in nb.prange((leaves.shape[0] + LEAVES_PER_TASK - 1) // LEAVES_PER_TASK):
        nodes = np.empty(STACK, np.int64)
        levels = np.empty(STACK, np.int64)
        open_leaves = np.empty(1 << depth, np.int64)
        for g in range(task * LEAVES_PER_TASK, min(leaves.shape[0], (task + 1) * LEAVES_PER_TASK)):
            group = np.arange(first[g], first[g + 1])
            union = 0
            for i in group:
                union |= bands[i]
            own = first_leaf + leaves[g]
            pad = np.float64(radius[own]) * (1 + slack)  # every source of the leaf is within this of its centre
            n_open = _open_leaves(center[own], pad, center, radius, depth, slack, np.inf, node_reach, node_bands, union,
                                  nodes, levels, open_leaves)  # fmt: skip
            for i in group:
                p = sources[i]
                q = coords[:, p].copy()
                old_p, new_p = rank_old[p], rank_new[p]
                for c in range(n_open):
                    k = first_leaf + open_leaves[c]
                    if (node_bands[k] & bands[i] == 0 or node_first_old[k] >= old_p or node_last_new[k] <= new_p
                            or ball_distance(q, center, radius, k, slack)[0] > node_reach[k]):  # fmt: skip
                        continue
                    for t in range(leaf_start[open_leaves[c]], leaf_start[open_leaves[c] + 1]):
                        if rank_old[t] < old_p and rank_new[t] > new_p and sq_dist(coords[:, t], q) <= reach2[t]:
                            marked[t] = True  # racy but every writer writes True


def _by_leaf(tree: VPTree, positions: np.ndarray):
    """(leaves, first, order): the positions' leaves, and where each leaf's group starts in positions[order].
    The positions are distinct tree positions, so they are put in order by a scatter over the tree, not a sort
    (nearly every point is listed at a large dc)."""
    slot = np.full(tree.n_points, -1, np.int64)
    slot[positions] = np.arange(positions.shape[0])
    order = slot[slot >= 0]
    leaf = np.searchsorted(tree.leaf_start, positions[order], side="right") - 1
    first = np.flatnonzero(np.diff(leaf, prepend=-1))
    return leaf[first], np.append(first, positions.shape[0]), order


@nb.njit(parallel=True, nogil=True, cache=True)
def _nearest_newly_denser(coords, leaf_start, ids, center, radius, depth, slack, targets, bands, rank_old, rank_new, no_reach, node_bands, best_d2, best_id):
    """Improve each target's (best_d2, best_id) with the points newly denser than it (rank_new below its own,
    rank_old above), in (d2, id) order; one walk per target, pruned by its bound and by ``bands`` as in
    ``_mark_newly_outranked`` (here: the bands of the points that may be newly denser than the target)."""
    for b in nb.prange((targets.shape[0] + BLOCK - 1) // BLOCK):
        nodes = np.empty(STACK, np.int64)
        levels = np.empty(STACK, np.int64)
        open_leaves = np.empty(1 << depth, np.int64)
        sq = np.empty(LEAF_SIZE, np.float32)
        for i in range(b * BLOCK, min(targets.shape[0], (b + 1) * BLOCK)):
            p = targets[i]
            q = coords[:, p].copy()
            b2, bid = best_d2[i], best_id[i]
            n_open = _open_leaves(q, 0.0, center, radius, depth, slack, np.sqrt(np.float64(b2)), no_reach, node_bands,
                                  bands[i], nodes, levels, open_leaves)  # fmt: skip
            for c in range(n_open):
                j = open_leaves[c]
                start, end = leaf_start[j], leaf_start[j + 1]
                leaf_sq_dists(coords, q, start, end, sq)
                for t in range(start, end):
                    d2 = sq[t - start]
                    if rank_new[t] < rank_new[p] and rank_old[t] > rank_old[p] and (d2 < b2 or (d2 == b2 and ids[t] < bid)):
                        b2, bid = d2, ids[t]
            best_d2[i], best_id[i] = b2, bid


@nb.njit(cache=True, nogil=True)
def _node_bands(bits, leaf_start, depth):
    """Every node's union (bitwise or) of its points' band bits, leaves first, then bottom-up."""
    out = np.zeros((2 << depth) - 1, np.int64)
    first_leaf = (1 << depth) - 1
    for j in range(1 << depth):
        for t in range(leaf_start[j], leaf_start[j + 1]):
            out[first_leaf + j] |= bits[t]
    for k in range(first_leaf - 1, -1, -1):
        out[k] = out[2 * k + 1] | out[2 * k + 2]
    return out


def _node_max(values, tree: VPTree):
    return -node_min(-values, tree.leaf_start, tree.depth)


def mark_newly_outranked(tree: VPTree, sources, source_bands, rank_old_tree, rank_new_tree, reach2_tree, band_bits_tree) -> np.ndarray:
    """Mask of the tree positions t that a source position newly outranks within t's own reach (float32
    ``reach2_tree``; -1 leaves t out): rank_old[s] > rank_old[t], rank_new[s] < rank_new[t], sq_dist <= reach2[t].
    ``band_bits_tree``: each point's density band bit (0 for none); ``source_bands``: the bands each source may
    newly outrank (``incremental.density_bands``); they only prune."""
    node_reach = _node_max(np.sqrt(np.maximum(reach2_tree, 0).astype(np.float64)), tree)
    node_reach[_node_max(reach2_tree, tree) < 0] = -1.0
    leaves, first, order = _by_leaf(tree, sources)
    marked = np.zeros(tree.n_points, np.bool_)
    _mark_newly_outranked(tree.coords, tree.leaf_start, tree.center, tree.cover_radius, tree.depth, bound_slack(tree.n_dims),
                          leaves, first, sources[order], source_bands[order], rank_old_tree, rank_new_tree, reach2_tree, node_reach,
                          _node_bands(band_bits_tree, tree.leaf_start, tree.depth), node_min(rank_old_tree, tree.leaf_start, tree.depth),
                          _node_max(rank_new_tree, tree), marked)  # fmt: skip
    return marked


def nearest_newly_denser(tree: VPTree, targets, target_bands, rank_old_tree, rank_new_tree, band_bits_tree, bound_d2, bound_id):
    """(d2, id) of each target position's nearest newly denser point (rank_new below the target's, rank_old above)
    where it comes before the bound (bound_d2, bound_id) in (d2, id) order, else the bound. Bands prune as in
    ``mark_newly_outranked`` (``target_bands``: those of the points that may be newly denser than each target)."""
    order = np.argsort(targets)
    best_d2, best_id = bound_d2[order].astype(np.float32), bound_id[order].astype(np.int64)
    no_reach = np.full(tree.n_nodes, np.inf)
    _nearest_newly_denser(tree.coords, tree.leaf_start, tree.ids, tree.center, tree.cover_radius, tree.depth,
                          bound_slack(tree.n_dims), targets[order], target_bands[order], rank_old_tree, rank_new_tree,
                          no_reach, _node_bands(band_bits_tree, tree.leaf_start, tree.depth), best_d2, best_id)  # fmt: skip
    out_d2, out_id = np.empty_like(best_d2), np.empty_like(best_id)
    out_d2[order], out_id[order] = best_d2, best_id
    return out_d2, out_id


@nb.njit(parallel=True, nogil=True, cache=True)
def _sq_to(coords, p, positions):
    q = coords[:, p].copy()
    out = np.empty(positions.shape[0], np.float32)
    for i in nb.prange(positions.shape[0]):
        out[i] = sq_dist(q, coords[:, positions[i]])
    return out


def sq_to(tree: VPTree, p: int, positions: np.ndarray) -> np.ndarray:
    """Squared distances (float32 rule) from tree position p to the listed positions."""
    return _sq_to(tree.coords, p, positions)


@nb.njit(nogil=True, cache=True)
def merge_order(order, order_rho, moved, moved_rho, n):
    """(order, rho in that order, rank) of n points after the points ``moved`` changed rho: ``order`` without them
    (still sorted, since no other rho changed) merged with them, sorted by (rho descending, index ascending) as
    they must come, with their new rho ``moved_rho``. Entries -1 in ``order`` (points that are gone) are skipped.
    One pass, reading the old order's rho in sequence rather than by index."""
    is_moved = np.zeros(n, np.bool_)
    for i in moved:
        is_moved[i] = True
    out, out_rho, rank = np.empty(n, np.int64), np.empty(n, order_rho.dtype), np.empty(n, np.int64)
    a, b = 0, 0
    for o in range(n):
        while a < order.shape[0] and (order[a] < 0 or is_moved[order[a]]):
            a += 1
        if a < order.shape[0] and (
            b >= moved.shape[0] or order_rho[a] > moved_rho[b] or (order_rho[a] == moved_rho[b] and order[a] < moved[b])
        ):
            out[o], out_rho[o] = order[a], order_rho[a]
            a += 1
        else:
            out[o], out_rho[o] = moved[b], moved_rho[b]
            b += 1
        rank[out[o]] = o
    return out, out_rho, rank


def nearest_denser_of(tree: VPTree, rank_tree: np.ndarray, positions: np.ndarray):
    """``search.nearest_denser`` for a few positions, with the node ranks it prunes by."""
    return nearest_denser(tree, rank_tree, node_min(rank_tree, tree.leaf_start, tree.depth), positions)


def positions_of(tree: VPTree) -> np.ndarray:
    """The tree position of every original index."""
    position = np.empty(tree.n_points, np.int64)
    position[tree.ids] = np.arange(tree.n_points)
    return position
