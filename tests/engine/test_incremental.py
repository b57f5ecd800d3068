"""Incremental updates against a fresh fit and the brute-force oracle after every insert and delete, on each
backend (the GPU ones only where CuPy finds a GPU), and the GPU against the CPU after the same updates."""

import dataclasses

import numpy as np
import pytest

from dpstudio.engine import DBSCAN, HDBSCAN, DensityPeaks, IndexedPoints
from dpstudio.engine.data import DataError
from dpstudio.engine.dpc import cluster_changes
from dpstudio.engine.vptree import LEAF_SIZE

from . import oracle
from .gpu_support import needs_gpu, poison_outputs
from .datasets import CASES

SEQUENCE_CASES = ["blobs", "with_duplicates", "integer_grid", "collinear_ties", "uniform_deep", "high_dim"]


@pytest.fixture(params=["cpu", pytest.param("gpu", marks=needs_gpu)])
def backend(request, monkeypatch):
    """Each test once per backend; on the GPU every kernel output starts as garbage, so an element a kernel forgets
    to write fails the comparison."""
    if request.param == "gpu":
        poison_outputs(monkeypatch)
    return request.param


def on_host(tree):
    """The tree with every array in NumPy (a GPU tree's live on the device)."""
    arrays = {f.name: getattr(tree, f.name) for f in dataclasses.fields(tree) if f.name not in ("depth", "neighbours")}
    return dataclasses.replace(tree, **{name: a.get() if hasattr(a, "get") else a for name, a in arrays.items()})


def node_run(tree, level: int, j: int) -> tuple[int, int]:
    """The run of tree positions of node j of ``level``."""
    return int(tree.leaf_start[j << (tree.depth - level)]), int(tree.leaf_start[(j + 1) << (tree.depth - level)])


def leaf_sets(tree) -> list[frozenset]:
    tree = on_host(tree)
    return [frozenset(tree.ids[slice(*node_run(tree, tree.depth, j))].tolist()) for j in range(1 << tree.depth)]


def assert_valid_tree(tree, points):
    """Every point once, leaves within LEAF_SIZE, every ball holding its node's points, min_id a lower bound."""
    tree = on_host(tree)
    assert sorted(tree.ids.tolist()) == list(range(len(points)))
    np.testing.assert_array_equal(tree.coords.T, points[tree.ids])
    assert tree.leaf_start[0] == 0 and tree.leaf_start[-1] == len(points)
    assert np.all(np.diff(tree.leaf_start) >= 0) and np.all(np.diff(tree.leaf_start) <= LEAF_SIZE)
    for level in range(tree.depth + 1):
        for j in range(1 << level):
            k = (1 << level) - 1 + j
            run = slice(*node_run(tree, level, j))
            if run.stop > run.start:
                far = np.sqrt(((tree.coords[:, run].T.astype(np.float64) - tree.center[k]) ** 2).sum(axis=1)).max()
                assert far <= tree.cover_radius[k] * (1 + 1e-5) + 1e-30
                assert tree.min_id[k] <= tree.ids[run].min()


