"""The state of one browser session: data set, parameters, chosen centers and their undo history.

No UI code here (param only), so tests drive it headless exactly as the page does. Every action computes its
result first and changes the state only when that succeeded, so an engine error leaves the last good state.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import param

from dpstudio.engine import DensityPeaks
from dpstudio.engine.indexed import KERNELS

from .datasets import Dataset

UNDO_DEPTH = 50


class ClusteringSession(param.Parameterized):
    """What one user sees and changes. The page binds widgets to these parameters and calls these methods."""

    dataset = param.Parameter(doc="the loaded Dataset, shared with other sessions through the DatasetCache")
    kernel = param.Selector(objects=list(KERNELS), default="cutoff")
    dc = param.Number(default=None, allow_None=True, bounds=(0, None), inclusive_bounds=(False, True), constant=True)
    dc_percent = param.Number(default=2.0, allow_None=True, bounds=(0, 100), inclusive_bounds=(False, True),
                              doc="the percent rule that gave dc; None once dc is set directly")  # fmt: skip
    show_halo = param.Boolean(default=False, constant=True, doc="grey out halo points (computed on demand)")
    x_axis = param.Selector(objects=[None], default=None)
    y_axis = param.Selector(objects=[None], default=None)
    centers = param.Array(default=np.empty(0, np.int64), constant=True, doc="center point indices, label order")
    centers_picked = param.Boolean(default=False, constant=True, doc="chosen by the user, so a dc change keeps them")
    can_undo = param.Boolean(default=False, constant=True)
    timings = param.Dict(default={}, constant=True, doc="seconds of the last update per phase")
    revision = param.Integer(default=0, constant=True, doc="bumped whenever labels or the decision graph change")

    def __init__(self, **params):
        super().__init__(**params)
        self._model: DensityPeaks | None = None
        self._history: list[tuple[np.ndarray, bool]] = []

    # loading and parameters ---------------------------------------------------------------------------------
    def load(self, dataset: Dataset, progress=None) -> None:
        """Show a data set (its index is shared); dc from the current percent rule, suggested centers."""
        model = DensityPeaks(dc_percent=self.dc_percent or 2.0, kernel=self.kernel).fit(dataset.indexed, progress=progress)
        x_axis, y_axis = dataset.default_axes()
        self._model, self._history = model, []
        with param.edit_constant(self):
            self.param.x_axis.objects = self.param.y_axis.objects = list(dataset.axes)
            self.param.update(dataset=dataset, x_axis=x_axis, y_axis=y_axis, dc_percent=self.dc_percent or 2.0)
        self._publish(model.centers_, picked=False, timings=dict(model.timings_))

    def set_dc(self, dc: float | None = None, *, dc_percent: float | None = None, kernel: str | None = None,
               progress=None) -> None:  # fmt: skip
        """New dc (a value, or the percent rule) or kernel, from the cached index. Picked centers are kept."""
        model = self._require_data()
        if dc is None and dc_percent is None:  # a kernel change: same dc, and the rule that gave it
            dc, dc_percent = self.dc, self.dc_percent
        kernel = kernel or self.kernel
        before = dict(model.timings_)
        model.timings_.clear()
        kept = self.centers if self.centers_picked else None  # None: the new dc's suggested centers
        try:
            model.set_dc(None if dc_percent is not None else dc, dc_percent=dc_percent, kernel=kernel, centers=kept,
                         progress=progress)  # fmt: skip
        except Exception:
            model.timings_.update(before)
            raise
        with param.edit_constant(self):
            self.param.update(kernel=kernel, dc_percent=dc_percent)
        self._publish(model.centers_, picked=self.centers_picked, timings=dict(model.timings_))

    def set_halo(self, show: bool) -> None:
        """Show the halo (grey) or not; it is computed here, not while drawing."""
        model = self._require_data()
        if show:
            model.halo_
        with param.edit_constant(self):
            self.param.update(show_halo=bool(show), revision=self.revision + 1)

    # choosing centers ----------------------------------------------------------------------------------------
    def select_polygon(self, geometry) -> None:
        """Centers = the points inside a lasso drawn on the decision graph ((rho, delta) vertices)."""
        vertices = np.asarray(geometry, dtype=np.float64)
        if vertices.ndim != 2 or vertices.shape[0] < 3:
            return  # a click, not a lasso
        self._choose(polygon=vertices)

    def select_box(self, bounds) -> None:
        """Centers = the points inside a box (rho0, delta0, rho1, delta1) drawn on the decision graph."""
        rho0, delta0, rho1, delta1 = (float(b) for b in bounds)
        box = [(rho0, delta0), (rho1, delta0), (rho1, delta1), (rho0, delta1)]
        self._choose(polygon=np.array(box))

    def pick_count(self, n_clusters: int) -> None:
        """Centers = the n points of largest gamma."""
        self._choose(n_centers=int(n_clusters))

    def suggest(self) -> None:
        """Centers = the suggested ones (largest drop in gamma)."""
        model = self._require_data()
        self._choose(centers=model.suggest_centers(), picked=False)

    def clear(self) -> None:
        """No chosen center: every point joins the densest point's cluster."""
        self._choose(centers=np.empty(0, np.int64))

    def undo(self) -> None:
        """Back to the centers before the last change."""
        model = self._require_data()
        if not self._history:
            return
        centers, picked = self._history.pop()
        model.assign(centers=centers)
        self._publish(model.centers_, picked=picked, timings={"relabel": model.timings_["relabel"]}, record=False)

    def _choose(self, picked: bool = True, **choice) -> None:
        model = self._require_data()
        model.assign(**choice)
        self._publish(model.centers_, picked=picked, timings={"relabel": model.timings_["relabel"]})

    def _publish(self, centers: np.ndarray, picked: bool, timings: dict, record: bool = True) -> None:
        if record and self._model is not None and self.dataset is not None and len(self.centers):
            self._history = [*self._history[-(UNDO_DEPTH - 1) :], (self.centers, self.centers_picked)]
        model = self._model
        if self.show_halo:
            model.halo_  # computed now, in the caller's thread, not while drawing
        with param.edit_constant(self):
            self.param.update(
                dc=model.dc_, centers=np.asarray(centers, np.int64), centers_picked=picked,
                can_undo=bool(self._history), timings=timings, revision=self.revision + 1,
            )  # fmt: skip

    # results for the views -----------------------------------------------------------------------------------
    @property
    def model(self) -> DensityPeaks:
        return self._require_data()

    def labels(self) -> np.ndarray:
        """Cluster label per point; -1 for halo points while the halo toggle is on."""
        model = self._require_data()
        return np.where(model.halo_, -1, model.labels_) if self.show_halo else model.labels_

    def decision_frame(self) -> pd.DataFrame:
        model = self._require_data()
        return pd.DataFrame({"rho": model.rho_, "delta": model.delta_})

    def cluster_table(self) -> pd.DataFrame:
        """One row per cluster: size, center (row in the input), its rho and delta, and halo count if shown."""
        model, dataset = self._require_data(), self.dataset
        sizes = np.bincount(model.labels_, minlength=len(model.centers_))
        table = pd.DataFrame({
            "cluster": np.arange(len(model.centers_)), "size": sizes,
            "center": dataset.points.rows[model.centers_], "rho": model.rho_[model.centers_],
            "delta": model.delta_[model.centers_],
        })  # fmt: skip
        if self.show_halo:
            table["halo"] = np.bincount(model.labels_[model.halo_], minlength=len(model.centers_))
        return table

    def labels_table(self) -> pd.DataFrame:
        """The download: one row per point, indexed by its row in the input (as ``dpstudio cluster --out``)."""
        return self._require_data().to_frame(rows=self.dataset.points.rows)

    def close(self) -> None:
        """Forget this session's results; device memory the shared data set does not use is given back."""
        if self._model is not None:
            backend = self._model.indexed_.backend
            self._model, self._history = None, []
            backend.free_memory()

    def _require_data(self) -> DensityPeaks:
        if self._model is None:
            raise RuntimeError("no data set is loaded")
        return self._model

