"""The GPU backend: CuPy RawModule kernels (vptree.cu) over device arrays. Same names as the CPU backend.

Arrays stay on the device between calls; ``to_numpy`` is the only way back. Each kernel has one wrapper
that checks shapes and dtypes and passes scalars as typed NumPy values. Launch failures raise at the launch
(CuPy checks every launch); with ``DPSTUDIO_GPU_SYNC=1`` each launch is also synchronised, so a fault in a
kernel is reported at that kernel (used under compute-sanitizer).
"""

from __future__ import annotations

import functools
import math
import os
from pathlib import Path

import numpy as np

try:
    import cupy as cp
except ImportError as exc:  # re-raised by backends.get_backend as BackendUnavailable
    raise ImportError("CuPy is not installed (pip install 'dpstudio[gpu]')") from exc

from ..vptree import VPTree, bound_slack, gaussian_reach, reach_rule, rho_reach, tree_depth

name = "gpu"
xp = cp

_THREADS = 256
# from this many dimensions on, cut-off rho and delta scan leaves on the tensor cores (3xTF32 with an exact
# recheck near the decision); below it the float32 register tiles are faster (measured on an H100, see README)
TENSOR_TILE_MIN_DIMS = 8
_TEMPLATES = ["pair_counts<false>", "pair_counts<true>", "delta_leaves<false>", "delta_leaves<true>"]
_SYNC = os.environ.get("DPSTUDIO_GPU_SYNC") == "1"
_I64, _F32, _F64, _I32 = np.int64, np.float32, np.float64, np.int32
NO_ID = np.iinfo(np.int64).max  # min_id of an empty node
_COST_BLOCK = 64  # leaf_costs' COST_WARPS warps, each with its stack in shared memory
_NO_SLOTS = np.uint64(0)  # a null pointer: gaussian_rho computes every position


def check_usable() -> None:
    from ..backends import BackendUnavailable

    try:
        if cp.cuda.runtime.getDeviceCount() < 1:
            raise BackendUnavailable("the GPU backend is not available: no CUDA device")
        _module()
    except cp.cuda.runtime.CUDARuntimeError as exc:
        raise BackendUnavailable(f"the GPU backend is not available: {exc}") from exc


def device_name() -> str:
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    return f"GPU ({props['name'].decode()}, {props['totalGlobalMem'] / 2**30:.0f} GiB)"


# no fused multiply-add: the float32 distance rule must round exactly as on the CPU
_OPTIONS = ("--std=c++17", "--fmad=false")


@functools.cache
def _module() -> cp.RawModule:
    source = (Path(__file__).with_name("vptree.cu")).read_text()
    return cp.RawModule(code=source, options=_OPTIONS, name_expressions=_TEMPLATES)


@functools.cache
def _joined_module(name: str, name_expressions: tuple[str, ...] = ()) -> cp.RawModule:
    """vptree.cu with another source appended (graph.cu, update.cu): their kernels walk the same tree with its helpers."""
    here = Path(__file__).parent
    source = (here / "vptree.cu").read_text() + "\n" + (here / name).read_text()
    return cp.RawModule(code=source, options=_OPTIONS, name_expressions=list(name_expressions))


def _tensor_tiles(n_dims: int) -> str:
    """The TENSOR template argument of the leaf-scanning kernels."""
    return "true" if n_dims >= TENSOR_TILE_MIN_DIMS else "false"


def _launch_in(module: cp.RawModule, kernel: str, n_threads: int, *args, block: int = _THREADS) -> None:
    if n_threads <= 0:
        return
    blocks = (n_threads + block - 1) // block
    module.get_function(kernel)((blocks,), (block,), args)
    if _SYNC:
        cp.cuda.Device().synchronize()


def _launch(kernel: str, n_threads: int, *args, block: int = _THREADS) -> None:
    _launch_in(_module(), kernel, n_threads, *args, block=block)


