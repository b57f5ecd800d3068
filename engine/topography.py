"""Automatic clustering by the topography of the density (after ADP: d'Errico, Facco, Laio & Rodriguez,
"Automatic topography of high-dimensional data sets by non-parametric density peak clustering", Inf. Sci. 2021).

1. Density with an error. log rho_i = -D log r_k(i) + const, the k-nearest-neighbour estimate in the intrinsic
   dimension D (TwoNN: D = n / sum log(r_2 / r_1), Facco et al. 2017, the largest 10 % of ratios left out). In
   the embedding dimension a 64-pixel image's density would swing by 64 log r and every wiggle would look
   significant; D is what the volume of a neighbourhood really scales with. The k points in the ball make the
   count Poisson-like, so the error of log rho is eps = 1 / sqrt(k) for every point: the fixed-k estimate of ADP
   without its point-adaptive k (PAk), chosen for being one cached kNN list (``IndexedPoints.neighbours``) and
   for an error that needs no fit.
2. Peaks. A point is a candidate peak when it is denser than its k nearest neighbours and lies in no denser
   point's list of k; every other point's parent is the nearest denser point of its own list (or, for a point
   only a denser point lists, that point), so labels follow parent chains to the peaks, as in DPC.
3. Saddles. Two clusters touch where a point of one lists a point of the other; the saddle is the largest
   min(log rho_i, log rho_j) over such pairs, with error eps.
4. Merging. Going down the saddles from the highest, two clusters merge when the lower of their peaks is not
   significantly above the saddle: log rho_peak - log rho_saddle < Z (eps_peak + eps_saddle). A merged cluster
   keeps the higher peak, so a pair once found significant stays so, and one pass over the sorted saddles merges
   exactly as repeating "merge the highest saddle that is not significant" would. Z is the one parameter, as
   ADP's is, for data of up to TESTED_PEAKS candidate peaks (the quality benchmark's sets have 12-66). With more
   candidates a noise bump has more chances to look significant: 4 Gaussian blobs of 250k points each gave 7-10
   clusters at Z = 2.5, a single blob of 400k 2-5 in 10 of 12 seeds. So Z grows with the candidates m, a
   Bonferroni-style heuristic: Z' = sqrt(Z^2 + 2 ln(m / TESTED_PEAKS)), from the leading term of a one-sided
   Gaussian tail, exp(-Z'^2 / 2) = exp(-Z^2 / 2) TESTED_PEAKS / m (the exact quantile is a little lower: 3.52
   against 3.60 at m = 2,857). 2-D data at k = 16 have about one candidate in 35 points: for Z = 2.5, Z' is about
   3.6 at 100k points and 4.2 at 1M. The price: the error stays 1 / sqrt(k), so a peak must stand higher above
   its saddle as N grows (a density ratio of about 8 at 1M points, against 3.5), and close clusters that Z as
   given separated merge (of 35 and 50 touching blobs, one to three).
   Saddles of equal height (exact copies make them) are merged as that repetition does when it takes, of equal
   saddles, the pair with the densest peaks first: at one height a cluster whose peak is significant ("strong")
   never merges with another strong one, so the strong clusters, densest first, each take every cluster it reaches
   through the remaining weak ones; weak clusters that reach no strong one merge among themselves.
5. Noise (optional). A point less dense than the highest saddle of its final cluster lies where that cluster
   meets another at background level: it is noise (-1). An isolated cluster has no saddle and no noise.

The clustering is expressed as DPC's labelling model: centers (every candidate peak) on parent chains, plus a
merge map from each candidate peak to its final cluster.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba as nb
import numpy as np

from .cpu import density_order
from .cpu import labels as follow_parents
from .hierarchy import find_root

TWO_NN_KEPT = 0.9  # TwoNN leaves out the largest 10 % of r2 / r1, where density changes inflate it
TESTED_PEAKS = 100  # candidate peaks the significance holds as given for; more raise it (significance_for)


@dataclass(frozen=True)
class Topography:
    """The automatic clustering of one data set for one (k, Z)."""

    k: int
    significance: float
    threshold: float  # height in log density a peak must stand above its saddle: significance_for * 2 * error
    dimension: float  # intrinsic dimension (TwoNN)
    log_density: np.ndarray  # (N,) up to a constant
    error: float  # of each log density: 1 / sqrt(k)
    parent: np.ndarray  # (N,) nearest denser point of the point's own neighbourhood, -1 at a candidate peak
    peaks: np.ndarray  # candidate peaks, densest first
    merged_into: np.ndarray  # (len(peaks),) final cluster of each candidate peak (the merge map)
    centers: np.ndarray  # the densest peak of each final cluster; cluster c's center is centers[c]
    cluster_labels: np.ndarray  # (N,) every point's final cluster
    saddle: np.ndarray  # (n_clusters,) highest saddle log density of each final cluster (-inf: isolated)

    def labels(self, noise: bool = False) -> np.ndarray:
        """Final clusters 0..n-1 (densest peak first); with noise, -1 for points below their cluster's saddle."""
        if not noise:
            return self.cluster_labels
        return np.where(self.log_density < self.saddle[self.cluster_labels], -1, self.cluster_labels)


