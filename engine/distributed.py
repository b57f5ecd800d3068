"""Exact density peaks over a Dask cluster: the points replicated on every worker, the queries partitioned.

The points go to every worker once (one broadcast), and each worker builds the same VP-tree (the build is
deterministic and cheap next to the queries). rho is computed by ranges of leaves, one range per worker, cut so
that each range holds the same share of an estimated cost (``costs_of_leaves`` of a sample of leaves, which every
worker measures itself, so no task waits for another's: dense leaves cost far more than their count); on the CPU,
2-D cut-off rho, which one process takes from the strip sweep, by interleaved shares of its strips (so every worker
gets a share of each dense region). On the GPU, cut-off rho counts each pair once, for both points, as one process
does: a range counts the pairs with a point in it and the other in the same leaf or after it, and sends, with its
own points' counts, its part of the later points' (only the non-zero ones where they are few, as at a small dc);
whoever gathers the shares adds them up, so no range waits for another's.

The rho shares stay on the workers, which send them to each other: every worker ranks all points by density
itself (the rule of one process, ties by index) and computes delta and parent of an equal range of leaves, each CPU
worker holding the neighbour lists of its own range only. So per call the caller sends the tasks alone and
receives, in one gather, squared delta (float32) and parents (int32) by runs, and from the first worker rho in
point order (cut-off counts as uint32) and, GPU to GPU, the density order (int32), which it would otherwise make
again (at 100M points on two H100s, adding up the runs and ranking took the caller 25 ms after the last task; a
GPU worker sends nothing before its delta kernels are done anyway, as sending a CuPy array synchronises its
device; through host memory and TCP, at about 1 GB/s, the order would cost more than the caller's sort). GPU
workers keep these arrays on their GPU where Dask's comms are UCX (GPU to GPU, over NVLink where there is one;
``local_cluster(..., protocol="ucx")``), and copy them to host memory for TCP. Runs of leaves come back in the
workers' tree order (checked to be the same on every worker), strip shares with their point indices; the
gathered arrays are exactly a single backend's (the same float32 distance rule and tie rules in the same
kernels). Labels, halo and everything else stay on the caller's backend. cuML's multi-GPU DBSCAN distributes the
same way (data broadcast, rows partitioned).

``Replicas.decision_graph`` gives a backend's rho, delta, parent and density order, so ``IndexedPoints(X,
client=client)`` (and ``DensityPeaks(client=client)``) compute their decision graph here. Dask is an optional
dependency (``pip install 'dpstudio[distributed]'``), imported only when a client is given.

Past one worker's memory the same scheme extends to spatial partitions: each worker holds one region of the
tree (a subtree's contiguous run of positions) plus every point within dc (3 dc for the Gaussian kernel) of it,
its halo; rho of its own points is then complete, and delta of all but the local density maxima, which (a few per
region) search the other regions. See the README's "Scale-out" section for what it would cost.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import logging
import threading
import time

import numpy as np

from .backends import get_backend
from .cpu import strips
from .cpu.density import sampled_leaves, sampled_mean_rho
from .cpu.search import neighbour_graph
from .vptree import NeighbourGraph, VPTree


class Replicas:
    """The same VP-tree on every worker of a Dask ``client``, built on the ``backend`` ("cpu" or "gpu") from one
    broadcast of ``points`` (N, d) float32; ``decision_graph`` gives a backend's rho, delta, parent and density
    order, on the caller's device.

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
        signatures = set(_fetched([self._on(w, _signature, t) for w, t in zip(self.workers, self.trees)]))
        if len(signatures) != 1:
            raise RuntimeError(f"the workers built {len(signatures)} different trees over the same points")
        depth = signatures.pop()[0]
        # delta costs nearly the same per point: equal ranges of leaves, fixed, so each lists its neighbours once
        self.n_leaves, parts = 1 << depth, len(self.workers)
        self.equal_cuts = Cuts(self.n_leaves, parts, fixed=np.linspace(0, self.n_leaves, parts + 1).astype(np.int64))
        # rho's cost varies with the density: ranges cut from the costs of sampled leaves, which every worker
        # measures itself: 512 per worker on GPUs (0.2 ms for 1,024), 1,024 in all on CPUs (whose pass grows with it)
        sampled = 512 * parts if backend == "gpu" else 1024
        self.balanced_cuts = Cuts(self.n_leaves, parts, leaves=sampled_leaves(self.n_leaves, sampled) if parts > 1 else None)
        self.graphs = [self._on(w, _graph_rows, t, backend, self.equal_cuts, k) for k, w, t in self._shares()]
        self._tree_ids = self._on(self.workers[0], _tree_ids, self.trees[0])  # the same on every worker (checked)
        self._ids = None  # those on the caller's device, once fetched

    def decision_graph(self, tree, dc: float, kernel: str, progress=None, timings: dict | None = None):
        """(rho, delta, parent, density order) in point order, on the caller's device; ``tree`` is the caller's
        index over the same points (its shape may differ from the workers' trees: an index updated by inserts and
        deletes is not the one a fresh build gives). ``progress(phase, fraction)`` and ``timings`` as
        ``IndexedPoints.fields``' ("rho": until every share of rho is done).

        The rho shares stay on the workers: every worker ranks the points from all shares itself (the rule of one
        process) and computes delta of its own share; the first also sends rho in point order, and over UCX the
        density order, so the caller neither adds up the shares nor ranks the points again. A call is two
        dependent tasks per worker, and the caller gathers once."""
        self._check(tree)
        timings = {} if timings is None else timings
        started = time.perf_counter()
        rho_shares = self._rho_shares(tree, dc, kernel)
        delta_shares = self._delta_shares(rho_shares, send_ranking=True)
        self._wait(rho_shares, progress, "rho")
        timings["rho"] = time.perf_counter() - started
        shares = self._gather(delta_shares, progress, "delta")
        delta, parent = self._delta_from(shares)
        rho = self._engine.asarray(shares[0]["rho"]).astype(np.float64, copy=False)
        if "order" in shares[0]:
            order = self._engine.asarray(shares[0]["order"]).astype(np.int64)
        else:  # sent only GPU to GPU: through host memory it costs more than a sort here
            order = self._engine.density_order(rho)[0]
        self._engine.synchronize()
        timings["delta"] = time.perf_counter() - started - timings["rho"]
        return rho, delta, parent, order

    def delta_of_rho(self, tree, rho, progress=None):
        """(delta, parent) in point order for given densities (in point order), which go to every worker."""
        self._check(tree)
        rho_tree = self._engine.to_numpy(self._engine.asarray(rho)[self._caller_tree_ids()])  # (fetched once)
        shared = self.client.scatter([tree_run(0, rho_tree)], broadcast=True, hash=False)  # one run: the whole tree
        return self._delta_from(self._gather(self._delta_shares(shared, send_ranking=False), progress, "delta"))

    def _rho_shares(self, tree, dc: float, kernel: str) -> list:
        """Futures of rho by shares: ``tree_run``s of leaves (GPU cut-off counts with their parts of the later
        points'), or strips' (point ids, values)."""
        if self.backend == "cpu" and kernel == "cutoff" and tree.n_dims == 2:  # the strip sweep, in shares of strips
            mean_rho = sampled_mean_rho(tree, dc)  # one strip height for all, so the shares fit together
            parts = len(self.workers)
            return [self._on(w, _strips_share, t, dc, mean_rho, k, parts) for k, w, t in self._shares()]
        cuts = self.balanced_cuts
        if self.backend == "gpu" and kernel == "cutoff":  # each pair counted once
            return [self._on(w, _cutoff_counts, t, dc, cuts, k) for k, w, t in self._shares()]
        return [self._on(w, _rho_of_leaves, t, self.backend, dc, kernel, cuts, k) for k, w, t in self._shares()]

    def _delta_shares(self, rho_shares: list, send_ranking: bool) -> list:
        """Futures of ``_delta_of_leaves`` by equal runs of leaves, each worker ranking ``rho_shares`` itself (the
        first also sending its ranking, if asked)."""
        return [
            self._on(w, _delta_of_leaves, t, g, self.backend, self.equal_cuts, k, rho_shares, send_ranking and k == 0)
            for (k, w, t), g in zip(self._shares(), self.graphs)
        ]  # fmt: skip

    def _delta_from(self, shares: list):
        """(delta, parent) in point order from the shares' runs of squared delta and parents."""
        xp, asarray = self._engine.xp, self._engine.asarray
        delta2, parent = (xp.concatenate([asarray(share[name]) for share in shares]) for name in ("delta2", "parent"))
        if not delta2.shape == parent.shape == (self.n_points,):
            raise RuntimeError(f"the workers' shares give {delta2.shape[0]} values for {self.n_points} points")
        return self._engine.delta_in_point_order(self._caller_tree_ids(), delta2, parent)

    def _caller_tree_ids(self):
        """The workers' tree order, on the caller's device (fetched once)."""
        if self._ids is None:
            self._ids = self._engine.asarray(_fetched(self._tree_ids))
        return self._ids

    def _on(self, worker: str, function, *args):
        """``function(*args)`` on ``worker`` (where its tree lives); elsewhere if that worker is gone."""
        return self.client.submit(function, *args, workers=[worker], allow_other_workers=True, pure=False)

    def _shares(self) -> list:
        """(share, worker, its tree) of each worker: worker k computes share k of every ``Cuts``."""
        return [(k, w, t) for k, (w, t) in enumerate(zip(self.workers, self.trees))]

    def _check(self, tree) -> None:
        if tree.n_points != self.n_points:
            raise ValueError(f"the index holds {tree.n_points} points, the workers {self.n_points}")

    def _wait(self, futures, progress, phase: str) -> None:
        """Until the futures are done, progress reported as each finishes."""
        from distributed import as_completed  # noqa: PLC0415  (dask is optional)

        for done, _ in enumerate(as_completed(futures), start=1):
            if progress is not None:
                progress(phase, done / len(futures))

    def _gather(self, futures, progress, phase: str) -> list:
        """The futures' results in their order, each fetched as soon as it is done (those done together, at once),
        progress reported as they arrive; a failed or cancelled future raises."""
        from distributed import as_completed  # noqa: PLC0415  (dask is optional)

        results = {}
        for batch in as_completed(futures).batches():
            results.update(zip((future.key for future in batch), _fetched(batch)))
            if progress is not None:
                progress(phase, len(results) / len(futures))
        return [results[future.key] for future in futures]


