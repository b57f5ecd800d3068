"""IndexedPoints: one data set on one backend, with its VP-tree and every product that no user choice changes.

This is the part of clustering that does not depend on the chosen centers or eps, so it can be shared: every
estimator (and every browser session of the app) working on the same data reuses one index, and what one computed
is free for the others. Cached, each computed once: the decision-graph fields of recent (kernel, dc) values
(``DensityPeaks``), the k nearest neighbours of every point for the largest k asked so far, and the
mutual-reachability spanning tree of recent min_samples values (``DBSCAN``, ``HDBSCAN``). Centers, eps and the
cluster selection live in the estimators.

Points can be inserted and deleted (``insert``, ``delete``): the tree, every cached decision-graph field and the
nearest-neighbour lists are updated in place of a rebuild, with the same result as a fresh computation on the same points in the same order
(``dpstudio.engine.incremental``). Point identity: inserted points take the next indices; a deletion closes the
gap (every later index moves down), and ``rows`` keeps each point's stable row number (its place in the order the
points arrived: 0..N-1 for the first ones, then counting on; ``number_rows`` gives them other numbers).
"""

from __future__ import annotations

import copy
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import centers as center_rules
from . import incremental
from .backends import get_backend
from .data import DataError, new_points, to_points
from .dc import check_dc, dc_from_percent
from .entropy import EntropyDc, dc_from_entropy
from .hierarchy import graph_spanning_forest, single_linkage_chain

KERNELS = ("cutoff", "gaussian")
NEIGHBOR_MODES = ("exact", "approximate")
Progress = Callable[[str, float], None]
_HELD = threading.local()  # the IndexedPoints locks this thread holds now (``locks``: one entry per hold)


def index_wanted_elsewhere() -> bool:
    """Whether another thread waits for an IndexedPoints lock this thread holds now: a progress callback called
    from inside a computation that waits on something (another session's page opening) should go on instead."""
    return any(lock.waiting for lock in getattr(_HELD, "locks", ()))


class _IndexLock:
    """A re-entrant lock that knows how many threads wait for it, and which locks each thread holds."""

    def __init__(self):
        self._lock = threading.RLock()
        self._count = threading.Lock()  # guards ``waiting``
        self.waiting = 0

    def acquire(self, blocking: bool = True) -> bool:
        if not self._lock.acquire(blocking=False):
            if not blocking:
                return False
            with self._count:
                self.waiting += 1
            try:
                self._lock.acquire()
            finally:
                with self._count:
                    self.waiting -= 1
        if not hasattr(_HELD, "locks"):
            _HELD.locks = []
        _HELD.locks.append(self)
        return True

    def release(self) -> None:
        _HELD.locks.remove(self)
        self._lock.release()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def copy_sharing(source, memo: dict, shared: tuple, skip: tuple[str, ...] = ()):
    """A deep copy of ``source``'s attributes in a new object of its class (for ``__deepcopy__``), sharing the
    ``shared`` objects (a backend module, a Dask client: what cannot or must not be copied); the ``skip``
    attributes are left to the caller."""
    for obj in shared:
        memo[id(obj)] = obj
    clone = object.__new__(type(source))
    memo[id(source)] = clone
    for name, value in vars(source).items():
        if name not in skip:
            setattr(clone, name, copy.deepcopy(value, memo))
    return clone


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
    order_rho: Any  # rho in that order (what an incremental update merges by)


@dataclass(frozen=True)
class SpanningTree:
    """The mutual-reachability MST for one min_samples, with what DBSCAN at any eps needs, on the backend's device
    except the edges (host NumPy, for the hierarchy code)."""

    min_samples: int
    core_sq: Any  # (N,) float32 squared core distance, the point itself counted (+inf: fewer points than that)
    neighbour_ids: Any  # (N, k) int64, nearest first, k >= min_samples - 1: every eps-neighbour of a non-core point
    neighbour_sq: Any  # (N, same) float32
    u: np.ndarray  # (N - 1,) int64, u < v, sorted by (w2, u, v)
    v: np.ndarray
    w2: np.ndarray  # (N - 1,) float32 squared mutual-reachability distance
    chain: Any  # (N,) int64: every single-linkage cluster is a run (hierarchy.single_linkage_chain)
    gap: Any  # (N - 1,) float32
    listed_reach_sq: Any = None  # approximate mode: (N,) squared distance of each point's last listed neighbour


