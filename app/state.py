"""The Density Peaks state of one browser session: dc, kernel, chosen centers and their undo history, the dc sweep.

No UI code here (param only), so tests drive it headless exactly as the page does. Every action computes its
result first and changes the state only when that succeeded, so an engine error leaves the last good state.

Centers the user picks are remembered as ``Picks``: the indices chosen and the (kernel, dc) they were chosen at.
A dc change shows ``follow_picks`` of those original picks, never of an earlier mapping, so going back to a dc
gives back its clustering, and the densest point the engine adds (every parent chain ends there) is never
remembered as picked.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial

import numpy as np
import pandas as pd
import param

from dpstudio.engine import DensityPeaks, IndexedPoints
from dpstudio.engine.dpc import check_n_centers, density_notice
from dpstudio.engine.indexed import KERNELS
from dpstudio.engine.notation import short

from .datasets import Dataset
from .method_state import MethodState, Unchanged
from .sweep import dc_sweep, sweep_dcs

UNDO_DEPTH = 50
CONFIRM_ABOVE = 1000  # a choice of more centers waits for confirm(): it is nearly always a sloppy lasso


@dataclass(frozen=True)
class Shown:
    """What a session showed before an edit, kept apart from the edits that follow (``ClusteringSession.kept``)."""

    dataset: Dataset
    model: DensityPeaks
    picks: Picks | None
    history: tuple
    dc_percent: float | None


@dataclass(frozen=True)
class Picks:
    """Centers the user chose, with the (kernel, dc) they were chosen at."""

    centers: np.ndarray  # point indices in label order, without the densest point unless it was chosen
    kernel: str
    dc: float
    delta_min: float  # the smallest delta among them there
    corner: tuple[float, float] | None = None  # (rho_min, delta_min) when chosen by the decision-graph rectangle

    @classmethod
    def of(cls, model: DensityPeaks, centers: np.ndarray, corner: tuple[float, float] | None = None) -> Picks:
        """These centers, chosen at the model's (kernel, dc)."""
        delta_min = float(model.delta_[centers].min()) if len(centers) else np.inf
        return cls(centers, model.kernel_, model.dc_, delta_min, corner)

    def same_choice(self, other: Picks | None) -> bool:
        same_dc = other is not None and (self.kernel, self.dc) == (other.kernel, other.dc)
        return same_dc and np.array_equal(self.centers, other.centers)