def _fetched(futures):
    """The results of a future, or a list of them, fetched from the workers that hold them. Dask's default for a client
    outside the cluster has the scheduler fetch them and pass them on: at 100M points on one H100 worker over UCX,
    5.6-6.0 s a call against 0.38 s (distributed 2026.7.1 and distributed-ucxx 0.52), and on a 2-core host over TCP,
    two results of 100 MB in 0.2-1.2 s against 0.08 s. A client made with ``direct_to_workers=False`` (a cluster
    behind a gateway, whose workers it cannot reach) keeps the scheduler's way."""
    client = (futures[0] if isinstance(futures, list) else futures).client
    return client.gather(futures, direct=client.direct_to_workers is not False)


PROTOCOLS = ("tcp", "ucx")


def ucx_comms_installed() -> bool:
    """Whether Dask's UCX comms are installed (an optional extra): distributed-ucxx, or the older ucx-py."""
    return any(importlib.util.find_spec(module) for module in ("distributed_ucxx", "ucp"))


def local_cluster(backend: str, workers: int, threads: int = 1, protocol: str = "tcp"):
    """A Dask cluster on this host for ``Replicas``: one dask-cuda worker per GPU for ``backend="gpu"``, else
    ``workers`` CPU processes of ``threads`` each. ``protocol="ucx"`` moves the GPU workers' arrays GPU to GPU
    (over NVLink where the GPUs have it), where TCP copies them through host memory and sockets; it needs the
    ucxx packages (``pip install distributed-ucxx-cu13``)."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol must be one of {', '.join(PROTOCOLS)}, got {protocol!r}")
    if protocol == "ucx" and backend != "gpu":  # CPU workers' host arrays went slower over UCX than over TCP
        raise ValueError("protocol ucx is for GPU workers (backend gpu); CPU workers use tcp")
    if protocol == "ucx" and not ucx_comms_installed():
        raise ValueError("protocol ucx needs the ucxx packages: pip install distributed-ucxx-cu13")
    quiet = {"dashboard_address": None, "silence_logs": logging.ERROR, "protocol": protocol}
    if backend == "gpu":
        try:
            from dask_cuda import LocalCUDACluster  # noqa: PLC0415  (an optional extra)
        except ImportError as exc:
            raise ValueError(f"GPU workers need dask-cuda (one worker per GPU): {exc}") from None
        ucx = {"enable_nvlink": True, "enable_tcp_over_ucx": True} if protocol == "ucx" else {}
        return LocalCUDACluster(n_workers=workers, **ucx, **quiet)
    from distributed import LocalCluster  # noqa: PLC0415

    return LocalCluster(n_workers=workers, threads_per_worker=threads, processes=True, **quiet)


def tree_run(start: int, own, later=None) -> dict:
    """A share of rho as a run of tree positions from ``start``: its ``own`` points' values, and for GPU cut-off
    counts (each pair counted once, ``cutoff_pair_totals``) its part of the ``later`` points' counts, whole or as
    (positions after the run, counts) of the non-zero ones. Every run says where it starts, so runs that do not
    tile the tree order (workers that cut differently) raise, whatever their lengths add up to. A dict, which Dask
    sends item by item (GPU to GPU over UCX), where it would pickle a class through host memory."""
    return {"start": start, "own": own} if later is None else {"start": start, "own": own, "later": later}


def counted_run_of(totals, start: int, end: int, send=lambda values: values) -> dict:
    """The ``tree_run`` of the run of tree positions [start, end) from its ``cutoff_pair_totals``, as uint32 (whole
    counts below 2**32), each array passed through ``send``: the later points' part as (positions, counts) of the
    non-zero ones where those are fewer than half (a small dc reaches few points of another run)."""
    later = totals[end:].astype(np.uint32)
    at = later.nonzero()[0]
    if 2 * at.shape[0] < later.shape[0]:
        later = (send(at.astype(np.int32)), send(later[at]))
    else:
        later = send(later)
    return tree_run(start, send(totals[start:end].astype(np.uint32)), later)


def in_point_order(shares: list, tree_ids, engine):
    """One point-order array on ``engine``'s device from rho shares: ``tree_run``s, put together (cut-off counts
    added up) and back through ``tree_ids``, or strips' (point ids, values). Shares that miss a point or give one
    twice are a bug, never a result: they raise."""
    xp, n = engine.xp, tree_ids.shape[0]
    if isinstance(shares[0], dict):
        ids, values = tree_ids, _runs_in_tree_order(shares, engine)
        if values.shape[0] != n:
            raise RuntimeError(f"the workers' shares give {values.shape[0]} values for {n} points")
    else:
        ids = xp.concatenate([engine.asarray(i) for i, _ in shares])
        values = xp.concatenate([engine.asarray(v) for _, v in shares])
        if ids.shape[0] != n or bool((xp.bincount(ids, minlength=n) != 1).any()):
            raise RuntimeError("the workers' shares do not give every point once")
    out = xp.empty(n, values.dtype)
    out[ids] = values
    return out


def _runs_in_tree_order(runs: list, engine):
    """The ``tree_run``s' values in tree order, each run starting where the one before ends; runs of cut-off counts
    with the earlier runs' parts added, less every point's pair with itself."""
    end = 0
    for run in runs:
        if run["start"] != end or ("later" in run) != ("later" in runs[0]):
            raise RuntimeError("the workers' runs do not fit together")
        end += run["own"].shape[0]
    values = engine.xp.concatenate([engine.asarray(run["own"]) for run in runs])
    if "later" not in runs[0]:
        return values
    for run in runs:
        end = run["start"] + run["own"].shape[0]
        if isinstance(run["later"], tuple):
            at, counts = (engine.asarray(part) for part in run["later"])
            inside = at.shape[0] == 0 or 0 <= int(at.min()) and int(at.max()) < values.shape[0] - end
            if at.shape != counts.shape or not inside:
                raise RuntimeError("the workers' runs of cut-off counts do not fit together")
            values[end + at] += counts
        elif run["later"].shape[0] == values.shape[0] - end:
            values[end:] += engine.asarray(run["later"])
        else:
            raise RuntimeError("the workers' runs of cut-off counts do not fit together")
    return values - 1


@dataclasses.dataclass(frozen=True, eq=False)  # (arrays: no value equality)
class Cuts:
    """Where the ``parts`` shares' runs of leaves begin and end, as a task's argument: ``fixed`` cuts, or those that
    balance the costs of the sampled ``leaves`` (given to ``run``), or one run of all ``n_leaves``."""

    n_leaves: int
    parts: int = 1
    fixed: np.ndarray | None = None
    leaves: np.ndarray | None = None

    def run(self, share: int, costs: np.ndarray | None = None) -> tuple[int, int]:
        """First and last leaf (exclusive) of the share (``costs``: those of the sampled leaves, for cuts that
        balance them)."""
        if self.fixed is not None:
            cuts = self.fixed
        elif self.leaves is None:
            cuts = np.array([0, self.n_leaves])
        elif costs is None:
            raise ValueError("cuts that balance the sampled leaves' costs need those costs")
        else:  # each sampled leaf stands for the leaves up to the next; a cut falls where a sample's run begins
            starts = np.append(self.leaves, self.n_leaves)
            cuts = starts[balanced_cuts(np.asarray(costs) * np.diff(starts), self.parts)]
        return int(cuts[share]), int(cuts[share + 1])

    def balanced_run(self, engine, tree: VPTree, dc: float, kernel: str, share: int) -> tuple[int, int]:
        """The share's run of rho's leaves, from the sampled leaves' costs measured here (the same on every worker:
        the same tree, whole numbers; where unlike GPUs rounded their node balls differently, the runs would not
        tile the tree order, which raises); the GPU counts each cut-off pair inside a run once, by its earlier
        leaf."""
        if self.leaves is None:
            return self.run(share)
        once = engine.name == "gpu" and kernel == "cutoff"
        return self.run(share, engine.to_numpy(engine.costs_of_leaves(tree, dc, kernel, self.leaves, once)))


def balanced_cuts(costs: np.ndarray, parts: int) -> np.ndarray:
    """parts + 1 leaf boundaries, 0 first and len(costs) last, cutting ``costs`` into runs of nearly equal sums."""
    total = np.cumsum(costs, dtype=np.float64)
    targets = total[-1] * np.arange(1, parts) / parts
    inner = np.searchsorted(total, targets, side="left") + 1  # a run ends at the leaf that reaches its share
    return np.concatenate(([0], np.minimum(inner, len(costs)), [len(costs)])).astype(np.int64)


# ---------------------------------------------------------------------------------------------------------------
# on the workers: trees, graphs, and arrays to send


_ONE_TASK_AT_A_TIME = threading.Lock()


def _worker_task(function):
    """A task's body: one at a time per worker process (each already uses every thread the worker has, and Numba's
    workqueue layer aborts on two parallel regions at once), with Numba's threads set to the worker's."""

    def run(*args):
        from distributed import get_worker  # noqa: PLC0415

        with _ONE_TASK_AT_A_TIME:
            _numba_threads(get_worker().state.nthreads)
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
def _graph_rows(tree: VPTree, backend: str, cuts: Cuts, share: int) -> NeighbourGraph | None:
    if backend != "cpu":  # the GPU's delta searches the tree
        return None
    first, last = _positions(tree, *cuts.run(share))
    return neighbour_graph(tree, first=first, last=last)


def _numba_threads(threads: int) -> None:
    import numba  # noqa: PLC0415

    numba.set_num_threads(max(1, min(numba.config.NUMBA_NUM_THREADS, threads)))


@_worker_task
def _tree_ids(tree: VPTree) -> np.ndarray:
    return _compact(_host(tree.ids), tree.n_points)


@_worker_task
def _rho_of_leaves(tree: VPTree, backend: str, dc: float, kernel: str, cuts: Cuts, share: int):
    engine = get_backend(backend)
    first, last = cuts.balanced_run(engine, tree, dc, kernel, share)
    rho_tree = engine.rho_of_leaves(tree, dc, kernel, first, last)
    return tree_run(_positions(tree, first, last)[0], _to_send(_compact_rho(rho_tree, kernel, tree.n_points)))


@_worker_task
def _cutoff_counts(tree: VPTree, dc: float, cuts: Cuts, share: int) -> dict:
    """The run's cut-off pair counts on the GPU, each pair counted once."""
    engine = get_backend("gpu")
    first, last = cuts.balanced_run(engine, tree, dc, "cutoff", share)
    return counted_run_of(engine.cutoff_pair_totals(tree, dc, first, last), *_positions(tree, first, last), _to_send)