def check_topography(k, significance) -> None:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 2:
        raise ValueError(f"density_k must be a whole number >= 2, got {k!r}")
    if isinstance(significance, bool) or not isinstance(significance, (int, float, np.integer, np.floating)) or not (
        np.isfinite(significance) and significance >= 0
    ):
        raise ValueError(f"significance must be a finite number >= 0, got {significance!r}")


def intrinsic_dimension(sq: np.ndarray, n_dims: int) -> float:
    """TwoNN from each point's two nearest squared distances (N, >= 2); within [1, n_dims]; n_dims when the data
    say nothing (duplicates, fewer than 3 points)."""
    first, second = sq[:, 0].astype(np.float64), sq[:, 1].astype(np.float64)
    usable = (first > 0) & np.isfinite(second)
    ratios = np.sort(0.5 * np.log(second[usable] / first[usable]))
    ratios = ratios[: int(TWO_NN_KEPT * ratios.size)]
    total = ratios.sum()
    if ratios.size < 2 or total <= 0:
        return float(n_dims)
    return float(np.clip(ratios.size / total, 1.0, n_dims))


def topography(ids: np.ndarray, sq: np.ndarray, n_dims: int, significance: float,
               tested_peaks: float = TESTED_PEAKS) -> Topography:  # fmt: skip
    """The automatic clustering from every point's k nearest other points, nearest first (ids (N, k) with -1
    past the N - 1 others, squared distances (N, k)); k = ids.shape[1] >= 2. ``tested_peaks=math.inf`` takes the
    significance as given however many candidate peaks there are (the quality benchmark's baseline)."""
    ids, sq = np.ascontiguousarray(ids, np.int64), np.ascontiguousarray(sq, np.float32)
    n, k = ids.shape
    check_topography(k, significance)
    dimension = intrinsic_dimension(sq, n_dims)
    log_density = _log_density(sq, dimension)
    error = 1.0 / np.sqrt(k)
    order, rank = density_order(log_density)  # densest first, ties by index (DPC's order)
    parent = _parents(ids, sq, rank)
    peaks = order[parent[order] < 0]
    candidate = follow_parents(parent, order, peaks)
    u, v, saddle = _saddles(ids, candidate, log_density)
    threshold = significance_for(significance, peaks.size, tested_peaks) * 2 * error
    merged_into, cluster_saddle = _merge(u, v, saddle, log_density[peaks], threshold)
    cluster_labels = merged_into[candidate]
    centers = peaks[np.unique(merged_into, return_index=True)[1]]  # peaks are densest first: each cluster's first
    return Topography(k, float(significance), threshold, dimension, log_density, error, parent, peaks, merged_into,
                      centers, cluster_labels, cluster_saddle)  # fmt: skip


@nb.njit(cache=True, nogil=True)
def densest_of_each(labels, density_order, n_clusters):
    """Each cluster's first point in ``density_order`` (densest first), for labels 0..n_clusters-1 (points labelled
    -1, noise, are in none); -1 for a cluster without points. With DPC's order at dc, where each automatic
    cluster's peak sits on the decision graph."""
    first = np.full(n_clusters, -1, np.int64)
    found = 0
    for i in density_order:
        c = labels[i]
        if c >= 0 and first[c] < 0:
            first[c] = i
            found += 1
            if found == n_clusters:
                break
    return first


