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


# Gaussian rho against the oracle: NumPy's exp and the backend's may round a term to neighbouring units of 2^-32
# (an ulp apart, rarely); a few units at most
GAUSSIAN_ATOL = 2.0**-30


def rho(sq: np.ndarray, dc: float, kernel: str) -> np.ndarray:
    n = sq.shape[0]
    out = np.zeros(n)
    if kernel == "cutoff":
        threshold = np.float32(np.float64(dc) ** 2)
        for i in range(n):
            out[i] = np.count_nonzero(sq[i] < threshold) - 1  # minus the point itself (distance 0)
    else:
        reach = np.float32((3.0 * np.float64(dc)) ** 2)
        for i in range(n):  # each term in whole units of 2^-32, summed exactly (README: exact semantics)
            w = np.rint(np.exp(-sq[i].astype(np.float64) / np.float64(dc) ** 2) * 2.0**32).astype(np.int64)
            keep = (sq[i] < reach) & (np.arange(n) != i)
            out[i] = w[keep].sum() / 2.0**32
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


def with_densest(chosen, rho_values: np.ndarray) -> list[int]:
    """The centers a labelling uses: the chosen ones in order, then the densest point (ties by the smaller index)
    unless it was chosen, as every point's chain ends there."""
    densest = int(np.lexsort((np.arange(len(rho_values)), -np.asarray(rho_values)))[0])
    return [int(c) for c in chosen] + ([densest] if densest not in chosen else [])


def gamma(rho_values: np.ndarray, delta: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """rho * delta, the densest point's delta (the one without a parent) capped at the largest of the others'."""
    capped = np.asarray(delta, np.float64).copy()
    root = parent < 0
    if (~root).any():
        capped[root] = np.minimum(capped[root], capped[~root].max())
    return np.asarray(rho_values, np.float64) * capped


def gamma_suggestion(gamma_values: np.ndarray, most: int = 32) -> list[int]:
    """The largest-gamma-drop rule, one point at a time: the largest gammas (ties by index) down to the first
    largest ratio g_k / g_(k+1) among the ``most`` + 1 largest (a drop to 0 is infinite, 0 to 0 is 1)."""
    n = gamma_values.shape[0]
    order = sorted(range(n), key=lambda i: (-gamma_values[i], i))
    if n < 3:
        return order[:1]
    top = [float(gamma_values[i]) for i in order[: min(n, most + 1)]]
    best, count = -1.0, 1
    for k in range(len(top) - 1):
        ratio = top[k] / top[k + 1] if top[k + 1] > 0 else (np.inf if top[k] > 0 else 1.0)
        if ratio > best:
            best, count = ratio, k + 1
    return order[:count]


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


# --- DBSCAN family ------------------------------------------------------------------------------------------


def knn(sq: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k nearest other points of every point (a duplicate is another point), nearest first, ties by smaller
    index; rows shorter than k (N - 1 < k) end in -1 / inf."""
    n = sq.shape[0]
    ids = np.full((n, k), -1, np.int64)
    dists = np.full((n, k), np.inf, np.float32)
    for i in range(n):
        others = np.array([j for j in range(n) if j != i], np.int64)
        ranked = others[np.lexsort((others, sq[i, others]))][:k]
        ids[i, : ranked.size], dists[i, : ranked.size] = ranked, sq[i, ranked]
    return ids, dists


def core_sq(sq: np.ndarray, min_samples: int) -> np.ndarray:
    """Squared core distance: to the min_samples-th nearest point, the point itself counted (inf: too few points)."""
    if min_samples == 1:
        return np.zeros(sq.shape[0], np.float32)
    return knn(sq, min_samples - 1)[1][:, -1]


def mst(sq: np.ndarray, core: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Prim's algorithm on mutual reachability, every edge keyed by (w2, smaller id, larger id): the unique
    minimum spanning tree under that total order, as (u, v, w2) with u < v, sorted by key."""
    n = sq.shape[0]
    mr = np.maximum(np.maximum(core[:, None], core[None, :]), sq)
    in_tree = np.zeros(n, bool)
    best = {j: (np.inf, n, n) for j in range(n)}
    best[0] = (-1.0, -1, -1)
    edges = []
    for _ in range(n):
        j = min((key, j) for j, key in best.items())[1]
        key = best.pop(j)
        in_tree[j] = True
        if key[1] >= 0:
            edges.append(key)
        for t in best:
            candidate = (float(mr[j, t]), min(j, t), max(j, t))
            best[t] = min(best[t], candidate)
    edges.sort()
    w2, u, v = (np.array(column) for column in zip(*edges)) if edges else (np.empty(0),) * 3
    return u.astype(np.int64), v.astype(np.int64), w2.astype(np.float32)


def dbscan(sq: np.ndarray, eps: float, min_samples: int) -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's DBSCAN, written out: neighbours by the float32 rule d2 <= float32(eps^2), the point itself
    counted; clusters grown depth-first from cores in index order. (labels, core mask)."""
    eps2 = np.float32(np.float64(eps) ** 2)
    neighbours = [np.flatnonzero(row <= eps2) for row in sq]
    core = np.array([len(nb) >= min_samples for nb in neighbours])
    labels = np.full(sq.shape[0], -1, np.int64)
    label = 0
    for i in range(sq.shape[0]):
        if labels[i] != -1 or not core[i]:
            continue
        stack = [i]
        while stack:
            p = stack.pop()
            if labels[p] != -1:
                continue
            labels[p] = label
            if core[p]:
                stack.extend(q for q in neighbours[p] if labels[q] == -1)
        label += 1
    return labels, core
