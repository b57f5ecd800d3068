"""The exact minimum spanning tree of the mutual-reachability distance on the CPU: Borůvka over the VP-tree (Numba).

mr(p, q) = max(cd(p), cd(q), d(p, q)), kept squared in float32 (``w2``) by the project's float32 distance rule.
Every edge is keyed by (w2, smaller id, larger id). That order is total, so the tree is unique and every backend
returns the same edges; Borůvka with a total order never closes a cycle.

Each round finds, for every component, its least edge to another component, and merges along those edges. A
point's search starts from the best edge in its neighbour list and prunes a node when

* every point in it belongs to the query's own component (a per-node component label, renewed each round);
* its least possible w2, max(cd(p), the node's smallest cd, ball lower bound ^ 2), exceeds the best edge found so
  far for the query's whole component (shared by its points; a stale read only prunes less), or cannot beat the
  query's own best key.

A point skips the walk when no point outside its neighbour list can help: every such point is at least as far as
the list's last entry, so its edge weighs at least max(cd(p), that distance); when this exceeds the point's best edge
or its component's bound, the list has decided. Interior points of large components and noise cost almost nothing.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ..hierarchy import find_root
from ..vptree import LEAF_SIZE, VPTree, bound_slack
from .geometry import BLOCK, STACK, ball_distance, leaf_sq_dists, node_min

NO_ID = np.iinfo(np.int64).max


@nb.njit(inline="always", cache=True)
def _before(w2, lo, hi, best_w2, best_lo, best_hi):
    """Does the key (w2, lo, hi) come before the best key?"""
    return w2 < best_w2 or (w2 == best_w2 and (lo < best_lo or (lo == best_lo and hi < best_hi)))


@nb.njit(inline="always", cache=True)
def _key_ids(a, b):
    return (a, b) if a < b else (b, a)


@nb.njit(parallel=True, nogil=True, cache=True)
def _seed_from_graph(graph_pos, graph_sq, comp, core, ids, best_w2, best_t):
    """Each point's least edge to another component among its neighbour list (best_t = -1 if none there)."""
    n, k = graph_pos.shape
    for p in nb.prange(n):
        bw, blo, bhi, bt = np.inf, NO_ID, NO_ID, -1
        for c in range(k):
            t = graph_pos[p, c]
            if t < 0 or comp[t] == comp[p]:
                continue
            w2 = np.float64(max(core[p], core[t], graph_sq[p, c]))
            lo, hi = _key_ids(ids[p], ids[t])
            if _before(w2, lo, hi, bw, blo, bhi):
                bw, blo, bhi, bt = w2, lo, hi, t
        best_w2[p], best_t[p] = bw, bt


@nb.njit(nogil=True, cache=True)
def _component_bounds(comp, best_w2, bound):
    for p in range(comp.shape[0]):
        bound[comp[p]] = min(bound[comp[p]], best_w2[p])


@nb.njit(inline="always", cache=True)
def _search(p, coords, leaf_start, ids, comp, core, center, radius, min_id, node_comp, node_core, depth, slack, bound, best_w2, best_t, nodes, levels, lowers, sq):
    """Improve point p's least edge to another component by a walk over the tree."""
    own, core_p, id_p = comp[p], np.float64(core[p]), ids[p]
    q = coords[:, p].copy()
    bw, bt = best_w2[p], best_t[p]
    blo, bhi = _key_ids(id_p, ids[bt]) if bt >= 0 else (NO_ID, NO_ID)
    nodes[0], levels[0], lowers[0], top = 0, 0, core_p, 1
    while top > 0:
        top -= 1
        k, level, lower = nodes[top], levels[top], lowers[top]
        lo, hi = _key_ids(id_p, min_id[k])
        if node_comp[k] == own or lower > bound[own] or not _before(lower, lo, hi, bw, blo, bhi):
            continue
        if level == depth:
            j = k - ((1 << depth) - 1)
            start, end = leaf_start[j], leaf_start[j + 1]
            leaf_sq_dists(coords, q, start, end, sq)
            for t in range(start, end):
                if comp[t] == own:
                    continue
                w2 = np.float64(max(core[p], core[t], sq[t - start]))
                lo, hi = _key_ids(id_p, ids[t])
                if _before(w2, lo, hi, bw, blo, bhi):
                    bw, blo, bhi, bt = w2, lo, hi, t
                    if w2 < bound[own]:
                        bound[own] = w2  # a racy write: any value written is a real edge of this component
            continue
        for child in (2 * k + 2, 2 * k + 1):
            gap = max(ball_distance(q, center, radius, child, slack)[0], 0.0)
            nodes[top], levels[top] = child, level + 1
            lowers[top] = max(core_p, np.float64(node_core[child]), gap * gap)
            top += 1
        if lowers[top - 1] > lowers[top - 2]:  # the nearer child on top of the stack
            nodes[top - 1], nodes[top - 2] = nodes[top - 2], nodes[top - 1]
            lowers[top - 1], lowers[top - 2] = lowers[top - 2], lowers[top - 1]
    best_w2[p], best_t[p] = bw, bt


