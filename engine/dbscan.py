"""DBSCAN and HDBSCAN as scikit-learn style estimators over a shared ``IndexedPoints``.

Both read one cached structure per (min_samples, neighbours mode), ``IndexedPoints.spanning_tree``: core
distances, the mutual-reachability MST (in the approximate mode, the least spanning forest of the listed edges)
and the neighbour lists. DBSCAN at any eps is then a pass over that tree's single-linkage chain (no distance
computed), and HDBSCAN is the condensed tree of the same MST.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from . import hierarchy
from .estimator import IndexedEstimator, fitted_result
from .indexed import Progress, SpanningTree, check_min_samples
from .vptree import float32_square

SELECTION_METHODS = ("eom", "leaf")


class _OnIndex(IndexedEstimator):
    """What both estimators share: the spanning tree of their min_samples, and the core distances it holds."""

    def _spanning_tree(self, min_samples: int, progress: Progress | None, neighbors: str = "exact") -> SpanningTree:
        """The tree for ``min_samples`` from the index, on its current points (it becomes ``_tree``)."""
        self._require_fit(needs="indexed_")
        return self._current(lambda: self.indexed_.spanning_tree(min_samples, neighbors, progress=progress, timings=self.timings_))

    @property
    def core_distances_(self) -> np.ndarray:
        """Distance to the min_samples-th nearest point, the point itself counted (inf: fewer points than that)."""
        self._require_fit()
        return np.sqrt(self._backend.to_numpy(self._tree.core_sq).astype(np.float64))


class DBSCAN(_OnIndex):
    """DBSCAN whose labels equal ``sklearn.cluster.DBSCAN(eps, min_samples).labels_``, with eps free to change.

    Parameters
    ----------
    eps : float or None
        Neighbourhood radius: q is a neighbour of p iff ``d(p, q) <= eps``, decided as
        ``float32(sum_k (p_k - q_k)^2) <= float32(eps^2)`` (the float32 rule of the whole engine).
        None: the knee of the sorted core distances (``suggest_eps``). Default 0.5, as scikit-learn's.
    min_samples : int
        A point is core when at least min_samples points (itself counted) lie within eps.
    neighbors : {"exact", "approximate"}
        approximate (KG-DBSCAN, for high dimensions): the 2 * min_samples nearest neighbours (by NN-descent on the
        CPU, exactly on the GPU), core distances from those lists, and clusters from the listed edges within eps. ``saturated_cores_``
        counts the cores whose whole list lies within eps (their eps-ball may hold unlisted points): when it is 0
        and the lists are the true nearest neighbours, the labels are exact.
    backend : {"auto", "cpu", "gpu"}

    Clusters are the connected components of core points within eps of each other, numbered by their smallest
    core index; a non-core point within eps of a core point joins the smallest such cluster label; the rest is
    noise (-1). This is scikit-learn's result, label for label.

    Attributes (after ``fit``)
    --------------------------
    labels_, core_sample_indices_, core_distances_, eps_, min_samples_, saturated_cores_ (approximate mode),
    timings_; ``indexed_`` holds the shared index.
    """

    _REFRESH = "call set_min_samples (or fit) again"

    def __init__(self, eps: float | None = 0.5, min_samples: int = 5, neighbors: str = "exact", backend: str = "auto"):
        self.eps = eps
        self.min_samples = min_samples
        self.neighbors = neighbors
        self.backend = backend

    def fit(self, X, y=None, progress: Progress | None = None) -> DBSCAN:
        """Index X (or share an ``IndexedPoints``), build the tree for min_samples, label at eps."""
        if self.eps is not None:
            check_eps(self.eps)
        check_min_samples(self.min_samples)
        self._index(X, progress)
        self._tree = self._spanning_tree(self.min_samples, progress, self.neighbors)
        self.min_samples_ = self.min_samples
        return self.set_eps(suggest_eps(self.core_distances_) if self.eps is None else self.eps)

    def set_eps(self, eps: float) -> DBSCAN:
        """Relabel at a new eps from the cached tree: no distance is computed."""
        check_eps(eps)
        self._require_fit()
        started = time.perf_counter()
        tree, backend = self._tree, self._backend
        eps2 = float32_square(eps)
        self._labels = backend.dbscan_labels(tree.chain, tree.gap, tree.core_sq, tree.neighbour_ids, tree.neighbour_sq, eps2)
        self._core = tree.core_sq <= eps2
        if tree.listed_reach_sq is not None:
            self.saturated_cores_ = int((self._core & (tree.listed_reach_sq <= eps2)).sum())
        backend.synchronize()
        self.eps_ = float(eps)
        self.timings_["relabel"] = time.perf_counter() - started
        return self

    def set_min_samples(self, min_samples: int, progress: Progress | None = None) -> DBSCAN:
        """A new min_samples on the same index: the neighbour lists are reused, the tree is cached per value."""
        check_min_samples(min_samples)
        self._tree = self._spanning_tree(min_samples, progress, self.neighbors)
        self.min_samples_ = min_samples
        return self.set_eps(self.eps_)

    def eps_curve(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(eps, clusters, noise): the number of clusters and of noise points at every eps where one changes (each
        holding up to the next eps), exactly, from the cached tree; the k-distance and sensitivity views plot it."""
        self._require_fit()
        tree, to_numpy = self._tree, self._backend.to_numpy
        return hierarchy.eps_curve(to_numpy(tree.core_sq), tree.w2, to_numpy(tree.neighbour_ids), to_numpy(tree.neighbour_sq))

    @property
    def labels_(self) -> np.ndarray:
        self._require_fit()
        return self._backend.to_numpy(self._labels)

    @property
    def core_sample_indices_(self) -> np.ndarray:
        self._require_fit()
        return np.flatnonzero(self._backend.to_numpy(self._core))

    @property
    def joining_edges_(self) -> tuple[np.ndarray, np.ndarray]:
        """(u, v) of the mutual-reachability MST's edges within eps_ (by the float32 rule): they join core points,
        and the clusters are their components among the core points (what the teaching view draws)."""
        self._require_fit()
        tree = self._tree
        within = tree.w2 <= float32_square(self.eps_)
        return tree.u[within], tree.v[within]

    def to_frame(self, rows=None) -> pd.DataFrame:
        """Per-point results: index (``rows``, default ``rows_``, as ``DensityPeaks.to_frame``), label, core."""
        self._require_fit()
        core = self._backend.to_numpy(self._core)
        index = self.rows_ if rows is None else np.asarray(rows)
        return pd.DataFrame({"index": index, "label": self.labels_, "core": core})


