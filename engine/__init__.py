"""dpstudio's compute engine: Density Peaks Clustering on a VP-tree, CPU (Numba) or GPU (CuPy).

Never imports a UI library: usable headless from scripts, notebooks, the CLI and tests.
"""

from .backends import BackendUnavailable, get_backend
from .data import DataError, Points, read_table, to_points, write_labels
from .dpc import DensityPeaks
from .indexed import IndexedPoints

__all__ = ["BackendUnavailable", "DataError", "DensityPeaks", "IndexedPoints", "Points", "get_backend", "read_table", "to_points", "write_labels"]
