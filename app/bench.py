"""``dpstudio bench``: the engine's phases next to scipy's cKDTree, measured in the same process.

Data are Gaussian blobs (ten clusters); dc from the 2% rule and a small dc (mean rho about 50). The baseline
counts rho with ``cKDTree.query_ball_point(..., return_length=True)`` on all cores; where N is large it is
timed on a random subset of queries and scaled to N (marked ``~``). Peak memory is the rise of the process's
resident high-water mark (Linux), reset before each row.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from dpstudio.engine import DensityPeaks, get_backend

SMALL_DC_MEAN_RHO = 50


def blobs(n: int, d: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=5.0, size=(10, d))
    return (centers[rng.integers(0, 10, n)] + rng.normal(size=(n, d))).astype(np.float32)


def _rss_kib(field: str) -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def _reset_peak_rss() -> None:
    try:
        Path("/proc/self/clear_refs").write_text("5")  # Linux: reset VmHWM to the current RSS
    except OSError:
        pass


def _baseline_rho(points: np.ndarray, dc: float, max_queries: int, seed: int = 1) -> tuple[float, bool]:
    """Seconds for cKDTree build + ball counts of every point (scaled up from a subset when N is large)."""
    from scipy.spatial import cKDTree

    started = time.perf_counter()
    tree = cKDTree(points)
    build = time.perf_counter() - started
    n = points.shape[0]
    queries = points if n <= max_queries else points[np.random.default_rng(seed).choice(n, max_queries, replace=False)]
    started = time.perf_counter()
    tree.query_ball_point(queries, r=dc, return_length=True, workers=-1)
    count = time.perf_counter() - started
    return build + count * n / queries.shape[0], n > max_queries


def bench_row(n: int, d: int, rule: str, backend: str, baseline_queries: int) -> dict:
    points = blobs(n, d)
    percent = 2.0 if rule == "2%" else 100.0 * SMALL_DC_MEAN_RHO / n
    before = _rss_kib("VmRSS:")
    _reset_peak_rss()
    # the decision graph alone, as before the automatic clustering (its kNN lists would add to time and memory)
    dp = DensityPeaks(dc_percent=percent, suggest="gamma", backend=backend).fit(points)
    peak = _rss_kib("VmHWM:")
    centers = dp.suggest_centers()
    started = time.perf_counter()
    dp.assign(centers=centers[::-1])  # a center change, as a lasso makes it
    relabel = time.perf_counter() - started
    base, scaled = _baseline_rho(points, dp.dc_, baseline_queries)
    t = dp.timings_
    return {
        "N": n, "d": d, "dc rule": rule, "dc": dp.dc_, "mean rho": float(dp.rho_.mean()),
        "index s": t["index"], "rho s": t["rho"], "delta s": t["delta"],
        "index+rho+delta s": t["index"] + t["rho"] + t["delta"], "relabel ms": 1000 * relabel,
        "peak MB": None if peak is None or before is None else (peak - before) / 1024,
        "cKDTree rho s": base, "scaled": scaled, "rho speed-up": base / t["rho"],
    }  # fmt: skip


def cold_start(backend: str) -> dict[str, float]:
    """Seconds for a fresh process to import and fit 1000 points: with an empty Numba cache, then a filled one."""
    code = (
        "import time; t=time.perf_counter(); import numpy as np; from dpstudio.engine import DensityPeaks; "
        f"DensityPeaks(backend={backend!r}).fit(np.random.default_rng(0).normal(size=(1000, 2))).halo_; "
        "print(time.perf_counter()-t)"
    )
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        run = lambda: float(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout)  # noqa: E731
        return {"empty cache": run(), "warm cache": run()}


COLUMNS = [
    ("N", "{:,}"), ("d", "{}"), ("dc rule", "{}"), ("mean rho", "{:,.0f}"), ("index s", "{:.3f}"),
    ("rho s", "{:.3f}"), ("delta s", "{:.3f}"), ("index+rho+delta s", "{:.2f}"), ("relabel ms", "{:.1f}"),
    ("peak MB", "{:.0f}"), ("cKDTree rho s", "{:.2f}"), ("rho speed-up", "{:.1f}x"),
]  # fmt: skip


GPU_SHAPES = [(1_000_000, 2), (434_874, 3), (2_000_000, 4), (500_000, 57)]
GPU_COLUMNS = [
    ("N", "{:,}"), ("d", "{}"), ("dc rule", "{}"), ("mean rho", "{:,.0f}"), ("index ms", "{:.1f}"),
    ("rho ms", "{:.1f}"), ("delta ms", "{:.1f}"), ("rho+delta ms", "{:.1f}"), ("brute rho ms", "{:.1f}"),
    ("brute delta ms", "{:.1f}"), ("speed-up", "{:.1f}x"),
]  # fmt: skip


def _gpu_ms(function, repeat: int) -> float:
    """Median GPU time of ``function`` in milliseconds (CUDA events, after a warm-up run)."""
    from cupyx.profiler import benchmark

    return float(np.median(benchmark(function, n_repeat=repeat, n_warmup=1).gpu_times[0]) * 1000)


def gpu_bench_row(n: int, d: int, rule: str) -> dict:
    import cupy as cp

    from dpstudio.engine.gpu import brute

    gpu = get_backend("gpu")
    points = blobs(n, d)
    percent = 2.0 if rule == "2%" else 100.0 * SMALL_DC_MEAN_RHO / n
    dp = DensityPeaks(dc_percent=percent, backend="gpu").fit(points)
    device_points, tree, dc = cp.asarray(points), dp.index_, dp.dc_
    rho = gpu.rho(tree, dc, "cutoff")
    _, rank = gpu.density_order(rho)
    engine_rho = _gpu_ms(lambda: gpu.rho(tree, dc, "cutoff"), 5)
    engine_delta = _gpu_ms(lambda: gpu.delta(tree, gpu.density_order(gpu.rho(tree, dc, "cutoff"))[1]), 5) - engine_rho
    started = time.perf_counter()
    brute_rho = brute.rho(device_points, dc)
    cp.cuda.Device().synchronize()
    brute_rho_ms = 1000 * (time.perf_counter() - started)
    started = time.perf_counter()
    brute.delta(device_points, rank)
    cp.cuda.Device().synchronize()
    brute_delta_ms = 1000 * (time.perf_counter() - started)
    if not bool((brute_rho == rho).all()):
        raise AssertionError(f"GPU rho differs from the brute-force reference at N={n}, d={d}")
    return {
        "N": n, "d": d, "dc rule": rule, "mean rho": float(rho.mean()),
        "index ms": _gpu_ms(lambda: gpu.build_vptree(device_points), 3), "rho ms": engine_rho,
        "delta ms": engine_delta, "rho+delta ms": engine_rho + engine_delta, "brute rho ms": brute_rho_ms,
        "brute delta ms": brute_delta_ms, "speed-up": (brute_rho_ms + brute_delta_ms) / (engine_rho + engine_delta),
    }  # fmt: skip


def gpu_extras() -> list[str]:
    """Relabel time after a center change at 1M, and a 10M x 2 fit under a 4 GiB memory cap."""
    import cupy as cp

    dp = DensityPeaks(suggest="gamma", backend="gpu").fit(blobs(1_000_000, 2))
    centers = dp.suggest_centers()
    relabel = []
    for k in range(7):
        dp.assign(centers=np.roll(centers, k))
        relabel.append(dp.timings_["relabel"] * 1000)
    pool = cp.get_default_memory_pool()
    del dp
    pool.free_all_blocks()
    pool.set_limit(size=4 * 2**30)
    try:
        started = time.perf_counter()
        big = DensityPeaks(backend="gpu").fit(blobs(10_000_000, 2))
        seconds = time.perf_counter() - started
        line = (f"10M x 2 (2% rule) under a 4 GiB GPU memory cap: fit in {seconds:.2f} s "
                f"(index {big.timings_['index']*1000:.0f} ms, rho {big.timings_['rho']*1000:.0f} ms, "
                f"delta {big.timings_['delta']*1000:.0f} ms); pool holds {pool.total_bytes() / 2**30:.2f} GiB")  # fmt: skip
    except MemoryError as exc:
        line = f"10M x 2 did NOT fit in 4 GiB: {exc}"
    finally:
        pool.set_limit(size=0)
    return [f"relabel after a center change at 1M points: median {np.median(relabel):.2f} ms over 7", line]


def format_rows(rows: list[dict], columns, markdown: bool) -> str:
    def cell(row, name, fmt):
        value = row[name]
        text = "n/a" if value is None else fmt.format(value)
        return ("~" + text) if name == "cKDTree rho s" and row.get("scaled") else text

    header = [name for name, _ in columns]
    body = [[cell(row, name, fmt) for name, fmt in columns] for row in rows]
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "---:|" * len(header)]
        return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in body])
    widths = [max(len(h), *(len(r[i]) for r in body)) for i, h in enumerate(header)]
    return "\n".join("  ".join(v.rjust(w) for v, w in zip(line, widths)) for line in [header, *body])


def run_gpu_bench(markdown=False) -> list[dict]:
    print(f"dpstudio bench on {get_backend('gpu').device_name()}; baseline: brute-force all-pairs CuPy kernels "
          "(shared-memory tiles, one thread per query); index built once, then rho + delta (the dc-slider case)", flush=True)  # fmt: skip
    DensityPeaks(backend="gpu").fit(blobs(5000, 2))  # compile the kernels outside the timings
    rows = []
    for n, d in GPU_SHAPES:
        for rule in ("2%", f"rho~{SMALL_DC_MEAN_RHO}"):
            rows.append(gpu_bench_row(n, d, rule))
            print(f"  N={n:,} d={d} {rule}: rho+delta {rows[-1]['rho+delta ms']:.1f} ms", file=sys.stderr, flush=True)
    print(format_rows(rows, GPU_COLUMNS, markdown))
    for line in gpu_extras():
        print(line)
    print("speed-up = brute (rho + delta) / engine (rho + delta); times are medians of CUDA-event timings")
    return rows


def run_bench(sizes, dims, backend="cpu", baseline_queries=20_000, markdown=False) -> list[dict]:
    if backend == "gpu":
        return run_gpu_bench(markdown)
    engine = get_backend(backend)
    print(f"dpstudio bench on {engine.device_name()}; baseline: scipy cKDTree query_ball_point(return_length=True)", flush=True)
    DensityPeaks(backend=backend).fit(blobs(2000, 2))  # compile / load kernels outside the timings
    rows = []
    for n in sizes:
        for d in dims:
            for rule in ("2%", f"rho~{SMALL_DC_MEAN_RHO}"):
                rows.append(bench_row(n, d, rule, backend, baseline_queries))
                r = rows[-1]
                print(f"  N={n:,} d={d} {rule}: index+rho+delta {r['index+rho+delta s']:.2f} s, cKDTree rho {r['cKDTree rho s']:.2f} s", file=sys.stderr, flush=True)
    print(format_rows(rows, COLUMNS, markdown))
    cold = cold_start(backend)
    print(f"\ncold start (new process, import + fit 1000 points): empty Numba cache {cold['empty cache']:.1f} s, "
          f"cached {cold['warm cache']:.1f} s")  # fmt: skip
    print("~ = cKDTree timed on a random subset of queries and scaled to N; speed-up = cKDTree rho / engine rho")
    return rows
