"""Incremental updates of the decision-graph fields: rho, delta, parent, order and gamma after points are inserted
or deleted, equal to a fresh computation on the same points in the same order, without recomputing all of it.

Written once over the backend's primitives (``tree_insert``, ``count_near``, ``rho_at``, ``mark_newly_outranked``,
``nearest_newly_denser``, ``nearest_denser_of``, ``merge_order``, ...). Notation: D_i = the points denser than i (rho_j > rho_i, or equal
rho and j < i); delta_i = min over D_i of d_ij with parent_i its argmin (smallest index on a tie), so
(delta_i, parent_i) is the least (distance, index) pair over D_i. Primes mark values after the update.

**rho.** Only points within reach (dc, or 3 dc for the Gaussian kernel) of an inserted or deleted point change.
Cut-off: each gains (loses) the number of such points, counted exactly (``count_near``); the new points count
their own neighbours. Gaussian: the changed points sum their neighbours again (``rho_at``), so a deletion never
subtracts nearly equal sums.

**delta on insert.** Let V be the new points and the old points whose rho rose. (1) If i is old and j old
outside V, then j in D'_i implies j in D_i: rho_j did not change and rho'_i >= rho_i. So D'_i - D_i lies in V.
(2) rho only rises, so parent_i stays denser than i unless i is in V and overtook it. Hence for every old i
whose parent is still denser, (delta'_i, parent'_i) is the least of (delta_i, parent_i) and the nearest point of
V denser than i: only a point i with such a point of V within delta_i can change, ``mark_newly_outranked`` finds
them from V's side, and a search among the points newly denser than i (bounded by the old pair) settles each. The
others (the new points, points that overtook their parent, the old densest point when it is no longer densest)
search all points. (3) Pruning by density: a point s of V newly outranks i only if rho_s rose past rho_i, so
i's old rho lies between s's old and new rho; 64 bands of old rank, one bit per node, skip the rest of the tree.

**delta on delete.** Let V be the survivors whose rho fell. If i is not in V, D'_i is within D_i (no rho rose),
so if parent_i survives and is still denser, nothing changes for i. A point of V may gain denser points anywhere,
but only points newly denser than it (old rho at least its new rho, since no rho rose): if its parent survives
and is still denser, a search among those, bounded by the old pair, settles it. Everything else searches freely.

The densest point has parent -1 and delta = its largest distance to any point, recomputed when it changes or may
have changed (its farthest point deleted).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from . import centers as center_rules
from .vptree import float32_square, rho_reach

if TYPE_CHECKING:
    from .indexed import Fields

NO_ID = np.iinfo(np.int64).max


def inserted(backend, tree, fields: Fields, n_old: int, position) -> Fields:
    """``fields`` of the first n_old points updated for the points n_old.. of ``tree`` (which holds them all);
    ``position``: the tree position of every point."""
    from .indexed import Fields  # noqa: PLC0415

    xp = backend.xp
    n = tree.n_points
    new = xp.arange(n_old, n)
    near = xp.empty(n, xp.int64)
    near[tree.ids] = backend.count_near(tree, position[new], rho_reach(fields.dc, fields.kernel))
    changed = xp.flatnonzero(near[:n_old] > 0)
    rho = xp.concatenate((fields.rho, xp.zeros(n - n_old)))
    if fields.kernel == "cutoff":
        rho[:n_old] += near[:n_old]
        rho[new] = backend.rho_at(tree, position[new], fields.dc, fields.kernel)
    else:
        again = xp.concatenate((changed, new))
        rho[again] = backend.rho_at(tree, position[again], fields.dc, fields.kernel)
    # V in density order: the search below then takes its keys in order, which is several times faster
    order, order_rho, rank, moved = _reorder(backend, fields.order, fields.order_rho, xp.concatenate((changed, new)), rho)

    delta = xp.concatenate((fields.delta, xp.full(n - n_old, xp.inf)))
    parent = xp.concatenate((fields.parent, xp.full(n - n_old, -1, dtype=xp.int64)))
    densest, old_densest = int(order[0]), int(fields.order[0])
    overtook = changed[(fields.parent[changed] >= 0) & (rank[xp.maximum(fields.parent[changed], 0)] > rank[changed])]
    free = xp.concatenate((new, overtook, xp.asarray([old_densest] if old_densest != densest else [], xp.int64)))

    # the points that a point of V newly outranks within their own delta: searched again among the newly denser
    reach2 = (delta * delta).astype(xp.float32)
    reach2[free] = -1
    reach2[densest] = -1
    rank_old = xp.full(n, n, xp.int64)  # the new points ranked after all: less dense than anyone before
    rank_old[fields.order] = xp.arange(n_old)
    rank_old_tree, rank_tree, reach2_tree = rank_old[tree.ids], rank[tree.ids], reach2[tree.ids]
    # a point of V can newly outrank only points whose old rho lies between its old and new rho
    first_not_above = xp.searchsorted(-fields.order_rho, -rho[moved], side="left")
    source_bands = density_bands(first_not_above, xp.minimum(rank_old[moved], n_old) - 1, n_old, xp)
    bits = xp.where(reach2_tree >= 0, band_bits(rank_old_tree, n_old, xp), 0)
    marked = xp.flatnonzero(backend.mark_newly_outranked(tree, position[moved], source_bands, rank_old_tree, rank_tree, reach2_tree, bits))
    # ... and is newly denser than a point only if it is in V: the marked points search among V alone
    is_moved = xp.zeros(n, xp.bool_)
    is_moved[moved] = True
    bits = xp.where(is_moved[tree.ids], band_bits(rank_old_tree, n_old, xp), 0)
    _improve(backend, tree, tree.ids[marked], marked, rank_old_tree, rank_tree, bits, xp.full(marked.shape[0], n_old), n_old, delta, parent)
    _search_freely(backend, tree, rank_tree, position, free[free != densest], delta, parent)
    far2 = float32_square(float(fields.delta[old_densest])) if densest == old_densest else 0.0
    _set_densest(backend, tree, position, densest, delta, parent, new if densest == old_densest else None, far2)
    gamma = center_rules.ranking_gamma(rho, delta, densest, xp)
    return Fields(fields.kernel, fields.dc, rho, delta, parent, order, gamma, order_rho)


def deleted(backend, old_tree, tree, fields: Fields, mapping, old_position, position) -> Fields:
    """``fields`` of ``old_tree``'s points updated for the removal of those whose ``mapping`` (old index -> new
    index) is -1; ``tree`` holds the survivors; ``old_position`` / ``position``: tree positions in each tree."""
    from .indexed import Fields  # noqa: PLC0415

    xp = backend.xp
    n_old = old_tree.n_points
    keep = mapping >= 0
    near = xp.empty(n_old, xp.int64)
    near[old_tree.ids] = backend.count_near(old_tree, old_position[~keep], rho_reach(fields.dc, fields.kernel))
    changed = mapping[(near > 0) & keep]
    if fields.kernel == "cutoff":
        rho = (fields.rho - near)[keep]
    else:
        rho = fields.rho[keep]
        rho[changed] = backend.rho_at(tree, position[changed], fields.dc, fields.kernel)
    order, order_rho, rank, _ = _reorder(backend, mapping[fields.order], fields.order_rho, changed, rho)

    delta, old_parent = fields.delta[keep], fields.parent[keep]
    parent = xp.where(old_parent >= 0, mapping[xp.maximum(old_parent, 0)], -1)  # a deleted parent leaves -1
    densest = int(order[0])
    # no longer below its parent (or never had one): a free search; else the parent bounds the search of V
    free = xp.flatnonzero((parent < 0) | (rank[xp.maximum(parent, 0)] > rank))
    is_free = xp.zeros(rank.shape[0], xp.bool_)
    is_free[free] = True
    is_free[densest] = True
    bounded = changed[~is_free[changed]]
    rank_old = xp.empty(n_old, xp.int64)
    rank_old[fields.order] = xp.arange(n_old)
    rank_tree, rank_old_tree = rank[tree.ids], rank_old[keep][tree.ids]
    # a point newly denser than i had, before, an old rho at least i's new one (no rho rose)
    last_not_below = xp.searchsorted(-fields.order_rho, -rho[bounded], side="right") - 1
    _improve(backend, tree, bounded, position[bounded], rank_old_tree, rank_tree, band_bits(rank_old_tree, n_old, xp),
             last_not_below, n_old, delta, parent)  # fmt: skip
    _search_freely(backend, tree, rank_tree, position, free[free != densest], delta, parent)
    _set_densest(backend, tree, position, densest, delta, parent, None, 0.0)
    gamma = center_rules.ranking_gamma(rho, delta, densest, xp)
    return Fields(fields.kernel, fields.dc, rho, delta, parent, order, gamma, order_rho)


def _improve(backend, tree, points, positions, rank_old_tree, rank_tree, bits_tree, last_rank_old, n_old, delta, parent) -> None:
    """delta and parent of ``points`` (at tree ``positions``) improved by their nearest newly denser point, which
    has an old rank above the point's own and at most ``last_rank_old``; ``bits_tree``: the candidates' bands."""
    xp = backend.xp
    if points.shape[0]:
        bound2 = (delta[points] * delta[points]).astype(xp.float32)  # exactly the float32 it came from
        bands = density_bands(rank_old_tree[positions] + 1, last_rank_old, n_old, xp)
        d2, nearest = backend.nearest_newly_denser(tree, positions, bands, rank_old_tree, rank_tree, bits_tree, bound2, parent[points])
        delta[points], parent[points] = xp.sqrt(d2.astype(xp.float64)), nearest


BANDS = 64  # density bands of the old ranks, one bit each: old ranks >= n_old (new points) share the last


def _band(rank_old, n_old: int, xp):
    return xp.where(rank_old >= n_old, BANDS - 1, (rank_old * (BANDS - 1)) // max(n_old, 1))


def band_bits(rank_old, n_old: int, xp=np):
    """Each point's band as a one-bit int64 mask."""
    return (xp.uint64(1) << _band(rank_old, n_old, xp).astype(xp.uint64)).view(xp.int64)


