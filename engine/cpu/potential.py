"""Data-field potentials for many sigma in one pass over the pairs (the entropy dc rule, ``dpstudio.engine.entropy``).

For every query point q of the chosen leaves, phi_q(beta) = 1 + sum over j != q with d_qj^2 < reach2(beta) of
exp(-d_qj^2 * beta), for a grid of beta = 1 / sigma^2 made of windows of whole multiples of a step:
beta = (first[w] + k) * dbeta[w], k < steps. A pair's terms in a window are then powers of one number,
r = exp(-d^2 dbeta): one exp() per window, r^first by squaring, a multiplication per step. The sums reduce on
the spot to what the potential entropy needs: sum_q phi_q and sum_q phi_q log phi_q per beta.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ..vptree import LEAF_SIZE, VPTree, bound_slack
from .density import leaf_interactions
from .geometry import STACK, ball_distance, leaf_sq_dists


@nb.njit(inline="always", cache=True)
def _power(base, exponent):
    """base ** exponent for a whole exponent >= 0, by squaring (about log2(exponent) roundings)."""
    result = 1.0
    while exponent > 0:
        if exponent & 1:
            result *= base
        base *= base
        exponent >>= 1
    return result


@nb.njit(inline="always", cache=True)
def _add_pair(sq, dbeta, first, reach2, acc):
    """Add one pair's terms to acc for every beta whose reach holds it: windows ascend in beta, so reaches fall."""
    windows, steps = reach2.shape
    for w in range(windows):
        held = 0
        while held < steps and sq < reach2[w, held]:
            held += 1
        if held == 0:
            return
        ratio = np.exp(-np.float64(sq) * dbeta[w])
        term = _power(ratio, first[w])
        offset = w * steps
        for k in range(held):
            acc[offset + k] += term
            term *= ratio


@nb.njit(parallel=True, nogil=True, cache=True)
def _potential_leaves(coords, leaf_start, center, radius, depth, leaves, dbeta, first, reach2, reach_lo, reach_hi, slack, phi_sum, phi_log_phi):
    leaf_offset = (1 << depth) - 1
    n_values = reach2.size
    for i in nb.prange(leaves.shape[0]):
        leaf = leaves[i]
        nodes = np.empty(STACK, np.int64)
        levels = np.empty(STACK, np.int64)
        candidates = np.empty(1 << depth, np.int64)
        sq = np.empty(LEAF_SIZE, np.float32)
        acc = np.empty(n_values, np.float64)
        n_candidates = leaf_interactions(  # gaussian: every leaf within reach is a candidate, none counted whole
            leaf, coords, leaf_start, center, radius, depth, reach_lo, reach_hi, True, slack, nodes, levels, candidates
        )[1]
        for p in range(leaf_start[leaf], leaf_start[leaf + 1]):
            q = coords[:, p].copy()
            acc[:] = 0.0
            for c in range(n_candidates):
                j = candidates[c]
                if ball_distance(q, center, radius, leaf_offset + j, slack)[0] >= reach_hi:
                    continue
                start, end = leaf_start[j], leaf_start[j + 1]
                leaf_sq_dists(coords, q, start, end, sq)
                for t in range(end - start):
                    if start + t != p:
                        _add_pair(sq[t], dbeta, first, reach2, acc)
            for s in range(n_values):
                phi = 1.0 + acc[s]  # the point's own unit mass keeps phi >= 1: no log of 0
                phi_sum[i, s] += phi
                phi_log_phi[i, s] += phi * np.log(phi)


def potential_sums(tree: VPTree, leaves: np.ndarray, dbeta: np.ndarray, first: np.ndarray, reach2: np.ndarray,
                   reach_lo: float, reach_hi: float) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """(sum of phi, sum of phi log phi), each (windows * steps,), over the points of ``leaves``; ``reach2``
    (windows, steps) float32 holds each beta's squared reach, and reach_lo / reach_hi the largest reach's
    slackened bounds (``vptree.reach_rule``)."""
    n_values = reach2.size
    phi_sum = np.zeros((leaves.shape[0], n_values), np.float64)
    phi_log_phi = np.zeros_like(phi_sum)
    _potential_leaves(
        tree.coords, tree.leaf_start, tree.center, tree.cover_radius, tree.depth, np.ascontiguousarray(leaves, np.int64),
        np.ascontiguousarray(dbeta, np.float64), np.ascontiguousarray(first, np.int64),
        np.ascontiguousarray(reach2, np.float32), reach_lo, reach_hi, bound_slack(tree.n_dims), phi_sum, phi_log_phi,
    )  # fmt: skip
    return phi_sum.sum(axis=0), phi_log_phi.sum(axis=0)