def _gpu_memory(action: str):
    """Turn CuPy's out-of-memory error into a MemoryError that names the work and the size."""

    def wrap(function):
        @functools.wraps(function)
        def run(*args, **kwargs):
            try:
                return function(*args, **kwargs)
            except cp.cuda.memory.OutOfMemoryError as exc:
                raise MemoryError(f"GPU out of memory while {action}: {exc}") from exc

        return run

    return wrap


def _output(shape, dtype) -> cp.ndarray:
    """Every kernel output is allocated here (the GPU tests poison it to catch unwritten elements)."""
    return cp.empty(shape, dtype)


def synchronize() -> None:
    cp.cuda.Device().synchronize()


def free_memory() -> None:
    """Give the memory pool's unused blocks back to the device (after a session's arrays were dropped)."""
    cp.get_default_memory_pool().free_all_blocks()


def _require(array, dtype, ndim: int, what: str):
    if not isinstance(array, cp.ndarray) or array.dtype != dtype or array.ndim != ndim or not array.flags.c_contiguous:
        raise TypeError(f"{what} must be a C-contiguous {ndim}-D cupy.{np.dtype(dtype).name} array")
    return array


@_gpu_memory("copying the data to the GPU")
def asarray(values) -> cp.ndarray:
    return cp.ascontiguousarray(cp.asarray(values))


def to_numpy(values) -> np.ndarray:
    return cp.asnumpy(values)


_largest_count = cp.ReductionKernel(
    "T x", "float64 y",
    "(double)x >= 0 && (double)x < 4294967296.0 && (double)x == floor((double)x) ? (double)x : -1.0",
    "a < 0 || b < 0 ? -1.0 : max(a, b)", "y = a", "0", "largest_count",
)  # one pass, no temporaries: the largest value where every value is a count that fits uint32, else -1 (NaN too)


def density_order(rho_values: cp.ndarray) -> tuple[cp.ndarray, cp.ndarray]:
    """(order, rank) as on the CPU: densest first, ties by index (CuPy's sort is a stable radix sort). Cut-off counts
    (uint32 from Dask's workers, or whole float64 numbers below 2**32) sort as the narrowest unsigned keys that hold
    them: uint16 below 2**16 (10.6 -> 9.0 ms at 100M points: CuPy's int64 indices travel with the keys), else
    uint32 (half the radix passes of float64)."""
    largest = float(_largest_count(rho_values))
    if largest < 0:
        keys = -rho_values
    else:
        narrowest = cp.uint16 if largest < 2**16 else cp.uint32
        keys = narrowest(largest) - rho_values.astype(narrowest, copy=False)  # the largest count first
    order = cp.argsort(keys)
    rank = cp.empty_like(order)
    rank[order] = cp.arange(order.shape[0])
    return order, rank


# ---------------------------------------------------------------------------------------------------------
# index


@_gpu_memory("building the VP-tree")
def build_vptree(points: cp.ndarray, progress=None, depth: int | None = None) -> VPTree:
    """Level-synchronous build: per level, one kernel keys every point by (node, distance to the node's vantage
    point) and one stable radix sort orders all nodes' runs at once. No host loop over nodes. ``depth`` levels
    (default: the fewest with full leaves, ``tree_depth``; more leave some nodes empty, as the CPU build does)."""
    points = _require(points, _F32, 2, "points")
    n, d = points.shape
    if n >= 2**31:
        raise ValueError(f"the GPU backend handles up to 2**31 - 1 points, got {n}")
    depth = tree_depth(n) if depth is None else depth
    order = cp.arange(n, dtype=_I64)
    n_internal = (1 << depth) - 1
    split_radius = cp.zeros(n_internal, _F32)
    vantage = cp.zeros(n_internal, _I64)
    to_first = _output(n, _F32)
    _launch("sq_to_point", n, cp.ascontiguousarray(points.T), _I64(n), _I32(d), _I64(0), to_first)
    vantage_pos = cp.argmax(to_first).reshape(1).astype(_I64)
    keys = _output(n, cp.uint64)
    for level in range(depth):
        vantage[(1 << level) - 1 : (2 << level) - 1] = vantage_pos
        _launch("level_keys", n, points, _I32(d), _I64(n), _I32(level), order, vantage_pos, keys)
        by_key = cp.argsort(keys)
        order, keys = order[by_key], keys[by_key]
        vantage_pos = _output(2 << level, _I64)
        _launch("split_nodes", 1 << level, _I64(n), _I32(level), keys, order, split_radius, vantage_pos)
        if progress is not None:
            progress((level + 1) / (depth + 1))
    coords = _with_tile_slack(points[order].T)
    center = _node_centers(coords, depth)
    radius_bits = cp.zeros(center.shape[0], cp.uint32)
    min_id = cp.full(center.shape[0], 0xFFFFFFFF, cp.uint32)
    _launch("node_extents", _warp_padded(n), coords, _I64(n), _I32(d), _I32(depth), center, order, radius_bits, min_id)
    if progress is not None:
        progress(1.0)
    leaf_start = (cp.arange((1 << depth) + 1, dtype=_I64) * n) >> depth
    # an empty node (only when depth is forced past tree_depth) bounds nothing: NO_ID as on the CPU
    min_id = cp.where(min_id == 0xFFFFFFFF, NO_ID, min_id.astype(_I64))
    return VPTree(coords, order, vantage, split_radius, center, radius_bits.view(_F32), min_id, depth, leaf_start)