class IndexedPoints:
    """Points on a backend's device, their VP-tree, and an LRU of ``Fields`` by (kernel, dc). Thread-safe.

    Parameters
    ----------
    X : array-like (N, d), DataFrame or path; validated by ``dpstudio.engine.to_points``.
    backend : {"auto", "cpu", "gpu"}
    progress : optional callback ``progress(phase, fraction)``, here for the "index" phase.
    client : optional ``dask.distributed.Client``: rho and delta are computed on its workers
        (``dpstudio.engine.distributed``), with the same results; everything else here.
    """

    CACHED_FIELDS = 4  # (kernel, dc) results kept, so moving a slider back is free
    CACHED_TREES = 4  # spanning trees (one per min_samples) kept
    NEIGHBOURS = 16  # at least this many neighbours are listed, so min_samples up to 17 reuses one list

    def __init__(self, X, backend: str = "auto", progress: Progress | None = None, client=None):
        values = to_points(X).values
        self.backend = get_backend(backend)
        self.client = client
        self._replicas = None
        started = time.perf_counter()
        self.points = self.backend.asarray(values)
        self.index = self.backend.build_vptree(self.points, progress=_phase(progress, "index"))
        self.backend.synchronize()
        self.index_seconds = time.perf_counter() - started
        self.rows = np.arange(values.shape[0])
        self._next_row = values.shape[0]
        # counts the changes of the points (insert, delete): what an estimator computed at another version is of
        # other points, and it says so (``IndexedEstimator._require_fit``) where it would mix them with these
        self.version = 0
        self._fields: OrderedDict[tuple[str, float], Fields] = OrderedDict()
        self._dc_by_percent: dict[float, float] = {}
        self._dc_by_entropy: EntropyDc | None = None
        self._neighbours: tuple[Any, Any] | None = None
        self._trees: OrderedDict[int, SpanningTree] = OrderedDict()
        # One computation at a time: two sessions asking for the same dc compute it once.
        self._lock = _IndexLock()
        if client is not None:
            self._replicas_on_workers()  # the workers' trees now, so that an error in the cluster shows at once

    def __deepcopy__(self, memo: dict) -> IndexedPoints:
        """An independent copy (its own points, tree and caches) to insert into or delete from while others keep
        using this one: an estimator deep-copied with it works on the copy. The backend and client are shared."""
        with self._lock:
            # the workers' trees are shared until either copy's points change
            clone = copy_sharing(self, memo, shared=(self.backend, self.client, self._replicas), skip=("_lock",))
        clone._lock = _IndexLock()
        return clone

    @property
    def n_points(self) -> int:
        return self.index.n_points

    @property
    def n_dims(self) -> int:
        return self.index.n_dims

    @contextmanager
    def unless_busy(self) -> Iterator[bool]:
        """Hold the index (its computations and changes wait) if no other thread holds it now: yields True; else
        yields False at once. For a caller that must not wait, such as a server's event loop."""
        held = self._lock.acquire(blocking=False)
        try:
            yield held
        finally:
            if held:
                self._lock.release()

    def number_rows(self, rows, next_row: int) -> None:
        """Give the points the stable row numbers ``rows`` (one each, all different); points inserted later count
        on from ``next_row``, which must be past every one of them."""
        rows = np.asarray(rows, dtype=np.int64).reshape(-1)
        # all different: at once where they increase (a stream's rows do), else by a sort
        different = bool(np.all(rows[1:] > rows[:-1])) or np.unique(rows).size == rows.size
        if rows.shape[0] != self.n_points or not different:
            raise ValueError(f"expected {self.n_points} different row numbers, got {rows.size}")
        if rows.size and next_row <= rows.max():
            raise ValueError(f"the next row ({next_row}) must come after the last one given ({rows.max()})")
        with self._lock:
            self.rows, self._next_row = rows.copy(), int(next_row)

    def insert(self, X, timings: dict | None = None) -> np.ndarray:
        """Add the points X (m, d); returns their indices (the next ones). The tree, every cached (kernel, dc) field
        and the nearest-neighbour lists are updated; spanning trees and percent-rule dc values, which every point may
        change, are dropped and recomputed when next asked for. ``timings["update"]``: the seconds."""
        values = new_points(X, self.n_dims)
        backend, xp = self.backend, self.backend.xp
        with self._lock:
            started = time.perf_counter()
            n_old = self.n_points
            if not values.shape[0]:
                return np.arange(n_old, n_old)
            self.version += 1  # first: a result read while the points change is of another version, never this one
            points = xp.concatenate((self.points, backend.asarray(values)))
            tree = backend.tree_insert(self.index, points, n_old)
            position = backend.positions_of(tree)
            for key, fields in self._fields.items():
                self._fields[key] = incremental.inserted(backend, tree, fields, n_old, position)
            if self._neighbours is not None:
                self._neighbours = backend.knn_inserted(self.index, tree, *self._neighbours, n_old)
            self.points, self.index = points, tree
            self.rows = np.concatenate((self.rows, np.arange(self._next_row, self._next_row + values.shape[0])))
            self._next_row += values.shape[0]
            self._forget_neighbourhoods()
            backend.synchronize()
            _record(timings, "update", time.perf_counter() - started)
            return np.arange(n_old, self.n_points)

    def delete(self, indices, timings: dict | None = None) -> np.ndarray:
        """Remove the points at ``indices``; returns every old index's new index (-1: deleted). At least 2 points
        must stay. Updated and dropped as in ``insert``."""
        dead = np.unique(point_indices(indices, "indices to delete"))
        if dead.size and (dead[0] < 0 or dead[-1] >= self.n_points):
            raise DataError(f"point index {dead[0] if dead[0] < 0 else dead[-1]} is out of range for {self.n_points} points")
        if self.n_points - dead.size < 2:
            raise DataError(f"deleting {dead.size:,} of {self.n_points:,} points would leave fewer than 2")
        alive = np.ones(self.n_points, np.int64)
        alive[dead] = 0
        mapping = np.where(alive > 0, np.cumsum(alive) - 1, -1)
        if not dead.size:
            return mapping
        backend, xp = self.backend, self.backend.xp
        with self._lock:
            started = time.perf_counter()
            self.version += 1  # first, as in insert
            if xp is np:
                on_device = mapping
            else:  # built on the device from the few deleted indices: no copy of an N-sized array
                alive_on_device = xp.ones(self.n_points, xp.int64)
                alive_on_device[xp.asarray(dead)] = 0
                on_device = xp.where(alive_on_device > 0, xp.cumsum(alive_on_device) - 1, -1)
            points = xp.ascontiguousarray(self.points[on_device >= 0])
            old_tree, old_position = self.index, backend.positions_of(self.index)
            tree = backend.tree_delete(old_tree, points, on_device)
            position = backend.positions_of(tree)
            for key, fields in self._fields.items():
                self._fields[key] = incremental.deleted(backend, old_tree, tree, fields, on_device, old_position, position)
            if self._neighbours is not None:
                self._neighbours = backend.knn_deleted(tree, *self._neighbours, on_device)
            self.points, self.index = points, tree
            self.rows = self.rows[mapping >= 0]
            self._forget_neighbourhoods()
            backend.synchronize()
            _record(timings, "update", time.perf_counter() - started)
            return mapping

    def _replicas_on_workers(self):
        """The workers of the Dask client with a tree each (built on first use after each change of the points)."""
        if self._replicas is None:
            from .distributed import Replicas  # noqa: PLC0415  (imports nothing of Dask's until asked)

            self._replicas = Replicas(self.client, self.backend.to_numpy(self.points), self.backend.name)
        return self._replicas

    def forget_caches(self, keep: tuple[str, float] | None = None) -> None:
        """Drop every cached result but the fields of ``keep`` = (kernel, dc): what is dropped is computed again when
        next asked for (a copy kept to go back to holds the points, the tree and the fields shown)."""
        with self._lock:
            kept = {key: fields for key, fields in self._fields.items() if key == (keep[0], float(keep[1]))} if keep else {}
            self._fields = OrderedDict(kept)
            self._neighbours = None
            self._forget_neighbourhoods()

    def _forget_neighbourhoods(self) -> None:
        """Drop what every point's change may change and is not updated in place."""
        self._replicas = None
        self._dc_by_percent.clear()
        self._trees.clear()
        self._dc_by_entropy = None

    def dc_for_percent(self, percent: float, timings: dict | None = None) -> float:
        """dc from the percent rule (``dpstudio.engine.dc``, which checks the percent), remembered per percent."""
        with self._lock:
            if percent not in self._dc_by_percent:
                started = time.perf_counter()
                self._dc_by_percent[percent] = dc_from_percent(self.points, percent, xp=self.backend.xp)
                _record(timings, "dc", time.perf_counter() - started)
            return self._dc_by_percent[percent]

    def dc_for_entropy(self, timings: dict | None = None) -> float:
        """dc from the entropy rule (``dpstudio.engine.entropy``), computed once."""
        return self.entropy_dc(timings).dc

    def entropy_dc(self, timings: dict | None = None) -> EntropyDc:
        """The entropy rule's dc with its sigma and H curve, computed once (it reads the nearest neighbours)."""
        with self._lock:
            if self._dc_by_entropy is None:
                neighbour_sq = self.neighbours(self.NEIGHBOURS, timings=timings)[1]  # (the lists kept anyway)
                started = time.perf_counter()
                self._dc_by_entropy = dc_from_entropy(self.backend, self.index, self.points, neighbour_sq)
                self.backend.synchronize()
                _record(timings, "dc", time.perf_counter() - started)
            else:
                _record(timings, "dc", 0.0)
            return self._dc_by_entropy

    def fields(
        self, kernel: str, dc: float, progress: Progress | None = None, timings: dict | None = None, cache: bool = True
    ) -> Fields:  # fmt: skip
        """rho, delta, parent, order and gamma for (kernel, dc); computed from the index unless cached.

        ``timings`` receives the seconds spent on "rho" and "delta" (0.0 for a cached result). ``cache=False``
        keeps a new result out of the cache, so a sweep over many dc values does not push out the recent ones.
        """
        check_kernel(kernel)
        check_dc(dc, kernel)
        key = (kernel, float(dc))
        with self._lock:
            if key in self._fields:
                self._fields.move_to_end(key)
                _record(timings, "rho", 0.0)
                _record(timings, "delta", 0.0)
                return self._fields[key]
            if self.client is None:
                started = time.perf_counter()
                rho = self.backend.rho(self.index, float(dc), kernel, progress=_phase(progress, "rho"))
                self.backend.synchronize()
                _record(timings, "rho", time.perf_counter() - started)
                fields = self.fields_from_rho(kernel, float(dc), rho, progress, timings)
            else:  # rho, delta and the density order in one round on the workers
                graph = self._replicas_on_workers().decision_graph(self.index, float(dc), kernel, progress, timings)
                fields = self._fields_of(kernel, float(dc), *graph)
            if cache:
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
        if self.client is None:
            delta, parent = backend.delta(self.index, rank, progress=_phase(progress, "delta"))
        else:  # the workers rank rho themselves
            delta, parent = self._replicas_on_workers().delta_of_rho(self.index, rho, progress)
        backend.synchronize()
        _record(timings, "delta", time.perf_counter() - started)
        return self._fields_of(kernel, dc, rho, delta, parent, order)

    def _fields_of(self, kernel: str, dc: float, rho, delta, parent, order) -> Fields:
        gamma = center_rules.ranking_gamma(rho, delta, int(order[0]), self.backend.xp)
        return Fields(kernel, dc, rho, delta, parent, order, gamma, rho[order])

    def neighbours(self, k: int, progress: Progress | None = None, timings: dict | None = None) -> tuple[Any, Any]:
        """(ids, squared distances) of every point's k nearest other points, nearest first, ties by smaller index
        (``-1`` / inf past the N - 1 others); one search serves every k up to the largest asked so far."""
        with self._lock:
            if self._neighbours is None or self._neighbours[0].shape[1] < k:
                started = time.perf_counter()
                self._neighbours = self.backend.knn(self.index, max(k, self.NEIGHBOURS), progress=_phase(progress, "neighbours"))
                self.backend.synchronize()
                _record(timings, "neighbours", time.perf_counter() - started)
            else:
                _record(timings, "neighbours", 0.0)
            ids, sq = self._neighbours
            return ids[:, :k], sq[:, :k]

    def spanning_tree(
        self, min_samples: int, neighbors: str = "exact", progress: Progress | None = None, timings: dict | None = None
    ) -> SpanningTree:  # fmt: skip
        """Core distances and the mutual-reachability MST for ``min_samples`` (cached per value and mode).

        neighbors="approximate" takes KG-DBSCAN's way for high dimensions: 2 * min_samples neighbours listed (by
        NN-descent on the CPU, ``cpu.nndescent``; by the exact kNN on the GPU), and the least spanning forest of the
        listed edges."""
        check_min_samples(min_samples)
        if neighbors not in NEIGHBOR_MODES:
            raise ValueError(f"neighbors must be one of {', '.join(NEIGHBOR_MODES)}, got {neighbors!r}")
        key = (min_samples, neighbors)
        with self._lock:
            if key in self._trees:
                self._trees.move_to_end(key)
                _record(timings, "neighbours", 0.0)
                _record(timings, "mst", 0.0)
                return self._trees[key]
            tree = self._exact_tree(min_samples, progress, timings) if neighbors == "exact" else self._graph_tree(min_samples, timings)
            self._trees[key] = tree
            if len(self._trees) > self.CACHED_TREES:
                self._trees.popitem(last=False)
            return tree

    def _exact_tree(self, min_samples: int, progress: Progress | None, timings: dict | None) -> SpanningTree:
        backend, xp = self.backend, self.backend.xp
        ids, sq = self.neighbours(max(min_samples - 1, 1), progress, timings)
        core_sq = _core_sq(sq, min_samples, xp)
        started = time.perf_counter()
        edges = backend.mst(self.index, core_sq, neighbours=self._neighbours, progress=_phase(progress, "mst"))
        u, v, w2 = (backend.to_numpy(a) for a in edges)
        chain, gap = single_linkage_chain(u, v, w2, self.n_points)
        _record(timings, "mst", time.perf_counter() - started)
        return SpanningTree(min_samples, core_sq, xp.ascontiguousarray(ids), xp.ascontiguousarray(sq), u, v, w2,
                            backend.asarray(chain), backend.asarray(gap))  # fmt: skip

    def _graph_tree(self, min_samples: int, timings: dict | None) -> SpanningTree:
        backend, k = self.backend, 2 * min_samples
        started = time.perf_counter()
        if backend.name == "cpu":
            from .cpu.nndescent import approximate_knn  # noqa: PLC0415  (imports pynndescent, an optional extra)

            ids, sq = approximate_knn(self.points, k)
        else:  # the tensor-core kNN lists are exact and fast enough in high d that NN-descent is not needed (README)
            ids, sq = (backend.to_numpy(a) for a in backend.knn(self.index, k, progress=None))
        _record(timings, "neighbours", time.perf_counter() - started)
        core_sq = _core_sq(sq, min_samples, np)
        started = time.perf_counter()
        u, v, w2 = graph_spanning_forest(ids, sq, core_sq)
        chain, gap = single_linkage_chain(u, v, w2, self.n_points)
        _record(timings, "mst", time.perf_counter() - started)
        on_device = (backend.asarray(a) for a in (core_sq, ids, sq, chain, gap, sq[:, -1].copy()))
        core_sq, ids, sq, chain, gap, reach = on_device
        return SpanningTree(min_samples, core_sq, ids, sq, u, v, w2, chain, gap, listed_reach_sq=reach)


