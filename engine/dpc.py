"""DensityPeaks: Density Peaks Clustering (Rodriguez & Laio, Science 2014) as a scikit-learn style estimator."""

from __future__ import annotations

import numbers
import time

import numpy as np
import pandas as pd

from . import centers as center_rules
from .dc import check_number
from .estimator import IndexedEstimator, fitted_result
from .indexed import Progress, check_kernel
from .notation import short
from .topography import Topography, check_topography, densest_of_each, topography

DENSITY_K = 16  # chosen with Z on benchmarks/quality.py
SIGNIFICANCE = 2.5  # Z, chosen on benchmarks/quality.py (mean ARI flat between 2.5 and 3 at k = 16)
DC_RULES = ("percent", "entropy")
SUGGESTIONS = ("auto", "gamma")


def check_dc_rule(dc_rule: str) -> None:
    if dc_rule not in DC_RULES:
        raise ValueError(f"dc_rule must be one of {', '.join(DC_RULES)}, got {dc_rule!r}")


def check_n_centers(n_centers, n_points: int) -> None:
    """A whole number of centers (one cluster each) from 1 to n_points: a fraction is refused, never cut to a whole
    number."""
    if isinstance(n_centers, bool) or not isinstance(n_centers, numbers.Real):
        whole = False
    else:  # an Integral as it is: float() of a huge int overflows
        whole = isinstance(n_centers, numbers.Integral) or float(n_centers).is_integer()
    if not (whole and 1 <= n_centers <= n_points):
        shown = repr(n_centers) if isinstance(n_centers, str) else "nothing" if n_centers is None else n_centers
        raise ValueError(f"the number of clusters (n_centers) must be a whole number from 1 to {n_points:,}, got {shown}")


def check_suggest(suggest: str) -> None:
    if suggest not in SUGGESTIONS:
        raise ValueError(f"suggest must be one of {', '.join(SUGGESTIONS)}, got {suggest!r}")