def _empty_coords(d: int, n: int) -> cp.ndarray:
    """A (d, n) float32 array followed by 32 zero floats: leaf tiles read whole 32-point blocks from a leaf's start,
    past the last leaf of the last row. Every tree's coords live in one."""
    return cp.zeros(d * n + 32, _F32)[: d * n].reshape(d, n)


def _with_tile_slack(rows: cp.ndarray) -> cp.ndarray:
    out = _empty_coords(*rows.shape)
    out[...] = rows
    return out


def _min_id32(tree: VPTree) -> cp.ndarray:
    """The nodes' smallest ids as the kernels read them (uint32: ids are below 2**31; NO_ID becomes 0xFFFFFFFF)."""
    return cp.minimum(tree.min_id, 0xFFFFFFFF).astype(cp.uint32)


def _warp_padded(n: int) -> int:
    return (n + 31) // 32 * 32


def _node_runs(n: int, depth: int) -> tuple[np.ndarray, np.ndarray]:
    """(start, end) tree positions of every breadth-first node."""
    k = np.arange((2 << depth) - 1, dtype=np.int64)
    level = np.frexp(k + 1)[1] - 1  # exact floor(log2(k + 1))
    j = k - ((1 << level) - 1)
    return (j * n) >> level, ((j + 1) * n) >> level


def _node_centers(coords: cp.ndarray, depth: int) -> cp.ndarray:
    """Mean of every node's run, from float64 prefix sums (one pass, every level at once)."""
    d, n = coords.shape
    prefix = cp.zeros((d, n + 1), _F64)
    cp.cumsum(coords, axis=1, dtype=_F64, out=prefix[:, 1:])
    start, end = (cp.asarray(a) for a in _node_runs(n, depth))
    sums = prefix[:, end] - prefix[:, start]
    # an empty node's centre is 0, as on the CPU
    return cp.ascontiguousarray((sums / cp.maximum(end - start, 1)).T.astype(_F32))


def _node_min(values_tree: cp.ndarray, tree: VPTree) -> cp.ndarray:
    """Minimum of int32 tree-order values over every node's run; an empty node gets INT32_MAX. The leaves', then
    level by level up from two children each (atomics from every leaf to its ancestors queued on the top nodes:
    12 ms at 100M points, against 0.9 ms)."""
    values_tree = _require(values_tree, _I32, 1, "values")
    out = cp.full(tree.n_nodes, np.iinfo(np.int32).max, _I32)
    _launch("leaf_min", 32 << tree.depth, values_tree, tree.leaf_start, _I32(tree.depth), out)
    for level in range(tree.depth - 1, -1, -1):
        first, children = (1 << level) - 1, out[(2 << level) - 1 : (4 << level) - 1]
        cp.minimum(children[0::2], children[1::2], out=out[first : first + (1 << level)])
    return out


