"""The entropy dc rule (GPU-FSFDP, after Wang et al.'s data field): dc from the sigma of least potential entropy.

    phi_i(sigma) = 1 + sum_{j != i, d_ij < 3 sigma} exp(-(d_ij / sigma)^2)
    H(sigma)     = -sum_i (phi_i / Z) log(phi_i / Z) = log Z - sum_i phi_i log phi_i / Z,   Z = sum_i phi_i
    sigma*       = argmin H,   dc = 3 / sqrt(2) * sigma*   (the data field's radius of influence)

The 1 is each point's own unit mass, as in the data field. Without it (j != i only) H tends to log 2 as sigma
shrinks (all the potential on the closest pair), so the minimum would sit at whatever smallest sigma is tried;
with it phi tends to 1 at small sigma and to N at large sigma, H to log N at both ends, and the minimum lies
between. Truncation: a pair farther than 3 sigma adds less than e^-9 = 1.2e-4 to phi at that sigma, so phi_i is
low by at most 1.2e-4 times the number of points beyond 3 sigma (the Gaussian rho's rule, same float32 reach).

The search, on beta = 1 / sigma^2 (``potential_sums`` of the backend: one pass over the pairs per grid):

1. Range: sigma from half the median distance to the nearest other point (below it phi ~ 1 and H ~ log N) to a
   third of the ``RANGE_QUANTILE`` quantile of pair distances (sampled as the percent rule samples them), at most
   ``MAX_OCTAVES`` octaves of beta (the lower end moves up).
2. Locate: H at beta = b, 1.25 b, 1.5 b, 1.75 b, 2 b, 2.5 b, ... (octaves of 4 linear steps) over that range,
   from the points of ``LOCATE_LEAVES`` leaves spread evenly through the tree (every point when the tree has no
   more leaves than that). This is an estimate; it only chooses where to look.
3. Exact: H over every point at ``EXACT_STEPS`` beta between the located grid value's two neighbours; while the
   least H sits at an end of that window, the window moves there (at most ``MAX_SHIFTS`` times). A parabola
   through the least H and its two neighbours refines sigma*: the result is the minimum of the exact H within
   that window, to within a fraction of its step (steps of 3 % to 6 % in sigma).

Duplicates: m copies of a point keep its phi >= m at every sigma, so as sigma shrinks H falls again toward the
entropy of the multiplicities (the copies' masses dominate). That end says nothing about scale, so sigma* is the
least of H's interior local minima on the located grid (ascending in beta); the least H overall only when H has
no interior minimum there.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .dc import pair_indices, pair_sq_distances
from .vptree import VPTree, reach_rule

RANGE_QUANTILE = 0.25
MAX_OCTAVES = 16  # of beta in the locate grid (a sigma range of 256x): 64 values, what a GPU lane holds
LOCATE_STEPS, LOCATE_LEAVES = 4, 32
EXACT_STEPS, MAX_SHIFTS = 5, 4
DC_PER_SIGMA = 3 / np.sqrt(2)


@dataclass(frozen=True)
class EntropyDc:
    """The rule's result: dc, sigma*, and the exact H curve it was read from (beta = 1 / sigma^2 ascending)."""

    dc: float
    sigma: float
    beta: np.ndarray
    entropy: np.ndarray


