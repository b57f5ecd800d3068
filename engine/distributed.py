"""Exact density peaks over a Dask cluster: the points replicated on every worker, the queries partitioned.

The points go to every worker once (one broadcast), and each worker builds the same VP-tree (the build is
deterministic and cheap next to the queries). rho is computed by ranges of leaves, one range per worker, cut so
that each range holds the same share of an estimated cost (``leaf_costs``: dense leaves cost far more than their
count); on the CPU, 2-D cut-off rho, which one process takes from the strip sweep, by interleaved shares of its
strips (so every worker gets a share of each dense region). delta and parent by equal ranges of leaves, each CPU
worker holding the neighbour lists of its own range only. On the GPU a share of cut-off rho counts every pair of
its points (one process counts each pair once, for both points, which a share cannot: the other point may be
another worker's), so one GPU worker does about twice one process's rho work. Shares of leaves come back in the
workers' tree order (checked to be the same on every worker), strip shares with their point indices; the
gathered arrays are exactly a single backend's (the same float32 distance rule and tie rules in the same
kernels). Labels, halo and everything else stay on the caller's backend. cuML's multi-GPU DBSCAN distributes the same way (data broadcast, rows
partitioned).

``Replicas`` offers a backend's ``rho`` and ``delta``, so ``IndexedPoints(X, client=client)`` (and
``DensityPeaks(client=client)``) compute their decision graph here. Dask is an optional dependency
(``pip install 'dpstudio[distributed]'``), imported only when a client is given.

Past one worker's memory the same scheme extends to spatial partitions: each worker holds one region of the
tree (a subtree's contiguous run of positions) plus every point within dc (3 dc for the Gaussian kernel) of it,
its halo; rho of its own points is then complete, and delta of all but the local density maxima, which (a few per
region) search the other regions. See the README's "Scale-out" section for what it would cost.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import threading

import numpy as np

from .backends import get_backend
from .cpu import strips
from .cpu.density import leaf_costs, sampled_mean_rho
from .cpu.search import neighbour_graph
from .vptree import NeighbourGraph, VPTree


class Replicas:
    """The same VP-tree on every worker of a Dask ``client``, built on the ``backend`` ("cpu" or "gpu") from one
    broadcast of ``points`` (N, d) float32; ``rho`` and ``delta`` take the same arguments as a backend's and give
    the same results, on the caller's device.

    Shares are runs of leaves, so each worker returns its values in tree order alone: the gathered runs are the
    whole tree order, which the workers' tree order (fetched once) puts back in point order.
    """

    def __init__(self, client, points: np.ndarray, backend: str = "cpu"):
        from distributed import wait  # noqa: PLC0415  (dask is optional)

        self.client = client
        self.backend = backend
        self._engine = get_backend(backend)
        self.workers = sorted(client.nthreads())
        if not self.workers:
            raise ValueError("the Dask cluster has no workers")
        self.n_points = points.shape[0]
        # kept, so that a lost worker's tree can be built again on another one
        self._points = client.scatter(np.ascontiguousarray(points, np.float32), broadcast=True, hash=False)
        self.trees = [self._on(w, _build, self._points, backend) for w in self.workers]
        wait(self.trees)
        for tree in self.trees:
            if tree.status == "error":
                tree.result()  # raises the worker's error here (a GPU asked of workers without one, ...)
        signatures = set(self.client.gather([self._on(w, _signature, t) for w, t in zip(self.workers, self.trees)]))
        if len(signatures) != 1:
            raise RuntimeError(f"the workers built {len(signatures)} different trees over the same points")
        depth = signatures.pop()[0]
        # delta costs nearly the same per point: equal ranges of leaves, fixed, so each lists its neighbours once
        self.n_leaves = 1 << depth
        self.leaf_cuts = np.linspace(0, self.n_leaves, len(self.workers) + 1).astype(np.int64)
        self.graphs = [self._on(w, _graph_rows, t, backend, a, b) for w, t, a, b in self._shares(self.leaf_cuts)]
        self._tree_ids = self._on(self.workers[0], _tree_ids, self.trees[0])  # the same on every worker (checked)
        self._ids = None  # those on the caller's device, once fetched

    def rho(self, tree, dc: float, kernel: str, progress=None):
        """rho in original order; ``tree`` is the caller's index over the same points (its shape may differ from
        the workers' trees: an index updated by inserts and deletes is not the one a fresh build gives)."""
        self._check(tree)
        if self.backend == "cpu" and kernel == "cutoff" and tree.n_dims == 2:  # the strip sweep, in shares of strips
            mean_rho = sampled_mean_rho(tree, dc)  # one strip height for all, so the shares fit together
            parts = len(self.workers)
            futures = [self._on(w, _strips_share, t, dc, mean_rho, k, parts) for k, (w, t) in enumerate(zip(self.workers, self.trees))]
            out = np.full(self.n_points, np.nan)
            for ids, values in self._gather(futures, progress):
                out[ids] = values
            if np.isnan(out).any():  # every point belongs to exactly one share: a gap is a bug, never a result
                raise RuntimeError("the strip shares left points without rho")
            return out
        if len(self.workers) == 1:  # nothing to balance
            cuts = np.array([0, self.n_leaves])
        else:
            cuts = balanced_cuts(self._on(self.workers[0], _leaf_costs, self.trees[0], dc, kernel).result(), len(self.workers))
        futures = [self._on(w, _rho_of_leaves, t, self.backend, dc, kernel, a, b) for w, t, a, b in self._shares(cuts)]
        return self._in_point_order(np.concatenate(self._gather(futures, progress)))

    def delta(self, tree, rank, progress=None):
        """(delta, parent) in original order, given every point's density rank (0 = densest)."""
        self._check(tree)
        shared_rank = self.client.scatter(_compact(_host(rank), self.n_points), broadcast=True, hash=False)
        futures = [
            self._on(w, _delta_of_leaves, t, g, self.backend, shared_rank, a, b)
            for (w, t, a, b), g in zip(self._shares(self.leaf_cuts), self.graphs)
        ]  # fmt: skip
        shares = self._gather(futures, progress)
        delta2 = self._in_point_order(np.concatenate([d2 for d2, _ in shares]))
        parent = self._in_point_order(np.concatenate([p for _, p in shares]))
        xp = self._engine.xp
        return xp.sqrt(delta2.astype(xp.float64)), parent.astype(xp.int64)

    def _in_point_order(self, values_tree: np.ndarray):
        """Values in the workers' tree order -> point order, on the caller's device (a GPU scatters them there)."""
        if self._ids is None:
            self._ids = self._engine.asarray(self._tree_ids.result())
        values = self._engine.asarray(values_tree)
        out = self._engine.xp.empty_like(values)
        out[self._ids] = values
        return out

    def _on(self, worker: str, function, *args):
        """``function(*args)`` on ``worker`` (where its tree lives); elsewhere if that worker is gone."""
        return self.client.submit(function, *args, workers=[worker], allow_other_workers=True, pure=False)

    def _shares(self, cuts: np.ndarray):
        """(worker, its tree, first leaf, last leaf) for each worker's share between consecutive cuts."""
        return [(w, t, int(a), int(b)) for w, t, a, b in zip(self.workers, self.trees, cuts[:-1], cuts[1:])]

    def _check(self, tree) -> None:
        if tree.n_points != self.n_points:
            raise ValueError(f"the index holds {tree.n_points} points, the workers {self.n_points}")

    def _gather(self, futures, progress) -> list:
        """The futures' results in their order, progress reported as each arrives."""
        from distributed import as_completed  # noqa: PLC0415  (dask is optional)

        for done, _ in enumerate(as_completed(futures), start=1):
            if progress is not None:
                progress(done / len(futures))
        return [future.result() for future in futures]


