"""``dpstudio bench --method dbscan``: DBSCAN's build and its relabel at a new eps, next to baselines run in the same
process.

Data: Gaussian blobs (``bench.blobs``) and a noisy non-convex set (two moons over 10% uniform noise); min_samples 10;
eps at the 50th and 95th percentile of the core distances. "build" is what a new min_samples costs on an index
that is already there (shared with DPC): the neighbour lists, the mutual-reachability MST and its single-linkage
chain. "eps change" is the relabel that the eps slider pays (median of 5).

Baselines: on the CPU scikit-learn's DBSCAN at one eps (its labels must equal ours), and HDBSCAN from the hdbscan
package (the same MST and condensed tree work) up to 200k points; on the GPU the brute-force all-pairs DBSCAN that
cuML runs (eps counts, label propagation over all pairs, borders; ``gpu.brute``), which must give our labels.
"""

from __future__ import annotations

import statistics
import sys
import time

import numpy as np

from dpstudio.engine import DBSCAN, HDBSCAN, IndexedPoints, get_backend
from dpstudio.engine.vptree import float32_square

from .bench import _reset_peak_rss, _rss_kib, blobs, format_rows

MIN_SAMPLES = 10
EPS_PERCENTILES = (50, 95)
HDBSCAN_PACKAGE_MAX_N = 200_000  # above it the hdbscan package takes minutes per run on 2 cores