@_worker_task
def _strips_share(tree: VPTree, dc: float, mean_rho: float, part: int, parts: int):
    rho_tree = strips.cutoff_rho(tree.coords, dc, mean_rho, part=part, parts=parts)
    mine = ~np.isnan(rho_tree)
    return _compact(tree.ids[mine], tree.n_points), _compact_rho(rho_tree[mine], "cutoff", tree.n_points)


@_worker_task
def _delta_of_leaves(tree: VPTree, graph, backend: str, cuts: Cuts, share: int, rho_shares: list, send_ranking: bool):
    """The share's run of squared delta and parents ("delta2", "parent"), the density ranking made here from every
    share of rho; with ``send_ranking`` also rho in point order ("rho", cut-off counts as uint32) and, where the
    arrays go GPU to GPU, the density order ("order"). A dict, sent array by array (``tree_run``)."""
    engine = get_backend(backend)
    rho = in_point_order(rho_shares, tree.ids, engine)
    order, rank = engine.density_order(rho)
    delta2, parent = engine.delta_of_leaves(tree, rank[tree.ids], *cuts.run(share), graph)
    sent = {"delta2": _to_send(delta2), "parent": _to_send(_compact(parent, tree.n_points))}
    if send_ranking:
        sent["rho"] = _to_send(rho)
        if _on_gpu_comms() and backend == "gpu":  # through host memory and TCP it would cost more than a sort
            sent["order"] = _compact(order, tree.n_points)
    return sent


