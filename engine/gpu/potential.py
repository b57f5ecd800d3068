"""Data-field potentials for the entropy dc rule on the GPU (potential.cu): the same sums as
``engine/cpu/potential.py``, one warp per listed leaf walking the VP-tree as Gaussian rho does.

potential.cu is compiled appended to vptree.cu (it walks the same tree with the same helpers), as its own module.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import cupy as cp
import numpy as np

from ..vptree import VPTree, bound_slack

_backend = sys.modules[__package__]  # the gpu package, looked up at call time
MAX_VALUES = 64  # per-lane accumulators in potential.cu


@functools.cache
def _module() -> cp.RawModule:
    here = Path(__file__).parent
    source = (here / "vptree.cu").read_text() + "\n" + (here / "potential.cu").read_text()
    # no fused multiply-add: the float32 distance rule must round exactly as on the CPU
    return cp.RawModule(code=source, options=("--std=c++17", "--fmad=false"))


@_backend._gpu_memory("computing data-field potentials")
def potential_sums(tree: VPTree, leaves, dbeta, first, reach2, reach_lo: float, reach_hi: float) -> tuple[cp.ndarray, cp.ndarray]:
    """(sum of phi, sum of phi log phi) per beta = (first[w] + k) dbeta[w] over the points of ``leaves``; see the
    CPU backend. ``reach2`` (windows, steps) float32; at most MAX_VALUES values."""
    reach2 = np.ascontiguousarray(reach2, np.float32)
    if reach2.ndim != 2 or reach2.size > MAX_VALUES:
        raise ValueError(f"reach2 must be (windows, steps) with at most {MAX_VALUES} values, got shape {reach2.shape}")
    windows, steps = reach2.shape
    dbeta, first = np.asarray(dbeta, np.float64), np.asarray(first, np.int64)
    if dbeta.shape != (windows,) or first.shape != (windows,):
        raise ValueError(f"dbeta and first must hold one value per window ({windows})")
    leaves = cp.ascontiguousarray(cp.asarray(leaves, cp.int64))
    phi_sum, phi_log_phi = cp.zeros(reach2.size, cp.float64), cp.zeros(reach2.size, cp.float64)  # atomics add to them
    n_listed = leaves.shape[0]
    if n_listed:
        threads = _backend._THREADS
        _module().get_function("potential_sums")(
            ((32 * n_listed + threads - 1) // threads,), (threads,),
            (tree.coords, np.int64(tree.n_points), np.int32(tree.n_dims), np.int32(tree.depth), tree.leaf_start, tree.center,
             tree.cover_radius, leaves, np.int64(n_listed), cp.asarray(dbeta), cp.asarray(first), cp.asarray(reach2),
             np.int32(windows), np.int32(steps), np.float64(reach_hi), np.float64(bound_slack(tree.n_dims)), phi_sum,
             phi_log_phi),
        )  # fmt: skip
        if _backend._SYNC:
            cp.cuda.Device().synchronize()
    return phi_sum, phi_log_phi
