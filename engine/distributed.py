"""Exact density peaks over a Dask cluster: the points replicated on every worker, the queries partitioned.

The points go to every worker once (one broadcast), and each worker builds the same VP-tree (the build is
deterministic and cheap next to the queries). rho is computed by ranges of leaves, one range per worker, cut so
that each range holds the same share of an estimated cost (``leaf_costs``: dense leaves cost far more than their
count); 2-D cut-off rho, which one process takes from the strip sweep, by interleaved shares of its strips (so
every worker gets a share of each dense region). delta and parent by ranges of tree positions, each worker holding
the neighbour lists of its own range only. Every worker returns its values with their point indices, so the gathered arrays are exactly a single
backend's (the same float32 distance rule and tie rules in the same kernels). Labels, halo and everything else
stay on the caller's backend. cuML's multi-GPU DBSCAN distributes the same way (data broadcast, rows
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

import numpy as np

from .cpu import strips
from .cpu.density import leaf_costs, nearest_denser_in, rho_of_leaves, sampled_mean_rho
from .cpu.index import build_vptree
from .cpu.search import neighbour_graph
from .vptree import NeighbourGraph

DISTRIBUTED_BACKENDS = ("cpu",)  # the GPU backend's kernels for ranges of leaves are not written yet


class Replicas:
    """The same VP-tree on every worker of a Dask ``client``, built from one broadcast of ``points`` (N, d)
    float32; ``rho`` and ``delta`` take the same arguments as a backend's and give the same results."""

    def __init__(self, client, points: np.ndarray, backend: str = "cpu"):
        if backend not in DISTRIBUTED_BACKENDS:
            raise ValueError(f"distributed clustering runs on the {', '.join(DISTRIBUTED_BACKENDS)} backend, not {backend!r}")
        self.client = client
        self.workers = sorted(client.scheduler_info()["workers"])
        if not self.workers:
            raise ValueError("the Dask cluster has no workers")
        self.n_points = points.shape[0]
        shared = client.scatter(np.ascontiguousarray(points, np.float32), broadcast=True, hash=False)
        self.trees = [client.submit(_build, shared, workers=[w], pure=False) for w in self.workers]
        # delta's ranges are fixed (its cost is nearly the same per point), so each worker lists its neighbours once
        self.position_cuts = np.linspace(0, self.n_points, len(self.workers) + 1).astype(np.int64)
        self.graphs = [
            client.submit(_graph_rows, tree, int(first), int(last), workers=[w], pure=False)
            for tree, w, first, last in zip(self.trees, self.workers, self.position_cuts[:-1], self.position_cuts[1:])
        ]  # fmt: skip

    def rho(self, tree, dc: float, kernel: str, progress=None) -> np.ndarray:
        """rho in original order; ``tree`` is the caller's index over the same points (its shape may differ from
        the workers' trees: an index updated by inserts and deletes is not the one a fresh build gives)."""
        self._check(tree)
        if kernel == "cutoff" and tree.n_dims == 2:  # the strip sweep, as one process computes it, in shares of strips
            mean_rho = sampled_mean_rho(tree, dc)  # one strip height for all, so the shares fit together
            futures = [
                self.client.submit(_strips_share, t, dc, mean_rho, part, len(self.workers), workers=[w], pure=False)
                for part, (t, w) in enumerate(zip(self.trees, self.workers))
            ]  # fmt: skip
        else:
            costs = self.client.submit(_leaf_costs, self.trees[0], dc, kernel, workers=self.workers[:1], pure=False)
            cuts = balanced_cuts(costs.result(), len(self.workers))
            futures = [
                self.client.submit(_rho_range, t, dc, kernel, int(first), int(last), workers=[w], pure=False)
                for t, w, first, last in zip(self.trees, self.workers, cuts[:-1], cuts[1:])
            ]  # fmt: skip
        out = np.empty(self.n_points, np.float64)
        for ids, values in self._gather(futures, progress):
            out[ids] = values
        return out

    def delta(self, tree, rank: np.ndarray, progress=None) -> tuple[np.ndarray, np.ndarray]:
        """(delta, parent) in original order, given every point's density rank (0 = densest)."""
        self._check(tree)
        shared_rank = self.client.scatter(np.asarray(rank, np.int64), broadcast=True, hash=False)
        futures = [
            self.client.submit(_delta_range, t, g, shared_rank, int(first), int(last), workers=[w], pure=False)
            for t, g, w, first, last in zip(self.trees, self.graphs, self.workers, self.position_cuts[:-1], self.position_cuts[1:])
        ]  # fmt: skip
        delta, parent = np.empty(self.n_points, np.float64), np.empty(self.n_points, np.int64)
        for ids, delta2, parents in self._gather(futures, progress):
            delta[ids] = np.sqrt(delta2.astype(np.float64))
            parent[ids] = parents
        return delta, parent

    def _check(self, tree) -> None:
        if tree.n_points != self.n_points:
            raise ValueError(f"the index holds {tree.n_points} points, the workers {self.n_points}")

    def _gather(self, futures, progress) -> list:
        from distributed import as_completed  # noqa: PLC0415  (dask is optional)

        results = []
        for done, future in enumerate(as_completed(futures), start=1):
            results.append(future.result())
            if progress is not None:
                progress(done / len(futures))
        return results


def balanced_cuts(costs: np.ndarray, parts: int) -> np.ndarray:
    """parts + 1 leaf boundaries, 0 first and len(costs) last, cutting ``costs`` into runs of nearly equal sums."""
    total = np.cumsum(costs, dtype=np.float64)
    targets = total[-1] * np.arange(1, parts) / parts
    inner = np.searchsorted(total, targets, side="left") + 1  # a run ends at the leaf that reaches its share
    return np.concatenate(([0], np.minimum(inner, len(costs)), [len(costs)])).astype(np.int64)


# ---------------------------------------------------------------------------------------------------------------
# on the workers


def _threads() -> None:
    """Numba uses as many threads as the Dask worker has, not every core of the host (workers share it)."""
    import numba  # noqa: PLC0415
    from distributed import get_worker  # noqa: PLC0415

    numba.set_num_threads(max(1, min(numba.config.NUMBA_NUM_THREADS, get_worker().state.nthreads)))


def _build(points: np.ndarray):
    _threads()
    return build_vptree(points, graph=False)


def _graph_rows(tree, first: int, last: int) -> NeighbourGraph:
    _threads()
    return neighbour_graph(tree, first=first, last=last)


def _leaf_costs(tree, dc: float, kernel: str) -> np.ndarray:
    _threads()
    return leaf_costs(tree, dc, kernel)


def _rho_range(tree, dc: float, kernel: str, first_leaf: int, last_leaf: int) -> tuple[np.ndarray, np.ndarray]:
    _threads()
    values = rho_of_leaves(tree, dc, kernel, first_leaf, last_leaf)
    return tree.ids[tree.leaf_start[first_leaf] : tree.leaf_start[last_leaf]], values


def _strips_share(tree, dc: float, mean_rho: float, part: int, parts: int) -> tuple[np.ndarray, np.ndarray]:
    _threads()
    rho_tree = strips.cutoff_rho(tree.coords, dc, mean_rho, part=part, parts=parts)
    mine = ~np.isnan(rho_tree)
    return tree.ids[mine], rho_tree[mine]


def _delta_range(tree, graph: NeighbourGraph, rank: np.ndarray, first: int, last: int):
    _threads()
    delta2, parent = nearest_denser_in(tree, np.ascontiguousarray(rank[tree.ids]), first, last, graph)
    return tree.ids[first:last], delta2, parent