def significance_for(significance: float, candidates: int, tested_peaks: float = TESTED_PEAKS) -> float:
    """Z for ``candidates`` candidate peaks: Z itself up to ``tested_peaks``, then sqrt(Z^2 + 2 ln(candidates /
    tested_peaks)), the same chance of any false peak among more of them (see the module's notes, step 4)."""
    return float(np.sqrt(significance**2 + 2 * np.log(max(candidates / tested_peaks, 1.0))))


def _log_density(sq: np.ndarray, dimension: float) -> np.ndarray:
    """-D log r_k; a k-th neighbour at distance 0 (k + 1 copies of a point) counts at the smallest positive r_k."""
    reach = np.where(np.isfinite(sq[:, -1]), sq[:, -1], sq[:, -1][np.isfinite(sq[:, -1])].max(initial=1.0)).astype(np.float64)
    positive = reach[reach > 0]
    reach = np.maximum(reach, positive.min() if positive.size else 1.0)
    return -0.5 * dimension * np.log(reach)


@nb.njit(cache=True, nogil=True)
def _parents(ids, sq, rank):
    """Nearest denser point in each point's own list; a point denser than its whole list takes the nearest denser
    point that lists it, if any (ADP drops such a peak); -1 for the rest, the candidate peaks."""
    n, k = ids.shape
    parent = np.full(n, -1, np.int64)
    for i in range(n):
        for c in range(k):
            j = ids[i, c]
            if j >= 0 and rank[j] < rank[i]:
                parent[i] = j
                break
    peak = parent < 0
    via = np.full(n, np.inf)
    for j in range(n):
        for c in range(k):
            i = ids[j, c]
            if i >= 0 and peak[i] and rank[j] < rank[i] and sq[j, c] < via[i]:
                via[i] = sq[j, c]
                parent[i] = j
    return parent


def _saddles(ids: np.ndarray, candidate: np.ndarray, log_density: np.ndarray):
    """(u, v, saddle): for every pair of candidate clusters u < v that touch, the highest min(log rho) over
    listed pairs joining them, sorted by saddle descending (ties by (u, v))."""
    u, v, highest = _highest_border_pairs(ids, candidate, log_density, int(candidate.max()) + 1)
    by_saddle = np.argsort(-highest, kind="stable")  # u, v come in (u, v) order
    return u[by_saddle], v[by_saddle], highest[by_saddle]


@nb.njit(cache=True, nogil=True)
def _highest_border_pairs(ids, candidate, log_density, m):
    """Every pair u < v of candidate clusters that a listed pair of points joins, in (u, v) order, with the highest
    min(log rho) of those points. Without a sort of the (many) listed pairs: they are bucketed by u, and each
    bucket's highest level per v is kept in a scratch row of m."""
    n, k = ids.shape
    start = np.zeros(m + 1, np.int64)
    for i in range(n):
        for c in range(k):
            j = ids[i, c]
            if j >= 0 and candidate[i] != candidate[j]:
                start[min(candidate[i], candidate[j]) + 1] += 1
    start = np.cumsum(start)
    other, level, fill = np.empty(start[m], np.int64), np.empty(start[m], np.float64), start[:m].copy()
    for i in range(n):
        for c in range(k):
            j = ids[i, c]
            if j >= 0 and candidate[i] != candidate[j]:
                a = min(candidate[i], candidate[j])
                other[fill[a]], level[fill[a]] = max(candidate[i], candidate[j]), min(log_density[i], log_density[j])
                fill[a] += 1
    highest, seen = np.empty(m, np.float64), np.zeros(m, np.bool_)
    out_u, out_v, out_level = np.empty(start[m], np.int64), np.empty(start[m], np.int64), np.empty(start[m], np.float64)
    n_out = 0
    for a in range(m):
        first = n_out
        for t in range(start[a], start[a + 1]):
            b = other[t]
            if not seen[b]:
                seen[b], highest[b] = True, level[t]
                out_v[n_out] = b
                n_out += 1
            elif level[t] > highest[b]:
                highest[b] = level[t]
        out_v[first:n_out].sort()
        for t in range(first, n_out):
            out_u[t], out_level[t] = a, highest[out_v[t]]
            seen[out_v[t]] = False
    return out_u[:n_out], out_v[:n_out], out_level[:n_out]


