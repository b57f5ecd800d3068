"""The vectorized VP-tree of GDPC: an array layout shared by every backend.

Layout (breadth first, node k has children 2k+1 and 2k+2):

* The tree is complete: ``depth`` internal levels, then ``2**depth`` leaves of at most ``LEAF_SIZE`` points.
* Every node owns a contiguous run of tree positions: leaf j holds ``[leaf_start[j], leaf_start[j + 1])``, and
  node j of level L the runs of its leaves, ``[leaf_start[j << (depth - L)], leaf_start[(j + 1) << (depth - L)])``
  (``cpu.geometry.run_start``). A whole subtree is therefore one slice. A fresh build splits by arithmetic
  alone (node j of level L owns ``[j*N >> L, (j+1)*N >> L)``); inserts and deletes then move the boundaries.
* ``coords`` holds the data reordered into tree positions, one row per dimension (so a leaf scan is a
  unit-stride loop per dimension: SIMD on the CPU, coalesced on the GPU), and ``ids`` the original index of
  each position (GDPC's leaf arrays; vantage points stay in their leaves).
* Internal node k split its run by distance to its vantage point ``vantage[k]`` at the median:
  the inside child holds the nearer half, ``split_radius[k]`` is its largest distance.
* Beyond the paper, each node carries a bounding ball (``center``, ``cover_radius``), used by every query to
  count a whole subtree inside the dc-ball or skip it, and ``min_id``, the smallest original index in the node,
  which settles distance ties without visiting the node.

The CPU backend adds a neighbour graph (``neighbours``): the K nearest points of every position, which turns
delta into a look-up for almost every point. The GPU backend searches the tree instead and leaves it None.

Distances are float32: the squared distance is summed dimension by dimension in float32 without fused
multiply-add, so every backend computes bit-identical values. Bounds built from them carry a relative slack
(``bound_slack``) larger than their rounding error, so pruning never changes an exact result.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

LEAF_SIZE = 32


def tree_depth(n_points: int) -> int:
    """Number of internal levels so that every leaf holds at most LEAF_SIZE points."""
    depth = 0
    while (n_points + (1 << depth) - 1) >> depth > LEAF_SIZE:
        depth += 1
    return depth


def bound_slack(n_dims: int) -> float:
    """Relative slack on triangle-inequality bounds: far above float32 rounding of a d-term distance."""
    return (n_dims + 8) * 2.0**-20


# A Gaussian rho is a sum of its terms exp(-d^2 / dc^2) each rounded to a whole number of 2^-32 (kept as int64):
# whole numbers add up exactly in any order, so a point's rho does not depend on the order of its terms (tree
# order, which an update, a permutation of the points or a split among Dask's workers changes). A float64 sum's last
# bits did, and points of equal rho (a grid's) were then ordered by rounding, not by index. Each term is within
# 2^-33 of exp; rho up to 2^31 points fits in int64.
GAUSSIAN_UNIT = 2.0**32


def gaussian_reach(dc: float) -> float:
    """Radius beyond which Gaussian weights are dropped (each dropped term is below e^-9)."""
    return 3.0 * dc


def rho_reach(dc: float, kernel: str) -> float:
    """How far rho looks: dc for the cut-off kernel, ``gaussian_reach`` for the Gaussian one."""
    return gaussian_reach(dc) if kernel == "gaussian" else dc


def float32_square(value: float) -> np.float32:
    """``value``² in float32, the distance rule's type: squared in float64, then rounded (inf past float32's range,
    without NumPy's overflow warning: an ε of 1e30 reaches every point, as it should)."""
    with np.errstate(over="ignore"):
        return np.float32(np.float64(value) ** 2)


def reach_rule(reach: float, n_dims: int) -> tuple[np.float32, float, float]:
    """The distance rule for ``d < reach``: (float32 squared reach that leaf scans compare with, and the reach
    shrunk and grown by the slack, below / at or above which a whole node's bounds decide it)."""
    reach2 = float32_square(reach)
    exact = float(np.sqrt(np.float64(reach2)))
    slack = bound_slack(n_dims)
    return reach2, exact * (1 - slack), exact * (1 + slack)


@dataclass(frozen=True)
class NeighbourGraph:
    """The K nearest points of every tree position, nearest first, ties by smaller original index."""

    positions: Any  # (N, K) int32, tree positions of the neighbours; -1 pads the lists when N <= K
    sq_dists: Any  # (N, K) float32, their squared distances by the float32 rule

    @property
    def nbytes(self) -> int:
        return int(self.positions.nbytes + self.sq_dists.nbytes)


@dataclass(frozen=True)
class VPTree:
    coords: Any  # (d, N) float32, tree order
    ids: Any  # (N,) int64, original index of each tree position
    vantage: Any  # (2**depth - 1,) int64, original index of each internal node's vantage point, as built
    split_radius: Any  # (2**depth - 1,) float32, largest distance inside the near half, as built (queries use the
    # balls; an insert or delete leaves both as they were, -1 / 0 for a node split from an empty leaf)
    center: Any  # (2**(depth+1) - 1, d) float32, bounding-ball centre of each node
    cover_radius: Any  # (2**(depth+1) - 1,) float32, bounding-ball radius of each node
    min_id: Any  # (2**(depth+1) - 1,) int64, smallest original index in each node
    depth: int
    leaf_start: Any  # (2**depth + 1,) int64, first tree position of each leaf, then N
    neighbours: NeighbourGraph | None = None

    @property
    def n_points(self) -> int:
        return int(self.coords.shape[1])

    @property
    def n_dims(self) -> int:
        return int(self.coords.shape[0])

    @property
    def n_nodes(self) -> int:
        return (2 << self.depth) - 1

    @property
    def nbytes(self) -> int:
        arrays = (self.coords, self.ids, self.vantage, self.split_radius, self.center, self.cover_radius, self.min_id)
        graph = 0 if self.neighbours is None else self.neighbours.nbytes
        return int(sum(a.nbytes for a in arrays)) + graph