class DensityPeaks(IndexedEstimator):
    """Density Peaks Clustering with exact rho, delta and parent, on the CPU (Numba) or GPU (CuPy).

    Parameters
    ----------
    dc : float or None
        Cut-off distance. None: chosen by ``dc_rule``.
    dc_percent : float
        Average number of neighbours as a percentage of N, for the percent rule (default 2).
    dc_rule : {"percent", "entropy"}
        How dc is chosen when it is None: the percent rule (``dpstudio.engine.dc``) or the sigma of least potential
        entropy (``dpstudio.engine.entropy``).
    kernel : {"cutoff", "gaussian"}
        cutoff: rho_i = #{j != i : d_ij < dc}. gaussian: rho_i = sum over j != i of exp(-(d_ij / dc)^2), over
        pairs with d_ij < 3 dc; each dropped term is below e^-9 = 1.2e-4, so the truncation error of rho_i is at
        most 1.2e-4 times the number of points farther than 3 dc.
    suggest : {"auto", "gamma"}
        The clustering that ``fit`` (and ``assign()`` with no choice) gives. auto: the density topography
        (``dpstudio.engine.topography``, after ADP): peaks of a k-nearest-neighbour density, merged while a peak is
        not significantly above the saddle to its neighbour; it does not depend on dc. gamma: the top-gamma points
        up to the largest relative drop (``centers.suggest_count``), labelled along DPC's parent chains.
    density_k : int
        auto: neighbours of the density estimate (its error is 1 / sqrt(density_k)).
    significance : float
        auto: Z, how many (summed) errors a peak must stand above its saddle to stay a cluster of its own; raised
        for more than 100 candidate peaks (``topography.significance_for``: about 3.6 at 100k 2-D points).
    noise : bool
        auto: label -1 the points less dense than the highest saddle of their cluster (where it meets another
        at background level).
    backend : {"auto", "cpu", "gpu"}
        "auto" uses the GPU when CuPy and a CUDA device are usable, else the CPU.
    client : dask.distributed.Client or None
        Compute rho and delta on the client's workers (``dpstudio.engine.distributed``; CPU or GPU workers as
        ``backend`` says), with the same results. None: in this process. An estimator with a client cannot be
        pickled or cloned (the client cannot); ``set_params(client=None)`` first.

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
    labels_, centers_, halo_ : the clustering for the current centers (``fit`` assigns the suggested ones). With
        suggest="auto" and no choice made, labels_ are the topography's clusters (-1: noise, when asked for),
        which follow the kNN density's own parent chains, not parent_, and centers_[c] is cluster c's densest point
        by rho_ (its peak on the decision graph; the kNN density's peaks are ``topography_.centers``).
    topography_ : the automatic clustering (``topography.Topography``: densities, candidate peaks and the merge
        map from peaks to clusters), computed on first use.
    changes_ : after ``partial_fit`` or ``delete``, what happened to the clusters (see ``cluster_changes``).
    index_ : the VP-tree, reused by ``set_dc`` and ``assign``; ``indexed_`` holds it with the cached fields.
    timings_ : seconds per phase of the last computation.
    """

    _FITTED = "_fields"
    _REFRESH = "call set_dc (or fit) again"

    def __init__(
        self, dc: float | None = None, dc_percent: float = 2.0, dc_rule: str = "percent", kernel: str = "cutoff",
        suggest: str = "auto", density_k: int = DENSITY_K, significance: float = SIGNIFICANCE, noise: bool = False,
        backend: str = "auto", client=None,
    ):  # fmt: skip
        self.dc = dc
        self.dc_percent = dc_percent
        self.dc_rule = dc_rule
        self.kernel = kernel
        self.suggest = suggest
        self.density_k = density_k
        self.significance = significance
        self.noise = noise
        self.backend = backend
        self.client = client

    # fitting ------------------------------------------------------------------------------------------------
    def fit(self, X, y=None, progress: Progress | None = None) -> DensityPeaks:
        """Build the index over X (N, d) and compute the decision graph; assign the suggested centers.

        X may also be an ``IndexedPoints``: its index and cached fields are then shared, not rebuilt (its
        backend is used).
        """
        check_kernel(self.kernel)
        check_dc_rule(self.dc_rule)
        check_suggest(self.suggest)
        check_topography(self.density_k, self.significance)
        self._topography = None
        self._index(X, progress)
        self.set_dc(self.dc, kernel=self.kernel, progress=progress)
        return self

    def set_dc(
        self, dc: float | None = None, *, dc_percent: float | None = None, kernel: str | None = None,
        centers=None, progress: Progress | None = None, cache: bool = True,
    ) -> DensityPeaks:  # fmt: skip
        """Recompute rho and delta for a new dc (or percent rule, or kernel), reusing the index, then assign
        ``centers``: point indices, or a function of this estimator (with its new rho, delta and parent) that
        returns them; default: the suggested clustering (``assign()``: the automatic clusters, which no dc
        changes, or the gamma rule's centers at the new dc). With neither dc nor dc_percent, dc comes from the
        estimator's ``dc_rule``.

        The last few (kernel, dc) results are cached (``IndexedPoints.CACHED_FIELDS``), so moving back is free;
        ``cache=False`` leaves the cache as it was (a sweep).
        """
        self._require_fit(needs="indexed_")
        kernel = kernel or self.kernel
        check_kernel(kernel)
        if dc is None and dc_percent is None and self.dc_rule == "entropy":
            dc = self.indexed_.dc_for_entropy(timings=self.timings_)
        elif dc is None:
            dc = self.indexed_.dc_for_percent(self.dc_percent if dc_percent is None else dc_percent, timings=self.timings_)
        self._fields = self._current(lambda: self.indexed_.fields(kernel, dc, progress=progress, timings=self.timings_, cache=cache))
        self.dc_, self.kernel_ = self._fields.dc, kernel
        return self.assign(centers=centers(self) if callable(centers) else centers)

    @property
    def index_(self):
        """The VP-tree, reused by ``set_dc`` and ``assign``."""
        self._require_fit(needs="indexed_")
        return self.indexed_.index

    # incremental updates ------------------------------------------------------------------------------------
    def partial_fit(self, X, y=None) -> DensityPeaks:
        """Insert the points X (m, d) and update rho, delta, parent and labels: the result equals a fresh fit on all
        the points (in the same order) with the same dc, kernel and centers. The new points take the next indices.
        The centers are kept (the densest point stays a center); dc stays as it is (``set_dc`` applies a rule
        again). Where the labels are the automatic clustering (suggest="auto", nothing chosen), it is computed
        again for the new points, not updated: it rests on every point's nearest neighbours. Before any fit this is
        ``fit(X)``. The index is shared: every estimator on it sees the new points
        after its next ``set_dc``."""
        if not hasattr(self, "_fields"):
            return self.fit(X)
        before = self._before_update()
        self.indexed_.insert(X, timings=self.timings_)
        self._updated(before, None)
        return self

    def delete(self, indices) -> np.ndarray:
        """Remove the points at ``indices`` and update as ``partial_fit`` does; every later index moves down, and
        the returned array gives each old index its new one (-1: deleted). A deleted center drops out."""
        self._require_fit()
        before = self._before_update()
        mapping = self.indexed_.delete(indices, timings=self.timings_)
        self._updated(before, mapping)
        return mapping

    def _before_update(self) -> tuple:
        """Labels, centers and whether the last center is the densest point added unchosen."""
        self._require_fit()
        return self.labels_, self.centers_, self._chosen is not None and self._chosen.size < self.centers_.size

    def _updated(self, before, mapping) -> None:
        self._fields = self._current(lambda: self.indexed_.fields(self.kernel_, self.dc_, timings=self.timings_))
        if self._chosen is None:
            self.assign()  # the topography of the new points (its cache is keyed by the index's version)
        else:
            kept = self._chosen if mapping is None else mapping[self._chosen]
            self.assign(centers=kept[kept >= 0])
        old_labels, old_centers, forced_before = before
        forced_now = self._chosen is not None and self._chosen.size < self.centers_.size
        self.changes_ = cluster_changes(old_labels, old_centers, self.labels_, self.centers_, mapping,
                                        forced=(forced_before, forced_now), by_points=self._chosen is None)  # fmt: skip

    # centers and labels -------------------------------------------------------------------------------------
    @property
    def topography_(self) -> Topography:
        """The automatic clustering for (density_k, significance), from the shared index's kNN lists."""
        self._require_fit(needs="indexed_")
        check_topography(self.density_k, self.significance)
        # set_params may have changed k or Z, and the points may have changed (this estimator's updates or another's)
        key = (self.density_k, float(self.significance), self.indexed_.version)
        if self._topography is None or self._topography_key != key:
            started = time.perf_counter()
            k = min(self.density_k, self.n_points_ - 1) if self.n_points_ > 2 else 2
            ids, sq = (self._backend.to_numpy(a) for a in self.indexed_.neighbours(k, timings=self.timings_))
            self._topography = topography(ids, sq, self.n_features_in_, self.significance)
            self._topography_key = key
            self.timings_["topography"] = time.perf_counter() - started
        return self._topography

    def suggest_centers(self) -> np.ndarray:
        """Indices of the suggested centers: suggest="auto", each automatic cluster's densest point by rho_ (so
        ``assign(centers=...)`` with them labels much as the automatic clusters do, along DPC's chains); "gamma",
        the top gammas up to the largest relative drop (see centers.suggest_count)."""
        self._require_fit()
        if self.suggest == "auto":
            result = self.topography_
            return self._densest_by_rho(result.labels(noise=self.noise), result.centers.size)
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
        * nothing: with suggest="auto" the topography's clusters (``topography_``: labels along the kNN density's
          parent chains, merged peaks sharing a label, -1 for noise when ``noise``); with "gamma",
          ``suggest_centers()`` on DPC's chains.

        Centers chosen by a region or count are ordered by decreasing gamma. The densest point is always a
        center, since every parent chain ends there: if it is not chosen it is appended as the last label.
        """
        self._require_fit()
        check_suggest(self.suggest)  # set_params may have changed it since fit
        automatic = self.suggest == "auto" and all(v is None for v in (centers, rho_min, delta_min, polygon, n_centers))
        if automatic:
            return self._assign_topography()
        chosen = self.choose_centers(centers, rho_min=rho_min, delta_min=delta_min, polygon=polygon, n_centers=n_centers)
        self._chosen = chosen
        started = time.perf_counter()
        backend, fields = self._backend, self._fields
        densest = int(fields.order[0])
        if densest not in set(chosen.tolist()):
            chosen = np.append(chosen, densest)
        self._labels = backend.labels(fields.parent, fields.order, backend.asarray(chosen))
        backend.synchronize()
        self._centers = chosen
        self._halo, self._clusters = None, self._labels
        self.timings_["relabel"] = time.perf_counter() - started
        return self

    def _assign_topography(self) -> DensityPeaks:
        result = self.topography_
        started = time.perf_counter()
        self._chosen = None  # nothing chosen: an update recomputes the topography
        labels = result.labels(noise=self.noise)
        self._labels = self._backend.asarray(labels)
        self._clusters = self._backend.asarray(result.cluster_labels)  # the halo needs every point's cluster
        self._centers = self._densest_by_rho(labels, result.centers.size)
        self._halo = None
        self.timings_["relabel"] = time.perf_counter() - started
        return self

    def _densest_by_rho(self, labels: np.ndarray, n_clusters: int) -> np.ndarray:
        """The automatic clusters' centers: each one's densest point by rho_ (ties by index), where DPC would put
        it, high on the decision graph; the topography's own peaks, densest by the kNN density, may sit at delta ~
        0 there, beside a point with more neighbours within dc."""
        centers = densest_of_each(labels, self._backend.to_numpy(self._fields.order), n_clusters)
        if (centers < 0).any():  # every cluster holds its kNN peak, never noise: a bug, never a center of -1
            raise RuntimeError(f"automatic cluster {int(np.argmin(centers))} has no point")
        return centers

    def choose_centers(
        self, centers=None, *, rho_min: float | None = None, delta_min: float | None = None,
        polygon=None, n_centers: int | None = None, log_axes: bool = False,
    ) -> np.ndarray:  # fmt: skip
        """The centers a choice gives (see ``assign``), before the densest point is added. ``log_axes``: the polygon
        was drawn on log axes (``centers.graph_coordinates``)."""
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
            check_n_centers(n_centers, self.n_points_)
            candidates = xp.arange(self.n_points_)
            return backend.to_numpy(center_rules.by_gamma(candidates, fields.gamma, xp)[: int(n_centers)])
        if rho_min is not None or delta_min is not None:
            for name, bound in (("rho_min", rho_min), ("delta_min", delta_min)):
                if bound is not None:
                    check_number(name, bound)
                    if not np.isfinite(bound):  # nothing passes >= nan: the densest point alone, without a word
                        raise ValueError(f"{name} must be a finite number (or None: no bound), got {bound!r}")
            mask = (fields.rho >= (-np.inf if rho_min is None else rho_min)) & (
                fields.delta >= (-np.inf if delta_min is None else delta_min)
            )
        elif polygon is not None:
            vertices = np.asarray(polygon, dtype=np.float64)
            if vertices.ndim != 2 or vertices.shape[1] != 2 or vertices.shape[0] < 3:
                raise ValueError("polygon must be at least 3 (rho, delta) vertices")
            if not np.isfinite(vertices).all():
                raise ValueError("polygon vertices must be finite numbers")
            x, y = center_rules.graph_coordinates(fields.rho, fields.delta, log_axes, xp)
            mask = backend.points_in_polygon(x, y, backend.asarray(vertices))
        else:
            return self.suggest_centers()
        return backend.to_numpy(center_rules.by_gamma(xp.flatnonzero(mask), fields.gamma, xp))

    # results at the API edge (NumPy) -------------------------------------------------------------------------
    @property
    def n_points_(self) -> int:
        return self.indexed_.n_points

    centers_ = fitted_result(lambda self: self._centers)  # point indices in label order, the densest point among them

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
    def chosen_centers_(self) -> np.ndarray | None:
        """The centers as chosen (``centers_`` without the densest point the labelling adds unchosen), after any
        update's renumbering; None for the automatic clustering."""
        self._require_fit()
        return None if self._chosen is None else np.asarray(self._chosen).copy()

    @property
    def halo_(self) -> np.ndarray:
        """Halo mask for the current labels, computed on first use (it costs a range query per point)."""
        self._require_fit()
        if self._halo is None:
            started = time.perf_counter()
            self._halo = self._backend.halo(self.index_, self._fields.rho, self._clusters, self.dc_)
            self._backend.synchronize()
            self.timings_["halo"] = time.perf_counter() - started
        return self._backend.to_numpy(self._halo)

    def to_frame(self, rows=None) -> pd.DataFrame:
        """Per-point results: index (``rows``, default ``rows_``: each point's input row, which after ``partial_fit``
        counts on past the first fit's rows and after ``delete`` has gaps), label, halo, rho, delta, parent (as an
        index of the same kind)."""
        index = self.rows_ if rows is None else np.asarray(rows)
        parent = self.parent_
        return pd.DataFrame({
            "index": index, "label": self.labels_, "halo": self.halo_, "rho": self.rho_, "delta": self.delta_,
            "parent": np.where(parent >= 0, index[parent], -1),
        })  # fmt: skip

    def _numpy(self, name: str) -> np.ndarray:
        self._require_fit()
        return self._backend.to_numpy(getattr(self._fields, name))