def _node_max(values_tree: cp.ndarray, tree: VPTree) -> cp.ndarray:
    """Maximum likewise (~ reverses the int32 order without overflow); an empty node gets INT32_MIN."""
    return ~_node_min(~values_tree, tree)


# ---------------------------------------------------------------------------------------------------------
# rho, delta


@_gpu_memory("computing rho")
def rho(tree: VPTree, dc: float, kernel: str, progress=None) -> cp.ndarray:
    if kernel == "gaussian":
        rho_tree = _gaussian_rho(tree, dc, 0, 1 << tree.depth)
    else:
        rho_tree = cutoff_pair_totals(tree, dc, 0, 1 << tree.depth)
        rho_tree -= 1.0  # each point counted itself
    if progress is not None:
        progress(1.0)
    out = cp.empty_like(rho_tree)
    out[tree.ids] = rho_tree
    return out


@_gpu_memory("computing rho")
def cutoff_pair_totals(tree: VPTree, dc: float, first_leaf: int, last_leaf: int) -> cp.ndarray:
    """Cut-off pair counts (float64, tree order, each point's pair with itself included) of the pairs with a point
    in leaves [first_leaf, last_leaf) and the other in the same leaf or after it, each pair counted once for both
    of its points. Over all leaves: rho + 1. Over a run of leaves: that run's part of every point's count, zero
    before the run; the parts of all runs add up to the whole, so Dask workers' shares need no twice-counted pair."""
    n, d, depth = tree.n_points, tree.n_dims, tree.depth
    reach2, reach_lo, reach_hi = reach_rule(dc, d)
    count = cp.zeros(n, cp.uint32)  # the counters must start at zero
    node_count = cp.zeros((2 << depth) - 1, cp.uint32)
    _launch(
        f"pair_counts<{_tensor_tiles(d)}>", 32 * (last_leaf - first_leaf), tree.coords, _I64(n), _I32(d), _I32(depth),
        tree.leaf_start, tree.center, tree.cover_radius, reach2, _F64(reach_lo), _F64(reach_hi), _F64(bound_slack(d)),
        count, node_count, _I64(first_leaf), _I64(last_leaf),
    )  # fmt: skip
    totals = _output(n, _F64)
    _launch("add_node_tallies", 32 << depth, tree.leaf_start, _I32(depth), count, node_count, totals)
    return totals


def costs_of_leaves(tree: VPTree, dc: float, kernel: str, leaves, once: bool = False) -> cp.ndarray:
    """The CPU's ``costs_of_leaves`` (int64, the same values), on the GPU: a Dask worker's cost pass in well under a
    millisecond, so every worker measures all the sampled leaves itself and cuts the shares from them alone."""
    leaves = cp.ascontiguousarray(cp.asarray(leaves), _I64)
    _, reach_lo, reach_hi = reach_rule(rho_reach(dc, kernel), tree.n_dims)
    costs = _output(leaves.shape[0], _I64)
    overflow = cp.zeros(1, _I32)
    _launch(
        "leaf_costs", 32 * leaves.shape[0], tree.leaf_start, tree.center, tree.cover_radius, _I32(tree.n_dims),
        _I32(tree.depth), _F64(reach_lo), _F64(reach_hi), _I32(kernel == "gaussian"), _F64(bound_slack(tree.n_dims)),
        leaves, _I64(leaves.shape[0]), _I32(once), costs, overflow, block=_COST_BLOCK,
    )  # fmt: skip
    if int(overflow[0]):
        raise RuntimeError("the GPU cost pass overflowed its stack (a bug: please report it)")
    return costs


@_gpu_memory("computing rho")
def rho_of_leaves(tree: VPTree, dc: float, kernel: str, first_leaf: int, last_leaf: int) -> cp.ndarray:
    """Gaussian rho (float64) of the points of leaves [first_leaf, last_leaf), in tree order: one worker's share of
    ``rho``. Cut-off rho counts each pair once, so a share's counts come from ``cutoff_pair_totals`` and the shares
    before it."""
    if kernel != "gaussian":
        raise ValueError("a run of leaves' cut-off rho needs the runs before it: see cutoff_pair_totals")
    start, end = int(tree.leaf_start[first_leaf]), int(tree.leaf_start[last_leaf])
    return _gaussian_rho(tree, dc, first_leaf, last_leaf)[start:end]