def assert_matches(dp, points, chosen):
    """dp equals a fresh fit on ``points`` (same backend, dc, kernel and centers), and the oracle."""
    fresh = DensityPeaks(dc=dp.dc_, kernel=dp.kernel_, suggest="gamma", backend=dp.indexed_.backend.name).fit(points).assign(centers=chosen)
    sq = oracle.rule_sq_dists(points)
    np.testing.assert_array_equal(dp.rho_, fresh.rho_)  # Gaussian too: its terms add up exactly, in any order
    if dp.kernel_ == "cutoff":
        np.testing.assert_array_equal(dp.rho_, oracle.rho(sq, dp.dc_, "cutoff"))
    else:
        np.testing.assert_allclose(dp.rho_, oracle.rho(sq, dp.dc_, "gaussian"), rtol=1e-12, atol=oracle.GAUSSIAN_ATOL)
    # delta and parent from the updated rho itself: the oracle's exp may round a term to another unit
    expected_delta, expected_parent = oracle.delta_parent(sq, dp.rho_)
    np.testing.assert_array_equal(dp.parent_, expected_parent)
    np.testing.assert_array_equal(dp.delta_, expected_delta)
    np.testing.assert_array_equal(dp.centers_, oracle.with_densest(chosen, dp.rho_))
    np.testing.assert_array_equal(dp.gamma_, oracle.gamma(dp.rho_, dp.delta_, dp.parent_))  # n_centers ranks by it
    np.testing.assert_array_equal(dp.parent_, fresh.parent_)  # ties (duplicates) by index, as in the fresh fit
    np.testing.assert_array_equal(dp.delta_, fresh.delta_)
    np.testing.assert_array_equal(dp.centers_, fresh.centers_)
    np.testing.assert_array_equal(dp.labels_, oracle.labels(dp.parent_, list(dp.centers_)))
    np.testing.assert_array_equal(dp.halo_, oracle.halo(sq, dp.rho_, dp.labels_, dp.dc_))


def assert_updated_in_place(dp) -> None:
    """The last update changed the cached rho, delta and parent (``incremental``), not computed them again: the
    fields read after it took no time."""
    assert dp.timings_["rho"] == 0.0 and dp.timings_["delta"] == 0.0, f"computed again: {dp.timings_}"


def renumbered(chosen, mapping) -> list[int]:
    """Chosen centers after a delete, as the caller numbers them: each one's new index; deleted ones drop out."""
    new = np.asarray(mapping)[np.asarray(chosen, np.int64)]
    return new[new >= 0].tolist()


def exact_pair_distance(points, rng) -> float:
    """A distance that pairs have exactly: the cut-off must leave them out, before and after every update."""
    sq = oracle.rule_sq_dists(points[:300])
    return float(np.sqrt(np.float64(rng.choice(sq[sq > 0]))))


