"""dpstudio's compute engine: Density Peaks, DBSCAN and HDBSCAN on a VP-tree, CPU (Numba) or GPU (CuPy).

Never imports a UI library: usable headless from scripts, notebooks, the CLI and tests.
"""

from .backends import BackendUnavailable, MissingExtra, get_backend
from .dbscan import DBSCAN, HDBSCAN
from .data import DataError, Points, read_table, to_points, write_labels
from .dpc import DensityPeaks
from .indexed import IndexedPoints

__all__ = ["BackendUnavailable", "DBSCAN", "DataError", "DensityPeaks", "HDBSCAN", "IndexedPoints", "MissingExtra", "Points", "get_backend", "read_table", "to_points", "write_labels"]