class HDBSCAN(_OnIndex):
    """HDBSCAN with ``sklearn.cluster.HDBSCAN``'s parameters and conventions, on the shared index.

    Parameters
    ----------
    min_cluster_size : int (>= 2)
    min_samples : int or None (None: min_cluster_size); core distances count the point itself.
    cluster_selection_method : {"eom", "leaf"}
    cluster_selection_epsilon : float (>= 0)
    backend : {"auto", "cpu", "gpu"}

    Attributes (after ``fit``)
    --------------------------
    labels_, probabilities_ (as scikit-learn), outlier_scores_ (GLOSH, as the ``hdbscan`` package),
    condensed_tree_ (``hierarchy.CondensedTree``), selected_clusters_ (its ids labelled 0, 1, ...), core_distances_,
    timings_.

    Mutual-reachability distances tie often (an edge's weight is often a core distance), so several minimum
    spanning trees exist. This one keeps the least edge by (distance, smaller index, larger index), which every
    backend shares; scikit-learn takes the one its Prim's search and sort happen to give. Given the same
    single-linkage tree, labels and probabilities are scikit-learn's exactly; where three or more clusters merge
    at one tied distance, a point at that merge may land in another cluster (see README).
    """

    def __init__(
        self, min_cluster_size: int = 5, min_samples: int | None = None, cluster_selection_method: str = "eom",
        cluster_selection_epsilon: float = 0.0, backend: str = "auto",
    ):  # fmt: skip
        self.min_cluster_size = min_cluster_size
        self.min_samples = min_samples
        self.cluster_selection_method = cluster_selection_method
        self.cluster_selection_epsilon = cluster_selection_epsilon
        self.backend = backend

    def fit(self, X, y=None, progress: Progress | None = None) -> HDBSCAN:
        check_hdbscan(**self.get_params())
        self._index(X, progress)
        min_samples = self.min_cluster_size if self.min_samples is None else self.min_samples
        if min_samples > self.indexed_.n_points:
            raise ValueError(f"min_samples ({min_samples}) must be at most the number of points ({self.indexed_.n_points})")
        self._tree = self._spanning_tree(min_samples, progress)
        return self.set_selection()

    def set_selection(self, min_cluster_size: int | None = None, method: str | None = None, epsilon: float | None = None) -> HDBSCAN:
        """Select clusters again (new min_cluster_size, method or epsilon) from the cached tree. Values that are
        refused leave the estimator as it was."""
        self._require_fit()
        given = {"min_cluster_size": min_cluster_size, "cluster_selection_method": method, "cluster_selection_epsilon": epsilon}
        changed = {name: value for name, value in given.items() if value is not None}
        check_hdbscan(**{**self.get_params(), **changed})
        self.set_params(**changed)
        started = time.perf_counter()
        tree = self._tree
        self._condensed = hierarchy.condensed_tree(tree.u, tree.v, tree.w2, self.indexed_.n_points, self.min_cluster_size)
        selection = hierarchy.select_clusters(self._condensed, self.cluster_selection_method, float(self.cluster_selection_epsilon))
        self._label(selection, started)
        return self

    def set_clusters(self, cluster_ids) -> HDBSCAN:
        """Label by chosen clusters of ``condensed_tree_`` (ids > N, none inside another) instead of a selection
        rule: the analyst's own choice on the same tree. ``set_selection`` goes back to a rule."""
        self._require_fit()
        started = time.perf_counter()
        self._label(hierarchy.label_clusters(self.condensed_tree_, cluster_ids), started)
        return self

    def _label(self, selection: hierarchy.Selection, started: float) -> None:
        self._selection = selection
        self.timings_["relabel"] = time.perf_counter() - started

    # results, each of the index's points as they were when computed (``_require_fit``)
    condensed_tree_ = fitted_result(lambda self: self._condensed)
    labels_ = fitted_result(lambda self: self._selection.labels)
    probabilities_ = fitted_result(lambda self: self._selection.probabilities)
    outlier_scores_ = fitted_result(lambda self: self._selection.outlier_scores)
    selected_clusters_ = fitted_result(lambda self: self._selection.selected)

    def to_frame(self, rows=None) -> pd.DataFrame:
        """Per-point results: index (``rows``, default ``rows_``), label, probability, outlier_score."""
        self._require_fit()
        index = self.rows_ if rows is None else np.asarray(rows)
        return pd.DataFrame({"index": index, "label": self.labels_, "probability": self.probabilities_,
                             "outlier_score": self.outlier_scores_})  # fmt: skip


