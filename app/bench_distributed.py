"""``dpstudio bench --distributed``: rho and delta on a Dask cluster of 1 worker against W workers, in one run,
with one process on the same backend as the reference every result must equal.

CPU: every worker process gets the same number of threads (the host's cores divided by the most workers
compared), so the rows are strong scaling on one host: W workers have W times the threads of one. GPU: a dask-cuda
LocalCUDACluster, one worker per GPU. A cluster's setup (the points broadcast, a tree
and a share of the neighbour lists built on every worker) is timed apart from the queries, which are what every
dc change repeats. The Dask overhead per call is the same call on 1,000 points, minus the single process's time;
Dask's floor is a call of the same shape that does no work (a task per worker, then a task per worker taking every
first task's small array, gathered straight from the workers), which no engine on Dask can go below: with it, the
best efficiency W workers could reach, every other cost split evenly, is (with 1 worker as the base)
T1 / (W * (floor_W + (T1 - floor_1) / W)).
"""

from __future__ import annotations

import os
import statistics
import sys
import time

import numpy as np

from dpstudio.engine import IndexedPoints
from dpstudio.engine.distributed import local_cluster

from .bench import SMALL_DC_MEAN_RHO, blobs, format_rows

SHAPES = {"cpu": [(1_000_000, 2, "2%"), (1_000_000, 2, f"rho~{SMALL_DC_MEAN_RHO}")],
          "gpu": [(20_000_000, 2, "2%"), (100_000_000, 2, f"rho~{SMALL_DC_MEAN_RHO}")]}  # the shapes
COLUMNS = [
    ("N", "{:,}"), ("d", "{}"), ("dc rule", "{}"), ("workers", "{}"), ("threads", "{}"), ("setup s", "{:.2f}"),
    ("rho+delta s", "{:.3f}"), ("speed-up", "{:.2f}x"), ("efficiency", "{:.0%}"), ("overhead ms", "{:.0f}"),
    ("Dask floor ms", "{:.0f}"), ("best efficiency", "{:.0%}"), ("equal", "{}"),
]  # fmt: skip
REPEATS = 3


def _queries_seconds(indexed: IndexedPoints, dc: float) -> tuple[float, object]:
    """Median seconds of rho + delta at dc (never cached), and the last result."""
    seconds = []
    for _ in range(REPEATS):
        started = time.perf_counter()
        fields = indexed.fields("cutoff", dc, cache=False)
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds), fields


def best_efficiency(base_seconds: float, base_floor: float, floor: float, base: int, workers: int) -> float:
    """The efficiency of ``workers`` against ``base`` workers (a call of ``base_seconds``) if all but Dask's floor
    (``base_floor``, ``floor``: seconds of a call that does no work) were split evenly among them."""
    seconds = floor + (base_seconds - base_floor) * base / workers
    return base_seconds / (seconds * workers / base)


def _dask_floor_seconds(client, backend: str) -> float:
    """Median seconds of a call shaped as the engine's (``Replicas.decision_graph``) that does no work."""
    from distributed import wait  # noqa: PLC0415  (an optional extra)

    workers = sorted(client.nthreads())

    def call():
        first = [client.submit(_small_array, backend, workers=[w], pure=False) for w in workers]
        second = [client.submit(_first_items, *first, workers=[w], pure=False) for w in workers]
        wait(first)
        client.gather(second, direct=True)

    call()  # the connections between the workers opened outside the timings
    seconds = []
    for _ in range(3 * REPEATS):  # a call of milliseconds: more samples
        started = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds)


def _small_array(backend: str):
    if backend == "gpu":  # moved as the engine's arrays are: GPU to GPU over UCX
        import cupy  # noqa: PLC0415

        return cupy.zeros(1000, cupy.uint32)
    return np.zeros(1000, np.uint32)


def _first_items(*arrays):
    return {"first": [array[:1] for array in arrays]}


def _same(a, b) -> bool:
    return all(np.array_equal(getattr(a, name), getattr(b, name)) for name in ("rho", "delta", "parent", "order"))