def dc_from_entropy(backend, tree: VPTree, points, neighbour_sq) -> EntropyDc:
    """The entropy rule's dc for the indexed points; ``neighbour_sq``: each point's squared distances to its nearest
    other points, nearest first (the backend's kNN lists), whose first positive one is its nearest distinct point
    (where every point has a copy, every nearest other point is at 0). If all points are identical, dc = 1 (as
    the percent rule)."""
    xp, n = backend.xp, tree.n_points
    distinct = xp.where(xp.isfinite(neighbour_sq) & (neighbour_sq > 0), neighbour_sq, xp.inf).min(axis=1)
    nearest = backend.to_numpy(distinct)
    nearest = nearest[np.isfinite(nearest)]
    i, j = pair_indices(n)
    sq = backend.to_numpy(pair_sq_distances(points, xp.asarray(i), xp.asarray(j), xp))
    if nearest.size == 0:  # more copies of every point than its lists hold (a Likert scale's answers): the closest
        positive = sq[sq > 0]  # distinct pair sampled (the pairs' median is the typical distance, far above it)
        nearest = positive.min(keepdims=True) if positive.size else positive
    if nearest.size == 0:
        return EntropyDc(1.0, 1.0 / DC_PER_SIGMA, np.ones(1), np.zeros(1))
    sigma_lo = 0.5 * np.sqrt(np.median(nearest.astype(np.float64)))
    sigma_hi = max(np.sqrt(np.quantile(sq.astype(np.float64), RANGE_QUANTILE)) / 3.0, 4.0 * sigma_lo)
    sigma_lo = max(sigma_lo, sigma_hi * 2.0 ** (-MAX_OCTAVES / 2))

    n_leaves = 1 << tree.depth
    sample = np.unique(np.linspace(0, n_leaves - 1, min(n_leaves, LOCATE_LEAVES)).astype(np.int64))
    octaves = np.arange(max(1, int(np.ceil(2 * np.log2(sigma_hi / sigma_lo)))))
    dbeta = 2.0**octaves / (sigma_hi**2 * LOCATE_STEPS)
    beta, entropy = entropy_curve(backend, tree, sample, dbeta, np.full(octaves.size, LOCATE_STEPS), LOCATE_STEPS)
    best = least_interior_minimum(entropy)
    low, high = beta[max(best - 1, 0)], beta[min(best + 1, beta.size - 1)]

    all_leaves = np.arange(n_leaves, dtype=np.int64)
    for _ in range(MAX_SHIFTS + 1):
        step = (high - low) / (EXACT_STEPS - 1)
        first = max(1, round(low / step))
        beta, entropy = entropy_curve(backend, tree, all_leaves, [step], [first], EXACT_STEPS)
        best = int(np.argmin(entropy))
        if 0 < best < EXACT_STEPS - 1:
            break
        low = max(beta[best] - (high - low) / 2, beta[best] / 2)  # centre the window on the end it found
        high = low + (EXACT_STEPS - 1) * step
    sigma = 1.0 / np.sqrt(beta[best] + _parabola_offset(entropy, best) * step)
    return EntropyDc(float(DC_PER_SIGMA * sigma), float(sigma), beta, entropy)


def entropy_curve(backend, tree: VPTree, leaves: np.ndarray, dbeta, first, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """(beta, H), ascending in beta, on the grid (first[w] + k) dbeta[w] (k < steps; windows ascending) from one
    pass over the pairs of the points of ``leaves``; H is the whole set's when those are every leaf, else its
    sampled estimate log(N mean phi) - mean(phi log phi) / mean(phi)."""
    dbeta, first = np.asarray(dbeta, np.float64), np.asarray(first, np.int64)
    beta = (first[:, None] + np.arange(steps)) * dbeta[:, None]
    reach2 = np.array([[reach_rule(3.0 / np.sqrt(b), tree.n_dims)[0] for b in row] for row in beta], np.float32)
    _, reach_lo, reach_hi = reach_rule(3.0 / np.sqrt(beta[0, 0]), tree.n_dims)
    sums = backend.potential_sums(tree, leaves, dbeta, first, reach2, reach_lo, reach_hi)
    phi_sum, phi_log_phi = (np.asarray(backend.to_numpy(a), np.float64) for a in sums)
    leaf_start = np.asarray(backend.to_numpy(tree.leaf_start))
    n_queries = int((leaf_start[leaves + 1] - leaf_start[leaves]).sum())
    return beta.reshape(-1), np.log(tree.n_points * phi_sum / n_queries) - phi_log_phi / phi_sum


def least_interior_minimum(entropy: np.ndarray) -> int:
    """Index of the least H among the grid's interior local minima (lower than the value before, not above the
    one after); the least H overall when there is none."""
    inner = np.flatnonzero((entropy[1:-1] < entropy[:-2]) & (entropy[1:-1] <= entropy[2:])) + 1
    return int(inner[np.argmin(entropy[inner])]) if inner.size else int(np.argmin(entropy))


def _parabola_offset(values: np.ndarray, best: int) -> float:
    """Where the parabola through values[best - 1 : best + 2] has its minimum, in steps from best (0 at an end)."""
    if not 0 < best < values.size - 1:
        return 0.0
    before, at, after = values[best - 1], values[best], values[best + 1]
    curvature = before - 2 * at + after
    return float(np.clip(0.5 * (before - after) / curvature, -0.5, 0.5)) if curvature > 0 else 0.0
