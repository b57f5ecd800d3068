"""DBSCAN on the GPU: the engine's build (kNN + mutual-reachability MST over the VP-tree) and its relabel at a new eps
(dbscan_labels from the cached arrays), next to the brute-force all-pairs DBSCAN that cuML runs, in the same process.

    python benchmarks/gpu_dbscan.py [--shapes 1000000x2,10000000x2,500000x57] [--min-samples 10]

Gaussian blobs. eps is the 70th percentile of the core distances. The brute force runs where its all-pairs work
stays under --brute-pairs (it is quadratic: 10M points would take many minutes) and its labels must equal the
engine's. Times are medians of wall-clock runs between device synchronisations (build) or of CUDA-event timings
(dbscan_labels). The single-linkage chain is host code (dpstudio.engine.hierarchy) and is listed apart.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from dpstudio.engine import get_backend
from dpstudio.engine.hierarchy import single_linkage_chain

def blobs(n: int, d: int, seed: int = 0) -> np.ndarray:
    """Five unit Gaussian blobs, centres spread over a few standard deviations."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=6, size=(5, d))
    return (centers[rng.integers(0, 5, n)] + rng.normal(size=(n, d))).astype(np.float32)


def wall_ms(function, repeat: int) -> tuple[float, object]:
    import cupy as cp

    times, result = [], None
    for _ in range(repeat):
        cp.cuda.Device().synchronize()
        started = time.perf_counter()
        result = function()
        cp.cuda.Device().synchronize()
        times.append(1000 * (time.perf_counter() - started))
    return statistics.median(times), result


def event_ms(function, repeat: int) -> float:
    from cupyx.profiler import benchmark

    return float(np.median(benchmark(function, n_repeat=repeat, n_warmup=2).gpu_times[0]) * 1000)


def row(n: int, d: int, min_samples: int, brute_pairs: float, repeat: int) -> dict:
    import cupy as cp

    from dpstudio.engine.gpu import brute

    gpu = get_backend("gpu")
    points = cp.asarray(blobs(n, d))
    index_ms, tree = wall_ms(lambda: gpu.build_vptree(points), 1)
    k = min_samples - 1
    knn_ms, (ids, sq) = wall_ms(lambda: gpu.knn(tree, k), repeat)
    core = cp.ascontiguousarray(sq[:, k - 1])
    rounds: list[float] = []
    def count_round(_):
        rounds.append(time.perf_counter())

    mst_ms, (u, v, w2) = wall_ms(lambda: gpu.mst(tree, core, progress=count_round), repeat)
    started = time.perf_counter()
    chain, gap = single_linkage_chain(cp.asnumpy(u), cp.asnumpy(v), cp.asnumpy(w2), n)
    chain_ms = 1000 * (time.perf_counter() - started)
    chain, gap = cp.asarray(chain), cp.asarray(gap)
    eps2 = np.float32(np.quantile(cp.asnumpy(core), 0.7))
    eps = float(np.sqrt(np.float64(eps2)))
    eps2 = np.float32(np.float64(eps) ** 2)  # what brute.dbscan derives from eps
    labels_ms = event_ms(lambda: gpu.dbscan_labels(chain, gap, core, ids, sq, eps2), 20)
    labels = gpu.dbscan_labels(chain, gap, core, ids, sq, eps2)
    result = {
        "N": n, "d": d, "index ms": index_ms, "knn ms": knn_ms, "mst ms": mst_ms, "rounds": len(rounds) // repeat,
        "build ms": knn_ms + mst_ms, "labels ms": labels_ms, "clusters": int(labels.max()) + 1,
        "noise %": 100 * float((labels < 0).mean()), "chain (host) ms": chain_ms, "brute ms": None, "equal": "n/a",
    }  # fmt: skip
    if float(n) * n * d <= brute_pairs:
        brute_ms, brute_labels = wall_ms(lambda: brute.dbscan(points, eps, min_samples), 1)
        result["brute ms"] = brute_ms
        result["equal"] = "yes" if bool((brute_labels == labels).all()) else "NO"
    return result


COLUMNS = [
    ("N", "{:,}"), ("d", "{}"), ("index ms", "{:.1f}"), ("knn ms", "{:.1f}"), ("mst ms", "{:.1f}"), ("rounds", "{}"),
    ("build ms", "{:.1f}"), ("labels ms", "{:.3f}"), ("clusters", "{}"), ("noise %", "{:.1f}"),
    ("chain (host) ms", "{:.0f}"), ("brute ms", "{:.0f}"), ("brute / (build + labels)", "{:.0f}x"), ("equal", "{}"),
]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shapes", default="1000000x2,10000000x2,500000x57")
    parser.add_argument("--min-samples", type=int, default=10)
    parser.add_argument("--brute-pairs", type=float, default=3e13, help="largest N*N*d the brute force runs")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    gpu = get_backend("gpu")
    print(f"DBSCAN on {gpu.device_name()}, min_samples={args.min_samples}; baseline: brute-force all-pairs DBSCAN "
          "(cuML's scheme: eps counts, label propagation over all pairs, borders)", flush=True)  # fmt: skip
    row(5000, 2, args.min_samples, float("inf"), 1)  # compile the kernels (the brute force's too) outside the timings
    rows = []
    for shape in args.shapes.split(","):
        n, d = (int(x) for x in shape.split("x"))
        rows.append(row(n, d, args.min_samples, args.brute_pairs, 1 if n > 2_000_000 else args.repeat))
        r = rows[-1]
        if r["brute ms"] is not None:
            r["brute / (build + labels)"] = r["brute ms"] / (r["build ms"] + r["labels ms"])
        else:
            r["brute / (build + labels)"] = None
        print(f"  N={n:,} d={d}: knn {r['knn ms']:.1f} ms, mst {r['mst ms']:.1f} ms, labels {r['labels ms']:.3f} ms",
              flush=True)  # fmt: skip
    header = [name for name, _ in COLUMNS]
    print("| " + " | ".join(header) + " |")
    print("|" + "---:|" * len(header))
    for r in rows:
        print("| " + " | ".join("n/a" if r[name] is None else fmt.format(r[name]) for name, fmt in COLUMNS) + " |")
    print("build = knn + mst (index built before, shared with DPC); labels = dbscan_labels at one eps (the slider)")


if __name__ == "__main__":
    main()