def density_bands(lo, hi, n_old: int, xp=np):
    """Masks of the bands of old ranks lo..hi (0 where lo > hi): a walk skips a node that holds none of them."""
    full = xp.uint64(2**64 - 1)
    low, high = _band(lo, n_old, xp).astype(xp.uint64), _band(hi, n_old, xp).astype(xp.uint64)
    mask = (full << low) & (full >> (xp.uint64(BANDS - 1) - high))
    return xp.where(lo <= hi, mask, xp.uint64(0)).view(xp.int64)


def _reorder(backend, order, order_rho, moved, rho):
    """(order, rho in that order, rank, moved in density order) after the points ``moved`` (increasing indices)
    changed rho (see ``merge_order``)."""
    moved = moved[backend.density_order(rho[moved])[0]]  # by rho descending, then index (cut-off counts: O(N) on the CPU)
    return (*backend.merge_order(order, order_rho, moved, rho[moved], rho.shape[0]), moved)


def _search_freely(backend, tree, rank_tree, position, points, delta, parent) -> None:
    """delta and parent of ``points`` by a search over all denser points."""
    if points.shape[0]:
        d2, nearest = backend.nearest_denser_of(tree, rank_tree, position[points])
        delta[points], parent[points] = backend.xp.sqrt(d2.astype(backend.xp.float64)), nearest


def _set_densest(backend, tree, position, densest: int, delta, parent, among, far2: float) -> None:
    """The densest point: parent -1, delta its largest distance, over the points ``among`` (and ``far2``, the
    largest squared distance to the others) or, for None, over all points."""
    xp = backend.xp
    others = xp.arange(tree.n_points) if among is None else among
    d2 = backend.sq_to(tree, int(position[densest]), position[others])
    delta[densest] = np.sqrt(max(np.float64(far2), float(d2.max()) if d2.shape[0] else 0.0))
    parent[densest] = -1