@nb.njit(cache=True, nogil=True)
def _merge(u, v, saddle, peak_density, threshold):
    """Merge map of the candidate clusters (peaks densest first) into final clusters numbered by their densest
    peak, and each final cluster's highest saddle with another final cluster."""
    m = peak_density.shape[0]
    root = np.arange(m)
    slot = np.full(m, -1, np.int64)  # a root's place among the roots of one height's saddles; -1 elsewhere
    first = 0
    while first < u.shape[0]:  # saddles descending, taken one height at a time
        last = first + 1
        while last < u.shape[0] and saddle[last] == saddle[first]:
            last += 1
        _merge_one_height(u[first:last], v[first:last], saddle[first], peak_density, threshold, root, slot)
        first = last
    label = np.full(m, -1, np.int64)
    merged_into = np.empty(m, np.int64)
    n_clusters = 0
    for c in range(m):  # peaks densest first, so final clusters are numbered by their densest peak
        r = find_root(root, c)
        if label[r] < 0:
            label[r] = n_clusters
            n_clusters += 1
        merged_into[c] = label[r]
    cluster_saddle = np.full(n_clusters, -np.inf)
    for e in range(u.shape[0]):
        a, b = merged_into[u[e]], merged_into[v[e]]
        if a != b:
            cluster_saddle[a] = max(cluster_saddle[a], saddle[e])
            cluster_saddle[b] = max(cluster_saddle[b], saddle[e])
    return merged_into, cluster_saddle


@nb.njit(cache=True, nogil=True)
def _merge_one_height(u, v, saddle, peak_density, threshold, root, slot):
    """Merges along saddles of one height: each strong cluster (peak significant above the saddle), densest
    first, takes the weak clusters it reaches through weak ones; then the rest of the weak ones merge among
    themselves. Roots stay the densest peak (smallest index): a strong peak is denser than any weak one."""
    g = u.shape[0]
    a, b = np.empty(g, np.int64), np.empty(g, np.int64)
    nodes = np.empty(2 * g, np.int64)
    n_nodes = 0
    for e in range(g):
        a[e], b[e] = find_root(root, u[e]), find_root(root, v[e])
        for x in (a[e], b[e]):
            if slot[x] < 0:
                slot[x] = n_nodes
                nodes[n_nodes] = x
                n_nodes += 1
    start = np.zeros(n_nodes + 1, np.int64)  # adjacency of the roots, both directions, as CSR
    for e in range(g):
        if a[e] != b[e]:
            start[slot[a[e]] + 1] += 1
            start[slot[b[e]] + 1] += 1
    start = np.cumsum(start)
    fill, neighbour = start[:-1].copy(), np.empty(start[-1], np.int64)
    for e in range(g):
        if a[e] != b[e]:
            neighbour[fill[slot[a[e]]]], neighbour[fill[slot[b[e]]]] = slot[b[e]], slot[a[e]]
            fill[slot[a[e]]] += 1
            fill[slot[b[e]]] += 1
    weak = np.empty(n_nodes, np.bool_)
    for s in range(n_nodes):
        weak[s] = peak_density[nodes[s]] - saddle < threshold
    visited = np.zeros(n_nodes, np.bool_)
    queue = np.empty(n_nodes, np.int64)
    for strong_pass in (True, False):
        for r in np.sort(nodes[:n_nodes]):  # densest peak first
            s = slot[r]
            if visited[s] or weak[s] == strong_pass:
                continue
            visited[s], queue[0], head, tail = True, s, 0, 1
            while head < tail:  # breadth-first through weak clusters, every one joining r
                x = queue[head]
                head += 1
                for t in range(start[x], start[x + 1]):
                    y = neighbour[t]
                    if weak[y] and not visited[y]:
                        visited[y], root[nodes[y]] = True, r
                        queue[tail] = y
                        tail += 1
    slot[nodes[:n_nodes]] = -1
