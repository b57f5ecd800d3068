"""The DBSCAN and HDBSCAN states of one browser session (no UI code), over the data set's shared index.

Both read the index's cached spanning tree per min_samples: an eps change or a new cluster selection is a relabel
that computes no distance. Each action checks its values before it changes anything (a new min_samples or
min_cluster_size fits a new model and shows it once done; an eps or a selection relabels the model shown), so a
wrong value leaves the last good clustering.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import param

from dpstudio.engine import DBSCAN, HDBSCAN
from dpstudio.engine.dbscan import SELECTION_METHODS, check_eps
from dpstudio.engine.hierarchy import cluster_hierarchy
from dpstudio.engine.notation import short

from .method_state import MethodState


def _check_count(name: str, value: int, least: int, dataset) -> int:
    """A count of points as a method's parameter: from ``least`` to the number of points."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not least <= value <= dataset.n_points:
        raise ValueError(f"{name} must be a whole number from {least} to the number of points ({dataset.n_points}), "
                         f"got {'nothing' if value is None else value!r}")
    return int(value)


@dataclass(frozen=True)
class EpsCurve:
    """DBSCAN's exact counts at every eps where one changes (``DBSCAN.eps_curve``), for one min_samples."""

    eps: np.ndarray
    clusters: np.ndarray
    noise: np.ndarray
    n_points: int

    def counts(self, eps) -> tuple[np.ndarray, np.ndarray]:
        """(clusters, noise) at each eps: the counts of the last step at or below it (before the first: 0, every
        point)."""
        step = np.searchsorted(self.eps, eps, "right") - 1
        before = step < 0
        step = np.maximum(step, 0)
        return np.where(before, 0, self.clusters[step]), np.where(before, self.n_points, self.noise[step])

    def at(self, eps: float) -> tuple[int, int]:
        clusters, noise = self.counts(eps)
        return int(clusters), int(noise)

    def eps_range(self) -> tuple[float, float]:
        """Where eps means something: from below the first positive step (fewer clusters, more noise: where the
        curves start) to past the last one (one cluster, no noise)."""
        positive = self.eps[self.eps > 0]
        low = float(positive[0]) / 2 if positive.size else 1e-3
        high = float(self.eps[-1]) * 1.5 if self.eps.size and self.eps[-1] > 0 else 1.0
        return low, max(high, low * 10)


def _covering(view: tuple[float, float], eps: float) -> tuple[float, float]:
    """``view`` widened to show eps with a margin (a typed eps far outside the curves' range hid its marker); only
    widened, so a slider does not change its range under the mouse."""
    low, high = view
    return view if low <= eps <= high else (min(low, eps / 1.5), max(high, eps * 1.5))


class TreeState(MethodState):
    """A method over the mutual-reachability tree of a min_samples. The min_samples set last is kept across data
    sets: one of fewer points uses all of them (N), and the next data set the value set again (it stuck at N)."""

    min_samples = param.Integer(default=5, bounds=(1, None), constant=True, doc="in use: at most the points there are")

    def __init__(self, **params):
        super().__init__(**params)
        self._set_min_samples = self.min_samples

    def _min_samples_for(self, dataset) -> int:
        return min(self._set_min_samples, dataset.n_points)


class DBSCANState(TreeState):
    title = "DBSCAN"

    eps = param.Number(default=None, allow_None=True, constant=True, doc="set by set_eps; the knee at load")
    show_core = param.Boolean(default=True, constant=True, doc="draw core points larger than border points")
    eps_view = param.Tuple(default=(1e-3, 1.0), length=2, constant=True,
                           doc="the eps the slider and the curves cover: the curve's eps_range, widened to each eps set")  # fmt: skip

    def __init__(self, **params):
        super().__init__(**params)
        self._curve: EpsCurve | None = None
        self._eps_set: float | None = None  # the eps set on the data set shown: kept through its edits

    def load(self, dataset, progress=None) -> None:
        """Cluster a data set at the knee of its k-distance curve (``suggest_eps``); the same data set edited (points
        added or deleted) at the eps set on it, if one was (``forget_eps``: another data set)."""
        model = DBSCAN(eps=self._eps_set, min_samples=self._min_samples_for(dataset)).fit(dataset.indexed, progress=progress)
        self._show_tree(model, dataset=dataset)

    def forget_eps(self) -> None:
        """The next data set loaded opens at its knee (``Studio.load``: edits of the one shown keep its eps)."""
        self._eps_set = None

    def set_eps(self, eps: float, typed: bool = False) -> None:
        """Relabel at eps from the cached tree (cheap enough to follow a dragged slider). The slider and the curves
        cover eps: their range widened to it, or for an eps ``typed`` (no slider under the mouse) the curves' own
        range around it, so that an eps typed back from far away gives the usual range back (it stayed 30 decades
        wide after 1e-30)."""
        check_eps(eps)
        model = self.model
        model.set_eps(float(eps))
        self._eps_set = model.eps_
        self._show(model, eps=model.eps_, eps_view=_covering(self.curve().eps_range() if typed else self.eps_view, model.eps_))

    def set_min_samples(self, min_samples: int, progress=None, at_knee: bool = False) -> None:
        """A new min_samples at the same eps, or ``at_knee`` of its own k-distance curve (a URL's min_samples with
        no eps, as ``dpstudio cluster`` gives it); the tree is built once per value and cached in the index."""
        min_samples = _check_count("min_samples", min_samples, 1, self.dataset)
        model = DBSCAN(eps=None if at_knee else self.eps, min_samples=min_samples).fit(self.dataset.indexed, progress=progress)
        self._show_tree(model)
        self._set_min_samples = min_samples  # shown: what the next data set uses

    def set_show_core(self, show: bool) -> None:
        with param.edit_constant(self):
            self.param.update(show_core=bool(show), revision=self.revision + 1)

    def _show_tree(self, model: DBSCAN, **changes) -> None:
        self._curve = EpsCurve(*model.eps_curve(), model.indexed_.n_points)
        view = _covering(self._curve.eps_range(), model.eps_)
        self._show(model, eps=model.eps_, min_samples=model.min_samples_, eps_view=view, **changes)

    # results for the views ----------------------------------------------------------------------------------
    def curve(self) -> EpsCurve:
        self.model  # (refused before a data set is loaded: the curve is the shown model's)
        return self._curve

    def k_distances(self) -> np.ndarray:
        """Core distances sorted from the largest (the k-distance plot), infinite ones left out."""
        distances = self.model.core_distances_
        return np.sort(distances[np.isfinite(distances)])[::-1]

    def core(self) -> np.ndarray:
        """Core-point mask at the current eps."""
        mask = np.zeros(self.dataset.n_points, bool)
        mask[self.model.core_sample_indices_] = True
        return mask

    def describe(self) -> str:
        clusters, _ = self.curve().at(self.eps)
        return f"DBSCAN eps={short(self.eps)}, min_samples={self.min_samples}, {clusters} clusters"

    def cluster_table(self):
        table = super().cluster_table()
        labels, core = self.labels(), self.core()
        table["core"] = np.bincount(labels[core & (labels >= 0)], minlength=len(table))
        return table


