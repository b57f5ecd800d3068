"""The CPU backend: Numba kernels over NumPy arrays. Every backend module offers these same names."""

import platform

import numpy as np

from .assign import halo, labels, points_in_polygon
from .components import dbscan_labels
from .density import delta, density_order, rho
from .index import build_vptree
from .mst import mst
from .potential import potential_sums
from .search import knn

name = "cpu"
xp = np


def device_name() -> str:
    import numba

    return f"CPU ({platform.processor() or platform.machine()}, {numba.get_num_threads()} threads)"


def asarray(values: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(values)


def to_numpy(values) -> np.ndarray:
    return np.asarray(values)


def synchronize() -> None:
    """Nothing to wait for: CPU kernels return when done."""


def free_memory() -> None:
    """Nothing to give back: NumPy frees arrays when they are dropped."""


__all__ = [
    "asarray", "build_vptree", "dbscan_labels", "delta", "density_order", "device_name", "free_memory", "halo",
    "knn", "labels", "mst", "name", "points_in_polygon", "potential_sums", "rho", "synchronize", "to_numpy", "xp",
]  # fmt: skip