def _positions(tree: VPTree, first_leaf: int, last_leaf: int) -> tuple[int, int]:
    """The run of tree positions of leaves [first_leaf, last_leaf)."""
    return int(tree.leaf_start[first_leaf]), int(tree.leaf_start[last_leaf])


def _compact_rho(values, kernel: str, n_points: int):
    """Cut-off rho as uint32 (exact: whole counts below n_points, where that is below 2**32), half the bytes to
    send; Gaussian rho as it is."""
    return values.astype(np.uint32) if kernel == "cutoff" and n_points < 2**32 else values


def _to_send(values):
    """A task's result array as it best travels: a GPU array stays on its GPU where Dask's comms move it GPU to GPU
    (UCX, over NVLink where there is one), and is copied to host memory for the others (TCP takes a NumPy array
    faster than Dask's serialisation of a CuPy one: 0.09-0.13 s less per call at 20M points, 0.23-0.29 s at 100M,
    on two H100s)."""
    return values if _on_gpu_comms() else _host(values)


def _on_gpu_comms() -> bool:
    """Whether this worker's comms move GPU arrays GPU to GPU (UCX)."""
    from distributed import get_worker  # noqa: PLC0415  (dask is optional)

    return get_worker().address.startswith("ucx")


def _host(values) -> np.ndarray:
    return values.get() if hasattr(values, "get") else np.asarray(values)


def _compact(indices: np.ndarray, n_points: int) -> np.ndarray:
    """Point indices or ranks (below ``n_points``) as int32 where they fit: half the bytes to send."""
    return indices.astype(np.int32) if n_points < 2**31 else indices