def balanced_cuts(costs: np.ndarray, parts: int) -> np.ndarray:
    """parts + 1 leaf boundaries, 0 first and len(costs) last, cutting ``costs`` into runs of nearly equal sums."""
    total = np.cumsum(costs, dtype=np.float64)
    targets = total[-1] * np.arange(1, parts) / parts
    inner = np.searchsorted(total, targets, side="left") + 1  # a run ends at the leaf that reaches its share
    return np.concatenate(([0], np.minimum(inner, len(costs)), [len(costs)])).astype(np.int64)


# ---------------------------------------------------------------------------------------------------------------
# on the workers: each returns NumPy arrays


_ONE_TASK_AT_A_TIME = threading.Lock()


def _worker_task(function=None, *, alone: bool = False):
    """A task's body: one at a time per worker process (each already uses every thread the worker has, and Numba's
    workqueue layer aborts on two parallel regions at once), with Numba's threads set to the worker's; or, for a
    task the caller waits on ``alone`` while the other workers are idle, to every core this process may run on (a
    GPU worker has one thread, and its host passes ran on one core: the leaf costs, 0.45 s of a 20M call)."""
    if function is None:
        return functools.partial(_worker_task, alone=alone)

    def run(*args):
        import numba  # noqa: PLC0415
        from distributed import get_worker  # noqa: PLC0415

        if alone:  # every core this process may run on
            threads = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        else:
            threads = get_worker().state.nthreads
        with _ONE_TASK_AT_A_TIME:
            numba.set_num_threads(max(1, min(numba.config.NUMBA_NUM_THREADS, threads)))
            return function(*args)

    run.__name__ = run.__qualname__ = function.__name__  # the task's name in Dask's dashboard and logs
    run.__module__ = function.__module__
    return run