def follow_picks(picks: Picks, dc: float, parent: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """The picked centers at another (kernel, dc), given that dc's parent and delta.

    Each pick climbs its new parent chain to the first peak of its region: a point with no denser point within
    the larger of the two dcs (delta >= max(dc, picks.dc)), so a smaller dc does not stop it at a bump the
    picked dc smoothed away, and a larger one at a peak it merged. The bound never exceeds ``picks.delta_min``,
    so at the dc they were picked at every pick stays where it is. A chain that finds no such point ends at
    the densest point. Picks that reach the same peak give one center; the picks' order is kept.
    """
    peak_delta = min(max(dc, picks.dc), picks.delta_min)
    current = picks.centers.copy()
    while True:
        climbing = (delta[current] < peak_delta) & (parent[current] >= 0)
        if not climbing.any():
            break
        current[climbing] = parent[current[climbing]]
    _, first = np.unique(current, return_index=True)
    return current[np.sort(first)]


class ClusteringSession(MethodState):
    """Density Peaks as one user sees and changes it. The page binds widgets to these parameters and calls these
    methods."""

    title = "DPC"
    kernel = param.Selector(objects=list(KERNELS), default="cutoff")
    dc = param.Number(default=None, allow_None=True, bounds=(0, None), inclusive_bounds=(False, True), constant=True)
    dc_percent = param.Number(default=2.0, allow_None=True, bounds=(0, 100), inclusive_bounds=(False, False),
                              doc="the percent rule that gave dc; None once dc is set directly")  # fmt: skip
    show_halo = param.Boolean(default=False, constant=True, doc="grey out halo points (computed on demand)")
    centers = param.Array(default=np.empty(0, np.int64), constant=True, doc="center point indices, label order")
    centers_picked = param.Boolean(default=False, constant=True, doc="chosen by the user, so a dc change follows them")
    pending_centers = param.Integer(default=0, constant=True, doc="centers of a choice waiting for confirm() or cancel()")
    can_undo = param.Boolean(default=False, constant=True)
    notice = param.String(default="", constant=True, doc="a warning about the current dc, empty when none")
    sweep = param.Parameter(default=None, constant=True, doc="the last DcSweep over this data set and kernel")
    log_axes = param.Boolean(default=False, constant=True, doc="the decision graph on log10 axes (lassos drawn there)")
    corner = param.Parameter(default=None, constant=True, doc="(rho_min, delta_min) of the rectangle that chose the centers shown")

    def __init__(self, **params):
        super().__init__(**params)
        self._first_percent = self.dc_percent or 2.0  # the rule a data set loaded once dc was set directly starts from
        self._picks: Picks | None = None  # None: the automatic clusters (which no dc changes)
        self._pending: Picks | None = None
        self._history: list[Picks | None] = []
        # held while the model shown changes, through its publish and the watchers of that, and while a sweep is
        # checked and kept (with the watchers of that): a sweep that finished as another thread showed another data
        # set or kernel was kept for that one, and one kept as the model changed compared with the new labels
        self._shown_lock = threading.RLock()

    # loading and parameters ---------------------------------------------------------------------------------
    def load(self, dataset: Dataset, progress=None) -> None:
        """Show a data set (its index is shared); dc from the current percent rule (once dc was set directly, the
        session's first), the automatic clusters."""
        percent = self.dc_percent or self._first_percent
        model = DensityPeaks(dc_percent=percent, kernel=self.kernel).fit(dataset.indexed, progress=progress)
        with self._shown_lock:
            self._model, self._history = model, []  # the old data set's centers mean nothing here
            self._publish(None, timings=dict(model.timings_), dataset=dataset, dc_percent=percent, sweep=None)

    def set_dc(self, dc: float | None = None, *, dc_percent: float | None = None, kernel: str | None = None,
               progress=None) -> None:  # fmt: skip
        """New dc (a value, or the percent rule) or kernel, from the cached index. Picked centers are followed
        there (``follow_picks``); the automatic clusters stay as they are."""
        model = self.model
        if dc is None and dc_percent is None:  # a kernel change: same dc, and the rule that gave it
            dc, dc_percent = self.dc, self.dc_percent
        kernel = kernel or self.kernel
        before = dict(model.timings_)
        model.timings_.clear()
        picks = self._picks
        with self._shown_lock:  # the model shown changes in place
            try:
                model.set_dc(None if dc_percent is not None else dc, dc_percent=dc_percent, kernel=kernel,
                             centers=None if picks is None else partial(_centers_at_dc, picks), progress=progress)  # fmt: skip
            except Exception:
                model.timings_.update(before)
                raise
            changes = {} if kernel == self.kernel else {"sweep": None}  # (the sweep only when it goes: param cannot
            # compare two sweeps, and counts one set again as a change)
            self._publish(picks, timings=dict(model.timings_), kernel=kernel, dc_percent=dc_percent, **changes)

    def set_kernel(self, kernel: str, progress=None) -> None:
        """Another kernel at the same dc, or the same percent rule."""
        self.set_dc(kernel=kernel, progress=progress)

    def edit(self, change: Callable[[DensityPeaks], object], edited: Callable) -> None:
        """Insert or delete points with the incremental engine: ``change(model)`` runs on this session's own copy
        of the model and index (the first edit copies them; other sessions keep the shared ones as they were), then
        the model is shown as ``show_model`` shows it."""
        model = self.model
        if self.dataset.base is None:
            model = copy.deepcopy(model)
        with self._shown_lock:  # (from the second edit on, the model shown changes in place)
            change(model)
            self.show_model(model, edited)

    def kept(self) -> Shown:
        """What this session shows, as it will stay through the edits to come: a shared data set and its model as
        they are (the first edit copies them), this session's own in a copy (an edit changes them in place) that
        keeps only the fields shown: the index's other caches are computed again if asked for."""
        model, dataset = self.model, self.dataset
        if dataset.base is not None:
            model = copy.deepcopy(model)
            model.indexed_.forget_caches(keep=(model.kernel_, model.dc_))
            dataset = replace(dataset, indexed=model.indexed_)
        return Shown(dataset, model, self._picks, tuple(self._history), self.dc_percent)

    def restore(self, shown: Shown) -> None:
        """Show again what ``kept`` kept: its data set, model, centers, undo history, dc rule and kernel."""
        with self._shown_lock:
            self._model, self._history = shown.model, list(shown.history)
            self._publish(shown.picks, timings=dict(shown.model.timings_), dataset=shown.dataset, sweep=None,
                          dc_percent=shown.dc_percent, kernel=shown.model.kernel_)  # fmt: skip

    def show_model(self, model: DensityPeaks, edited: Callable) -> None:
        """Show a model of this session's own points (edited, or a stream's first points, fitted afresh);
        ``edited(model.indexed_)`` gives their data set. dc stays (now set directly); picked centers stay picked
        (a deleted one drops out) and the automatic clusters are computed again. The undo history and the sweep are
        dropped: their point indices are gone."""
        chosen = model.chosen_centers_
        picks = None if chosen is None else Picks.of(model, chosen)
        with self._shown_lock:
            self._model, self._history = model, []
            # dc is no longer the percent rule's value on these points
            self._publish(picks, timings=dict(model.timings_), dataset=edited(model.indexed_), sweep=None, dc_percent=None,
                          kernel=model.kernel_)  # (a session's edited points fitted afresh: with its kernel, maybe not the one shown)

    def set_halo(self, show: bool) -> None:
        """Show the halo (grey) or not; it is computed here, not while drawing."""
        model = self.model
        if show:
            model.halo_
        with param.edit_constant(self):
            self.param.update(show_halo=bool(show), revision=self.revision + 1)

    def set_log_axes(self, log_axes: bool) -> None:
        """Draw the decision graph on log10 axes, or linear ones; lassos are then drawn on those axes."""
        with param.edit_constant(self):
            self.param.update(log_axes=bool(log_axes), revision=self.revision + 1)

    # choosing centers ----------------------------------------------------------------------------------------
    def select_polygon(self, geometry) -> None:
        """Centers = the points inside a lasso drawn on the decision graph (vertices on its axes, linear or log)."""
        vertices = np.asarray(geometry, dtype=np.float64)
        if vertices.ndim != 2 or vertices.shape[0] < 3:
            return  # a click, not a lasso
        self._choose(polygon=vertices, log_axes=self.log_axes, region="lasso")

    def select_corner(self, x: float, y: float) -> None:
        """Centers = the points right of and above a click on the decision graph: the original paper's rectangle
        rho >= rho_min and delta >= delta_min, its corner at the click (on the graph's axes, linear or log)."""
        rho_min, delta_min = (10.0**x, 10.0**y) if self.log_axes else (float(x), float(y))
        self._choose(rho_min=rho_min, delta_min=delta_min, region="rectangle", corner=(rho_min, delta_min))

    def select_box(self, bounds) -> None:
        """Centers = the points inside a box (rho0, delta0, rho1, delta1) drawn on the decision graph."""
        rho0, delta0, rho1, delta1 = (float(b) for b in bounds)
        box = [(rho0, delta0), (rho1, delta0), (rho1, delta1), (rho0, delta1)]
        self._choose(polygon=np.array(box), region="box")

    def choose(self, centers) -> None:
        """Centers = these point indices (a saved session's, or a URL's)."""
        self._choose(centers=np.asarray(centers, dtype=np.int64).reshape(-1))

    def pick_count(self, n_clusters: int | None) -> None:
        """Centers = the n points of largest gamma; None (an emptied box) is refused like a fraction, where the
        engine would take it for no count given."""
        check_n_centers(n_clusters, self.model.n_points_)
        self._choose(n_centers=n_clusters)

    def suggest(self) -> None:
        """The automatic clustering (the density topography; it does not change with dc)."""
        self._apply(None)

    def clear(self) -> None:
        """No chosen center: every point joins the densest point's cluster."""
        self._choose(centers=np.empty(0, np.int64))

    def confirm(self) -> None:
        """Accept the choice of more than CONFIRM_ABOVE centers that is waiting."""
        if self._pending is not None:
            self._apply(self._pending)

    def cancel(self) -> None:
        """Drop the choice that is waiting; the centers stay as they were."""
        self._pending = None
        with param.edit_constant(self):
            self.pending_centers = 0

    @property
    def picks(self) -> Picks | None:
        """The centers as picked, with the (kernel, dc) they were picked at (None: the automatic clusters)."""
        return self._picks

    def replace_history(self, history: list) -> list:
        """Put ``history`` in place of the undo history, and return the one it replaces (a loaded session starts its
        own, as a loaded data set does; one refused part way gets the old one back)."""
        old, self._history = self._history, list(history)
        with param.edit_constant(self):
            self.can_undo = bool(self._history)
        return old

    def undo(self) -> None:
        """Back to the centers before the last change of centers (at the current dc)."""
        self.model  # (refused before a data set is loaded)
        if self._history:
            self._apply(self._history.pop(), record=False)

    def _choose(self, region: str | None = None, corner: tuple[float, float] | None = None, **choice) -> None:
        model = self.model
        chosen = model.choose_centers(**choice)
        if region and not len(chosen):
            raise Unchanged(f"Nothing selected: the {region} holds no point of the decision graph; the centers are unchanged.")
        picks = Picks.of(model, chosen, corner)
        if len(chosen) > CONFIRM_ABOVE:
            self._pending = picks
            with param.edit_constant(self):
                self.pending_centers = len(chosen)
            return
        self._apply(picks)

    def _apply(self, picks: Picks | None, record: bool = True) -> None:
        """Show these picks (None: the automatic clusters) at the current dc; the old ones go to the undo history."""
        model = self.model
        if self._picks is None if picks is None else picks.same_choice(self._picks):
            self.cancel()
            return  # a re-pick of the same centers: no relabel, no undo step
        with self._shown_lock:  # the model shown changes in place
            model.assign() if picks is None else model.assign(centers=_centers_at_dc(picks, model))
            if record:
                self._history = [*self._history[-(UNDO_DEPTH - 1) :], self._picks]
            self._publish(picks, timings={"relabel": model.timings_["relabel"]})

    def _publish(self, picks: Picks | None, timings: dict, **changes) -> None:
        """Show the model with its centers, and any other ``changes`` of this state's parameters, in one update:
        watchers never see a new data set or dc beside the old one's centers (a slider's range built around the old
        dc, markers indexing the old points)."""
        model = self._model
        self._picks, self._pending = picks, None
        if self.show_halo:
            model.halo_  # computed now, in the caller's thread, not while drawing
        with self._shown_lock, param.edit_constant(self):
            self.param.update(
                **changes,  # first: a batched update calls watchers in the order their parameters were set, and those
                # of the data set (a plot's zoom reset) go before those of the revision (its image shaded ahead)
                dc=model.dc_, centers=np.asarray(model.centers_, np.int64), centers_picked=picks is not None,
                corner=picks.corner if picks is not None and (picks.kernel, picks.dc) == (model.kernel_, model.dc_) else None,
                pending_centers=0, can_undo=bool(self._history), notice=density_notice(model.rho_, model.dc_), timings=timings,
                revision=self.revision + 1,
            )  # fmt: skip

    # the dc sweep --------------------------------------------------------------------------------------------
    def run_sweep(self, progress=None) -> None:
        """Cluster at SWEEP_DCS dc values (``sweep.dc_sweep``); kept unless the data set or kernel changed meanwhile,
        so it may run beside other actions; it stops at its next dc once they have (``Unchanged``). This session's own
        points (edited, streamed), whose index its edits change in place, are swept on an index of their own, built
        from the data set's points (which no edit changes: it makes new ones)."""
        self.model  # (refused before a data set is loaded)
        dataset, kernel = self.dataset, self.kernel
        indexed = dataset.indexed
        if dataset.base is not None:  # (a deep copy of the index held every cache too: 12x the memory kept)
            indexed = IndexedPoints(dataset.points.values, backend=indexed.backend.name)

        def swept(phase: str, fraction: float) -> None:
            if not self._sweeps(dataset, kernel):
                raise Unchanged("The dc sweep stopped: the data set or the kernel it was sweeping is no longer shown.")
            if progress:
                progress(phase, fraction)

        result = dc_sweep(indexed, kernel, sweep_dcs(indexed), swept)
        with self._shown_lock:
            if self._sweeps(dataset, kernel):
                with param.edit_constant(self):
                    self.sweep = result

    def _sweeps(self, dataset: Dataset, kernel: str) -> bool:
        """Whether a sweep of ``dataset`` with ``kernel`` is still of what is shown (Datasets hold arrays: compared by
        identity)."""
        return self.dataset is dataset and self.kernel == kernel

    def sweep_frame(self) -> pd.DataFrame | None:
        """The sweep per dc (see ``DcSweep.frame``) against the current labels, or None before a sweep."""
        return None if self.sweep is None else self.sweep.frame(self.model.labels_)

    # results for the views -----------------------------------------------------------------------------------
    def describe(self) -> str:
        kernel = "" if self.kernel == "cutoff" else ", Gaussian"
        halo = ", halo as noise" if self.show_halo else ""
        return f"DPC dc={short(self.dc)}{kernel}, {len(self.centers)} clusters{halo}"

    def labels(self) -> np.ndarray:
        """Cluster label per point; -1 for halo points while the halo toggle is on."""
        model = self.model
        return np.where(model.halo_, -1, model.labels_) if self.show_halo else model.labels_

    def label_of(self, i: int) -> int:
        model = self.model
        return -1 if self.show_halo and model.halo_[i] else int(model.labels_[i])

    def cluster_table(self) -> pd.DataFrame:
        """One row per cluster: size, center (row in the input), its rho and delta, and halo count if shown."""
        model, dataset = self.model, self.dataset
        sizes = np.bincount(model.labels_, minlength=len(model.centers_))
        table = pd.DataFrame({
            "cluster": np.arange(len(model.centers_)), "size": sizes,
            "center": dataset.points.rows[model.centers_], "rho": model.rho_[model.centers_],
            "delta": model.delta_[model.centers_],
        })  # fmt: skip
        if self.show_halo:
            table["halo"] = np.bincount(model.labels_[model.halo_], minlength=len(model.centers_))
        return table

    def close(self) -> None:
        self._history = []
        super().close()


def _centers_at_dc(picks: Picks, model: DensityPeaks) -> np.ndarray:
    """The picks where they were made, else followed to the model's (kernel, dc)."""
    if (picks.kernel, picks.dc) == (model.kernel_, model.dc_):
        return picks.centers
    return follow_picks(picks, model.dc_, model.parent_, model.delta_)