def _gaussian_rho(tree: VPTree, dc: float, first_leaf: int, last_leaf: int) -> cp.ndarray:
    """Gaussian rho of the points of leaves [first_leaf, last_leaf) into a tree-order array (the rest unwritten)."""
    rho_tree = _output(tree.n_points, _F64)
    reach2, _, reach_hi = reach_rule(gaussian_reach(dc), tree.n_dims)
    _launch(
        "gaussian_rho", 32 * (last_leaf - first_leaf), tree.coords, _I64(tree.n_points), _I32(tree.n_dims),
        _I32(tree.depth), tree.leaf_start, tree.center, tree.cover_radius, reach2, _F64(reach_hi),
        _F64(1.0 / np.float64(dc) ** 2), _F64(bound_slack(tree.n_dims)), _NO_SLOTS, rho_tree, _I64(first_leaf),
        _I64(last_leaf),
    )  # fmt: skip
    return rho_tree


@_gpu_memory("computing delta")
def delta(tree: VPTree, rank: cp.ndarray, progress=None) -> tuple[cp.ndarray, cp.ndarray]:
    """(delta, parent) in original order, given every point's density rank (0 = densest)."""
    delta2, parent = delta_of_leaves(tree, rank[tree.ids].astype(_I32), 0, 1 << tree.depth)
    if progress is not None:
        progress(1.0)
    return delta_in_point_order(tree.ids, delta2, parent)


_scatter_delta = cp.ElementwiseKernel(
    "I id, float32 d2, P p", "raw float64 delta, raw int64 parent", "delta[id] = sqrt((double)d2); parent[id] = p",
    "scatter_delta",
)  # one pass where astype, sqrt and two scatters took four (16.7 -> 15.4 ms at 100M points: the scatters' writes)


def delta_in_point_order(ids: cp.ndarray, delta2: cp.ndarray, parent: cp.ndarray) -> tuple[cp.ndarray, cp.ndarray]:
    """(delta as float64, parent as int64) in point order from tree-order squared delta (float32) and parents,
    ``ids`` the tree order's point indices."""
    out_delta = cp.empty(ids.shape[0], _F64)
    out_parent = cp.empty(ids.shape[0], _I64)
    _scatter_delta(ids, delta2, parent, out_delta, out_parent)
    return out_delta, out_parent


@_gpu_memory("computing delta")
def delta_of_leaves(tree: VPTree, rank_tree: cp.ndarray, first_leaf: int, last_leaf: int, graph=None):
    """(squared delta as float32, parent) of the points of leaves [first_leaf, last_leaf), in tree order, given the
    density rank in tree order: one worker's share of ``delta``. (``graph``: the CPU backend's neighbour lists; the
    GPU searches the tree instead.)"""
    n, d, depth = tree.n_points, tree.n_dims, tree.depth
    rank_tree = rank_tree.astype(_I32, copy=False)
    delta2 = _output(n, _F32)
    parent = _output(n, _I64)
    _launch(
        f"delta_leaves<{_tensor_tiles(d)}>", 32 * (last_leaf - first_leaf), tree.coords, _I64(n), _I32(d), _I32(depth),
        tree.leaf_start, tree.ids, rank_tree, tree.center, tree.cover_radius, _node_min(rank_tree, tree), _min_id32(tree),
        _F64(bound_slack(d)), delta2, parent, _I64(first_leaf), _I64(last_leaf),
    )  # fmt: skip
    start, end = int(tree.leaf_start[first_leaf]), int(tree.leaf_start[last_leaf])
    densest = int(cp.argmin(rank_tree))  # the one point with nothing denser: delta is its farthest distance
    if start <= densest < end:
        to_densest = _output(n, _F32)
        _launch("sq_to_point", n, tree.coords, _I64(n), _I32(d), _I64(densest), to_densest)
        delta2[densest] = to_densest.max()
        parent[densest] = -1
    return delta2[start:end], parent[start:end]