def check_hdbscan(min_cluster_size, min_samples, cluster_selection_method, cluster_selection_epsilon, **_) -> None:
    """HDBSCAN's parameters (``get_params()``' keys; others, the backend, are ignored)."""
    size = min_cluster_size
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 2:
        raise ValueError(f"min_cluster_size must be a whole number >= 2, got {size!r}")
    if min_samples is not None:
        check_min_samples(min_samples)
    if cluster_selection_method not in SELECTION_METHODS:
        raise ValueError(f"cluster_selection_method must be one of {', '.join(SELECTION_METHODS)}, got {cluster_selection_method!r}")
    check_eps(cluster_selection_epsilon, "cluster_selection_epsilon", allow_zero=True)


def suggest_eps(core_distances: np.ndarray) -> float:
    """The knee of the sorted core distances (the k-distance plot): the point farthest below the straight line
    from the smallest to the largest finite value, both axes scaled to [0, 1]. Points left of it are dense."""
    values = np.sort(core_distances[np.isfinite(core_distances)])
    if values.size == 0 or values[-1] == values[0]:
        return float(values[-1]) if values.size and values[-1] > 0 else 1.0
    below_chord = np.linspace(0, 1, values.size) - (values - values[0]) / (values[-1] - values[0])
    knee = float(values[int(np.argmax(below_chord))])
    return knee if knee > 0 else float(values[values > 0][0])


def check_eps(eps, name: str = "eps", allow_zero: bool = False) -> None:
    if isinstance(eps, bool) or not isinstance(eps, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number, got {eps!r}")
    if not (np.isfinite(eps) and (eps > 0 or (allow_zero and eps == 0))):
        raise ValueError(f"{name} must be a finite number {'>=' if allow_zero else '>'} 0, got {eps!r}")