@nb.njit(parallel=True, nogil=True, cache=True)
def _search_all(coords, leaf_start, ids, comp, core, beyond_list, center, radius, min_id, node_comp, node_core, depth, slack, bound, best_w2, best_t):
    """Walk the tree for every point whose neighbour list leaves the answer open: ``beyond_list`` is the least w2
    any point outside the list can have (strictly more decides; an equal w2 may still win on the ids)."""
    n = coords.shape[1]
    for b in nb.prange((n + BLOCK - 1) // BLOCK):
        nodes = np.empty(STACK, np.int64)
        levels = np.empty(STACK, np.int64)
        lowers = np.empty(STACK, np.float64)
        sq = np.empty(LEAF_SIZE, np.float32)
        for p in range(b * BLOCK, min(n, (b + 1) * BLOCK)):
            if beyond_list[p] <= min(best_w2[p], bound[comp[p]]):
                _search(p, coords, leaf_start, ids, comp, core, center, radius, min_id, node_comp, node_core, depth, slack,
                        bound, best_w2, best_t, nodes, levels, lowers, sq)  # fmt: skip


@nb.njit(nogil=True, cache=True)
def _merge(comp, ids, best_w2, best_t, root, edge_u, edge_v, edge_w2, n_edges):
    """Join every component along its least edge; returns the new edge count and relabels ``comp``."""
    n = comp.shape[0]
    pick = np.full(n, -1, np.int64)  # per component: the point holding its least edge
    for p in range(n):
        if best_t[p] < 0:
            continue
        c, held = comp[p], pick[comp[p]]
        if held < 0:
            pick[c] = p
            continue
        lo, hi = _key_ids(ids[p], ids[best_t[p]])
        held_lo, held_hi = _key_ids(ids[held], ids[best_t[held]])
        if _before(best_w2[p], lo, hi, best_w2[held], held_lo, held_hi):
            pick[c] = p
    for c in range(n):
        p = pick[c]
        if p < 0:
            continue
        a, b = find_root(root, p), find_root(root, best_t[p])
        if a == b:
            continue  # the same edge, picked by the component at its other end
        root[max(a, b)] = min(a, b)
        edge_u[n_edges], edge_v[n_edges] = _key_ids(ids[p], ids[best_t[p]])
        edge_w2[n_edges] = best_w2[p]
        n_edges += 1
    for p in range(n):
        comp[p] = find_root(root, p)
    return n_edges


@nb.njit(parallel=True, nogil=True, cache=True)
def _in_tree_order(ids, sq, tree_ids):
    """Neighbour lists by original index, turned into lists of tree positions in tree order (-1 stays -1)."""
    n, k = ids.shape
    position_of = np.empty(n, np.int64)
    for t in nb.prange(n):
        position_of[tree_ids[t]] = t
    positions, dists = np.empty((n, k), np.int64), np.empty((n, k), np.float32)
    for t in nb.prange(n):
        for c in range(k):
            j = ids[tree_ids[t], c]
            positions[t, c] = position_of[j] if j >= 0 else -1
            dists[t, c] = sq[tree_ids[t], c]
    return positions, dists


@nb.njit(nogil=True, cache=True)
def _node_components(comp, leaf_start, depth):
    """Each node's component, or -1 where the node holds several."""
    smallest, largest = node_min(comp, leaf_start, depth), node_min(-comp, leaf_start, depth)
    return np.where(smallest == -largest, smallest, -1)


def mst(tree: VPTree, core_sq: np.ndarray, neighbours=None, progress=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The N - 1 edges (u < v, original indices; w2 float32) of the mutual-reachability MST, sorted by (w2, u, v).

    ``core_sq`` holds the squared core distances in original order (float32; +inf where a point has too few
    neighbours). ``neighbours``: (ids, squared distances) of every point's nearest points in original order, as
    ``knn`` gives them (default: the index's own graph); the longer the list, the fewer walks. ``progress(fraction)``
    is told the share of edges found."""
    n = tree.n_points
    core = np.ascontiguousarray(core_sq[tree.ids], dtype=np.float32)
    node_core = node_min(core, tree.leaf_start, tree.depth)
    comp = np.arange(n, dtype=np.int64)
    root = np.arange(n, dtype=np.int64)
    edge_u, edge_v = np.empty(max(n - 1, 0), np.int64), np.empty(max(n - 1, 0), np.int64)
    edge_w2 = np.empty(max(n - 1, 0), np.float32)
    if neighbours is not None:
        graph_pos, graph_sq = _in_tree_order(neighbours[0], neighbours[1], tree.ids)
    elif tree.neighbours is not None:
        graph_pos, graph_sq = tree.neighbours.positions, tree.neighbours.sq_dists
    else:
        graph_pos, graph_sq = np.full((n, 0), -1, np.int64), np.empty((n, 0), np.float32)
    # rows padded with inf (N - 1 < K) list every other point: nothing lies beyond them
    last_listed = graph_sq[:, -1].astype(np.float64) if graph_sq.shape[1] else np.zeros(n)
    beyond_list = np.maximum(core.astype(np.float64), last_listed)
    n_edges, slack = 0, bound_slack(tree.n_dims)
    while n_edges < n - 1:
        best_w2, best_t = np.empty(n, np.float64), np.empty(n, np.int64)
        _seed_from_graph(graph_pos, graph_sq, comp, core, tree.ids, best_w2, best_t)
        bound = np.full(n, np.inf)
        _component_bounds(comp, best_w2, bound)
        _search_all(
            tree.coords, tree.leaf_start, tree.ids, comp, core, beyond_list, tree.center, tree.cover_radius, tree.min_id,
            _node_components(comp, tree.leaf_start, tree.depth), node_core, tree.depth, slack, bound, best_w2, best_t,
        )  # fmt: skip
        n_edges = _merge(comp, tree.ids, best_w2, best_t, root, edge_u, edge_v, edge_w2, n_edges)
        if progress is not None:
            progress(n_edges / (n - 1))
    order = np.lexsort((edge_v, edge_u, edge_w2))
    return edge_u[order], edge_v[order], edge_w2[order]