def density_notice(rho: np.ndarray, dc: float) -> str:
    """A warning when dc is so small that no point has a neighbour (every rho is 0), else an empty string."""
    if rho.max() > 0:
        return ""
    return (f"dc = {short(dc, 6)} is not above the smallest distance between points: every ρ is 0, so the decision "
            "graph has no peaks. Use a larger dc (or percent).")  # fmt: skip


def describe_changes(changes: dict) -> str:
    """``cluster_changes`` in words: "appeared [3], merged {1: 0}, 25 points moved"."""
    words = [f"{name} {changes[name]}" for name in ("appeared", "vanished", "merged", "split") if changes[name]]
    return ", ".join([*words, f"{changes['moved']} point{'s' * (changes['moved'] != 1)} moved"])


def cluster_changes(old_labels, old_centers, labels, centers, mapping=None, forced=(False, False), by_points=False) -> dict:
    """What an update did to the clusters. A cluster is its center point: it continues while that point is a
    center; but the cluster of the densest point, added as the last center because it was not chosen (``forced``:
    whether that is so before and after), continues as such, whichever point is densest. ``by_points`` (the
    automatic clusters, whose centers are each peak's densest point of the moment): a cluster continues as the new
    one that took most of its points, where it is also the old one most of that new one's points come from.
    ``mapping``: each old point's new index (-1: deleted; None: nothing deleted, points only added).

    Returns {"clusters": number now, "appeared": new labels that continue no old one, "vanished": old labels that
    none continues, "merged": {vanished old label: new label holding most of its points}, "split": {old label: new
    labels that appeared and took some of its points}, "moved": points now in another cluster than the one theirs
    continues as, points of a vanished cluster, and points that became noise or stopped being noise}.
    """
    mapping = np.arange(old_labels.shape[0]) if mapping is None else mapping
    survived = mapping >= 0
    old, new = old_labels[survived], labels[mapping[survived]]
    old_of, new_of, counts = _flows(old, new)
    if by_points:
        continues = _mutual_majority(old_of, new_of, counts, len(old_centers))
    else:
        label_of_center = {int(c): k for k, c in enumerate(centers)}
        continues = np.array([label_of_center.get(int(mapping[c]), -1) if mapping[c] >= 0 else -1 for c in old_centers], np.int64)
        if forced[0] and forced[1] and continues[-1] < 0:
            continues[-1] = len(centers) - 1
    appeared = sorted(set(range(len(centers))) - set(continues[continues >= 0].tolist()))
    merged, split = {}, {}
    for a in range(len(old_centers)):
        first, last = np.searchsorted(old_of, [a, a + 1])
        if first == last:  # no point of old cluster a is left
            continue
        if continues[a] < 0:  # where most of its points went (the smallest label of those that took most)
            merged[a] = int(new_of[first + np.argmax(counts[first:last])])
        elif took := sorted(set(new_of[first:last].tolist()) & set(appeared)):
            split[a] = took
    return {
        "clusters": len(centers), "appeared": appeared, "vanished": np.flatnonzero(continues < 0).tolist(),
        "merged": merged, "split": split, "moved": int((_continued_as(old, continues) != new).sum()),
    }  # fmt: skip


