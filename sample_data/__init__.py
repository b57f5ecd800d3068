"""Small bundled data sets with ground-truth labels, regenerated deterministically by ``generate.py``.

Each set is a feature file (every column is a feature) plus ``truth/<name>.csv`` with one ``label`` column
(-1 marks background noise).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

SAMPLES = {
    "blobs": ("blobs.csv", "2-D: five Gaussian clusters of unequal size and density"),
    "moons": ("moons.csv", "2-D: two interleaved crescents, densest at their middles"),
    "nested": ("nested.csv", "2-D: a dense core in the hollow of a crescent, and a satellite cluster"),
    "noisy": ("noisy.csv", "2-D: four clusters over uniform background noise (truth -1)"),
    "blobs3d": ("blobs3d.csv", "3-D: four elongated Gaussian clusters"),
    "digits": ("digits.parquet", "64-D: scikit-learn's 8x8 handwritten digits (UCI), 1797 images, ten classes"),
}
DEFAULT = "blobs"


def path(name: str) -> Path:
    """Path of a sample set's feature file."""
    if name not in SAMPLES:
        raise KeyError(f"no sample named {name!r} (available: {', '.join(SAMPLES)})")
    return Path(str(resources.files(__name__).joinpath(SAMPLES[name][0])))


def truth(name: str) -> np.ndarray:
    """Ground-truth labels of a sample set."""
    path(name)  # validates the name
    return pd.read_csv(Path(str(resources.files(__name__).joinpath("truth", f"{name}.csv"))))["label"].to_numpy()