def noisy_moons(n: int, seed: int = 0) -> np.ndarray:
    """Two interleaved crescents (90%) over uniform background noise (10%), about 4 x 2.5 units."""
    rng = np.random.default_rng(seed)
    m = n - n // 10
    angle = rng.uniform(0, np.pi, m)
    upper = rng.random(m) < 0.5
    moons = np.where(upper[:, None], np.c_[np.cos(angle), np.sin(angle)], np.c_[1 - np.cos(angle), 0.5 - np.sin(angle)])
    moons += rng.normal(scale=0.08, size=moons.shape)
    noise = rng.uniform([-1.5, -1.0], [2.5, 1.5], size=(n // 10, 2))
    return np.concatenate([moons, noise]).astype(np.float32)


DATA = {"blobs": lambda n: blobs(n, 2), "noisy moons": noisy_moons}


def _seconds(function, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        function()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _sklearn_dbscan(points, eps):
    import sklearn.cluster

    started = time.perf_counter()
    labels = sklearn.cluster.DBSCAN(eps=eps, min_samples=MIN_SAMPLES, n_jobs=-1).fit(points.astype(np.float64)).labels_
    return time.perf_counter() - started, labels


def _hdbscan_package(points) -> float:
    import hdbscan

    started = time.perf_counter()
    hdbscan.HDBSCAN(min_cluster_size=MIN_SAMPLES, min_samples=MIN_SAMPLES, core_dist_n_jobs=-1).fit(points.astype(np.float64))
    return time.perf_counter() - started


def cpu_rows(n: int, data: str, baseline_max_n: int) -> list[dict]:
    points = DATA[data](n)
    index = IndexedPoints(points, backend="cpu")
    before = _rss_kib("VmRSS:")
    _reset_peak_rss()
    model = DBSCAN(min_samples=MIN_SAMPLES, backend="cpu").fit(index)
    peak = _rss_kib("VmHWM:")
    build = model.timings_["neighbours"] + model.timings_["mst"]
    started = time.perf_counter()
    HDBSCAN(min_cluster_size=MIN_SAMPLES, min_samples=MIN_SAMPLES, backend="cpu").fit(index)  # the same cached tree
    hdbscan_s = build + time.perf_counter() - started
    hdbscan_base = _hdbscan_package(points) if n <= HDBSCAN_PACKAGE_MAX_N else None
    rows = []
    for percentile in EPS_PERCENTILES:
        eps = float(np.percentile(model.core_distances_, percentile))
        change = _seconds(lambda: model.set_eps(eps), 5)  # noqa: B023
        labels = model.labels_
        base_s, base_labels = _sklearn_dbscan(points, eps) if n <= baseline_max_n else (None, None)
        rows.append({
            "N": n, "data": data, "eps pct": percentile, "index s": index.index_seconds, "build s": build,
            "eps change ms": 1000 * change, "clusters": int(labels.max()) + 1, "noise %": 100 * float((labels < 0).mean()),
            "peak MB": None if peak is None or before is None else (peak - before) / 1024,
            "sklearn DBSCAN s": base_s, "ratio": None if base_s is None else base_s / (build + change),
            "equal": "n/a" if base_labels is None else ("yes" if np.array_equal(labels, base_labels) else "NO"),
            "HDBSCAN s": hdbscan_s, "hdbscan pkg s": hdbscan_base,
        })  # fmt: skip
    return rows


CPU_COLUMNS = [
    ("N", "{:,}"), ("data", "{}"), ("eps pct", "{}"), ("index s", "{:.2f}"), ("build s", "{:.2f}"),
    ("eps change ms", "{:.1f}"), ("clusters", "{:,}"), ("noise %", "{:.1f}"), ("peak MB", "{:.0f}"),
    ("sklearn DBSCAN s", "{:.2f}"), ("ratio", "{:.1f}x"), ("equal", "{}"), ("HDBSCAN s", "{:.2f}"),
    ("hdbscan pkg s", "{:.2f}"),
]  # fmt: skip


def _gpu_ms(function, repeat: int) -> tuple[float, object]:
    """Median wall milliseconds between device synchronisations, and the last result."""
    import cupy as cp

    times, result = [], None
    for _ in range(repeat):
        cp.cuda.Device().synchronize()
        started = time.perf_counter()
        result = function()
        cp.cuda.Device().synchronize()
        times.append(1000 * (time.perf_counter() - started))
    return statistics.median(times), result


def gpu_row(n: int, d: int, brute_pairs: float) -> dict:
    import cupy as cp

    from dpstudio.engine.gpu import brute

    from .bench import _gpu_ms as event_ms

    gpu = get_backend("gpu")
    points = blobs(n, d)
    index = IndexedPoints(points, backend="gpu")
    repeat = 1 if n > 2_000_000 else 3
    knn_ms, (ids, sq) = _gpu_ms(lambda: gpu.knn(index.index, MIN_SAMPLES - 1), repeat)
    core = cp.ascontiguousarray(sq[:, MIN_SAMPLES - 2])
    mst_ms, _ = _gpu_ms(lambda: gpu.mst(index.index, core), repeat)
    timings: dict = {}
    tree = index.spanning_tree(MIN_SAMPLES, timings=timings)  # mst + the host chain, as a user's fit pays it
    eps = float(np.sqrt(np.percentile(cp.asnumpy(tree.core_sq).astype(np.float64), 95)))
    eps2 = float32_square(eps)
    labels_ms = event_ms(lambda: gpu.dbscan_labels(tree.chain, tree.gap, tree.core_sq, tree.neighbour_ids, tree.neighbour_sq, eps2), 20)
    labels = gpu.dbscan_labels(tree.chain, tree.gap, tree.core_sq, tree.neighbour_ids, tree.neighbour_sq, eps2)
    row = {
        "N": n, "d": d, "index ms": 1000 * index.index_seconds, "knn ms": knn_ms, "mst ms": mst_ms,
        "build ms": knn_ms + mst_ms, "fit tree ms": 1000 * (timings["neighbours"] + timings["mst"]),
        "eps change ms": labels_ms, "clusters": int(labels.max()) + 1, "brute ms": None, "ratio": None, "equal": "n/a",
    }  # fmt: skip
    if float(n) * n * d <= brute_pairs:
        brute_ms, brute_labels = _gpu_ms(lambda: brute.dbscan(index.points, eps, MIN_SAMPLES), 1)
        row.update({"brute ms": brute_ms, "ratio": brute_ms / (row["build ms"] + labels_ms),
                    "equal": "yes" if bool((brute_labels == labels).all()) else "NO"})  # fmt: skip
    return row


def pair_f1(found: np.ndarray, truth: np.ndarray) -> float:
    """F1 over the pairs of points that share a cluster (a noise point shares with nothing)."""
    from sklearn.metrics.cluster import pair_confusion_matrix

    found, truth = found.copy(), truth.copy()
    found[found < 0] = -1 - np.arange((found < 0).sum())  # every noise point a cluster of its own
    truth[truth < 0] = -1 - np.arange((truth < 0).sum())
    (_, false_pos), (false_neg, true_pos) = pair_confusion_matrix(truth, found)
    return 2 * true_pos / (2 * true_pos + false_pos + false_neg)


def gpu_graph_row(n: int, d: int) -> dict:
    """The high-dimensional mode (neighbors="approximate") against exact DBSCAN on the same index and eps."""
    index = IndexedPoints(blobs(n, d), backend="gpu")
    graph = DBSCAN(min_samples=MIN_SAMPLES, neighbors="approximate", backend="gpu").fit(index)
    eps = float(np.percentile(graph.core_distances_, 95))
    change = _seconds(lambda: graph.set_eps(eps), 5)
    exact = DBSCAN(eps=eps, min_samples=MIN_SAMPLES, backend="gpu").fit(index)
    return {
        "N": n, "d": d, "index s": index.index_seconds, "lists s": graph.timings_["neighbours"],
        "forest + chain s": graph.timings_["mst"], "eps change ms": 1000 * change, "saturated cores": graph.saturated_cores_,
        "exact build s": exact.timings_["neighbours"] + exact.timings_["mst"], "pair-F1": pair_f1(graph.labels_, exact.labels_),
        "clusters": int(graph.labels_.max()) + 1,
    }  # fmt: skip


GRAPH_COLUMNS = [
    ("N", "{:,}"), ("d", "{}"), ("index s", "{:.2f}"), ("lists s", "{:.2f}"), ("forest + chain s", "{:.2f}"),
    ("eps change ms", "{:.2f}"), ("saturated cores", "{:,}"), ("clusters", "{:,}"), ("exact build s", "{:.2f}"),
    ("pair-F1", "{:.4f}"),
]  # fmt: skip

GPU_SHAPES = [(1_000_000, 2), (10_000_000, 2), (500_000, 57)]
GRAPH_SHAPES = [(1_000_000, 128)]
GPU_COLUMNS = [
    ("N", "{:,}"), ("d", "{}"), ("index ms", "{:.1f}"), ("knn ms", "{:.1f}"), ("mst ms", "{:.1f}"),
    ("build ms", "{:.1f}"), ("fit tree ms", "{:.0f}"), ("eps change ms", "{:.3f}"), ("clusters", "{:,}"),
    ("brute ms", "{:.0f}"), ("ratio", "{:.0f}x"), ("equal", "{}"),
]  # fmt: skip


def run_dbscan_bench(sizes, backend="cpu", markdown=False, baseline_max_n=1_000_000, brute_pairs=3e13) -> list[dict]:
    engine = get_backend(backend)
    if backend == "gpu":
        print(f"dpstudio bench --method dbscan on {engine.device_name()}, min_samples {MIN_SAMPLES}, eps at the 95th "
              "percentile of the core distances; baseline: brute-force all-pairs DBSCAN (cuML's scheme)", flush=True)  # fmt: skip
        gpu_row(5000, 2, float("inf"))  # compile the kernels outside the timings
        rows = [gpu_row(n, d, brute_pairs) for n, d in GPU_SHAPES]
        print(format_rows(rows, GPU_COLUMNS, markdown))
        print("build = knn + mst on the device; fit tree = what IndexedPoints.spanning_tree takes, the host's "
              "single-linkage chain included; ratio = brute / (build + eps change)")  # fmt: skip
        print("\nneighbors='approximate' (high dimensions), against exact DBSCAN at the same eps:", flush=True)
        graph_rows = [gpu_graph_row(n, d) for n, d in GRAPH_SHAPES]
        print(format_rows(graph_rows, GRAPH_COLUMNS, markdown))
        return rows + graph_rows
    print(f"dpstudio bench --method dbscan on {engine.device_name()}, min_samples {MIN_SAMPLES}; baselines: "
          "scikit-learn DBSCAN (n_jobs=-1), the hdbscan package", flush=True)  # fmt: skip
    cpu_rows(3000, "blobs", 0)  # load the kernels outside the timings
    rows = []
    for n in sizes:
        for data in DATA:
            rows += cpu_rows(n, data, baseline_max_n)
            print(f"  N={n:,} {data}: build {rows[-1]['build s']:.2f} s", file=sys.stderr, flush=True)
    print(format_rows(rows, CPU_COLUMNS, markdown))
    print("build = neighbour lists + MST + chain on a built index; ratio = scikit-learn DBSCAN at one eps / "
          "(build + eps change); HDBSCAN s = build + condensed tree + selection")  # fmt: skip
    return rows