def _continued_as(old: np.ndarray, continues: np.ndarray) -> np.ndarray:
    """Each point's old label as it continues now: noise as noise (-1), a vanished cluster as -2, which no new label
    equals (indexing ``continues`` by -1 took the last cluster's continuation for every noise point)."""
    if not continues.size:  # no old cluster: every old point was noise
        return np.full(old.shape, -1, np.int64)
    kept = continues[np.maximum(old, 0)]
    return np.where(old < 0, -1, np.where(kept >= 0, kept, -2))


def _mutual_majority(old_of: np.ndarray, new_of: np.ndarray, counts: np.ndarray, n_old: int) -> np.ndarray:
    """Each old label's continuation by points (-1: none): the new label that took most of its points (the smallest
    of a tie), where the old label is also the one most of that new label's points come from."""
    clustered = (old_of >= 0) & (new_of >= 0)  # noise is no cluster
    old_of, new_of, counts = old_of[clustered], new_of[clustered], counts[clustered]
    best_new, best_old = _largest_flows(old_of, new_of, counts), _largest_flows(new_of, old_of, counts)
    return np.array([b if (b := best_new.get(a, -1)) >= 0 and best_old[b] == a else -1 for a in range(n_old)], np.int64)


def _largest_flows(source: np.ndarray, target: np.ndarray, counts: np.ndarray) -> dict[int, int]:
    """Per source label, the target label its largest flow goes to (the smallest of a tie)."""
    order = np.lexsort((target, -counts, source))
    first = np.unique(source[order], return_index=True)[1]
    return dict(zip(source[order][first].tolist(), target[order][first].tolist()))


def _flows(old: np.ndarray, new: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(old label, new label, points) of every pair of labels that some point has, in (old, new) order."""
    if not old.size:
        return old, new, np.empty(0, np.int64)
    low, width = int(new.min()), int(new.max()) - int(new.min()) + 1
    pairs, counts = np.unique((old.astype(np.int64) - int(old.min())) * width + (new - low), return_counts=True)
    return pairs // width + int(old.min()), pairs % width + low, counts
