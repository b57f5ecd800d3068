"""Clustering quality against ground truth: adjusted Rand index (ARI) and number of clusters, per data set and
method, in one run, as a Markdown table with a mean-ARI row.

    python benchmarks/quality.py [--seeds 3] [--grid] [--large SCALE]

Data: the project's sample sets (sample_data/, digits being scikit-learn's bundled 8x8 digits) and
scikit-learn-generated families, each with several seeds: blobs of unequal density and size, moons, circles,
anisotropic blobs, blobs over uniform background noise (truth -1), four concentric rings, 35 and 50 blobs,
10-D blobs and integer-valued (rounded) blobs. Methods, all with their defaults and nothing tuned per set:

* gamma: ``DensityPeaks(suggest="gamma")``, the largest relative gamma drop (the old default);
* auto: ``DensityPeaks()``, the density topography (the default); auto+noise: the same with ``noise=True``;
* HDBSCAN: ``sklearn.cluster.HDBSCAN(min_cluster_size=15)``;
* DBSCAN: ``dpstudio.engine.DBSCAN(eps=None)`` (min_samples 5, eps at the knee of the core distances; its labels
  are scikit-learn's).

Noise is scored as it is labelled: -1 is one more class for ARI, in the truth and in a result. ``--grid`` prints
the mean ARI of the topography over (density_k, significance), the evaluation its defaults were chosen on.
``--large 40`` runs the generated families with 40 times the points (50k-120k), where the automatic clustering's
significance is raised for its many candidate peaks (``topography.significance_for``), against the same
clustering with the significance as given, and HDBSCAN (dpstudio's, whose labels are scikit-learn's: scikit-learn's
own took minutes per set at this size).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn import datasets as make
from sklearn.cluster import HDBSCAN as SkHDBSCAN
from sklearn.metrics import adjusted_rand_score

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from dpstudio import sample_data  # noqa: E402
from dpstudio.engine import DBSCAN, HDBSCAN, DensityPeaks, IndexedPoints, to_points  # noqa: E402
from dpstudio.engine.dpc import DENSITY_K, SIGNIFICANCE  # noqa: E402
from dpstudio.engine.topography import topography  # noqa: E402


def generated(seed: int, scale: int = 1):
    """(name, points, truth) of every generated family for one seed, with ``scale`` times the points."""
    rng, s = np.random.default_rng(seed), scale
    x, y = make.make_blobs([800 * s, 300 * s, 150 * s], centers=[[0, 0], [6, 0], [3, 5]], cluster_std=[1.6, 0.5, 0.25], random_state=seed)
    yield "unequal density", x, y
    x, y = make.make_blobs(1500 * s, centers=6, cluster_std=rng.uniform(0.3, 1.5, 6), center_box=(-15, 15), random_state=seed)
    yield "6 blobs, mixed spread", x, y
    yield "moons", *make.make_moons(1500 * s, noise=0.08, random_state=seed)
    yield "circles", *make.make_circles(1500 * s, factor=0.5, noise=0.05, random_state=seed)
    x, y = make.make_blobs(1500 * s, centers=3, random_state=seed)
    yield "anisotropic", x @ np.array([[0.6, -0.64], [-0.41, 0.85]]), y
    x, y = make.make_blobs(1500 * s, centers=4, cluster_std=0.6, center_box=(-8, 8), random_state=seed)
    noise = rng.uniform(x.min(0) - 2, x.max(0) + 2, (300 * s, 2))
    yield "blobs + 17% noise", np.vstack([x, noise]), np.concatenate([y, np.full(300 * s, -1)])
    radii = np.repeat([1.0, 2.5, 4.0, 5.5], 500 * s)
    angle = rng.uniform(0, 2 * np.pi, radii.size)
    rings = np.column_stack([radii * np.cos(angle), radii * np.sin(angle)]) + rng.normal(scale=0.15, size=(radii.size, 2))
    yield "four rings", rings, np.repeat(np.arange(4), 500 * s)
    for k in (35, 50):
        x, y = make.make_blobs(60 * k * s, centers=k, cluster_std=0.4, center_box=(-40, 40), random_state=seed)
        yield f"{k} blobs", x, y
    yield "10-D blobs", *make.make_blobs(2000 * s, n_features=10, centers=8, cluster_std=1.5, random_state=seed)
    x, y = make.make_blobs(2000 * s, centers=5, cluster_std=2.5, center_box=(-25, 25), random_state=seed)
    yield "integer blobs", np.round(x), y


def data_sets(seeds: int, scale: int = 1):
    """(name, points (N, d) float64, truth) of the sample sets, then of every family for each seed; at a ``scale``
    above 1 the families alone, with that many times the points."""
    for name in sample_data.SAMPLES if scale == 1 else ():
        yield f"sample: {name}", to_points(sample_data.path(name)).values.astype(np.float64), sample_data.truth(name)
    for seed in range(seeds):
        for name, x, y in generated(seed, scale):
            yield f"{name} (seed {seed})", np.asarray(x, np.float64), np.asarray(y)


def methods(large: bool = False):
    """name -> function(IndexedPoints, points) -> labels; ``large``: the automatic clustering against itself with
    the significance as given however many candidate peaks (``topography(..., tested_peaks=math.inf)``), and HDBSCAN."""
    if large:
        return {
            "auto": lambda index, x: DensityPeaks().fit(index).labels_,
            "auto, Z as given": lambda index, x: topography(*index.neighbours(DENSITY_K), index.n_dims, SIGNIFICANCE, tested_peaks=math.inf).cluster_labels,
            "HDBSCAN(15)": lambda index, x: HDBSCAN(min_cluster_size=15).fit(index).labels_,  # scikit-learn's labels
        }  # fmt: skip
    return {
        "gamma": lambda index, x: DensityPeaks(suggest="gamma").fit(index).labels_,
        "auto": lambda index, x: DensityPeaks().fit(index).labels_,
        "auto+noise": lambda index, x: DensityPeaks(noise=True).fit(index).labels_,
        "HDBSCAN(15)": lambda index, x: SkHDBSCAN(min_cluster_size=15).fit(x).labels_,
        "DBSCAN knee": lambda index, x: DBSCAN(eps=None).fit(index).labels_,
    }


def n_clusters(labels: np.ndarray) -> int:
    return int(np.unique(labels[labels >= 0]).size)


def main() -> None:
    warnings.filterwarnings("ignore", category=FutureWarning)  # scikit-learn's notice about HDBSCAN's copy default
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, help="seeds per generated family (default 3; 1 with --large)")
    parser.add_argument("--grid", action="store_true", help="mean ARI of the topography over density_k x significance")
    parser.add_argument("--large", type=int, metavar="SCALE", default=1,
                        help="the generated families alone with SCALE times the points (one seed unless --seeds), the "
                             "automatic clustering against itself with Z as given, and HDBSCAN")  # fmt: skip
    args = parser.parse_args()
    if args.large < 1 or (args.seeds is not None and args.seeds < 1):
        parser.error("--large and --seeds take a whole number of at least 1")
    large = args.large > 1
    sets = list(data_sets(args.seeds if args.seeds is not None else 1 if large else 3, args.large))
    if args.grid:
        _grid(sets)
        return
    runners = methods(large)
    print(f"| data set | N x d | true k | {' | '.join(runners)} |")
    print("|---|---:|---:|" + "---:|" * len(runners))
    scores = {name: [] for name in runners}
    seconds = {name: 0.0 for name in runners}
    collapsed = {name: 0 for name in runners}  # one cluster (or none) where the truth has several
    for name, x, truth in sets:
        index = IndexedPoints(x, backend="cpu")
        cells = []
        for method, run in runners.items():
            started = time.perf_counter()
            labels = run(index, x)
            seconds[method] += time.perf_counter() - started
            ari = adjusted_rand_score(truth, labels)
            scores[method].append(ari)
            collapsed[method] += n_clusters(labels) <= 1 < n_clusters(truth)
            cells.append(f"{ari:.2f} ({n_clusters(labels)})")
        print(f"| {name} | {x.shape[0]} x {x.shape[1]} | {n_clusters(truth)} | {' | '.join(cells)} |")
    print(f"| **mean ARI** ({len(sets)} sets) | | | {' | '.join(f'**{np.mean(s):.3f}**' for s in scores.values())} |")
    print(f"| sets with 1 cluster where truth has several | | | {' | '.join(str(c) for c in collapsed.values())} |")
    print(f"\nseconds per method (all sets, index shared): {', '.join(f'{m} {s:.1f}' for m, s in seconds.items())}")


def _grid(sets) -> None:
    ks, zs = (8, 12, 16, 24, 32), (1.0, 1.65, 2.0, 2.5, 3.0, 4.0)
    indexes = [(IndexedPoints(x, backend="cpu"), truth) for _, x, truth in sets]
    print("| density_k \\ significance | " + " | ".join(map(str, zs)) + " |")
    print("|---:|" + "---:|" * len(zs))
    for k in ks:
        row = []
        for z in zs:
            aris = [adjusted_rand_score(truth, DensityPeaks(density_k=k, significance=z).fit(index).labels_) for index, truth in indexes]
            row.append(f"{np.mean(aris):.3f}")
        print(f"| {k} | " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
