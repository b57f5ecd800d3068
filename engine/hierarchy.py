"""The hierarchy behind DBSCAN and HDBSCAN, from the mutual-reachability MST: array code on the host, written once.

* ``single_linkage_chain``: the points in an order where every single-linkage cluster, at every height, is one run;
  DBSCAN at any eps is then a pass over runs (``cpu.components``, ``gpu.dbscan_labels``), and so are the exact
  "clusters and noise for every eps" curves.
* ``condensed_tree`` and ``select_clusters``: HDBSCAN (Campello, Moulavi & Sander 2013; McInnes & Healy 2017),
  with scikit-learn's conventions so that, given the same single-linkage tree, labels, probabilities and cluster
  numbering equal ``sklearn.cluster.HDBSCAN``'s (tied mutual-reachability distances admit several MSTs: see the
  ``HDBSCAN`` estimator), and GLOSH outlier scores as the ``hdbscan`` package computes them.

MST edges come as (u < v, w2) sorted by the key (w2, u, v); heights are distances, sqrt(w2) in float64, and
lambda = 1 / distance (inf at distance 0).
"""

from __future__ import annotations

from dataclasses import dataclass

import numba as nb
import numpy as np


@nb.njit(inline="always", cache=True)
def find_root(root, x):
    """Union-find's root of x, halving the path on the way."""
    while root[x] != x:
        root[x] = root[root[x]]
        x = root[x]
    return x


@nb.njit(nogil=True, cache=True)
def _graph_edges(ids, sq, core):
    n, k = ids.shape
    u, v, w2 = np.empty(n * k, np.int64), np.empty(n * k, np.int64), np.empty(n * k, np.float32)
    m = 0
    for p in range(n):
        for c in range(k):
            q = ids[p, c]
            if q >= 0:
                u[m], v[m] = min(p, q), max(p, q)
                w2[m] = max(core[p], core[q], sq[p, c])
                m += 1
    return u[:m], v[:m], w2[:m]


@nb.njit(nogil=True, cache=True)
def _kruskal(u, v, w2, n):
    """The edges (already in key order) that join two trees: an edge listed from both ends, or closing a cycle,
    is skipped."""
    root = np.arange(n)
    taken = np.zeros(u.shape[0], np.bool_)
    for e in range(u.shape[0]):
        a, b = find_root(root, u[e]), find_root(root, v[e])
        if a != b:
            root[max(a, b)] = min(a, b)
            taken[e] = True
    return taken


