"""dpstudio's compute engine: Density Peaks, DBSCAN and HDBSCAN on a VP-tree, CPU (Numba) or GPU (CuPy).

Never imports a UI library: usable headless from scripts, notebooks, the CLI and tests.
"""

from .backends import BackendUnavailable, MissingExtra, get_backend
from .dbscan import DBSCAN, HDBSCAN
from .data import DataError, Points, read_table, to_points, write_labels
from .dpc import DensityPeaks
from .indexed import IndexedPoints

METHODS = ("dpc", "dbscan", "hdbscan")  # the estimators by the names the CLI's --method, the page and its URL use

__all__ = ["BackendUnavailable", "DBSCAN", "METHODS", "DataError", "DensityPeaks", "HDBSCAN", "IndexedPoints", "MissingExtra", "Points", "get_backend", "read_table", "to_points", "write_labels"]
