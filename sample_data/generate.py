"""Recreate the bundled sample sets: ``python -m dpstudio.sample_data.generate`` (same bytes every run)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).parent
SEED = 20141127  # Rodriguez & Laio, Science 344:1492, published 27 June 2014; any fixed seed would do


def blobs(rng):
    sizes = [900, 600, 400, 250, 150]
    centers = [(0, 0), (7, 1), (2, 7), (-6, 5), (-5, -5)]
    spreads = [1.3, 0.8, 1.0, 0.5, 0.6]
    return _gaussians(rng, sizes, centers, spreads)


def moons(rng):
    parts, labels = [], []
    for k, (shift, flip) in enumerate([((0.0, 0.0), 1), ((1.0, 0.45), -1)]):
        angle = np.pi / 2 + rng.normal(scale=0.55, size=700).clip(-np.pi / 2, np.pi / 2)  # dense at the middle
        arc = np.column_stack([np.cos(angle), flip * np.sin(angle)]) + shift
        parts.append(arc + rng.normal(scale=0.07, size=arc.shape))
        labels.append(np.full(700, k))
    return np.vstack(parts), np.concatenate(labels)


def nested(rng):
    # a dense core in the hollow of a crescent, plus a satellite; the crescent's Laplace profile has one sharp
    # density peak (a flat-topped profile breaks into several noisy peaks at small dc)
    core = rng.normal(scale=0.35, size=(700, 2))
    angle = np.pi + rng.laplace(scale=0.35, size=1500).clip(-0.45 * np.pi, 0.45 * np.pi)
    crescent = 3.0 * np.column_stack([np.cos(angle), np.sin(angle)]) + rng.normal(scale=0.15, size=(1500, 2))
    satellite = rng.normal(scale=0.3, size=(250, 2)) + (4.5, 2.5)
    return np.vstack([core, crescent, satellite]), np.repeat([0, 1, 2], [700, 1500, 250])


def noisy(rng):
    points, labels = _gaussians(rng, [500, 400, 400, 300], [(0, 0), (6, 0), (0, 6), (6, 6)], [0.8, 0.7, 0.9, 0.6])
    noise = rng.uniform(-4, 10, size=(320, 2))
    return np.vstack([points, noise]), np.concatenate([labels, np.full(320, -1)])


def blobs3d(rng):
    sizes, parts = [500, 400, 300, 300], []
    centers = [(0, 0, 0), (6, 0, 1), (0, 6, -1), (5, 5, 6)]
    for size, center in zip(sizes, centers):
        stretch = np.diag(rng.uniform(0.4, 1.4, 3))
        parts.append(rng.normal(size=(size, 3)) @ stretch + center)
    return np.vstack(parts), np.repeat(np.arange(4), sizes)


def digits(rng):
    from sklearn.datasets import load_digits  # ships its data; no download

    bunch = load_digits()
    return bunch.data, bunch.target


def _gaussians(rng, sizes, centers, spreads):
    parts = [rng.normal(scale=s, size=(n, 2)) + c for n, c, s in zip(sizes, centers, spreads)]
    return np.vstack(parts), np.repeat(np.arange(len(sizes)), sizes)


def main() -> None:
    from . import SAMPLES

    for name, (file_name, _) in SAMPLES.items():
        rng = np.random.default_rng([SEED, len(name)] + [ord(c) for c in name])
        features, labels = globals()[name](rng)
        shuffle = rng.permutation(len(labels))  # no set comes sorted by cluster
        features, labels = features[shuffle], labels[shuffle]
        columns = ["x", "y", "z"][: features.shape[1]] if features.shape[1] <= 3 else [f"pixel_{i}" for i in range(features.shape[1])]
        frame = pd.DataFrame(features, columns=columns)
        if file_name.endswith(".parquet"):
            frame.astype(np.float32).to_parquet(HERE / file_name, index=False)
        else:
            frame.to_csv(HERE / file_name, index=False, float_format="%.5f")
        pd.DataFrame({"label": labels}).to_csv(HERE / "truth" / f"{name}.csv", index=False)
        print(f"{name:8s} {features.shape[0]:5d} x {features.shape[1]:<3d} -> {file_name}")


if __name__ == "__main__":
    main()