@_worker_task
def _build(points: np.ndarray, backend: str) -> VPTree:
    engine = get_backend(backend)
    if engine.name == "cpu":
        return engine.build_vptree(points, graph=False)  # each worker lists the neighbours of its own share only
    return engine.build_vptree(engine.asarray(points))


@_worker_task
def _signature(tree: VPTree) -> tuple[int, str]:
    return tree.depth, hashlib.blake2b(_host(tree.ids).tobytes(), digest_size=16).hexdigest()


@_worker_task
def _graph_rows(tree: VPTree, backend: str, first_leaf: int, last_leaf: int) -> NeighbourGraph | None:
    if backend != "cpu":  # the GPU's delta searches the tree
        return None
    return neighbour_graph(tree, first=int(tree.leaf_start[first_leaf]), last=int(tree.leaf_start[last_leaf]))


@_worker_task(alone=True)  # the rho shares wait for the cuts
def _leaf_costs(tree: VPTree, dc: float, kernel: str) -> np.ndarray:
    """``leaf_costs`` on the CPU, from the tree's node balls alone (a GPU tree's are copied: a few MB)."""
    small = {name: _host(getattr(tree, name)) for name in ("leaf_start", "center", "cover_radius")}
    return leaf_costs(dataclasses.replace(tree, coords=np.empty((tree.n_dims, 0), np.float32), **small), dc, kernel)


@_worker_task
def _tree_ids(tree: VPTree) -> np.ndarray:
    return _host(tree.ids)


@_worker_task
def _rho_of_leaves(tree: VPTree, backend: str, dc: float, kernel: str, first_leaf: int, last_leaf: int) -> np.ndarray:
    return _host(get_backend(backend).rho_of_leaves(tree, dc, kernel, first_leaf, last_leaf))


@_worker_task
def _strips_share(tree: VPTree, dc: float, mean_rho: float, part: int, parts: int):
    rho_tree = strips.cutoff_rho(tree.coords, dc, mean_rho, part=part, parts=parts)
    mine = ~np.isnan(rho_tree)
    return tree.ids[mine], rho_tree[mine]


@_worker_task
def _delta_of_leaves(tree: VPTree, graph, backend: str, rank: np.ndarray, first_leaf: int, last_leaf: int):
    """(squared delta, parent) of the share."""
    engine = get_backend(backend)
    delta2, parent = engine.delta_of_leaves(tree, engine.asarray(rank)[tree.ids], first_leaf, last_leaf, graph)
    return _host(delta2), _compact(_host(parent), tree.n_points)


def _host(values) -> np.ndarray:
    return values.get() if hasattr(values, "get") else np.asarray(values)


def _compact(indices: np.ndarray, n_points: int) -> np.ndarray:
    """Point indices or ranks (below ``n_points``) as int32 where they fit: half the bytes to send."""
    return indices.astype(np.int32) if n_points < 2**31 else indices
