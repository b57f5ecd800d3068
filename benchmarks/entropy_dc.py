"""Time of the entropy dc rule against a same-run baseline: one Gaussian rho pass at sigma* (the same tree walk at
the same reach, 3 sigma*, for a single sigma), and the percent rule.

    python benchmarks/entropy_dc.py [--sizes 100000] [--dims 2] [--backend cpu|gpu]

Data: ten Gaussian blobs of spreads 0.5 to 2. "nearest" is the kNN search the rule reads (cached by
IndexedPoints, shared with the topography), not counted in "entropy dc".
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.datasets import make_blobs

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from dpstudio.engine import IndexedPoints  # noqa: E402


def timed(function):
    started = time.perf_counter()
    result = function()
    return result, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000")
    parser.add_argument("--dims", default="2")
    parser.add_argument("--backend", default="cpu", choices=("cpu", "gpu"))
    args = parser.parse_args()
    warm = IndexedPoints(np.random.default_rng(0).normal(size=(3000, 2)), backend=args.backend)
    warm.entropy_dc()  # compile / load the kernels outside the timings
    print("| N | d | backend | nearest s | entropy dc s | Gaussian rho at sigma* s | ratio | percent rule s | sigma* | dc |")
    print("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for n in map(int, args.sizes.split(",")):
        for d in map(int, args.dims.split(",")):
            points = make_blobs(n, n_features=d, centers=10, cluster_std=np.linspace(0.5, 2, 10), random_state=0)[0]
            index = IndexedPoints(points.astype(np.float32), backend=args.backend)
            backend = index.backend
            _, nearest = timed(lambda: (index.neighbours(1), backend.synchronize()))
            result, seconds = timed(lambda: (index.entropy_dc(), backend.synchronize())[0])
            _, baseline = timed(lambda: (backend.rho(index.index, result.sigma, "gaussian"), backend.synchronize()))
            _, percent = timed(lambda: index.dc_for_percent(2.0))
            print(f"| {n:,} | {d} | {backend.device_name()} | {nearest:.3f} | {seconds:.3f} | {baseline:.3f} | "
                  f"{seconds / baseline:.1f}x | {percent:.3f} | {result.sigma:.4g} | {result.dc:.4g} |")  # fmt: skip


if __name__ == "__main__":
    main()
