"""Incremental updates on the GPU (update.cu): the backend primitives that ``engine.incremental`` and
``IndexedPoints.insert`` / ``delete`` call, with the names and results of the CPU backend's (``cpu/update.py``, whose
docstring gives the scheme: routing by least ball growth, balls grown on the way, overflowing leaves handled by
rebuilding the smallest subtree with room or splitting every leaf).

Every step is a batched kernel or a CuPy array operation; the host loops only over the few subtrees rebuilt in a
batch. The walks of update.cu serve the listed points only (marked by a per-position ``slot``), one warp per leaf.
"""

from __future__ import annotations

import dataclasses
import sys

import cupy as cp
import numpy as np

from ..vptree import LEAF_SIZE, VPTree, bound_slack, reach_rule, rho_reach, tree_depth

_backend = sys.modules[__package__]  # the gpu package, looked up at call time: the tests poison its _output

_I64, _F32, _F64, _I32 = np.int64, np.float32, np.float64, np.int32
NO_ID = np.iinfo(np.int64).max
ROOM = LEAF_SIZE * 3 // 4  # a rebuilt subtree fills its leaves to at most this (as on the CPU)
_NULL = np.uint64(0)  # a null pointer argument: the kernel skips that output or condition


def _module() -> cp.RawModule:
    return _backend._joined_module("update.cu")


def _launch(kernel: str, n_threads: int, *args) -> None:
    _backend._launch_in(_module(), kernel, n_threads, *args)


# ---------------------------------------------------------------------------------------------------------
# the tree


@_backend._gpu_memory("inserting points")
def tree_insert(tree: VPTree, points: cp.ndarray, n_old: int) -> VPTree:
    """The tree over ``points`` (original order), of which the first ``n_old`` are in ``tree`` and the rest new."""
    points = _backend._require(points, _F32, 2, "points")
    n, d = points.shape
    new_points = points[n_old:]
    m, depth = n - n_old, tree.depth
    if m > n_old:  # more new points than old: a fresh tree is better balanced and no slower
        return _backend.build_vptree(points)
    center, radius, min_id = tree.center.copy(), tree.cover_radius.copy(), tree.min_id.copy()
    leaves = _backend._output(m, _I64)
    _launch("route_points", m, new_points, _I64(m), _I32(d), _I32(depth), center, radius, min_id, leaves)
    _launch("claim_empty_nodes", m, _I64(m), _I32(depth), _I64(n_old), leaves, tree.min_id, min_id, radius)
    _launch(
        "grow_balls", m, new_points, _I64(m), _I32(d), _I32(depth), _I64(n_old), leaves, tree.min_id, min_id, center,
        radius.view(cp.uint32),
    )  # fmt: skip
    by_leaf = cp.argsort(leaves)  # stable: each leaf takes its new points in index order
    first_new = cp.zeros((1 << depth) + 1, _I64)
    cp.cumsum(cp.bincount(leaves, minlength=1 << depth), out=first_new[1:])
    coords, ids = _backend._empty_coords(d, n), _backend._output(n, _I64)
    _launch(
        "splice_leaves", 32 << depth, tree.coords, _I64(n_old), _I32(d), _I32(depth), tree.ids, tree.leaf_start,
        first_new, cp.ascontiguousarray(new_points[by_leaf]), (n_old + by_leaf).astype(_I64), coords, _I64(n), ids,
    )  # fmt: skip
    grown = dataclasses.replace(
        tree, coords=coords, ids=ids, center=center, cover_radius=radius, min_id=min_id, vantage=tree.vantage.copy(),
        split_radius=tree.split_radius.copy(), leaf_start=tree.leaf_start + first_new, neighbours=None,
    )  # fmt: skip
    return _rebuild_overflowing(grown, points)


