"""Labels from chosen centers, the halo, and lasso hit-testing on the CPU (Numba)."""

from __future__ import annotations

import numba as nb
import numpy as np

from ..vptree import LEAF_SIZE, VPTree, bound_slack, reach_rule
from .geometry import BLOCK, STACK, ball_distance, leaf_sq_dists, node_min


@nb.njit(cache=True, nogil=True)
def _follow_parents(parent, density_order, centers):
    """Each point takes its parent's label; walking in density order, every parent is labelled first."""
    labels = np.full(parent.shape[0], -1, np.int64)
    for k in range(centers.shape[0]):
        labels[centers[k]] = k
    for i in density_order:
        if labels[i] < 0:
            labels[i] = labels[parent[i]]
    return labels


def labels(parent: np.ndarray, density_order: np.ndarray, centers: np.ndarray) -> np.ndarray:
    return _follow_parents(parent, density_order, centers)


@nb.njit(cache=True, nogil=True)
def _densest_other_label(q, p, coords, leaf_start, labels, rho, center, radius, node_label, node_max_rho, depth, dc2, dc_lo, dc_hi, slack, nodes, levels, sq):
    """Largest rho among points within dc of position p that carry another label (-inf if none)."""
    own = labels[p]
    best = -np.inf
    nodes[0], levels[0], top = 0, 0, 1
    while top > 0:
        top -= 1
        k, level = nodes[top], levels[top]
        if node_label[k] == own or node_max_rho[k] <= best:
            continue
        lower, upper = ball_distance(q, center, radius, k, slack)
        if lower >= dc_hi:
            continue
        if upper < dc_lo and node_label[k] >= 0:
            best = node_max_rho[k]  # wholly inside, one other label: its densest point is the answer here
            continue
        j = k - ((1 << level) - 1)
        if level == depth:
            start, end = leaf_start[j], leaf_start[j + 1]
            leaf_sq_dists(coords, q, start, end, sq)
            for t in range(start, end):
                if labels[t] != own and rho[t] > best and sq[t - start] < dc2:
                    best = rho[t]
        else:
            nodes[top], levels[top] = 2 * k + 1, level + 1
            nodes[top + 1], levels[top + 1] = 2 * k + 2, level + 1
            top += 2
    return best


@nb.njit(parallel=True, nogil=True, cache=True)
def _border_rho(coords, leaf_start, labels, rho, center, radius, node_label, node_max_rho, depth, dc2, dc_lo, dc_hi, slack, out):
    n = coords.shape[1]
    for b in nb.prange((n + BLOCK - 1) // BLOCK):
        nodes = np.empty(STACK, np.int64)
        levels = np.empty(STACK, np.int64)
        sq = np.empty(LEAF_SIZE, np.float32)
        for p in range(b * BLOCK, min(n, (b + 1) * BLOCK)):
            q = coords[:, p].copy()
            other = _densest_other_label(
                q, p, coords, leaf_start, labels, rho, center, radius, node_label, node_max_rho, depth, dc2, dc_lo, dc_hi, slack, nodes, levels, sq
            )
            out[p] = (rho[p] + other) / 2.0


def halo(tree: VPTree, rho: np.ndarray, labels: np.ndarray, dc: float) -> np.ndarray:
    """Rodriguez & Laio's halo: rho below the border density of the point's cluster."""
    labels_tree = np.ascontiguousarray(labels[tree.ids])
    rho_tree = np.ascontiguousarray(rho[tree.ids])
    node_max_rho = -node_min(-rho_tree, tree.leaf_start, tree.depth)
    smallest, largest = node_min(labels_tree, tree.leaf_start, tree.depth), -node_min(-labels_tree, tree.leaf_start, tree.depth)
    node_label = np.where(smallest == largest, smallest, -1)  # -1: the node mixes labels
    dc2, dc_lo, dc_hi = reach_rule(dc, tree.n_dims)
    pair_rho = np.empty(tree.n_points, np.float64)
    _border_rho(
        tree.coords, tree.leaf_start, labels_tree, rho_tree, tree.center, tree.cover_radius, node_label, node_max_rho,
        tree.depth, dc2, dc_lo, dc_hi, bound_slack(tree.n_dims), pair_rho,
    )  # fmt: skip
    n_clusters = int(labels.max()) + 1
    border = np.full(n_clusters, -np.inf)
    np.maximum.at(border, labels_tree, pair_rho)
    return rho < border[labels]


@nb.njit(parallel=True, nogil=True, cache=True)
def points_in_polygon(x, y, polygon):
    """Even-odd rule: is each (x, y) inside the closed polygon (m, 2)?"""
    n, m = x.shape[0], polygon.shape[0]
    inside = np.zeros(n, np.bool_)
    for i in nb.prange(n):
        crossings = False
        for a in range(m):
            b = (a + 1) % m
            xa, ya, xb, yb = polygon[a, 0], polygon[a, 1], polygon[b, 0], polygon[b, 1]
            if (ya > y[i]) != (yb > y[i]) and x[i] < xa + (y[i] - ya) * (xb - xa) / (yb - ya):
                crossings = not crossings
        inside[i] = crossings
    return inside