# ---------------------------------------------------------------------------------------------------------
# labels, halo, lasso


@_gpu_memory("relabelling")
def labels(parent: cp.ndarray, density_order_: cp.ndarray, centers: cp.ndarray) -> cp.ndarray:
    """Pointer jumping: each pass halves every point's distance to its labelled ancestor."""
    n = parent.shape[0]
    label = cp.full(n, -1, _I64)
    label[centers] = cp.arange(centers.shape[0], dtype=_I64)
    ancestor = parent.copy()
    passes = max(1, math.ceil(math.log2(n))) + 1
    while True:
        for _ in range(passes):
            _launch("jump_to_center", n, _I64(n), ancestor, label)
        if not bool((label < 0).any()):  # one check per batch, not per pass
            return label


@_gpu_memory("computing the halo")
def halo(tree: VPTree, rho_values: cp.ndarray, labels_: cp.ndarray, dc: float) -> cp.ndarray:
    n, d, depth = tree.n_points, tree.n_dims, tree.depth
    labels_tree = labels_[tree.ids].astype(_I32)
    rho_tree = cp.ascontiguousarray(rho_values[tree.ids])
    order, rank = density_order(rho_values)
    densest_in_node = _node_min(rank[tree.ids].astype(_I32), tree)
    # an empty node (INT32_MAX) holds nothing: -inf, below every rho
    node_max_rho = cp.where(densest_in_node < n, rho_values[order][cp.minimum(densest_in_node, n - 1)], -np.inf)
    smallest, largest = _node_min(labels_tree, tree), _node_max(labels_tree, tree)
    node_label = cp.where(smallest == largest, smallest, -1).astype(_I32)  # -1: the node mixes labels
    dc2, dc_lo, dc_hi = reach_rule(dc, d)
    pair_rho = _output(n, _F64)
    _launch(
        "border_rho", 32 << depth, tree.coords, _I64(n), _I32(d), _I32(depth), tree.leaf_start, labels_tree, rho_tree,
        tree.center, tree.cover_radius, node_label, cp.ascontiguousarray(node_max_rho), dc2,
        _F64(dc_lo), _F64(dc_hi), _F64(bound_slack(d)), pair_rho,
    )  # fmt: skip
    border = cp.full(int(labels_.max()) + 1, -1.0, _F64)
    _launch("cluster_border", n, pair_rho, labels_tree, _I64(n), border.view(cp.int64))
    return rho_values < border[labels_]


def points_in_polygon(x: cp.ndarray, y: cp.ndarray, polygon: cp.ndarray) -> cp.ndarray:
    x = _require(cp.ascontiguousarray(x, _F64), _F64, 1, "x")
    y = _require(cp.ascontiguousarray(y, _F64), _F64, 1, "y")
    polygon = _require(cp.ascontiguousarray(polygon, _F64), _F64, 2, "polygon")
    inside = _output(x.shape[0], cp.bool_)
    _launch("points_in_polygon", x.shape[0], x, y, _I64(x.shape[0]), polygon, _I32(polygon.shape[0]), inside)
    return inside


# ---------------------------------------------------------------------------------------------------------
# the DBSCAN family: kNN, mutual-reachability MST, DBSCAN labels (graph.py, graph.cu)

from .graph import dbscan_labels, knn, knn_deleted, knn_inserted, mst  # noqa: E402  (graph.py uses the helpers above)

# ---------------------------------------------------------------------------------------------------------
# incremental updates (update.py, update.cu)

from .update import (  # noqa: E402
    count_near, mark_newly_outranked, merge_order, nearest_denser_of, nearest_newly_denser, positions_of, rho_at, sq_to,
    tree_delete, tree_insert,
)  # fmt: skip
from .potential import potential_sums  # noqa: E402  (potential.py too)