def bench_shape(n: int, d: int, rule: str, backend: str, worker_counts: list[int], threads: int, protocol: str = "tcp") -> list[dict]:
    """Rows for one data set: one process (the reference), then each worker count with ``threads`` per worker."""
    from distributed import Client  # noqa: PLC0415  (an optional extra)

    points = blobs(n, d)
    alone = IndexedPoints(points, backend=backend)
    percent = 2.0 if rule == "2%" else 100.0 * SMALL_DC_MEAN_RHO / n
    dc = alone.dc_for_percent(percent)
    reference_seconds, reference = _queries_seconds(alone, dc)
    tiny = points[:1000]
    tiny_alone = IndexedPoints(tiny, backend=backend)
    tiny_seconds = _queries_seconds(tiny_alone, tiny_alone.dc_for_percent(2.0))[0]
    rows = [{"N": n, "d": d, "dc rule": rule, "workers": "none (one process)", "threads": _threads_of(backend, os.cpu_count()), "setup s": None,
             "rho+delta s": reference_seconds, "speed-up": None, "efficiency": None, "overhead ms": None, "Dask floor ms": None, "best efficiency": None, "equal": "reference"}]  # fmt: skip
    one_worker = one_floor = None
    for workers in worker_counts:
        with local_cluster(backend, workers, threads, protocol) as cluster, Client(cluster) as client:
            client.run(_warm_up, backend)  # compile or load the kernels in every worker outside the timings
            started = time.perf_counter()
            spread = IndexedPoints(points, backend=backend, client=client)
            spread.fields("cutoff", dc, cache=False)  # the first call waits for the workers' trees
            setup = time.perf_counter() - started
            seconds, fields = _queries_seconds(spread, dc)
            tiny_spread = IndexedPoints(tiny, backend=backend, client=client)
            overhead = _queries_seconds(tiny_spread, tiny_spread.dc_for_percent(2.0))[0] - tiny_seconds
            floor = _dask_floor_seconds(client, backend)
        one_worker = one_worker or seconds
        one_floor = one_floor or floor
        best = best_efficiency(one_worker, one_floor, floor, worker_counts[0], workers)
        speed_up = one_worker / seconds
        rows.append({"N": n, "d": d, "dc rule": rule, "workers": workers, "threads": _threads_of(backend, threads * workers), "setup s": setup,
                     "rho+delta s": seconds, "speed-up": speed_up, "efficiency": speed_up / (workers / worker_counts[0]),
                     "overhead ms": 1000 * overhead, "Dask floor ms": 1000 * floor, "best efficiency": best, "equal": "yes" if _same(fields, reference) else "NO"})  # fmt: skip
        print(f"  N={n:,} d={d} {rule}: {workers} workers {seconds:.3f} s", file=sys.stderr, flush=True)
    return rows


def _threads_of(backend: str, threads: int) -> str | int:
    return "GPU" if backend == "gpu" else threads


def _warm_up(backend: str) -> None:
    for kernel in ("cutoff", "gaussian"):
        IndexedPoints(blobs(3000, 2), backend=backend).fields(kernel, 0.3)


def run_distributed_bench(shapes=None, backend: str = "cpu", workers: list[int] | None = None, markdown=False,
                          protocol: str = "tcp") -> list[dict]:  # fmt: skip
    workers = workers or [1, 2]
    threads = max(1, (os.cpu_count() or 1) // max(workers))  # per CPU worker
    each = "one GPU" if backend == "gpu" else f"{threads} thread(s)"
    print(f"dpstudio bench --distributed: rho + delta (cut-off kernel) on a Dask cluster of {' vs '.join(map(str, workers))} "
          f"workers of {each} each ({protocol} comms), against one process", flush=True)  # fmt: skip
    _warm_up(backend)
    rows = []
    for n, d, rule in shapes or SHAPES[backend]:
        rows += bench_shape(n, d, rule, backend, workers, threads, protocol)
    print(format_rows(rows, COLUMNS, markdown))
    print("setup: broadcast + every worker's tree and neighbour lists (once per data set); rho+delta: median of "
          f"{REPEATS} calls; speed-up and efficiency against {workers[0]} worker(s); overhead: the same call on 1,000 "
          "points minus one process's time; Dask floor: a call of the same shape doing no work; best efficiency: what the "
          "floor leaves, every other cost split evenly; equal: rho, delta, parent and order identical to one process")  # fmt: skip
    return rows