def _core_sq(sq, min_samples: int, xp):
    """Squared core distances from nearest-first lists: the (min_samples - 1)-th other point, the point itself
    being the first of its min_samples (0 for min_samples = 1)."""
    if min_samples == 1:
        return xp.zeros(sq.shape[0], xp.float32)
    return xp.ascontiguousarray(sq[:, min_samples - 2])


def point_indices(indices, what: str) -> np.ndarray:
    """``indices`` as a 1-D int64 array of point indices; a boolean mask or fractions are refused, not cast (a mask
    cast to 0s and 1s named points 0 and 1)."""
    array = np.asarray(indices).reshape(-1)
    if array.size and not np.issubdtype(array.dtype, np.integer):
        raise TypeError(f"{what} must be whole point indices, got dtype {array.dtype}"
                        + (" (a boolean mask: use np.flatnonzero(mask))" if array.dtype == bool else ""))  # fmt: skip
    return array.astype(np.int64)


def check_min_samples(min_samples) -> None:
    if isinstance(min_samples, bool) or not isinstance(min_samples, (int, np.integer)) or min_samples < 1:
        raise ValueError(f"min_samples must be a whole number >= 1, got {min_samples!r}")


def check_kernel(kernel: str) -> None:
    if kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {', '.join(KERNELS)}, got {kernel!r}")


def _record(timings: dict | None, phase: str, seconds: float) -> None:
    if timings is not None:
        timings[phase] = seconds


def _phase(progress: Progress | None, phase: str):
    return None if progress is None else (lambda fraction: progress(phase, fraction))