def random_updates(dp, points, n_base, rng, steps=6):
    """Random inserts (of the points after n_base, in order) and deletes on a fit of points[:n_base], each checked
    to be an update in place; yields the points and the chosen centers (renumbered here) after each step."""
    current, waiting, chosen = points[:n_base], points[n_base:], dp.chosen_centers_.tolist()
    for _ in range(steps):
        if waiting.shape[0] and (rng.random() < 0.6 or current.shape[0] < 10):
            m = int(rng.integers(1, min(250, waiting.shape[0]) + 1))
            dp.partial_fit(waiting[:m])
            current, waiting = np.concatenate((current, waiting[:m])), waiting[m:]
        else:
            dead = rng.choice(current.shape[0], int(rng.integers(1, current.shape[0] // 3 + 1)), replace=False)
            mapping = dp.delete(dead)
            assert (mapping[dead] == -1).all() and np.array_equal(mapping[mapping >= 0], np.arange(len(current) - len(dead)))
            current, chosen = np.delete(current, dead, axis=0), renumbered(chosen, mapping)
        assert_updated_in_place(dp)
        yield current, chosen


def sequence_start(case, kernel, rng):
    points = CASES[case](rng).astype(np.float32)
    points = points[rng.permutation(len(points))][:900]
    n_base = int(rng.integers(2, len(points) // 3))
    dc = exact_pair_distance(points, rng) if kernel == "cutoff" else None
    return points, n_base, dc


@pytest.mark.parametrize("case", SEQUENCE_CASES)
@pytest.mark.parametrize("kernel", ["cutoff", "gaussian"])
def test_random_inserts_and_deletes_match_a_fresh_fit(case, kernel, backend, rng):
    points, n_base, dc = sequence_start(case, kernel, rng)
    dp = DensityPeaks(dc=dc, kernel=kernel, suggest="gamma", backend=backend).fit(points[:n_base])
    for current, chosen in random_updates(dp, points, n_base, rng):
        assert_valid_tree(dp.indexed_.index, current)
        assert_matches(dp, current, chosen)


@pytest.mark.parametrize("case", [pytest.param(case, marks=needs_gpu) for case in SEQUENCE_CASES])
def test_the_gpu_updates_as_the_cpu_does(case):
    """The same random sequence on both backends: cut-off rho, delta, parent, labels and halo bit-identical."""
    fits = []
    for backend in ("cpu", "gpu"):
        rng = np.random.default_rng(13)
        points, n_base, dc = sequence_start(case, "cutoff", rng)
        dp = DensityPeaks(dc=dc, suggest="gamma", backend=backend).fit(points[:n_base])
        fits.append([(dp.rho_, dp.delta_, dp.parent_, dp.labels_, dp.halo_) for _ in random_updates(dp, points, n_base, rng)])
    for cpu_step, gpu_step in zip(*fits, strict=True):
        for cpu_field, gpu_field in zip(cpu_step, gpu_step, strict=True):
            np.testing.assert_array_equal(gpu_field, cpu_field)


@pytest.mark.parametrize("kernel", ["cutoff", "gaussian"])
def test_every_cached_field_is_updated(kernel, backend, rng):
    points = CASES["blobs"](rng, n=1200).astype(np.float32)
    indexed = IndexedPoints(points[:800], backend=backend)
    dcs = (0.3, 0.7)
    for dc in dcs:
        indexed.fields(kernel, dc)
    indexed.insert(points[800:])
    indexed.delete(rng.choice(1200, 150, replace=False))
    host = indexed.backend.to_numpy
    fresh = IndexedPoints(host(indexed.points), backend=backend)
    for dc in dcs:
        timings = {}
        updated, again = indexed.fields(kernel, dc, timings=timings), fresh.fields(kernel, dc)
        assert timings == {"rho": 0.0, "delta": 0.0}  # each (kernel, dc) kept through the updates, not computed again
        for name in ("rho", "delta", "parent", "order", "gamma"):  # Gaussian too: its terms add up exactly
            np.testing.assert_array_equal(host(getattr(updated, name)), host(getattr(again, name)), err_msg=name)


def test_a_batch_that_fills_the_tree_and_deleting_down_to_two(backend, rng):
    capacity = LEAF_SIZE << 3
    points = rng.normal(size=(capacity + 200, 2)).astype(np.float32)
    dp = DensityPeaks(dc=0.4, suggest="gamma", backend=backend).fit(points[: capacity - 3])
    old = on_host(dp.indexed_.index)
    assert old.depth == 3
    chosen = dp.chosen_centers_.tolist()
    dp.partial_fit(points[capacity - 3 :])  # past the capacity: the leaves split (once or twice, as the points fall)
    tree = on_host(dp.indexed_.index)
    assert tree.depth >= 4
    # split, not built afresh: most old leaves' points are still together, in the node at the old leaves' level
    together = sum(leaf <= set(tree.ids[slice(*node_run(tree, old.depth, j))].tolist())
                   for j, leaf in enumerate(leaf_sets(old)))  # fmt: skip
    assert together >= (1 << old.depth) // 2
    assert_updated_in_place(dp)
    current = points
    assert_valid_tree(dp.indexed_.index, current)
    assert_matches(dp, current, chosen)
    while current.shape[0] > 2:
        dead = rng.choice(current.shape[0], max(1, min(current.shape[0] - 2, current.shape[0] // 2)), replace=False)
        chosen = renumbered(chosen, dp.delete(dead))
        current = np.delete(current, dead, axis=0)
        assert_updated_in_place(dp)
        assert_valid_tree(dp.indexed_.index, current)
        assert_matches(dp, current, chosen)


def test_deleting_the_densest_point_and_a_center(backend, rng):
    points = CASES["blobs"](rng, n=1500).astype(np.float32)
    dp = DensityPeaks(backend=backend).fit(points).assign(n_centers=5)
    densest = int(np.lexsort((np.arange(len(points)), -dp.rho_))[0])
    chosen_center = int(dp.centers_[1]) if dp.centers_[1] != densest else int(dp.centers_[2])
    chosen = dp.chosen_centers_.tolist()
    mapping = dp.delete([densest, chosen_center])
    current = np.delete(points, [densest, chosen_center], axis=0)
    assert len(dp.changes_["vanished"]) >= 1
    assert_updated_in_place(dp)
    assert_matches(dp, current, renumbered(chosen, mapping))  # the chosen centers left, renumbered


def test_a_point_with_room_joins_its_leaf_and_moves_no_other(backend, rng):
    points = rng.uniform(size=(LEAF_SIZE * 20, 2)).astype(np.float32)
    indexed = IndexedPoints(points, backend=backend)  # 32 leaves of at most 20 * LEAF_SIZE / 32 points: room in each
    before = leaf_sets(indexed.index)
    indexed.insert(points[:1] + np.float32(1e-3))
    after = leaf_sets(indexed.index)
    grown = [j for j in range(len(before)) if after[j] != before[j]]
    assert len(grown) == 1 and after[grown[0]] == before[grown[0]] | {len(points)}


def test_an_overflowing_leaf_rebuilds_a_subtree_only(backend, rng):
    points = rng.uniform(size=(LEAF_SIZE * 64, 2)).astype(np.float32)
    indexed = IndexedPoints(points[: LEAF_SIZE * 40], backend=backend)
    before = leaf_sets(indexed.index)
    crowd = np.repeat(points[:1], 3 * LEAF_SIZE, axis=0)  # one spot, far more than a leaf holds
    indexed.insert(crowd)
    assert indexed.index.depth == 6
    assert_valid_tree(indexed.index, np.concatenate((points[: LEAF_SIZE * 40], crowd)))
    # 40 leaves' points in 64 leaves, then 3 more at one spot: the smallest subtree with room (at most 3/4 full) is
    # half the tree; the other half's leaves keep their points
    kept = {j for j, (a, b) in enumerate(zip(before, leaf_sets(indexed.index))) if a == b}
    assert kept in (set(range(32)), set(range(32, 64)))


def test_neighbour_products_are_recomputed_after_an_update(backend, rng):
    points = CASES["blobs"](rng, n=1000).astype(np.float32)
    indexed = IndexedPoints(points[:700], backend=backend)
    DBSCAN(eps=0.5, min_samples=5).fit(indexed)
    indexed.insert(points[700:])
    indexed.delete(np.arange(0, 1000, 7))
    current = np.delete(points, np.arange(0, 1000, 7), axis=0)
    np.testing.assert_array_equal(
        DBSCAN(eps=0.5, min_samples=5).fit(indexed).labels_, DBSCAN(eps=0.5, min_samples=5, backend="cpu").fit(current).labels_
    )


@pytest.mark.parametrize("case", SEQUENCE_CASES)
def test_neighbour_lists_stay_exact_through_updates(case, backend, rng):
    """The kNN lists, updated in place of listed again, equal the brute-force lists after every insert and delete
    (ties by the smaller index), also when there are fewer points than k."""
    points, n_base, _ = sequence_start(case, "cutoff", rng)
    indexed = IndexedPoints(points[:n_base], backend=backend)
    k = IndexedPoints.NEIGHBOURS
    indexed.neighbours(k)
    current, waiting = points[:n_base], points[n_base:]
    for _ in range(8):
        if waiting.shape[0] and (rng.random() < 0.6 or current.shape[0] < 10):
            m = int(rng.integers(1, min(250, waiting.shape[0]) + 1))
            indexed.insert(waiting[:m])
            current, waiting = np.concatenate((current, waiting[:m])), waiting[m:]
        else:
            dead = rng.choice(current.shape[0], int(rng.integers(1, current.shape[0] // 3 + 1)), replace=False)
            indexed.delete(dead)
            current = np.delete(current, dead, axis=0)
        expected_ids, expected_sq = oracle.knn(oracle.rule_sq_dists(current), k)
        timings = {}
        ids, sq = (np.asarray(a.get() if hasattr(a, "get") else a) for a in indexed.neighbours(k, timings=timings))
        assert timings["neighbours"] == 0.0  # the lists kept through the update, not listed again
        np.testing.assert_array_equal(ids, expected_ids)
        np.testing.assert_array_equal(sq, expected_sq)


def test_rows_say_which_input_row_each_point_is(rng):
    points = rng.normal(size=(60, 2)).astype(np.float32)
    dp = DensityPeaks(dc=0.5, suggest="gamma", backend="cpu").fit(points[:40])
    dp.partial_fit(points[40:])
    dp.delete([0, 41])
    frame = dp.to_frame()
    np.testing.assert_array_equal(frame["index"], np.delete(np.arange(60), [0, 41]))
    dp.partial_fit(points[:1])  # one point as a 1-D row
    assert dp.rows_[-1] == 60 and dp.n_points_ == 59


def test_rows_numbered_by_the_caller_count_on_from_the_next_row(rng):
    indexed = IndexedPoints(rng.normal(size=(5, 2)).astype(np.float32), backend="cpu")
    indexed.number_rows([9, 2, 4, 7, 3], next_row=20)
    indexed.delete([1])
    indexed.insert(rng.normal(size=(2, 2)))
    np.testing.assert_array_equal(indexed.rows, [9, 4, 7, 3, 20, 21])
    with pytest.raises(ValueError, match="6 different row numbers"):
        indexed.number_rows([1, 1, 2, 3, 4, 5], next_row=9)
    with pytest.raises(ValueError, match="must come after"):
        indexed.number_rows(np.arange(6), next_row=5)
    np.testing.assert_array_equal(indexed.rows, [9, 4, 7, 3, 20, 21])


def test_bad_updates_are_refused_and_change_nothing(rng):
    points = rng.normal(size=(50, 3)).astype(np.float32)
    dp = DensityPeaks(dc=0.5, suggest="gamma", backend="cpu").fit(points)
    rho = dp.rho_.copy()
    with pytest.raises(DataError, match="3 features"):
        dp.partial_fit(np.zeros((4, 2)))
    with pytest.raises(DataError, match="NaN"):
        dp.partial_fit(np.full((1, 3), np.nan))
    with pytest.raises(DataError, match="out of range"):
        dp.delete([50])
    with pytest.raises(DataError, match="fewer than 2"):
        dp.delete(np.arange(49))
    np.testing.assert_array_equal(dp.rho_, rho)
    assert dp.n_points_ == 50


def test_partial_fit_before_fit_is_fit(rng):
    points = rng.normal(size=(80, 2))
    np.testing.assert_array_equal(
        DensityPeaks(dc=0.4, backend="cpu").partial_fit(points).labels_, DensityPeaks(dc=0.4, backend="cpu").fit(points).labels_
    )


def test_cluster_changes_name_what_happened():
    old_labels = np.array([0, 0, 0, 1, 1, 1, 2, 2])
    old_centers = np.array([0, 3, 6])
    # point 3 (center of cluster 1) deleted: its points go to clusters 0 and 2; new point 7 is a center and takes
    # old point 7 from cluster 2, whose center (old 6, now 5) goes on as label 1
    mapping = np.array([0, 1, 2, -1, 3, 4, 5, 6])
    labels = np.array([0, 0, 0, 0, 2, 1, 2, 2])
    changes = cluster_changes(old_labels, old_centers, labels, np.array([0, 5, 7]), mapping)
    assert changes["vanished"] == [1] and changes["merged"] == {1: 0}
    assert changes["appeared"] == [2] and changes["split"] == {2: [2]}
    assert changes["clusters"] == 3 and changes["moved"] == 3


def test_automatic_clusters_continue_by_their_points_not_their_centers():
    """The automatic clusters' centers are each peak's densest point of the moment: new points move them, and a
    cluster that keeps its points is the same cluster (by center it vanished and appeared again)."""
    old_labels = np.array([0, 0, 0, 1, 1, 1, 1, 2, 2])
    labels = np.array([1, 1, 1, 0, 0, 0, 2, 2, 2, 1, 2])  # two points added; other centers; cluster 1 loses a point
    changes = cluster_changes(old_labels, np.array([0, 3, 7]), labels, np.array([3, 1, 8]), by_points=True)
    assert changes == {"clusters": 3, "appeared": [], "vanished": [], "merged": {}, "split": {}, "moved": 1}
    # old clusters 1 and 2 become one: it continues cluster 1, which gave it most of its points, and cluster 2
    # merged into it; a new cluster appears from one of cluster 0's points
    labels = np.array([0, 0, 2, 1, 1, 1, 1, 1, 1])
    changes = cluster_changes(old_labels, np.array([0, 3, 7]), labels, np.array([0, 3, 2]), by_points=True)
    assert changes["vanished"] == [2] and changes["merged"] == {2: 1} and changes["appeared"] == [2]
    assert changes["split"] == {0: [2]} and changes["moved"] == 3


def test_a_stream_of_the_same_blobs_changes_no_automatic_cluster(rng):
    """Three far-apart blobs streamed in batches: the same three clusters each time, whichever points are their
    densest (the stream log said every cluster vanished and appeared again, and every point moved)."""
    points = (rng.normal(scale=0.5, size=(1500, 2)) + 12.0 * rng.integers(0, 3, (1500, 1))).astype(np.float32)
    dp = DensityPeaks(dc=0.5, backend="cpu").fit(points[:1000])
    for batch in (points[1000:1250], points[1250:]):
        dp.partial_fit(batch)
        assert dp.changes_ == {"clusters": 3, "appeared": [], "vanished": [], "merged": {}, "split": {}, "moved": 0}


def flows_by_definition(old, new, continues, appeared):
    """merged and split of ``cluster_changes`` by their words, from a full table of points per (old, new) label."""
    olds, news = sorted(set(old.tolist())), sorted(set(new.tolist()))
    table = {(a, b): int(np.sum((old == a) & (new == b))) for a in olds for b in news}
    merged = {a: max(news, key=lambda b: (table[a, b], -b)) for a in olds if a >= 0 and continues[a] < 0}
    split = {a: [b for b in news if b in appeared and table[a, b]] for a in olds if a >= 0 and continues[a] >= 0}
    return merged, {a: b for a, b in split.items() if b}


def test_cluster_changes_match_their_definition_on_random_labels(rng):
    """Random old and new clusterings (noise -1 among them, ties in where points went, deletions)."""
    for _ in range(200):
        n, k_old, k_new = rng.integers(1, 60), rng.integers(1, 6), rng.integers(1, 6)
        old_centers = rng.choice(n, min(k_old, n), replace=False)
        old_labels = rng.integers(-1, len(old_centers), n)
        old_labels[old_centers] = np.arange(len(old_centers))
        mapping = np.where(rng.random(n) < 0.2, -1, 0)
        mapping[mapping >= 0] = np.arange(int((mapping >= 0).sum()))
        m = int((mapping >= 0).sum())
        if not m:
            continue
        centers = rng.choice(m, min(k_new, m), replace=False)
        labels = rng.integers(-1, len(centers), m)
        labels[centers] = np.arange(len(centers))
        changes = cluster_changes(old_labels, old_centers, labels, centers, mapping)
        label_of = {int(c): k for k, c in enumerate(centers)}
        continues = np.array([label_of.get(int(mapping[c]), -1) if mapping[c] >= 0 else -1 for c in old_centers])
        survived = mapping >= 0
        expected = flows_by_definition(old_labels[survived], labels[mapping[survived]], continues, changes["appeared"])
        assert (changes["merged"], changes["split"]) == expected


def test_the_automatic_clustering_is_computed_again_after_an_update(rng):
    points = CASES["blobs"](rng, n=1200).astype(np.float32)
    dp = DensityPeaks(dc=0.5, backend="cpu").fit(points[:900])  # suggest="auto": the topography, nothing chosen
    dp.partial_fit(points[900:])
    dp.delete(np.arange(0, 1200, 9))
    current = np.delete(points, np.arange(0, 1200, 9), axis=0)
    fresh = DensityPeaks(dc=0.5, backend="cpu").fit(current)
    np.testing.assert_array_equal(dp.labels_, fresh.labels_)
    np.testing.assert_array_equal(dp.centers_, fresh.centers_)
    assert dp.changes_["clusters"] == len(fresh.centers_)


def test_gaussian_ties_on_a_grid_go_by_index_after_an_update_and_in_any_order(backend, rng):
    """Symmetric grid points' Gaussian rho came out a few ulps apart in float64, by the order of the terms: after an
    update 121 parents and 353 of 400 labels differed from a fresh fit, and a permutation of the points changed rho."""
    grid = np.mgrid[0:20, 0:20].reshape(2, -1).T.astype(np.float32)
    updated = DensityPeaks(dc=1.5, kernel="gaussian", suggest="gamma", backend=backend).fit(grid[:350]).assign(n_centers=4)
    updated.partial_fit(grid[350:])
    fresh = DensityPeaks(dc=1.5, kernel="gaussian", suggest="gamma", backend=backend).fit(grid).assign(centers=updated.chosen_centers_)
    for name in ("rho_", "parent_", "labels_"):
        np.testing.assert_array_equal(getattr(updated, name), getattr(fresh, name), err_msg=name)
    assert np.unique(fresh.rho_).size < 60  # (ties everywhere: what the test is about)
    order = rng.permutation(len(grid))
    np.testing.assert_array_equal(DensityPeaks(dc=1.5, kernel="gaussian", backend=backend).fit(grid[order]).rho_, fresh.rho_[order])


def test_back_to_the_automatic_clustering_after_an_update_is_of_the_new_points(rng):
    """The automatic clustering cached before an update was taken again after it (labels of the old N: a read past
    the end of an array in the kernel that finds each cluster's densest point, and a crash)."""
    points = CASES["blobs"](rng, n=600).astype(np.float32)
    dp = DensityPeaks(dc=0.5, backend="cpu").fit(points[:500]).assign(n_centers=3)
    dp.partial_fit(points[500:])
    dp.assign()
    fresh = DensityPeaks(dc=0.5, backend="cpu").fit(points)
    np.testing.assert_array_equal(dp.labels_, fresh.labels_)
    np.testing.assert_array_equal(dp.centers_, fresh.centers_)
    dp.assign(n_centers=3).delete(np.arange(0, 600, 7))
    np.testing.assert_array_equal(dp.assign().labels_, DensityPeaks(dc=0.5, backend="cpu").fit(np.delete(points, np.arange(0, 600, 7), axis=0)).labels_)


def test_estimators_on_an_index_updated_elsewhere_say_so_until_they_see_the_new_points(rng):
    """Another estimator's insert left DBSCAN with the old tree (labels of the old N), HDBSCAN crashing in its
    selection, and DensityPeaks with new rho beside old labels."""
    points = CASES["blobs"](rng, n=420).astype(np.float32)
    index = IndexedPoints(points[:400], backend="cpu")
    dp, other = DensityPeaks(dc=0.5, backend="cpu").fit(index), DensityPeaks(dc=0.5, backend="cpu").fit(index)
    db, hdb = DBSCAN(eps=0.3).fit(index), HDBSCAN(min_cluster_size=10).fit(index)
    dp.partial_fit(points[400:])
    assert dp.labels_.shape == (420,)
    for call, refresh in [(lambda: other.labels_, "set_dc"), (lambda: other.assign(), "set_dc"), (lambda: other.halo_, "set_dc"),
                          (lambda: other.partial_fit(points[:1]), "set_dc"), (lambda: db.set_eps(0.35), "set_min_samples"),
                          (lambda: db.to_frame(), "set_min_samples"), (lambda: hdb.set_selection(method="leaf"), "fit again"),
                          (lambda: hdb.labels_, "fit again"), (lambda: hdb.probabilities_, "fit again"), (lambda: other.centers_, "set_dc")]:  # fmt: skip
        with pytest.raises(RuntimeError, match=f"inserted into or deleted from this .*'s index since .*: .*{refresh}"):
            call()
    fresh = DensityPeaks(dc=0.5, backend="cpu").fit(points)
    np.testing.assert_array_equal(other.set_dc(0.5).labels_, fresh.labels_)
    np.testing.assert_array_equal(db.set_min_samples(5).set_eps(0.35).labels_, DBSCAN(eps=0.35).fit(points).labels_)
    np.testing.assert_array_equal(hdb.fit(index).labels_, HDBSCAN(min_cluster_size=10).fit(points).labels_)
    assert index.insert(np.empty((0, 2))).size == 0 and dp.labels_.shape == (420,)  # nothing inserted: nothing stale


def test_deleting_by_a_mask_or_by_fractions_is_refused(rng):
    """A boolean mask cast to 0s and 1s deleted points 0 and 1; 2.9 deleted point 2."""
    dp = DensityPeaks(dc=0.5, backend="cpu").fit(rng.normal(size=(200, 2)))
    mask = np.zeros(200, bool)
    mask[10] = True
    with pytest.raises(TypeError, match=r"whole point indices, got dtype bool \(a boolean mask: use np.flatnonzero\(mask\)\)"):
        dp.delete(mask)
    with pytest.raises(TypeError, match="whole point indices, got dtype float64"):
        dp.delete([2.9])
    assert dp.n_points_ == 200 and dp.delete(np.flatnonzero(mask))[11] == 10


def test_noise_that_stays_noise_has_not_moved(rng):
    """Every noise point counted as moved: -1 indexed the last cluster's continuation."""
    old_labels, labels = np.array([0, 0, 1, 1, -1, -1, -1]), np.array([0, 0, 1, -1, -1, -1, 1, 0])
    changes = cluster_changes(old_labels, np.array([0, 2]), labels, np.array([0, 2]))
    assert changes["moved"] == 2  # point 3 became noise, point 6 left the noise; 4 and 5 stayed noise
    vanished = cluster_changes(old_labels, np.array([0, 2]), np.array([0, 0, -1, 0, -1, -1, -1]), np.array([0]))
    assert vanished["vanished"] == [1] and vanished["moved"] == 2  # both points of cluster 1, one now noise


@pytest.mark.parametrize("case", ["blobs", "with_duplicates"])
def test_a_copied_estimator_updates_its_own_index_and_leaves_the_shared_one(case, backend, rng):
    """A browser session edits its own copy (``copy.deepcopy``): the copy equals a fresh fit on the edited points,
    and the shared index and the estimator copied from it keep every result they had."""
    import copy

    points = CASES[case](rng).astype(np.float32)[:600]
    shared = IndexedPoints(points, backend=backend)
    original = DensityPeaks(dc_percent=3, suggest="gamma").fit(shared)
    before = {name: getattr(original, name).copy() for name in ("rho_", "delta_", "parent_", "labels_")}
    coords = on_host(shared.index).coords.copy()
    edited = copy.deepcopy(original)
    assert edited.indexed_ is not shared and edited.indexed_.backend is shared.backend
    added = rng.normal(size=(25, points.shape[1])).astype(np.float32)
    edited.partial_fit(added)
    mapping = edited.delete(np.arange(0, 60, 4))
    current = np.concatenate((points, added))[mapping >= 0]
    assert_updated_in_place(edited)
    assert_matches(edited, current, renumbered(original.chosen_centers_, mapping))
    assert shared.n_points == points.shape[0] and np.array_equal(on_host(shared.index).coords, coords)
    for name, values in before.items():
        np.testing.assert_array_equal(getattr(original, name), values, err_msg=name)
    np.testing.assert_array_equal(DensityPeaks(dc=original.dc_, suggest="gamma").fit(shared).rho_, before["rho_"])
