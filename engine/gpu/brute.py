"""Brute-force all-pairs kernels on the GPU (brute.cu): rho and delta (the baseline of ``dpstudio bench --backend
gpu``), DBSCAN as cuML computes it (the baseline of ``dpstudio bench --method dbscan --backend gpu``) and the
mutual-reachability MST by all-pairs Borůvka rounds; exact references for the GPU tests at sizes where the NumPy oracle would take hours."""

from __future__ import annotations

import functools
from pathlib import Path

import cupy as cp
import numpy as np

from ..vptree import float32_square, rho_reach

_THREADS = 256
_TILE = 128
_MAXD = (4, 16, 64, 128)
_GRAPH_KERNELS = ("brute_eps_counts", "brute_hook", "brute_border", "brute_min_edge")


@functools.cache
def _module() -> cp.RawModule:
    names = [f"brute_rho<{m}, {g}>" for m in _MAXD for g in ("false", "true")]
    names += [f"{kernel}<{m}>" for kernel in ("brute_delta", *_GRAPH_KERNELS) for m in _MAXD]
    source = Path(__file__).with_name("brute.cu").read_text()
    return cp.RawModule(code=source, options=("--std=c++17", "--fmad=false"), name_expressions=names)


def _kernel(template: str, d: int):
    bound = next((m for m in _MAXD if d <= m), None)
    if bound is None:
        raise ValueError(f"the brute-force reference handles d <= {_MAXD[-1]}, got {d}")
    kernel = _module().get_function(template.format(bound))
    kernel.max_dynamic_shared_size_bytes = _TILE * bound * 4  # past the 48 KiB default for d > 96
    return kernel


def _coords(points: cp.ndarray) -> cp.ndarray:
    if points.dtype != cp.float32 or points.ndim != 2:
        raise TypeError("points must be a 2-D cupy.float32 array")
    return cp.ascontiguousarray(points.T)


def rho(points: cp.ndarray, dc: float, kernel: str = "cutoff") -> cp.ndarray:
    """rho of every point by comparing it with all N points (same truncation and rule as the engine)."""
    n, d = points.shape
    out = cp.empty(n, cp.float64)
    _kernel("brute_rho<{}, " + ("true>" if kernel == "gaussian" else "false>"), d)(
        ((n + _THREADS - 1) // _THREADS,), (_THREADS,),
        (_coords(points), np.int64(n), np.int32(d), float32_square(rho_reach(dc, kernel)), np.float64(1.0 / np.float64(dc) ** 2), out),
        shared_mem=_TILE * d * 4,
    )  # fmt: skip
    return out


def delta(points: cp.ndarray, rank: cp.ndarray) -> tuple[cp.ndarray, cp.ndarray]:
    """(delta, parent) by scanning all N points for each point."""
    n, d = points.shape
    delta2 = cp.empty(n, cp.float32)
    parent = cp.empty(n, cp.int64)
    _kernel("brute_delta<{}>", d)(
        ((n + _THREADS - 1) // _THREADS,), (_THREADS,),
        (_coords(points), np.int64(n), np.int32(d), cp.ascontiguousarray(rank, dtype=cp.int64), delta2, parent),
        shared_mem=_TILE * d * 4,
    )  # fmt: skip
    return cp.sqrt(delta2.astype(cp.float64)), parent


def _grid(n: int) -> tuple[tuple[int], tuple[int]]:
    return ((n + _THREADS - 1) // _THREADS,), (_THREADS,)


def dbscan(points: cp.ndarray, eps: float, min_samples: int) -> cp.ndarray:
    """DBSCAN labels by all pairs, as cuML computes them: eps-neighbour counts (d2 <= float32(eps^2), the point
    itself counted), connected components of the core points by label propagation with root hooking over the
    all-pairs adjacency (streamed again every sweep), then border points; numbered as scikit-learn numbers them
    (clusters by their smallest core point, a border point in the smallest cluster it touches)."""
    n, d = points.shape
    coords, shared = _coords(points), _TILE * d * 4
    eps2 = float32_square(eps)
    args = (coords, np.int64(n), np.int32(d), eps2)
    counts = cp.empty(n, cp.int32)
    _kernel("brute_eps_counts<{}>", d)(*_grid(n), (*args, counts), shared_mem=shared)
    label = cp.where(counts >= min_samples, cp.arange(n, dtype=cp.int32), cp.int32(-1)).astype(cp.int32)
    changed = cp.zeros(1, cp.int32)
    while True:  # each sweep hooks roots onto smaller labels; compressing makes every label a root again
        changed.fill(0)
        _kernel("brute_hook<{}>", d)(*_grid(n), (*args, label, changed), shared_mem=shared)
        _module().get_function("brute_compress")(*_grid(n), (np.int64(n), label))
        if not int(changed[0]):
            break
    root = cp.empty(n, cp.int32)
    _kernel("brute_border<{}>", d)(*_grid(n), (*args, label, root), shared_mem=shared)
    number = cp.cumsum(label == cp.arange(n, dtype=cp.int32), dtype=cp.int64) - 1  # roots are the smallest cores
    return cp.where(root >= 0, number[cp.maximum(root, 0)], -1)


def mst(points: cp.ndarray, core_sq) -> tuple[cp.ndarray, cp.ndarray, cp.ndarray]:
    """(u, v, w2) of the mutual-reachability MST, sorted by the key (w2, u, v): Borůvka rounds whose best edges come
    from an all-pairs kernel and whose merging is a plain union-find on the host."""
    n, d = points.shape
    coords, shared = _coords(points), _TILE * d * 4
    core = cp.ascontiguousarray(cp.asarray(core_sq), dtype=cp.float32)
    comp = np.arange(n)  # each component labelled by one of its points
    us, vs, w2s = [], [], []
    while len(us) < n - 1:
        high, low = cp.empty(n, cp.uint64), cp.empty(n, cp.uint32)
        _kernel("brute_min_edge<{}>", d)(
            *_grid(n), (coords, np.int64(n), np.int32(d), core, cp.asarray(comp, dtype=cp.int32), high, low),
            shared_mem=shared,
        )  # fmt: skip
        high, low = cp.asnumpy(high), cp.asnumpy(low)
        order = np.lexsort((low, high, comp))
        firsts = order[np.r_[True, comp[order][1:] != comp[order][:-1]]]  # each component's minimum edge
        union = np.arange(n)

        def find(x):
            while union[x] != x:
                union[x] = union[union[x]]
                x = union[x]
            return x

        for p in firsts:
            u, v = int(high[p]) & 0xFFFFFFFF, int(low[p])
            a, b = find(comp[u]), find(comp[v])
            if a != b:  # two components that chose the same edge record it once
                union[a] = b
                us.append(u)
                vs.append(v)
                w2s.append(np.uint32(int(high[p]) >> 32).view(np.float32))
        while not np.array_equal(union[union], union):
            union = union[union]
        comp = union[comp]
    u, v, w2 = np.array(us, np.int64), np.array(vs, np.int64), np.array(w2s, np.float32)
    order = np.lexsort((v, u, w2))
    return cp.asarray(u[order]), cp.asarray(v[order]), cp.asarray(w2[order])
