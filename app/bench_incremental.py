"""``dpstudio bench --incremental``: inserting and deleting batches of points, next to a fresh fit of the same points
in the same run, with every checked result equal to that fresh fit.

The GDPC protocol: the points in random order, a base fit on the first 10%, then batches of 1,000 inserted one by
one; each batch's update time (tree, rho, delta, order, labels) is recorded, and at a few checkpoints (and the last
batch) a fresh fit (index + rho + delta + labels) of the same points is timed and compared: rho, parent, delta and
labels must be equal. dc is fixed for the whole stream: the rule's value on all N points, so that the last batches
land where the table says (2% rule, or mean rho about 50). Then batches of 1,000 random points are deleted, each
timed and checked the same way. ``--batches K`` times only the last K batches, the base fit taking the rest.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from dpstudio.engine import DensityPeaks, IndexedPoints, get_backend

from .bench import SMALL_DC_MEAN_RHO, blobs, format_rows

CPU_SHAPES = [(1_000_000, 2, "2%"), (1_000_000, 2, f"rho~{SMALL_DC_MEAN_RHO}"), (434_874, 3, f"rho~{SMALL_DC_MEAN_RHO}"),
              (2_075_257, 4, f"rho~{SMALL_DC_MEAN_RHO}")]  # fmt: skip
GPU_SHAPES = CPU_SHAPES + [(5_000_000, 3, f"rho~{SMALL_DC_MEAN_RHO}")]
COLUMNS = [
    ("N", "{:,}"), ("d", "{}"), ("dc rule", "{}"), ("mean rho", "{:,.0f}"), ("batches", "{:,}"),
    ("insert ms", "{:.1f}"), ("insert max ms", "{:.0f}"), ("delete ms", "{:.1f}"), ("fresh fit s", "{:.3f}"),
    ("speed-up", "{:.0f}x"), ("checked", "{}"),
]  # fmt: skip


def _fresh(points, dc, chosen, backend):
    """A fresh fit of the same points with the same dc and centers, and its seconds (index + rho + delta + labels)."""
    started = time.perf_counter()
    fresh = DensityPeaks(dc=dc, suggest="gamma", backend=backend).fit(points).assign(centers=chosen)
    fresh._backend.synchronize()
    return fresh, time.perf_counter() - started


def _equal(dp, fresh) -> bool:
    return all(np.array_equal(getattr(dp, name), getattr(fresh, name)) for name in ("rho_", "parent_", "delta_", "labels_"))


def bench_row(n: int, d: int, rule: str, backend: str, batch: int, batches: int | None, checkpoints: int, deletes: int) -> dict:
    points = blobs(n, d)[np.random.default_rng(1).permutation(n)]
    percent = 2.0 if rule == "2%" else 100.0 * SMALL_DC_MEAN_RHO / n
    dc = IndexedPoints(points, backend=backend).dc_for_percent(percent)
    n_base = n // 10 if batches is None else max(n // 10, n - batches * batch)
    dp = DensityPeaks(dc=dc, suggest="gamma", backend=backend).fit(points[:n_base])  # centers kept, updated by batch
    starts = list(range(n_base, n, batch))
    checks = set(starts[:: max(1, len(starts) // checkpoints)]) | {starts[-1]}
    inserts, checked, fresh_seconds = [], [], None
    for k, start in enumerate(starts):
        dp.partial_fit(points[start : start + batch])
        inserts.append(dp.timings_["update"])
        if start in checks:
            fresh, fresh_seconds = _fresh(points[: start + batch], dc, dp._chosen, backend)
            checked.append(_equal(dp, fresh))
        if k % 100 == 0:
            print(f"    {dp.n_points_:,} points: last insert {1000 * inserts[-1]:.1f} ms", file=sys.stderr, flush=True)
    removed = []
    current = points.copy()
    rng = np.random.default_rng(2)
    for _ in range(deletes):
        dead = rng.choice(current.shape[0], batch, replace=False)
        dp.delete(dead)
        removed.append(dp.timings_["update"])
        current = np.delete(current, dead, axis=0)
        fresh, _ = _fresh(current, dc, dp._chosen, backend)
        checked.append(_equal(dp, fresh))
    late = inserts[-max(1, len(inserts) // 10) :]  # the batches going into (nearly) N points
    return {
        "N": n, "d": d, "dc rule": rule, "mean rho": float(dp.rho_.mean()), "batches": len(inserts),
        "insert ms": 1000 * float(np.median(late)), "insert max ms": 1000 * max(inserts),
        "delete ms": 1000 * float(np.median(removed)) if removed else None, "fresh fit s": fresh_seconds,
        "speed-up": fresh_seconds / float(np.median(late)), "checked": f"{sum(checked)}/{len(checked)} equal",
    }  # fmt: skip


def run_incremental_bench(shapes=None, backend="cpu", batch=1000, batches=None, checkpoints=5, deletes=5, markdown=False) -> list[dict]:
    engine = get_backend(backend)
    shapes = shapes or (GPU_SHAPES if engine.name == "gpu" else CPU_SHAPES)
    print(f"dpstudio bench --incremental on {engine.device_name()}: batches of {batch:,} into a base fit of 10% "
          f"(or the last {batches} batches), next to a fresh fit of the same points", flush=True)  # fmt: skip
    warm = DensityPeaks(dc=0.3, suggest="gamma", backend=backend).fit(blobs(3000, 2))  # compile the kernels outside the timings
    warm.partial_fit(blobs(500, 2, seed=1))
    warm.delete(np.arange(0, 3500, 7))
    rows = []
    for n, d, rule in shapes:
        rows.append(bench_row(n, d, rule, backend, batch, batches, checkpoints, deletes))
        r = rows[-1]
        print(f"  N={n:,} d={d} {rule}: insert {r['insert ms']:.1f} ms, fresh {r['fresh fit s']:.2f} s, {r['checked']}", file=sys.stderr, flush=True)
    print(format_rows(rows, COLUMNS, markdown))
    print("insert ms: median update time of the last 10% of the batches (into nearly N points); insert max: the slowest"
          " batch (it includes splitting every leaf when the tree fills); delete ms: median of the deletions;"
          " speed-up = fresh fit / insert ms")  # fmt: skip
    return rows
