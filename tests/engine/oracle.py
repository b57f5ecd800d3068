"""Brute-force float64 reference for Density Peaks: obvious loops over an all-pairs distance matrix.

Distances follow the engine's documented float32 rule (squared differences summed in float32, dimension by
dimension) so that results can be compared exactly; ``test_distance_rule`` checks that rule against float64.
"""

import numpy as np


def rule_sq_dists(points: np.ndarray) -> np.ndarray:
    x = points.astype(np.float32)
    acc = np.zeros((x.shape[0], x.shape[0]), np.float32)
    for c in range(x.shape[1]):
        diff = x[:, None, c] - x[None, :, c]
        acc += diff * diff
    return acc


def exact_sq_dists(points: np.ndarray) -> np.ndarray:
    x = points.astype(np.float32).astype(np.float64)
    return ((x[:, None, :] - x[None, :, :]) ** 2).sum(-1)


def rho(sq: np.ndarray, dc: float, kernel: str) -> np.ndarray:
    n = sq.shape[0]
    out = np.zeros(n)
    if kernel == "cutoff":
        threshold = np.float32(np.float64(dc) ** 2)
        for i in range(n):
            out[i] = np.count_nonzero(sq[i] < threshold) - 1  # minus the point itself (distance 0)
    else:
        reach = np.float32((3.0 * np.float64(dc)) ** 2)
        for i in range(n):
            w = np.exp(-sq[i].astype(np.float64) / np.float64(dc) ** 2)
            keep = (sq[i] < reach) & (np.arange(n) != i)
            out[i] = w[keep].sum()
    return out


def delta_parent(sq: np.ndarray, rho_values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n = sq.shape[0]
    delta = np.empty(n)
    parent = np.full(n, -1)
    index = np.arange(n)
    for i in range(n):
        denser = (rho_values > rho_values[i]) | ((rho_values == rho_values[i]) & (index < i))
        if not denser.any():
            delta[i] = np.sqrt(np.float64(sq[i].max()))
            continue
        candidates = index[denser]
        nearest = candidates[sq[i, candidates] == sq[i, candidates].min()]
        parent[i] = nearest.min()
        delta[i] = np.sqrt(np.float64(sq[i, parent[i]]))
    return delta, parent


def labels(parent: np.ndarray, centers: list[int]) -> np.ndarray:
    label_of = {c: k for k, c in enumerate(centers)}
    out = np.empty(parent.shape[0], np.int64)
    for i in range(parent.shape[0]):
        j = i
        while j not in label_of:
            j = parent[j]
        out[i] = label_of[j]
    return out


def halo(sq: np.ndarray, rho_values: np.ndarray, label: np.ndarray, dc: float) -> np.ndarray:
    threshold = np.float32(np.float64(dc) ** 2)
    border = np.full(label.max() + 1, -np.inf)
    for i in range(sq.shape[0]):
        across = (label != label[i]) & (sq[i] < threshold)
        if across.any():
            border[label[i]] = max(border[label[i]], ((rho_values[i] + rho_values[across]) / 2).max())
    return rho_values < border[label]
