"""DensityPeaks: Density Peaks Clustering (Rodriguez & Laio, Science 2014) as a scikit-learn style estimator."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from . import centers as center_rules
from .estimator import IndexedEstimator
from .indexed import Progress, check_kernel


class DensityPeaks(IndexedEstimator):
    """Density Peaks Clustering with exact rho, delta and parent, on the CPU (Numba) or GPU (CuPy).

    Parameters
    ----------
    dc : float or None
        Cut-off distance. None: chosen by the ``dc_percent`` rule (see ``dpstudio.engine.dc``).
    dc_percent : float
        Average number of neighbours as a percentage of N, used when ``dc`` is None (default 2).
    kernel : {"cutoff", "gaussian"}
        cutoff: rho_i = #{j != i : d_ij < dc}. gaussian: rho_i = sum over j != i of exp(-(d_ij / dc)^2), over
        pairs with d_ij < 3 dc; each dropped term is below e^-9 = 1.2e-4, so the truncation error of rho_i is at
        most 1.2e-4 times the number of points farther than 3 dc.
    backend : {"auto", "cpu", "gpu"}
        "auto" uses the GPU when CuPy and a CUDA device are usable, else the CPU.

    Distances are Euclidean over float32 data; ``d_ij < dc`` is decided as
    ``float32(sum_k (x_ik - x_jk)^2) < float32(dc^2)``, the sum taken in float32 in dimension order without
    fused multiply-add, so a pair within float32 rounding of dc may fall on either side of it relative to exact
    arithmetic, but every backend decides it the same way.

    Attributes (after ``fit``)
    --------------------------
    dc_, rho_, delta_, parent_, gamma_ : the decision graph. j is denser than i iff rho_j > rho_i, or
        rho_j == rho_i and j < i. delta_i is the distance to the nearest denser point and parent_i that point
        (smallest index on a distance tie); the densest point has parent -1 and delta = its largest distance.
        gamma_ = rho * delta with the densest point's delta capped at the others' largest.
    labels_, centers_, halo_ : the clustering for the current centers (``fit`` assigns the suggested ones).
    index_ : the VP-tree, reused by ``set_dc`` and ``assign``; ``indexed_`` holds it with the cached fields.
    timings_ : seconds per phase of the last computation.
    """

    _FITTED = "_fields"

    def __init__(self, dc: float | None = None, dc_percent: float = 2.0, kernel: str = "cutoff", backend: str = "auto"):
        self.dc = dc
        self.dc_percent = dc_percent
        self.kernel = kernel
        self.backend = backend

    # fitting ------------------------------------------------------------------------------------------------
    def fit(self, X, y=None, progress: Progress | None = None) -> DensityPeaks:
        """Build the index over X (N, d) and compute the decision graph; assign the suggested centers.

        X may also be an ``IndexedPoints``: its index and cached fields are then shared, not rebuilt (its
        backend is used).
        """
        check_kernel(self.kernel)
        self._index(X, progress)
        self.set_dc(self.dc, dc_percent=self.dc_percent, kernel=self.kernel, progress=progress)
        return self

    def set_dc(
        self, dc: float | None = None, *, dc_percent: float | None = None, kernel: str | None = None,
        centers=None, progress: Progress | None = None, cache: bool = True,
    ) -> DensityPeaks:  # fmt: skip
        """Recompute rho and delta for a new dc (or percent rule, or kernel), reusing the index, then assign
        ``centers``: point indices, or a function of this estimator (with its new rho, delta and parent) that
        returns them; default: the suggested centers for the new dc.

        The last few (kernel, dc) results are cached (``IndexedPoints.CACHED_FIELDS``), so moving back is free;
        ``cache=False`` leaves the cache as it was (a sweep).
        """
        self._require_fit(needs="indexed_")
        kernel = kernel or self.kernel
        check_kernel(kernel)
        if dc is None:
            dc = self.indexed_.dc_for_percent(dc_percent or self.dc_percent, timings=self.timings_)
        self._fields = self.indexed_.fields(kernel, dc, progress=progress, timings=self.timings_, cache=cache)
        self.dc_, self.kernel_ = self._fields.dc, kernel
        return self.assign(centers=centers(self) if callable(centers) else centers)

    @property
    def index_(self):
        """The VP-tree, reused by ``set_dc`` and ``assign``."""
        self._require_fit(needs="indexed_")
        return self.indexed_.index

    # centers and labels -------------------------------------------------------------------------------------
    def suggest_centers(self) -> np.ndarray:
        """Indices of the suggested centers: the top gammas up to the largest relative drop (see centers.suggest_count)."""
        self._require_fit()
        xp = self._backend.xp
        k = center_rules.suggest_count(self._fields.gamma, xp)
        return self._backend.to_numpy(center_rules.by_gamma(xp.arange(self.n_points_), self._fields.gamma, xp)[:k])

    def assign(
        self, centers=None, *, rho_min: float | None = None, delta_min: float | None = None,
        polygon=None, n_centers: int | None = None,
    ) -> DensityPeaks:  # fmt: skip
        """Label every point by the first center on its parent chain. Choose centers by exactly one of:

        * ``centers``: point indices, labels 0..k-1 in the given order;
        * ``rho_min`` and/or ``delta_min``: the decision-graph rectangle rho >= rho_min and delta >= delta_min;
        * ``polygon``: vertices [(rho, delta), ...] of a lasso on the decision graph (even-odd rule);
        * ``n_centers``: the k points of largest gamma;
        * nothing: ``suggest_centers()``.

        Centers chosen by a region or count are ordered by decreasing gamma. The densest point is always a
        center, since every parent chain ends there: if it is not chosen it is appended as the last label.
        """
        chosen = self.choose_centers(centers, rho_min=rho_min, delta_min=delta_min, polygon=polygon, n_centers=n_centers)
        started = time.perf_counter()
        backend, fields = self._backend, self._fields
        densest = int(fields.order[0])
        if densest not in set(chosen.tolist()):
            chosen = np.append(chosen, densest)
        self._labels = backend.labels(fields.parent, fields.order, backend.asarray(chosen))
        backend.synchronize()
        self.centers_ = chosen
        self._halo = None
        self.timings_["relabel"] = time.perf_counter() - started
        return self

    def choose_centers(
        self, centers=None, *, rho_min: float | None = None, delta_min: float | None = None,
        polygon=None, n_centers: int | None = None,
    ) -> np.ndarray:  # fmt: skip
        """The centers a choice gives (see ``assign``), before the densest point is added."""
        self._require_fit()
        modes = [name for name, v in (("centers", centers), ("rho_min/delta_min", rho_min if rho_min is not None else delta_min),
                                      ("polygon", polygon), ("n_centers", n_centers)) if v is not None]  # fmt: skip
        if len(modes) > 1:
            raise ValueError(f"choose centers one way at a time, got {' and '.join(modes)}")
        backend, fields, xp = self._backend, self._fields, self._backend.xp
        if centers is not None:
            chosen = np.asarray(centers).reshape(-1)
            if chosen.size and not np.issubdtype(chosen.dtype, np.integer):
                raise ValueError("centers must be integer point indices")
            chosen = chosen.astype(np.int64)
            bad = chosen[(chosen < 0) | (chosen >= self.n_points_)]
            if bad.size:
                raise ValueError(f"center index {bad[0]} is out of range for {self.n_points_} points")
            if np.unique(chosen).size != chosen.size:
                raise ValueError("centers contain the same point twice")
            return chosen
        if n_centers is not None:
            if not 1 <= int(n_centers) <= self.n_points_:
                raise ValueError(f"n_centers must be between 1 and {self.n_points_}, got {n_centers}")
            candidates = xp.arange(self.n_points_)
            return backend.to_numpy(center_rules.by_gamma(candidates, fields.gamma, xp)[: int(n_centers)])
        if rho_min is not None or delta_min is not None:
            mask = (fields.rho >= (-np.inf if rho_min is None else rho_min)) & (
                fields.delta >= (-np.inf if delta_min is None else delta_min)
            )
        elif polygon is not None:
            vertices = np.asarray(polygon, dtype=np.float64)
            if vertices.ndim != 2 or vertices.shape[1] != 2 or vertices.shape[0] < 3:
                raise ValueError("polygon must be at least 3 (rho, delta) vertices")
            if not np.isfinite(vertices).all():
                raise ValueError("polygon vertices must be finite numbers")
            mask = backend.points_in_polygon(fields.rho, fields.delta, backend.asarray(vertices))
        else:
            return self.suggest_centers()
        return backend.to_numpy(center_rules.by_gamma(xp.flatnonzero(mask), fields.gamma, xp))

    # results at the API edge (NumPy) -------------------------------------------------------------------------
    @property
    def n_points_(self) -> int:
        return self.indexed_.n_points

    @property
    def rho_(self) -> np.ndarray:
        return self._numpy("rho")

    @property
    def delta_(self) -> np.ndarray:
        return self._numpy("delta")

    @property
    def parent_(self) -> np.ndarray:
        return self._numpy("parent")

    @property
    def gamma_(self) -> np.ndarray:
        return self._numpy("gamma")

    @property
    def labels_(self) -> np.ndarray:
        self._require_fit()
        return self._backend.to_numpy(self._labels)

    @property
    def halo_(self) -> np.ndarray:
        """Halo mask for the current labels, computed on first use (it costs a range query per point)."""
        self._require_fit()
        if self._halo is None:
            started = time.perf_counter()
            self._halo = self._backend.halo(self.index_, self._fields.rho, self._labels, self.dc_)
            self._backend.synchronize()
            self.timings_["halo"] = time.perf_counter() - started
        return self._backend.to_numpy(self._halo)

    def to_frame(self, rows=None) -> pd.DataFrame:
        """Per-point results: index (``rows``, default 0..N-1), label, halo, rho, delta, parent (as an index)."""
        index = np.arange(self.n_points_) if rows is None else np.asarray(rows)
        parent = self.parent_
        return pd.DataFrame({
            "index": index, "label": self.labels_, "halo": self.halo_, "rho": self.rho_, "delta": self.delta_,
            "parent": np.where(parent >= 0, index[parent], -1),
        })  # fmt: skip

    def _numpy(self, name: str) -> np.ndarray:
        self._require_fit()
        return self._backend.to_numpy(getattr(self._fields, name))

