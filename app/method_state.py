"""What the state of every clustering method shares (no UI code): the data set it shows, its model, the timings
of its last update and a revision bumped whenever its labels change.

A method state computes its result first and changes only when that succeeded, so an engine error leaves the
last good state.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pandas as pd
import param

from dpstudio.engine.data import with_dropped_rows


class Unchanged(ValueError):
    """An action that ended without changing anything, for an ordinary reason: a lasso or a rectangle around no point,
    a click on no branch, a sweep of points no longer shown. The page says it as a note, not as a failure."""


class MethodState(param.Parameterized):
    """One clustering method over a session's data set. Subclasses fill ``_model`` in ``load``."""

    title: ClassVar[str]  # what the page calls the method

    dataset = param.Parameter(doc="the loaded Dataset, shared with other sessions through the DatasetCache")
    timings = param.Dict(default={}, constant=True, doc="seconds of the last update per phase")
    revision = param.Integer(default=0, constant=True, doc="bumped whenever the labels change")

    def __init__(self, **params):
        super().__init__(**params)
        self._model = None

    def load(self, dataset, progress=None) -> None:
        raise NotImplementedError

    @property
    def model(self):
        if self._model is None:
            raise RuntimeError("no data set is loaded")
        return self._model

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def labels(self) -> np.ndarray:
        """Cluster label per point, -1 for noise (or halo)."""
        return self.model.labels_

    def label_of(self, i: int) -> int:
        """Point i's entry of ``labels``, without making all of them."""
        return int(self.model.labels_[i])

    def describe(self) -> str:
        """The method and its parameters, in a few words (names a pinned clustering)."""
        raise NotImplementedError

    def cluster_table(self) -> pd.DataFrame:
        """One row per cluster: its label and size; noise is not a cluster."""
        labels = self.labels()
        sizes = np.bincount(labels[labels >= 0], minlength=int(labels.max(initial=-1)) + 1)
        return pd.DataFrame({"cluster": np.arange(sizes.size), "size": sizes})

    def labels_table(self) -> pd.DataFrame:
        """The download: one row per input row, as ``dpstudio cluster --out`` writes (see ``with_dropped_rows``)."""
        points = self.dataset.points
        return with_dropped_rows(self.model.to_frame(rows=points.rows), points.dropped_rows)

    def close(self) -> None:
        """Forget the results; device memory the shared data set does not use is given back."""
        if self._model is not None:
            backend = self._model.indexed_.backend
            self._model = None
            backend.free_memory()

    def _show(self, model, **changes) -> None:
        """Show a model computed without error: its labels, timings and any parameter changes."""
        self._model = model
        with param.edit_constant(self):
            self.param.update(**changes, timings=dict(model.timings_), revision=self.revision + 1)  # changes first, as
            # ClusteringSession._publish: a batched update's watchers run in the order their parameters were set