def _rebuild_overflowing(tree: VPTree, points: cp.ndarray) -> VPTree:
    """For every leaf past LEAF_SIZE, rebuild the smallest subtree above it that its points fill to at most ROOM
    per leaf; where only the root would do, split every leaf in two first (the tree grows a level)."""
    while True:
        start, depth = tree.leaf_start, tree.depth
        over = cp.flatnonzero(cp.diff(start) > LEAF_SIZE)
        if over.size == 0:
            return tree
        # the run size of every overflowing leaf's ancestor of each height, in one read
        height = cp.arange(depth + 1, dtype=_I64)
        first = (over[:, None] >> height) << height
        sizes = cp.asnumpy(start[first + (1 << height)] - start[first])
        roots = set()
        for leaf, size in zip(cp.asnumpy(over).tolist(), sizes, strict=True):
            up = 0
            while up < depth and size[up] > ROOM << up:
                up += 1
            roots.add((depth - up, leaf >> up))
        if (0, 0) in roots:
            tree = split_leaves(tree)
            continue
        # top-down: a subtree inside one rebuilt already fits
        _rebuild_subtrees(tree, points, [(level, j) for level, j in sorted(roots)
                                         if not any((level - up, j >> up) in roots for up in range(1, level + 1))])  # fmt: skip
        return tree


def split_leaves(tree: VPTree) -> VPTree:
    """The tree one level deeper: every leaf's run split by distance to its vantage point (the farthest from its
    first point), the nearer half (rounded up) to the left child; its ball stays as it is."""
    n, d, depth = tree.n_points, tree.n_dims, tree.depth
    n_leaves = 1 << depth
    far, keys = _backend._output(n_leaves, _I64), _backend._output(n, cp.uint64)
    _launch("split_keys", 32 << depth, tree.coords, _I64(n), _I32(d), _I32(depth), tree.leaf_start, far, keys)
    order = cp.argsort(keys)  # stable radix sort: each leaf's run by distance, ties in tree order, as on the CPU
    coords = _backend._empty_coords(d, n)
    coords[...] = tree.coords[:, order]
    ids = tree.ids[order]
    s, e = tree.leaf_start[:-1], tree.leaf_start[1:]
    mid = s + (e - s + 1) // 2
    start = cp.empty(2 * n_leaves + 1, _I64)
    start[0:-1:2], start[1:-1:2], start[-1] = s, mid, n
    near2 = (keys[order][cp.maximum(mid - 1, 0)] & np.uint64(0xFFFFFFFF)).astype(cp.uint32).view(_F32)
    vantage = cp.where(far >= 0, tree.ids[cp.maximum(far, 0)], -1)
    split_radius = cp.where(e > s, cp.sqrt(near2.astype(_F64)), 0).astype(_F32)
    center, radius = _backend._output((2 * n_leaves, d), _F32), _backend._output(2 * n_leaves, _F32)
    min_id = _backend._output(2 * n_leaves, _I64)
    _balls(coords, ids, start[:-1], start[1:], cp.arange(2 * n_leaves, dtype=_I64), center, radius, min_id)
    return dataclasses.replace(
        tree, coords=coords, ids=ids, leaf_start=start, depth=depth + 1,
        center=cp.concatenate((tree.center, center)), cover_radius=cp.concatenate((tree.cover_radius, radius)),
        min_id=cp.concatenate((tree.min_id, min_id)), vantage=cp.concatenate((tree.vantage, vantage)),
        split_radius=cp.concatenate((tree.split_radius, split_radius)),
    )  # fmt: skip


