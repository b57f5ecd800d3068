"""The DBSCAN family on the GPU (graph.cu): k nearest neighbours, the mutual-reachability MST by Borůvka over
the VP-tree, and DBSCAN labels at one eps from the cached arrays. Same names and results as the CPU backend.

graph.cu is compiled appended to vptree.cu (it walks the same tree with the same helpers), as a second module.
From TENSOR_TILE_MIN_DIMS dimensions on, kNN and Borůvka scan leaves as tensor-core tiles with an exact recheck,
as rho and delta do.
"""

from __future__ import annotations

import functools
import math
import sys

import cupy as cp
import numpy as np

from ..vptree import VPTree, bound_slack

_backend = sys.modules[__package__]  # the gpu package, looked up at call time: the tests poison its _output

_I64, _F32, _I32 = np.int64, np.float32, np.int32
_KNN_WIDTHS = (8, 16, 32, 64, 128)  # the register list of a kNN lane: the smallest of these that holds k
_NO_EDGE = np.uint64(0x7F800000FFFFFFFF)
_NO_ID = np.uint32(0xFFFFFFFF)


@functools.cache
def _module() -> cp.RawModule:
    names = [f"knn_leaves<{width}, {tensor}>" for width in _KNN_WIDTHS for tensor in ("false", "true")]
    names += ["boruvka_nearest<false>", "boruvka_nearest<true>"]
    return _backend._joined_module("graph.cu", tuple(names))


def _launch(kernel: str, n_threads: int, *args) -> None:
    _backend._launch_in(_module(), kernel, n_threads, *args)


def _check_rows(array, n: int, what: str) -> None:
    if array.shape[0] != n:
        raise ValueError(f"{what} has {array.shape[0]} rows, expected {n}")


# ---------------------------------------------------------------------------------------------------------
# k nearest neighbours


@_backend._gpu_memory("finding the k nearest neighbours")
def knn(tree: VPTree, k: int, progress=None) -> tuple[cp.ndarray, cp.ndarray]:
    """(ids, sq_dists), each (N, k) in original order: row i holds the k nearest other points of point i, nearest
    first, distance ties to the smaller index; rows of fewer than k other points end in -1 / +inf."""
    n, d, depth = tree.n_points, tree.n_dims, tree.depth
    k = int(k)
    width = next((w for w in _KNN_WIDTHS if k <= w), None)
    if k < 0 or width is None:
        raise ValueError(f"the GPU kNN handles 0 <= k <= {_KNN_WIDTHS[-1]}, got {k}")
    ids = _backend._output((n, k), _I64)
    sq_dists = _backend._output((n, k), _F32)
    if k > 0:
        _launch(
            f"knn_leaves<{width}, {_backend._tensor_tiles(d)}>", 32 << depth, tree.coords, _I64(n), _I32(d),
            _I32(depth), tree.leaf_start, tree.ids, tree.center, tree.cover_radius, _backend._min_id32(tree),
            np.float64(bound_slack(d)), _I32(k), ids, sq_dists,
        )  # fmt: skip
    if progress is not None:
        progress(1.0)
    return ids, sq_dists


def knn_inserted(old_tree: VPTree, tree: VPTree, ids: cp.ndarray, sq_dists: cp.ndarray, n_old: int) -> tuple[cp.ndarray, cp.ndarray]:
    """The lists of ``knn(tree, k)`` after an insert: listed again (one launch over every point costs less on the
    GPU than the CPU's reverse search and merge)."""
    return knn(tree, ids.shape[1])


def knn_deleted(tree: VPTree, ids: cp.ndarray, sq_dists: cp.ndarray, mapping: cp.ndarray) -> tuple[cp.ndarray, cp.ndarray]:
    """The lists of ``knn(tree, k)`` after a deletion: listed again, as after an insert."""
    return knn(tree, ids.shape[1])


# ---------------------------------------------------------------------------------------------------------
# minimum spanning tree of mutual reachability


