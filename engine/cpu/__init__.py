"""The CPU backend: Numba kernels over NumPy arrays. Every backend module offers these same names."""

import platform

import numpy as np

from .assign import halo, labels, points_in_polygon
from .components import dbscan_labels
from .density import costs_of_leaves, delta, delta_in_point_order, delta_of_leaves, density_order, rho, rho_of_leaves
from .index import build_vptree
from .knn_update import knn_deleted, knn_inserted
from .mst import mst
from .potential import potential_sums
from .search import knn
from .update import (
    count_near, mark_newly_outranked, merge_order, nearest_denser_of, nearest_newly_denser, positions_of, rho_at, sq_to,
)  # fmt: skip
from .update import delete as tree_delete
from .update import insert as tree_insert

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
    "asarray", "build_vptree", "costs_of_leaves", "count_near", "dbscan_labels", "delta", "delta_in_point_order", "delta_of_leaves", "density_order", "device_name", "free_memory",
    "halo", "knn", "knn_deleted", "knn_inserted", "labels", "mark_newly_outranked", "merge_order", "mst", "name", "nearest_denser_of", "nearest_newly_denser",
    "points_in_polygon", "positions_of", "potential_sums", "rho", "rho_at", "rho_of_leaves", "sq_to", "synchronize", "to_numpy", "tree_delete",
    "tree_insert", "xp",
]  # fmt: skip