def _rebuild_subtrees(tree: VPTree, points: cp.ndarray, roots: list[tuple[int, int]]) -> None:
    """Rebuild the disjoint subtrees at ``roots`` ((level, j) nodes) in place, each as the GPU build would build its
    points (in index order) at its height, all in one level-synchronous pass (update.cu); the ancestors' balls still
    hold their points."""
    depth = tree.depth
    level = np.array([lv for lv, _ in roots], np.int64)
    j = np.array([jj for _, jj in roots], np.int64)
    height = depth - level
    bounds = cp.asnumpy(tree.leaf_start[cp.asarray(np.concatenate((j << height, (j + 1) << height)))])
    s, e = bounds[: len(roots)], bounds[len(roots) :]
    size = e - s
    first = np.concatenate(([0], np.cumsum(size)))
    node_first = np.concatenate(([0], np.cumsum(1 << height)))
    segments, rows, d = len(roots), int(first[-1]), tree.n_dims
    positions = cp.asarray(np.concatenate([np.arange(a, b) for a, b in zip(s, e, strict=True)]))
    # each segment's ids in index order: one sort of (segment, id) keys (ids are below 2**31)
    segment = cp.asarray(np.repeat(np.arange(segments, dtype=np.uint64), size))
    members = (cp.sort((segment << np.uint64(32)) | tree.ids[positions].astype(cp.uint64)) & np.uint64(0xFFFFFFFF)).astype(_I64)
    sub = cp.ascontiguousarray(points[members])
    first_d, node_first_d = cp.asarray(first), cp.asarray(node_first)
    height_d, level_d, j_d = cp.asarray(height.astype(np.int32)), cp.asarray(level.astype(np.int32)), cp.asarray(j)
    best = cp.zeros(segments, cp.uint64)
    _launch("farthest_from_first", rows, sub, _I64(rows), _I32(d), _I32(segments), first_d, best)
    vantage = cp.empty(int(node_first[-1]), _I64)
    vantage[node_first_d[:-1]] = first_d[:-1] + (np.uint64(0xFFFFFFFF) - (best & np.uint64(0xFFFFFFFF))).astype(_I64)
    order = cp.arange(rows, dtype=_I64)
    keys = _backend._output(rows, cp.uint64)
    for lv in range(int(height.max())):
        _launch("segment_keys", rows, sub, _I64(rows), _I32(d), _I32(lv), _I32(segments), first_d, height_d,
                node_first_d, order, vantage, keys)  # fmt: skip
        by_key = cp.argsort(keys)
        order, keys = order[by_key], keys[by_key]
        next_vantage = cp.empty_like(vantage)
        _launch("segment_splits", int(node_first[-1]), _I32(lv), _I32(segments), first_d, height_d, node_first_d,
                level_d, j_d, keys, order, members, vantage, next_vantage, tree.vantage, tree.split_radius)  # fmt: skip
        vantage = next_vantage
    tree.coords[:, positions] = sub[order].T
    tree.ids[positions] = members[order]
    # the leaves' runs and every node's ball, by the build's arithmetic within each segment
    leaf_index, leaf_value, node, node_start, node_end = [], [], [], [], []
    for r in range(segments):
        h, m = int(height[r]), int(size[r])
        leaf_index.append((j[r] << h) + np.arange((1 << h) + 1))
        leaf_value.append(s[r] + ((np.arange((1 << h) + 1) * m) >> h))
        for rel in range(h + 1):
            jj = np.arange(1 << rel)
            node.append((1 << (level[r] + rel)) - 1 + (j[r] << rel) + jj)
            node_start.append(s[r] + ((jj * m) >> rel))
            node_end.append(s[r] + (((jj + 1) * m) >> rel))
    tree.leaf_start[cp.asarray(np.concatenate(leaf_index))] = cp.asarray(np.concatenate(leaf_value))
    _balls(tree.coords, tree.ids, *(cp.asarray(np.concatenate(a)) for a in (node_start, node_end, node)),
           tree.center, tree.cover_radius, tree.min_id)  # fmt: skip


def _balls(coords, ids, starts, ends, nodes, center, radius, min_id) -> None:
    """Ball and smallest id of node nodes[i] from the tree positions [starts[i], ends[i]) (update.cu's node_balls)."""
    d, n = coords.shape
    _launch("node_balls", nodes.shape[0], coords, _I64(n), _I32(d), _I64(nodes.shape[0]), starts, ends, nodes, ids,
            center, radius, min_id)  # fmt: skip


@_backend._gpu_memory("deleting points")
def tree_delete(tree: VPTree, points: cp.ndarray, mapping: cp.ndarray) -> VPTree:
    """The tree without the points whose ``mapping`` (old index -> new index) is -1; ``points`` are the survivors."""
    n = points.shape[0]
    if n * 4 < LEAF_SIZE << tree.depth:  # a quarter full: rebuilt to fit
        return _backend.build_vptree(points, depth=tree_depth(n))
    new_ids = mapping[tree.ids]
    keep = cp.flatnonzero(new_ids >= 0)
    removed = cp.zeros(tree.n_points + 1, _I64)
    cp.cumsum(new_ids < 0, dtype=_I64, out=removed[1:])
    # a min_id whose point went becomes the next survivor's index (the survivors before it, as mapping counts them):
    # a lower bound still, safe for tie tests; past the last survivor, NO_ID
    survives = (mapping >= 0).astype(_I64)
    before = cp.cumsum(survives) - survives
    next_survivor = cp.where(before < n, before, NO_ID)
    alive = tree.min_id != NO_ID
    min_id = cp.where(alive, next_survivor[cp.where(alive, tree.min_id, 0)], NO_ID)
    coords = _backend._empty_coords(tree.n_dims, n)
    coords[...] = tree.coords[:, keep]
    return dataclasses.replace(
        tree, coords=coords, ids=new_ids[keep], vantage=next_survivor[tree.vantage], min_id=min_id,
        leaf_start=tree.leaf_start - removed[tree.leaf_start], neighbours=None,
    )  # fmt: skip


