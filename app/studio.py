"""The whole state of one browser session (no UI code): one data set and its 2-D view axes, the method shown
(DPC, DBSCAN or HDBSCAN, each with its own state over the shared index), what the points are coloured by, and a
pinned clustering to compare with.

Switching method keeps the data set, its index and the 2-D view; a method's state is loaded the first time it
is shown on a data set and keeps its choices while another method is shown.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np
import pandas as pd
import param

from dpstudio.engine import METHODS
from dpstudio.engine.centers import graph_coordinates

from .compare import adjusted_rand_index, contingency
from .datasets import Dataset, no_truth
from .density_state import DBSCANState, HDBSCANState
from .method_state import MethodState, Unchanged
from .pointing import inside_lasso, nearest_point
from .state import ClusteringSession, Shown

COLOUR_BY = ("clusters", "truth")
EDIT_UNDO_DEPTH = 5  # edits by a click or a lasso that Undo can take back (each keeps a copy of the session's index)


@dataclass(frozen=True)
class Pinned:
    """A clustering kept to compare later ones with."""

    name: str
    labels: np.ndarray
    dataset: Dataset  # the points its labels are of: a new data set, or an edit, drops it


class Studio(param.Parameterized):
    method = param.Selector(objects=list(METHODS), default="dpc", constant=True)
    dataset = param.Parameter(constant=True)
    x_axis = param.Selector(objects=[None], default=None)
    y_axis = param.Selector(objects=[None], default=None)
    colour_by = param.Selector(objects=list(COLOUR_BY), default="clusters", constant=True)
    pinned = param.Parameter(default=None, constant=True, doc="a Pinned clustering of this data set, or None")
    revision = param.Integer(default=0, constant=True, doc="bumped whenever the 2-D view's colours change")
    pointed = param.Integer(default=None, allow_None=True, constant=True, doc="the point under the mouse, if any")
    selected = param.Array(default=None, constant=True, doc="mask of the points lassoed in the 2-D view, or None")
    can_undo_edit = param.Boolean(default=False, constant=True, doc="an edit by a click or a lasso to take back")

    def __init__(self, dc_percent: float = 2.0, **params):
        super().__init__(**params)
        self.dpc = ClusteringSession(dc_percent=dc_percent)
        self.dbscan, self.hdbscan = DBSCANState(), HDBSCANState()
        self.states: dict[str, MethodState] = {"dpc": self.dpc, "dbscan": self.dbscan, "hdbscan": self.hdbscan}
        self._edits: list[Shown] = []  # what DPC showed before each edit Undo can take back, the last one last
        for state in self.states.values():
            state.param.watch(self._state_changed, "revision")

    @property
    def active(self) -> MethodState:
        return self.states[self.method]

    # actions ------------------------------------------------------------------------------------------------
    def load(self, dataset: Dataset, progress=None) -> None:
        """Show a data set with the current method; the other methods load it when they are shown (DBSCAN at its
        knee: an ε set on another data set, or on this one before, is forgotten)."""
        self.dbscan.forget_eps()
        self.active.load(dataset, progress=progress)
        for state in self.states.values():
            if state is not self.active:
                state.close()  # their results belong to the old data set
        self._show_dataset(dataset, dataset.default_axes())

    def set_method(self, method: str, progress=None) -> None:
        """Show another method on the same data set, index and 2-D view."""
        if method not in METHODS:
            raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
        state = self.states[method]
        if not state.loaded or state.dataset is not self.dataset:
            state.load(self.dataset, progress=progress)
        with param.edit_constant(self):
            self.param.update(method=method, revision=self.revision + 1)

    def show_embedding(self) -> None:
        """The 2-D view on a t-SNE embedding of the features (computed once per data set, in this thread)."""
        x_axis, y_axis = self.dataset.embed()
        with param.edit_constant(self):
            self.param.x_axis.objects = self.param.y_axis.objects = list(self.dataset.axes)
            self.param.update(x_axis=x_axis, y_axis=y_axis)

    def set_colour_by(self, colour_by: str) -> None:
        """Colour the points by cluster, or by the ground truth of a sample set that has one."""
        if colour_by not in COLOUR_BY:
            raise ValueError(f"colour by one of {', '.join(COLOUR_BY)}, got {colour_by!r}")
        if colour_by == "truth" and self.dataset.truth is None:
            raise ValueError(no_truth(self.dataset))
        with param.edit_constant(self):
            self.param.update(colour_by=colour_by, revision=self.revision + 1)

    def pin(self) -> None:
        """Keep the current clustering to compare later ones (of any method) with."""
        with param.edit_constant(self):
            self.pinned = Pinned(self.active.describe(), self.active.labels().copy(), self.dataset)

    def unpin(self) -> None:
        with param.edit_constant(self):
            self.pinned = None

    def point_at(self, plot: str, x: float | None, y: float | None, x_range=None, y_range=None) -> None:
        """The point under the mouse at (x, y) on the 2-D view ("view") or DPC's decision graph ("graph"), or none."""
        pointed = None
        if x is not None and y is not None and (plot == "view" or self.dpc.loaded):
            xs, ys = self.plot_coordinates(plot)
            pointed = nearest_point(xs, ys, (x, y), x_range, y_range)
        if pointed != self.pointed:
            with param.edit_constant(self):
                self.pointed = pointed

    def select_in_view(self, geometry) -> None:
        """The points inside a lasso on the 2-D view, to be seen on the decision graph; fewer than 3 vertices (a
        click) clears the selection, and a lasso around no point changes nothing (``Unchanged``)."""
        vertices = np.asarray(geometry if geometry is not None else [], dtype=np.float64)
        selected = None
        if vertices.ndim == 2 and vertices.shape[0] >= 3:
            selected = inside_lasso(*self.plot_coordinates("view"), vertices)
            if not selected.any():  # (an empty selection drew every point of the decision graph larger)
                raise Unchanged("Nothing selected: the lasso holds no point of the 2-D view.")
        with param.edit_constant(self):
            self.selected = selected

    def add_point(self, x: float, y: float) -> None:
        """Insert a point where the 2-D view was clicked, with DPC's incremental engine (the view must show the
        data's two features, so that the click is a point of the data's space)."""
        columns = self.dataset.points.columns
        if len(columns) != 2:
            raise ValueError(f"a click adds a point to data of two features, where the 2-D view shows them both; this "
                             f"data set has {len(columns)}")  # fmt: skip
        if not self.view_shows_features:
            raise ValueError(f"a click adds a point where the 2-D view shows the data's two features ({', '.join(columns)}); "
                             f"this one shows {self.x_axis} and {self.y_axis}")  # fmt: skip
        at = {self.x_axis: x, self.y_axis: y}
        point = np.array([[at[name] for name in columns]], np.float64)
        self.edit(lambda model: model.partial_fit(point), undoable=True)

    def delete_in_view(self, geometry) -> None:
        """Delete the points inside a lasso drawn on the 2-D view, with DPC's incremental engine."""
        vertices = np.asarray(geometry if geometry is not None else [], dtype=np.float64)
        if vertices.ndim != 2 or vertices.shape[0] < 3:
            raise ValueError("draw a lasso around the points to delete")
        inside = np.flatnonzero(inside_lasso(*self.plot_coordinates("view"), vertices))
        if not inside.size:
            raise Unchanged("Nothing deleted: the lasso holds no point.")
        self.edit(lambda model: model.delete(inside), undoable=True)

    def edit(self, change, order: np.ndarray | None = None, undoable: bool = False) -> None:
        """Points added or deleted by ``change(model)`` (see ``ClusteringSession.edit``; ``order`` as in
        ``Dataset.edited``): DPC updates in place; the other methods compute again when next shown. ``undoable``
        (a click's or a lasso's edit): ``undo_edit`` can take it back; another edit (a stream's batch) or data set
        leaves nothing to take back."""
        self._require_dpc_shown()
        before, earlier = (self.dpc.kept() if undoable else None), self._edits
        self._show_points(partial(self.dpc.edit, change), order)
        if undoable:
            self._set_edits([*earlier, before][-EDIT_UNDO_DEPTH:])

    def undo_edit(self) -> None:
        """Back to the points, centers and dc rule DPC showed before the last edit by a click or a lasso."""
        if not self._edits:
            raise ValueError("there is no edit to undo")
        self._require_dpc_shown("edits are undone")
        *earlier, last = self._edits
        self.dpc.restore(last)
        self._after_points_changed()
        self._set_edits(earlier)

    def show_points(self, model, order: np.ndarray) -> None:
        """DPC fitted afresh on some of the data set's points (a stream's first points; ``order`` as in
        ``Dataset.edited``), shown as an edit is."""
        self._require_dpc_shown()
        self._show_points(partial(self.dpc.show_model, model), order)

    def _show_points(self, show, order: np.ndarray | None) -> None:
        """``show(edited)`` puts this session's own points in DPC; ``edited(index)`` gives their data set."""
        show(partial(self.dataset.edited, order=order))
        self._after_points_changed()

    def _require_dpc_shown(self, action: str = "points are added and deleted") -> None:
        if self.method != "dpc":
            raise ValueError(f"{action} while DPC is shown (its incremental engine holds the edited points)")

    def _after_points_changed(self) -> None:
        """DPC's data set shown on the same axes where it has them; the other methods compute again when shown."""
        dataset = self.dpc.dataset
        for state in (self.dbscan, self.hdbscan):
            state.close()
        axes = (self.x_axis, self.y_axis) if {self.x_axis, self.y_axis} <= set(dataset.axes) else dataset.default_axes()
        self._show_dataset(dataset, axes)

    def replace_edits(self, edits: list) -> list:
        """Put ``edits`` in place of the edits Undo can take back, and return those it replaces (a session file
        refused part way gets them back)."""
        old = self._edits
        self._set_edits(list(edits))
        return old

    def _set_edits(self, edits: list) -> None:
        self._edits = edits
        with param.edit_constant(self):
            self.can_undo_edit = bool(edits)

    def _show_dataset(self, dataset: Dataset, axes: tuple[str, str]) -> None:
        """Another data set (or the same one edited) on these axes; the pin, colouring and selection are reset, and
        no edit is left to undo (``edit`` and ``undo_edit`` then set what is)."""
        self._set_edits([])
        with param.edit_constant(self):
            self.param.x_axis.objects = self.param.y_axis.objects = list(dataset.axes)
            self.param.update(dataset=dataset, x_axis=axes[0], y_axis=axes[1], pinned=None, colour_by="clusters",
                              pointed=None, selected=None, revision=self.revision + 1)  # fmt: skip

    @property
    def view_shows_features(self) -> bool:
        """Whether the 2-D view shows the very two features distances are measured in (a click there is a point of
        the data's space, and a circle there is a circle of it)."""
        columns = self.dataset.points.columns
        return len(columns) == 2 and {self.x_axis, self.y_axis} == set(columns)

    @property
    def dpc_shows_dataset(self) -> bool:
        """Whether DPC holds a model of the data set shown: not while another data set loads, whose model DPC shows
        a moment before the studio shows the data set (a view drawn then read the new model's rows in the old)."""
        return self.dpc.loaded and self.dpc.dataset is self.dataset

    def point_facts(self, i: int) -> dict:
        """Row and label of point i, and the method's own facts: under DPC (loaded) rho, delta and the parent's row;
        under DBSCAN whether it is a core point. (DPC's rho and delta beside DBSCAN's cluster read as one method's.)"""
        rows = self.dataset.points.rows
        facts = {"row": int(rows[i]), "label": self.label_of(i)}
        if self.method == "dbscan" and self.dbscan.dataset is self.dataset:
            facts["core"] = bool(self.dbscan.core()[i])
        elif self.method == "dpc" and self.dpc_shows_dataset:
            model = self.dpc.model
            parent = int(model.parent_[i])
            facts.update(rho=float(model.rho_[i]), delta=float(model.delta_[i]), parent=int(rows[parent]) if parent >= 0 else None)
        return facts

    def plot_coordinates(self, plot: str) -> tuple[np.ndarray, np.ndarray]:
        """Where every point is drawn on the 2-D view ("view") or the decision graph ("graph")."""
        if plot == "view":
            return self.dataset.axis_values(self.x_axis), self.dataset.axis_values(self.y_axis)
        model = self.dpc.model
        return graph_coordinates(model.rho_, model.delta_, self.dpc.log_axes)

    def _state_changed(self, event) -> None:
        # a state loading another data set bumps its revision before this one has new axes: load() redraws then
        if event.obj is self.active and event.obj.dataset is self.dataset:
            with param.edit_constant(self):
                self.revision += 1

    # results for the views ----------------------------------------------------------------------------------
    def labels(self) -> np.ndarray:
        """What the 2-D view colours the points by: every point noise while the method's clusters are of another data
        set (one loading, whose results come a moment before the studio shows it; a view drawn then mixed the two)."""
        if self.colour_by == "truth":
            return self.dataset.truth
        return self.active.labels() if self._active_shows_dataset else np.full(self.dataset.n_points, -1, np.int64)

    def label_of(self, i: int) -> int:
        """Point i's entry of ``labels`` (the pointed point's facts at every relabel: not all N of them)."""
        if self.colour_by == "truth":
            return int(self.dataset.truth[i])
        return self.active.label_of(i) if self._active_shows_dataset else -1

    def large_points(self) -> np.ndarray | None:
        """Points drawn larger: DBSCAN's core points while its toggle is on."""
        if self.method == "dbscan" and self.dbscan.show_core and self.colour_by == "clusters" and self._active_shows_dataset:
            return self.dbscan.core()
        return None

    @property
    def _active_shows_dataset(self) -> bool:
        return self.active.dataset is self.dataset

    def truth_ari(self) -> float | None:
        """ARI of the current clustering with the ground truth, when the data set has one."""
        truth = self.dataset.truth
        return None if truth is None else adjusted_rand_index(self.active.labels(), truth)

    def comparison(self) -> tuple[float, pd.DataFrame] | None:
        """(ARI, contingency table) of the current clustering against the pinned one, or None."""
        if self.pinned is None:
            return None
        current = self.active.labels()
        return adjusted_rand_index(current, self.pinned.labels), contingency(current, self.pinned.labels, "now", "pinned")

    def close(self) -> None:
        for state in self.states.values():
            state.close()
        self._edits = []  # (each holds a model and its index)
