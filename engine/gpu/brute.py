"""Brute-force all-pairs rho and delta on the GPU (brute.cu): the baseline of ``dpstudio bench --backend gpu``
and an exact reference for the GPU tests at sizes where the NumPy oracle would take hours."""

from __future__ import annotations

import functools
from pathlib import Path

import cupy as cp
import numpy as np

from ..vptree import gaussian_reach

_THREADS = 256
_TILE = 128
_MAXD = (4, 16, 64, 128)


@functools.cache
def _module() -> cp.RawModule:
    names = [f"brute_rho<{m}, {g}>" for m in _MAXD for g in ("false", "true")] + [f"brute_delta<{m}>" for m in _MAXD]
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
    reach = gaussian_reach(dc) if kernel == "gaussian" else dc
    out = cp.empty(n, cp.float64)
    _kernel("brute_rho<{}, " + ("true>" if kernel == "gaussian" else "false>"), d)(
        ((n + _THREADS - 1) // _THREADS,), (_THREADS,),
        (_coords(points), np.int64(n), np.int32(d), np.float32(np.float64(reach) ** 2), np.float64(1.0 / np.float64(dc) ** 2), out),
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
