"""IndexedPoints: one data set on one backend, with its VP-tree and the decision-graph fields of recent dc values.

This is the part of Density Peaks Clustering that does not depend on the chosen centers, so it can be shared:
every estimator (and every browser session of the app) working on the same data reuses one index, and a dc
computed by one is free for the others. The chosen centers and labels live in ``DensityPeaks``.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import centers as center_rules
from .backends import get_backend
from .data import to_points
from .dc import check_number, dc_from_percent

KERNELS = ("cutoff", "gaussian")
Progress = Callable[[str, float], None]


@dataclass(frozen=True)
class Fields:
    """Everything that depends on (kernel, dc) but not on the centers, on the backend's device."""

    kernel: str
    dc: float
    rho: Any
    delta: Any
    parent: Any
    order: Any  # point indices from densest to sparsest
    gamma: Any  # ranking gamma (see centers.ranking_gamma)


class IndexedPoints:
    """Points on a backend's device, their VP-tree, and an LRU of ``Fields`` by (kernel, dc). Thread-safe.

    Parameters
    ----------
    X : array-like (N, d), DataFrame or path; validated by ``dpstudio.engine.to_points``.
    backend : {"auto", "cpu", "gpu"}
    progress : optional callback ``progress(phase, fraction)``, here for the "index" phase.
    """

    CACHED_FIELDS = 4  # (kernel, dc) results kept, so moving a slider back is free

    def __init__(self, X, backend: str = "auto", progress: Progress | None = None):
        values = to_points(X).values
        self.backend = get_backend(backend)
        started = time.perf_counter()
        self.points = self.backend.asarray(values)
        self.index = self.backend.build_vptree(self.points, progress=_phase(progress, "index"))
        self.backend.synchronize()
        self.index_seconds = time.perf_counter() - started
        self._fields: OrderedDict[tuple[str, float], Fields] = OrderedDict()
        self._dc_by_percent: dict[float, float] = {}
        # One computation at a time: two sessions asking for the same dc compute it once.
        self._lock = threading.RLock()

    @property
    def n_points(self) -> int:
        return self.index.n_points

    @property
    def n_dims(self) -> int:
        return self.index.n_dims

    def dc_for_percent(self, percent: float, timings: dict | None = None) -> float:
        """dc from the percent rule (``dpstudio.engine.dc``, which checks the percent), remembered per percent."""
        with self._lock:
            if percent not in self._dc_by_percent:
                started = time.perf_counter()
                self._dc_by_percent[percent] = dc_from_percent(self.points, percent, xp=self.backend.xp)
                _record(timings, "dc", time.perf_counter() - started)
            return self._dc_by_percent[percent]

    def fields(self, kernel: str, dc: float, progress: Progress | None = None, timings: dict | None = None) -> Fields:
        """rho, delta, parent, order and gamma for (kernel, dc); computed from the index unless cached.

        ``timings`` receives the seconds spent on "rho" and "delta" (0.0 for a cached result).
        """
        check_kernel(kernel)
        check_number("dc", dc)
        if not (np.isfinite(dc) and dc > 0):
            raise ValueError(f"dc must be a finite positive number, got {dc}")
        key = (kernel, float(dc))
        with self._lock:
            if key in self._fields:
                self._fields.move_to_end(key)
                _record(timings, "rho", 0.0)
                _record(timings, "delta", 0.0)
                return self._fields[key]
            started = time.perf_counter()
            rho = self.backend.rho(self.index, float(dc), kernel, progress=_phase(progress, "rho"))
            self.backend.synchronize()
            _record(timings, "rho", time.perf_counter() - started)
            fields = self.fields_from_rho(kernel, float(dc), rho, progress, timings)
            self._fields[key] = fields
            if len(self._fields) > self.CACHED_FIELDS:
                self._fields.popitem(last=False)
            return fields

    def fields_from_rho(
        self, kernel: str, dc: float, rho, progress: Progress | None = None, timings: dict | None = None
    ) -> Fields:
        """delta, parent and gamma for given densities (also lets tests feed one backend's rho to another)."""
        backend = self.backend
        started = time.perf_counter()
        rho = backend.asarray(rho)
        order, rank = backend.density_order(rho)
        delta, parent = backend.delta(self.index, rank, progress=_phase(progress, "delta"))
        backend.synchronize()
        _record(timings, "delta", time.perf_counter() - started)
        gamma = center_rules.ranking_gamma(rho, delta, int(order[0]), backend.xp)
        return Fields(kernel, dc, rho, delta, parent, order, gamma)


def check_kernel(kernel: str) -> None:
    if kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {', '.join(KERNELS)}, got {kernel!r}")


def _record(timings: dict | None, phase: str, seconds: float) -> None:
    if timings is not None:
        timings[phase] = seconds


def _phase(progress: Progress | None, phase: str):
    return None if progress is None else (lambda fraction: progress(phase, fraction))