def graph_spanning_forest(ids, sq, core_sq) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The minimum spanning forest of mutual reachability over the edges of a neighbour graph (KG-DBSCAN's graph),
    as (u < v, w2) sorted by (w2, u, v). Its components below any eps are those of the graph's edges below it."""
    u, v, w2 = _graph_edges(np.asarray(ids, np.int64), np.asarray(sq, np.float32), np.asarray(core_sq, np.float32))
    order = np.lexsort((v, u, w2))
    u, v, w2 = u[order], v[order], w2[order]
    taken = _kruskal(u, v, w2, ids.shape[0])
    return u[taken], v[taken], w2[taken]


@nb.njit(nogil=True, cache=True)
def _chain(u, v, w2, n):
    root = np.arange(n)
    size = np.ones(n, np.int64)
    head, tail = np.arange(n), np.arange(n)
    successor = np.full(n, -1, np.int64)
    gap_after = np.full(n, np.inf, np.float32)
    for e in range(u.shape[0]):  # Kruskal: each merge appends one run behind the other
        a, b = find_root(root, u[e]), find_root(root, v[e])
        successor[tail[a]], gap_after[tail[a]] = head[b], w2[e]
        first, last = head[a], tail[b]
        if size[a] < size[b]:  # union by size keeps the finds short
            a, b = b, a
        root[b] = a
        size[a] += size[b]
        head[a], tail[a] = first, last
    chain = np.empty(n, np.int64)
    gap = np.full(max(n - 1, 0), np.inf, np.float32)  # inf between the trees of a forest
    t = 0
    for r in range(n):
        if root[r] != r:
            continue
        p = head[r]
        while p >= 0:
            chain[t] = p
            if p != tail[r]:
                gap[t] = gap_after[p]
            p = successor[p]
            t += 1
    return chain, gap


def eps_curve(core_sq, w2, knn_ids, knn_sq) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """DBSCAN's number of clusters and of noise points at every eps, exactly: (eps, clusters, noise) at each eps
    where a count changes, the counts holding from that eps up to the next.

    Edges of the MST with w2 <= eps2 join core points only, into a forest, so clusters = cores - such edges. A
    non-core point i is noise until eps reaches its core distance or the least max(d_ij, cd_j) over the core points
    j of its list; while it is not core, every j that could reach it first is in that list."""
    core_sq, w2 = np.asarray(core_sq, np.float32), np.asarray(w2, np.float32)
    knn_ids, knn_sq = np.asarray(knn_ids), np.asarray(knn_sq, np.float32)
    reach = np.where(knn_ids >= 0, np.maximum(knn_sq, core_sq[np.maximum(knn_ids, 0)]), np.float32(np.inf))
    leaves_noise = np.minimum(core_sq, reach.min(axis=1, initial=np.inf))
    cores, edges, noise = np.sort(core_sq), np.sort(w2), np.sort(leaves_noise)
    steps = np.unique(np.concatenate([cores, edges, noise]))
    steps = steps[np.isfinite(steps)]
    clusters = np.searchsorted(cores, steps, "right") - np.searchsorted(edges, steps, "right")
    noise_left = noise.size - np.searchsorted(noise, steps, "right")
    return np.sqrt(steps.astype(np.float64)), clusters, noise_left


def single_linkage_chain(u, v, w2, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(chain, gap): a permutation of the n points and the w2 of the merge that joined chain[t] and chain[t+1].

    The components of the MST edges with w2 <= x are exactly the runs of ``chain`` whose gaps are all <= x. A
    spanning forest works too: its trees follow each other with an infinite gap."""
    return _chain(np.asarray(u), np.asarray(v), np.asarray(w2, np.float32), n)


# --- single-linkage tree --------------------------------------------------------------------------------------


@nb.njit(nogil=True, cache=True)
def _parents_from(u, v, n, start):
    """Parent of every point in the tree of edges (u, v) rooted at ``start`` (the root's parent is -1)."""
    degree = np.zeros(n + 1, np.int64)
    for e in range(u.shape[0]):
        degree[u[e] + 1] += 1
        degree[v[e] + 1] += 1
    offsets = np.cumsum(degree)
    fill = offsets[:-1].copy()
    adjacent = np.empty(2 * u.shape[0], np.int64)
    for e in range(u.shape[0]):
        adjacent[fill[u[e]]], adjacent[fill[v[e]]] = v[e], u[e]
        fill[u[e]] += 1
        fill[v[e]] += 1
    parent = np.full(n, -2, np.int64)
    parent[start] = -1
    stack = np.empty(n, np.int64)
    stack[0], top = start, 1
    while top > 0:
        top -= 1
        p = stack[top]
        for c in range(offsets[p], offsets[p + 1]):
            q = adjacent[c]
            if parent[q] == -2:
                parent[q] = p
                stack[top] = q
                top += 1
    return parent


@nb.njit(nogil=True, cache=True)
def _linkage(u, v, parent, n):
    """scipy-style merges (left, right, size): node n + e joins the clusters of edge e's two ends."""
    root = np.arange(n)
    node_of = np.arange(n)
    size = np.ones(n, np.int64)
    left, right = np.empty(n - 1, np.int64), np.empty(n - 1, np.int64)
    merged = np.empty(n - 1, np.int64)
    for e in range(n - 1):
        # scikit-learn's Prim's from point 0 puts the end nearer point 0 on the left
        near, far = (u[e], v[e]) if parent[v[e]] == u[e] else (v[e], u[e])
        a, b = find_root(root, near), find_root(root, far)
        left[e], right[e] = node_of[a], node_of[b]
        merged[e] = size[a] + size[b]
        root[b] = a
        size[a] = merged[e]
        node_of[a] = n + e
    return left, right, merged


@dataclass(frozen=True)
class CondensedTree:
    """HDBSCAN's condensed tree as rows (parent cluster, child point or cluster, lambda, child size), scikit-learn's
    ``_condensed_tree`` layout: points are 0..N-1, clusters N (the root), N + 1, ... in breadth-first order."""

    parent: np.ndarray
    child: np.ndarray
    lambda_val: np.ndarray
    child_size: np.ndarray
    n_points: int

    @property
    def n_clusters(self) -> int:
        return int(self.parent.max()) - self.n_points + 1 if self.parent.size else 1


@nb.njit(nogil=True, cache=True)
def _condense(left, right, height, size, n, min_cluster_size):
    """Walk the single-linkage tree breadth first from its root; a split with both sides of at least
    min_cluster_size points makes two clusters, a smaller side falls out of the current cluster as points."""
    n_rows_max = 2 * n
    out_parent = np.empty(n_rows_max, np.int64)
    out_child = np.empty(n_rows_max, np.int64)
    out_lambda = np.empty(n_rows_max, np.float64)
    out_size = np.empty(n_rows_max, np.int64)
    rows = 0
    top = 2 * n - 2
    cluster_of = np.full(2 * n - 1, -1, np.int64)  # the cluster a node continues, or that its points fall out of
    falls_at = np.full(2 * n - 1, -1.0)  # >= 0: the node's points fell out of cluster_of[node] at this lambda
    cluster_of[top] = n
    next_cluster = n + 1
    queue = np.empty(2 * n - 1, np.int64)
    queue[0], first, last = top, 0, 1
    while first < last:
        node = queue[first]
        first += 1
        if node < n:
            continue
        e = node - n
        sides = (left[e], right[e])
        for s in sides:
            queue[last] = s
            last += 1
        if falls_at[node] >= 0:  # inside a fallen subtree: pass the cluster and lambda down
            for s in sides:
                if s < n:
                    out_parent[rows], out_child[rows], out_lambda[rows], out_size[rows] = cluster_of[node], s, falls_at[node], 1
                    rows += 1
                else:
                    cluster_of[s], falls_at[s] = cluster_of[node], falls_at[node]
            continue
        lam = 1.0 / height[e] if height[e] > 0.0 else np.inf
        counts = (size[left[e] - n] if left[e] >= n else 1, size[right[e] - n] if right[e] >= n else 1)
        big = (counts[0] >= min_cluster_size, counts[1] >= min_cluster_size)
        for i in range(2):
            s = sides[i]
            if big[0] and big[1]:
                cluster_of[s] = next_cluster
                next_cluster += 1
                out_parent[rows], out_child[rows], out_lambda[rows], out_size[rows] = cluster_of[node], cluster_of[s], lam, counts[i]
                rows += 1
            elif big[i]:
                cluster_of[s] = cluster_of[node]  # the cluster goes on, shrunk
            elif s < n:
                out_parent[rows], out_child[rows], out_lambda[rows], out_size[rows] = cluster_of[node], s, lam, 1
                rows += 1
            else:
                cluster_of[s], falls_at[s] = cluster_of[node], lam
    return out_parent[:rows], out_child[:rows], out_lambda[:rows], out_size[:rows]


def single_linkage_tree(u, v, w2, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """scipy's linkage layout (left, right, height, size): merge e makes node n + e at distance height[e]."""
    u, v = np.asarray(u, np.int64), np.asarray(v, np.int64)
    left, right, size = _linkage(u, v, _parents_from(u, v, n, 0), n)
    return left, right, np.sqrt(np.asarray(w2, np.float64)), size


def condensed_tree(u, v, w2, n: int, min_cluster_size: int) -> CondensedTree:
    """The condensed tree of the MST (edges sorted by key), for clusters of at least ``min_cluster_size`` points."""
    if n < 2:
        empty = np.empty(0, np.int64)
        return CondensedTree(empty, empty, np.empty(0), empty, n)
    left, right, height, size = single_linkage_tree(u, v, w2, n)
    return CondensedTree(*_condense(left, right, height, size, n, min_cluster_size), n)


# --- cluster selection ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Selection:
    labels: np.ndarray  # (N,) int64, -1 noise, clusters numbered by increasing condensed-tree id
    probabilities: np.ndarray  # (N,) float64, membership strength in [0, 1]
    outlier_scores: np.ndarray  # (N,) float64, GLOSH
    selected: np.ndarray  # condensed-tree ids of the chosen clusters, label order
    stability: np.ndarray  # per cluster id - N


@nb.njit(nogil=True, cache=True)
def _stability(parent, child, lam, size, n, n_clusters):
    birth = np.zeros(n_clusters)
    death = np.zeros(n_clusters)  # largest lambda of a row under each cluster
    for r in range(parent.shape[0]):
        if child[r] >= n:
            birth[child[r] - n] = lam[r]
        death[parent[r] - n] = max(death[parent[r] - n], lam[r])
    stability = np.zeros(n_clusters)
    for r in range(parent.shape[0]):
        c = parent[r] - n
        stability[c] += (lam[r] - birth[c]) * size[r]
    return birth, death, stability


@nb.njit(nogil=True, cache=True)
def _excess_of_mass(cluster_parent, stability):
    """scikit-learn's EOM: from the last cluster up (children have larger ids), a cluster is kept when its own
    stability is at least its children's sum; the selection is the kept clusters with no kept ancestor."""
    m = stability.shape[0]
    stability = stability.copy()
    children_sum = np.zeros(m)
    kept = np.zeros(m, np.bool_)
    for c in range(m - 1, 0, -1):  # the root (0) is never a cluster
        if children_sum[c] > stability[c]:
            stability[c] = children_sum[c]
        else:
            kept[c] = True
        children_sum[cluster_parent[c]] += stability[c]
    selected = np.zeros(m, np.bool_)
    covered = np.zeros(m, np.bool_)
    for c in range(1, m):
        covered[c] = covered[cluster_parent[c]] or kept[cluster_parent[c]]
        selected[c] = kept[c] and not covered[c]
    return selected


def _leaves(cluster_parent: np.ndarray) -> np.ndarray:
    m = cluster_parent.shape[0]
    has_child = np.zeros(m, bool)
    has_child[cluster_parent[1:]] = True
    leaves = ~has_child
    leaves[0] = m == 1  # a tree with no split has the root as its only leaf (and it labels nothing)
    return leaves


def _epsilon_search(selected: np.ndarray, cluster_parent: np.ndarray, birth: np.ndarray, epsilon: float) -> np.ndarray:
    """cluster_selection_epsilon: a chosen cluster born below epsilon (in distance) is replaced by its nearest
    ancestor born above it (not the root); clusters are visited in increasing id, and one born below epsilon
    inside an ancestor chosen so is dropped (scikit-learn's rule, which visits them in its set's order)."""
    out = np.zeros_like(selected)
    inside = np.zeros_like(selected)
    for c in np.flatnonzero(selected):
        if 1.0 / birth[c] >= epsilon:
            out[c] = True
            continue
        if inside[c]:
            continue
        chosen = c
        while cluster_parent[chosen] != 0:
            up = cluster_parent[chosen]
            chosen = up
            if 1.0 / birth[up] > epsilon:
                break
        out[chosen] = True
        descendant = np.zeros_like(selected)
        descendant[chosen] = True
        for d in range(chosen + 1, selected.shape[0]):  # parents come before children
            descendant[d] = descendant[cluster_parent[d]]
        descendant[chosen] = False
        inside |= descendant
    return out


@nb.njit(nogil=True, cache=True)
def _label_points(parent, child, lam, n, cluster_parent, selected, death):
    m = cluster_parent.shape[0]
    label_of = np.full(m, -1, np.int64)  # the selected cluster (as a label) each cluster belongs to
    owner = np.full(m, -1, np.int64)
    next_label = 0
    for c in range(1, m):
        if selected[c]:
            label_of[c], owner[c] = next_label, c
            next_label += 1
        else:
            label_of[c], owner[c] = label_of[cluster_parent[c]], owner[cluster_parent[c]]
    subtree_death = death.copy()  # GLOSH: the largest lambda anywhere below each cluster
    for c in range(m - 1, 0, -1):
        subtree_death[cluster_parent[c]] = max(subtree_death[cluster_parent[c]], subtree_death[c])
    labels = np.full(n, -1, np.int64)
    probabilities = np.zeros(n)
    scores = np.zeros(n)
    for r in range(parent.shape[0]):
        p = child[r]
        if p >= n:
            continue
        c = parent[r] - n
        top = subtree_death[c]
        scores[p] = 0.0 if top == 0.0 or not np.isfinite(lam[r]) else (top - lam[r]) / top
        labels[p] = label_of[c]
        if labels[p] < 0:
            continue
        most = death[owner[c]]
        probabilities[p] = 1.0 if most == 0.0 or not np.isfinite(lam[r]) else min(lam[r], most) / most
    return labels, probabilities, scores


@dataclass(frozen=True)
class ClusterHierarchy:
    """The clusters of a condensed tree, indexed by id - N (0 is the root): each one's parent, the lambda it was
    born at and the largest lambda under it, and its stability (excess of mass)."""

    parent: np.ndarray
    birth: np.ndarray
    death: np.ndarray
    stability: np.ndarray


def cluster_hierarchy(tree: CondensedTree) -> ClusterHierarchy:
    n, m = tree.n_points, tree.n_clusters
    cluster_parent = np.zeros(m, np.int64)
    is_cluster_row = tree.child >= n
    cluster_parent[tree.child[is_cluster_row] - n] = tree.parent[is_cluster_row] - n
    return ClusterHierarchy(cluster_parent, *_stability(tree.parent, tree.child, tree.lambda_val, tree.child_size, n, m))


def select_clusters(tree: CondensedTree, method: str = "eom", epsilon: float = 0.0) -> Selection:
    """Flat clusters from the condensed tree: excess of mass ("eom") or the leaves ("leaf"), then
    ``cluster_selection_epsilon``; labels, probabilities and GLOSH outlier scores of every point."""
    clusters = cluster_hierarchy(tree)
    selected = _excess_of_mass(clusters.parent, clusters.stability) if method == "eom" else _leaves(clusters.parent)
    if epsilon != 0.0 and selected.size > 1:
        selected = _epsilon_search(selected, clusters.parent, clusters.birth, epsilon)
    return _selection(tree, clusters, selected)


def label_clusters(tree: CondensedTree, cluster_ids) -> Selection:
    """The flat clustering of chosen condensed-tree clusters (ids N + 1, ...; none inside another), labelled in
    increasing id as ``select_clusters`` labels its own choice: a hand-made selection on the same tree."""
    clusters = cluster_hierarchy(tree)
    ids = np.asarray(cluster_ids, np.int64).reshape(-1) - tree.n_points
    if ids.size and (ids.min() < 1 or ids.max() >= clusters.parent.size):
        raise ValueError(f"cluster ids must be between {tree.n_points + 1} and {tree.n_points + clusters.parent.size - 1}")
    selected = np.zeros(clusters.parent.size, bool)
    selected[ids] = True
    for c in np.flatnonzero(selected):
        up = clusters.parent[c]
        while up > 0:
            if selected[up]:
                raise ValueError(f"cluster {c + tree.n_points} lies inside cluster {up + tree.n_points}: choose one of them")
            up = clusters.parent[up]
    return _selection(tree, clusters, selected)


def _selection(tree: CondensedTree, clusters: ClusterHierarchy, selected: np.ndarray) -> Selection:
    selected[0] = False  # the root labels nothing (scikit-learn's allow_single_cluster=False)
    labels, probabilities, scores = _label_points(
        tree.parent, tree.child, tree.lambda_val, tree.n_points, clusters.parent, selected, clusters.death
    )
    return Selection(labels, probabilities, scores, np.flatnonzero(selected) + tree.n_points, clusters.stability)