@_backend._gpu_memory("computing the minimum spanning tree")
def mst(tree: VPTree, core_sq: cp.ndarray, neighbours=None, progress=None) -> tuple[cp.ndarray, cp.ndarray, cp.ndarray]:
    """(u, v, w2): the N - 1 edges of the minimum spanning tree of mutual reachability, u < v original indices,
    w2 = max(core_sq[u], core_sq[v], d2(u, v)), sorted by the key (w2, u, v) that makes the tree unique.
    ``neighbours`` (the CPU's shortcut for points its lists decide) is not needed here: every point walks.

    Borůvka over the VP-tree: per round every point finds its best edge to another component (graph.cu), each
    component keeps its minimum, and components hook onto the ones their edges lead to. No host loop over points;
    one host read per round (the number of components left)."""
    n, d, depth = tree.n_points, tree.n_dims, tree.depth
    core_sq = _backend._require(core_sq, _F32, 1, "core_sq")
    _check_rows(core_sq, n, "core_sq")
    n_edges = max(n - 1, 0)
    out_u, out_v = _backend._output(n_edges, _I64), _backend._output(n_edges, _I64)
    out_w2 = _backend._output(n_edges, _F32)
    if n < 2:
        return out_u, out_v, out_w2
    core_tree = cp.ascontiguousarray(core_sq[tree.ids])
    node_core = _backend._node_min(core_tree.view(_I32), tree).view(_F32)  # floats >= 0 order as their bits
    min_id = _backend._min_id32(tree)
    pos_of = cp.empty(n, _I64)
    pos_of[tree.ids] = cp.arange(n, dtype=_I64)
    slack = np.float64(bound_slack(d))
    n_nodes = (2 << depth) - 1
    comp = cp.arange(n, dtype=_I32)  # every point its own component, labelled by its tree position
    edge_count = cp.zeros(1, cp.uint64)
    best_high = _backend._output(n, cp.uint64)
    best_low = _backend._output(n, cp.uint32)
    changes = cp.zeros(n, _I32)
    n_comp, rounds = n, 0
    while n_comp > 1:
        cp.not_equal(comp[1:], comp[:-1], out=changes[1:])
        breaks = cp.cumsum(changes, dtype=_I32)
        node_comp = _backend._output(n_nodes, _I32)
        _launch("node_components", n_nodes, tree.leaf_start, _I32(depth), comp, breaks, node_comp)
        comp_best = cp.full(n_comp, _NO_EDGE, cp.uint64)
        comp_low = cp.full(n_comp, _NO_ID, cp.uint32)
        _launch(
            "seed_leaves", 32 << depth, tree.coords, _I64(n), _I32(d), _I32(depth), tree.leaf_start, tree.ids, core_tree, comp,
            node_comp, comp_best,
        )  # fmt: skip
        _launch(
            f"boruvka_nearest<{_backend._tensor_tiles(d)}>", 32 << depth, tree.coords, _I64(n), _I32(d),
            _I32(depth), tree.leaf_start, tree.ids, core_tree, comp, tree.center, tree.cover_radius, min_id, node_core, node_comp,
            slack, comp_best, best_high, best_low,
        )  # fmt: skip
        _launch("component_low", n, _I64(n), comp, best_high, best_low, comp_best, comp_low)
        target = _backend._output(n_comp, _I32)
        _launch("hook_components", n_comp, _I32(n_comp), comp_best, comp_low, pos_of, comp, target)
        parent = _backend._output(n_comp, _I32)
        _launch(
            "merge_components", n_comp, _I32(n_comp), target, comp_best, comp_low, parent, edge_count, out_u, out_v,
            out_w2,
        )  # fmt: skip
        for _ in range(math.ceil(math.log2(n_comp)) + 1):  # hook chains are shorter than n_comp
            _launch("jump_parents", n_comp, _I32(n_comp), parent)
        new_label = cp.cumsum(parent == cp.arange(n_comp, dtype=_I32), dtype=_I32) - 1
        _launch("relabel", n, _I64(n), comp, parent, new_label)
        left = int(new_label[-1]) + 1
        if left >= n_comp:  # every round at least halves the components; anything else is a defect
            raise RuntimeError(f"Borůvka made no progress ({n_comp} components)")
        n_comp, rounds = left, rounds + 1
        if progress is not None:
            progress(1.0 - math.log(n_comp) / math.log(n))
    if int(edge_count[0]) != n - 1:
        raise RuntimeError(f"Borůvka found {int(edge_count[0])} edges for {n} points")
    # sort by (w2, u, v): by (u, v) first, then stably by w2 (CuPy's argsort is a stable radix sort)
    order = cp.argsort(out_u * (1 << 31) + out_v)
    order = order[cp.argsort(out_w2.view(_I32)[order])]
    return out_u[order], out_v[order], out_w2[order]


# ---------------------------------------------------------------------------------------------------------
# DBSCAN labels at one eps


@_backend._gpu_memory("labelling DBSCAN clusters")
def dbscan_labels(chain, gap, core_sq, knn_ids, knn_sq, eps2) -> cp.ndarray:
    """DBSCAN labels (N,) at eps2 = float32(eps^2) from cached arrays, no distance computed: the runs of the
    single-linkage chain joined by gaps <= eps2 are the clusters of core points (numbered by their smallest point,
    as scikit-learn numbers them); a non-core point takes the smallest label among its core neighbours within eps
    in its kNN list (k >= min_samples - 1), else -1."""
    chain = _backend._require(chain, _I64, 1, "chain")
    n = chain.shape[0]
    gap = _backend._require(gap, _F32, 1, "gap")
    core_sq = _backend._require(core_sq, _F32, 1, "core_sq")
    knn_ids = _backend._require(knn_ids, _I64, 2, "knn_ids")
    knn_sq = _backend._require(knn_sq, _F32, 2, "knn_sq")
    if not isinstance(eps2, np.float32):
        raise TypeError("eps2 must be a numpy.float32 (float32(eps**2))")
    _check_rows(core_sq, n, "core_sq")
    _check_rows(knn_ids, n, "knn_ids")
    if gap.shape[0] != max(n - 1, 0) or knn_sq.shape != knn_ids.shape:
        raise ValueError(f"gap must hold {max(n - 1, 0)} values and knn_sq the shape of knn_ids {knn_ids.shape}")
    labels = _backend._output(n, _I64)
    if n == 0:
        return labels
    starts = _backend._output(n, _I32)
    _launch("run_starts", n, _I64(n), gap, eps2, starts)
    run = cp.cumsum(starts, dtype=_I32)
    run_min = cp.full(n, np.iinfo(np.int32).max, _I32)
    run_core = cp.zeros(n, _I32)
    _launch("run_extents", n, _I64(n), chain, run, core_sq, eps2, run_min, run_core)
    mark = cp.zeros(n, _I32)
    _launch("mark_clusters", n, _I64(n), run_min, run_core, mark)
    rank = cp.cumsum(mark, dtype=_I32)
    _launch("label_runs", n, _I64(n), chain, run, run_min, run_core, rank, labels)
    _launch("label_borders", n, _I64(n), _I32(knn_ids.shape[1]), core_sq, knn_ids, knn_sq, eps2, labels)
    return labels