class HDBSCANState(TreeState):
    title = "HDBSCAN"

    min_cluster_size = param.Integer(default=15, bounds=(2, None), constant=True)
    min_samples = param.Integer(default=15, bounds=(1, None), constant=True, doc="in use: at most the points there are")
    selection = param.Selector(objects=list(SELECTION_METHODS), default="eom", constant=True)
    hand_picked = param.Boolean(default=False, constant=True, doc="clusters chosen on the tree, not by the rule")

    def __init__(self, **params):
        super().__init__(**params)
        self._set_min_cluster_size = self.min_cluster_size  # kept across data sets, as min_samples is

    def load(self, dataset, progress=None) -> None:
        # at most the points there are (a size larger than the data set in use could not be saved and loaded back)
        size = min(self._set_min_cluster_size, dataset.n_points)
        self._fit(dataset, size, self._min_samples_for(dataset), self.selection, progress)

    def set_parameters(self, min_cluster_size: int | None = None, min_samples: int | None = None,
                       selection: str | None = None, progress=None) -> None:  # fmt: skip
        """New parameters (the tree of a min_samples is cached in the index); the rule chooses the clusters again."""
        pick = (lambda new, old: old if new is None else new)
        if min_cluster_size is not None:
            # checked first: where a URL gives no min_samples, it is min_cluster_size, and the message named it
            _check_count("min_cluster_size", min_cluster_size, 2, self.dataset)
        self._fit(self.dataset, pick(min_cluster_size, self.min_cluster_size), pick(min_samples, self.min_samples),
                  pick(selection, self.selection), progress)  # fmt: skip
        if min_samples is not None:
            self._set_min_samples = min_samples  # shown: what the next data set uses
        if min_cluster_size is not None:
            self._set_min_cluster_size = min_cluster_size

    def _fit(self, dataset, min_cluster_size, min_samples, selection, progress) -> None:
        min_samples = _check_count("min_samples", min_samples, 1, dataset)
        model = HDBSCAN(min_cluster_size=min_cluster_size, min_samples=min_samples, cluster_selection_method=selection)
        model.fit(dataset.indexed, progress=progress)
        self._rule_clusters = model.selected_clusters_.tolist()
        self._show(model, dataset=dataset, min_cluster_size=min_cluster_size, min_samples=min_samples,
                   selection=selection, hand_picked=False)  # fmt: skip

    def toggle_cluster(self, cluster: int) -> None:
        """Select a cluster of the condensed tree (its ancestors and descendants leave the selection), or deselect
        it when it is selected: the analyst's choice on the same tree."""
        model = self.model
        parents = cluster_hierarchy(model.condensed_tree_).parent
        n = self.dataset.n_points
        if not n < cluster < n + parents.size:
            raise ValueError(f"no cluster {cluster} in the condensed tree (clusters are {n + 1} to {n + parents.size - 1})")
        selected = set(model.selected_clusters_.tolist())
        if cluster in selected:
            selected.discard(cluster)
        else:
            related = set(_ancestors(parents, cluster - n)) | set(_descendants(parents, cluster - n))
            selected = {c for c in selected if c - n not in related} | {cluster}
        self.set_clusters(selected)

    def set_clusters(self, clusters) -> None:
        """Select exactly these clusters of the condensed tree (a saved session's hand-picked selection); clicked
        back to the rule's own, they are the rule's again."""
        clusters = sorted(int(c) for c in clusters)
        self.model.set_clusters(clusters)
        self._show(self.model, hand_picked=clusters != sorted(self._rule_clusters))

    def describe(self) -> str:
        rule = "hand-picked" if self.hand_picked else self.selection
        return (f"HDBSCAN min_cluster_size={self.min_cluster_size}, min_samples={self.min_samples}, {rule}, "
                f"{len(self.model.selected_clusters_)} clusters")  # fmt: skip


def _ancestors(parents: np.ndarray, c: int) -> list[int]:
    chain = []
    while c > 0:
        c = int(parents[c])
        chain.append(c)
    return chain


def _descendants(parents: np.ndarray, c: int) -> np.ndarray:
    """Clusters below c (ids - N): parents come before children, so one pass in id order finds them."""
    below = np.zeros(parents.size, bool)
    below[c] = True
    for d in range(c + 1, parents.size):
        below[d] = below[parents[d]]
    below[c] = False
    return np.flatnonzero(below)