def positions_of(tree: VPTree) -> cp.ndarray:
    """The tree position of every original index."""
    position = cp.empty(tree.n_points, _I64)
    position[tree.ids] = cp.arange(tree.n_points, dtype=_I64)
    return position


# ---------------------------------------------------------------------------------------------------------
# queries for a few points


def _slots(tree: VPTree, positions: cp.ndarray) -> cp.ndarray:
    """Per tree position, its index in ``positions`` (distinct tree positions), else -1."""
    slot = cp.full(tree.n_points, -1, _I32)
    slot[positions] = cp.arange(positions.shape[0], dtype=_I32)
    return slot


def _counts(tree: VPTree, positions, reach: float, count, node_count, rows) -> None:
    reach2, lo, hi = reach_rule(reach, tree.n_dims)
    _launch(
        "listed_counts", 32 << tree.depth, tree.coords, _I64(tree.n_points), _I32(tree.n_dims), _I32(tree.depth),
        tree.leaf_start, tree.center, tree.cover_radius, reach2, _F64(lo), _F64(hi), _F64(bound_slack(tree.n_dims)),
        _slots(tree, positions), count, node_count, rows,
    )  # fmt: skip


@_backend._gpu_memory("counting neighbours")
def count_near(tree: VPTree, positions: cp.ndarray, reach: float) -> cp.ndarray:
    """Per tree position, the number of listed positions closer than ``reach`` (the float32 rule of d < dc)."""
    count = cp.zeros(tree.n_points, cp.uint32)
    node_count = cp.zeros(tree.n_nodes, cp.uint32)
    _counts(tree, positions, reach, count, node_count, _NULL)
    out = _backend._output(tree.n_points, _F64)
    _backend._launch("add_node_tallies", 32 << tree.depth, tree.leaf_start, _I32(tree.depth), count, node_count, out)
    return out.astype(_I64)


@_backend._gpu_memory("computing rho")
def rho_at(tree: VPTree, positions: cp.ndarray, dc: float, kernel: str) -> cp.ndarray:
    """rho (as ``rho`` defines it) of the listed tree positions only."""
    out = _backend._output(positions.shape[0], _F64)
    if kernel == "gaussian":
        reach2, _, reach_hi = reach_rule(rho_reach(dc, kernel), tree.n_dims)
        _backend._launch(
            "gaussian_rho", 32 << tree.depth, tree.coords, _I64(tree.n_points), _I32(tree.n_dims), _I32(tree.depth),
            tree.leaf_start, tree.center, tree.cover_radius, reach2, _F64(reach_hi), _F64(1.0 / np.float64(dc) ** 2),
            _F64(bound_slack(tree.n_dims)), _slots(tree, positions), out, _I64(0), _I64(-1),
        )  # fmt: skip
    else:
        _counts(tree, positions, dc, _NULL, _NULL, out)
    return out


def mark_newly_outranked(tree: VPTree, sources, source_bands, rank_old_tree, rank_new_tree, reach2_tree, band_bits_tree) -> cp.ndarray:
    """Mask of the tree positions t that a source position newly outranks within t's own reach (float32
    ``reach2_tree``; -1 leaves t out): rank_old[s] > rank_old[t], rank_new[s] < rank_new[t], sq_dist <= reach2[t].
    The density bands only prune, and the GPU walks (one warp per listed leaf) do without them."""
    rank_old, rank_new = rank_old_tree.astype(_I32), rank_new_tree.astype(_I32)
    reach2 = cp.ascontiguousarray(reach2_tree, _F32)
    # the largest reach of every node: the max of the float bits as int32 (negative floats order below the rest)
    node_reach2 = _backend._node_max(reach2.view(_I32), tree).view(_F32)
    marked = cp.zeros(tree.n_points, cp.uint8)
    _launch(
        "mark_outranked", 32 << tree.depth, tree.coords, _I64(tree.n_points), _I32(tree.n_dims), _I32(tree.depth),
        tree.leaf_start, tree.center, tree.cover_radius, _F64(bound_slack(tree.n_dims)), _slots(tree, sources),
        rank_old, rank_new, reach2, node_reach2, _backend._node_min(rank_old, tree), _backend._node_max(rank_new, tree),
        marked,
    )  # fmt: skip
    return marked.view(cp.bool_)


def _nearest(tree: VPTree, positions, below, above, rank_lo, rank_hi, node_max_hi, bound_d2, bound_id):
    """(d2, id) per listed position from the nearest_where kernel (see update.cu), starting from the bound."""
    m = positions.shape[0]
    best_d2 = cp.array(bound_d2, dtype=_F32) if bound_d2 is not None else cp.full(m, np.inf, _F32)
    best_id = cp.array(bound_id, dtype=_I64) if bound_id is not None else cp.full(m, NO_ID, _I64)
    _launch(
        "nearest_where", 32 << tree.depth, tree.coords, _I64(tree.n_points), _I32(tree.n_dims), _I32(tree.depth),
        tree.leaf_start, tree.ids, tree.center, tree.cover_radius, _backend._min_id32(tree),
        _F64(bound_slack(tree.n_dims)), _slots(tree, positions), below, above, rank_lo, rank_hi,
        _backend._node_min(rank_lo, tree), node_max_hi, best_d2, best_id,
    )  # fmt: skip
    return best_d2, best_id


def nearest_newly_denser(tree: VPTree, targets, target_bands, rank_old_tree, rank_new_tree, band_bits_tree, bound_d2, bound_id):
    """(d2, id) of each target position's nearest newly denser point (rank_new below the target's, rank_old above)
    where it comes before the bound (bound_d2, bound_id) in (d2, id) order, else the bound (bands: see above)."""
    rank_old, rank_new = rank_old_tree.astype(_I32), rank_new_tree.astype(_I32)
    return _nearest(tree, targets, rank_new[targets], rank_old[targets], rank_new, rank_old,
                    _backend._node_max(rank_old, tree), bound_d2, bound_id)  # fmt: skip


def nearest_denser_of(tree: VPTree, rank_tree, positions):
    """(squared distance, original index) of the nearest denser point of each listed position (see the CPU's
    ``search.nearest_denser``)."""
    rank = rank_tree.astype(_I32)
    return _nearest(tree, positions, rank[positions], _NULL, rank, _NULL, _NULL, None, None)


def sq_to(tree: VPTree, p: int, positions: cp.ndarray) -> cp.ndarray:
    """Squared distances (float32 rule) from tree position p to the listed positions."""
    positions = cp.ascontiguousarray(positions, _I64)
    out = _backend._output(positions.shape[0], _F32)
    _launch("sq_to_positions", positions.shape[0], tree.coords, _I64(tree.n_points), _I32(tree.n_dims), _I64(p),
            positions, _I64(positions.shape[0]), out)  # fmt: skip
    return out


def merge_order(order, order_rho, moved, moved_rho, n):
    """(order, rho in that order, rank) of n points after the points ``moved`` (sorted in the new density order,
    with their new rho ``moved_rho``) changed rho: ``order`` without them and without entries -1 (points gone),
    merged with them; both sorted by (rho descending, index ascending), so each entry's place is its rank in its
    list plus the other list's entries before it."""
    is_moved = cp.zeros(n, cp.bool_)
    is_moved[moved] = True
    rho = cp.empty(n, _F64)
    valid = order >= 0
    rho[order[valid]] = order_rho[valid]
    rho[moved] = moved_rho
    valid = order[valid]
    kept = cp.ascontiguousarray(valid[~is_moved[valid]], _I64)
    moved = cp.ascontiguousarray(moved, _I64)
    out = _backend._output(n, _I64)
    _launch("merge_places", kept.shape[0], kept, _I64(kept.shape[0]), moved, _I64(moved.shape[0]), rho, out)
    _launch("merge_places", moved.shape[0], moved, _I64(moved.shape[0]), kept, _I64(kept.shape[0]), rho, out)
    rank = cp.empty(n, _I64)
    rank[out] = cp.arange(n)
    return out, rho[out], rank
