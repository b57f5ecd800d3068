"""Density peaks on a real Dask cluster (a LocalCluster of 2 worker processes) against the single-process CPU
backend, on the random cases of the exactness tests: identical rho, delta, parent, labels and halo."""

import copy

import numpy as np
import pytest

from dpstudio.engine import DensityPeaks, IndexedPoints
from dpstudio.engine.cpu.density import leaf_costs, nearest_denser_in, rho_of_leaves
from dpstudio.engine.cpu.index import build_vptree
from dpstudio.engine.cpu.search import neighbour_graph
from dpstudio.engine.distributed import Replicas, balanced_cuts

from .datasets import CASES

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        with distributed.Client(cluster) as connected:
            yield connected


def assert_same_fit(a: DensityPeaks, b: DensityPeaks) -> None:
    for name in ("dc_", "rho_", "delta_", "parent_", "gamma_", "centers_", "labels_", "halo_"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("kernel", ["cutoff", "gaussian"])
def test_a_cluster_gives_the_single_process_result(case, kernel, client, rng):
    points = CASES[case](rng)
    alone = DensityPeaks(kernel=kernel, suggest="gamma", backend="cpu").fit(points)
    spread = DensityPeaks(kernel=kernel, suggest="gamma", backend="cpu", client=client).fit(points)
    assert_same_fit(spread, alone)


def test_an_explicit_dc_and_a_dc_change_on_a_cluster(client, rng):
    points = CASES["integer_grid"](rng)  # ties everywhere: equal distances and equal rho
    spread = DensityPeaks(dc=1.0, suggest="gamma", backend="cpu", client=client).fit(points)
    alone = DensityPeaks(dc=1.0, suggest="gamma", backend="cpu").fit(points)
    assert_same_fit(spread, alone)
    spread.set_dc(2.5)
    alone.set_dc(2.5)
    assert_same_fit(spread, alone)


def test_inserted_and_deleted_points_reach_the_workers(client, rng):
    points = CASES["blobs"](rng)
    indexed = IndexedPoints(points[:1000], backend="cpu", client=client)
    indexed.insert(points[1000:])
    indexed.delete(rng.choice(len(points), 200, replace=False))
    dc = indexed.dc_for_percent(2.0)  # a new dc after the changes: computed now, on the workers
    fresh = IndexedPoints(indexed.backend.to_numpy(indexed.points), backend="cpu")
    for name in ("rho", "delta", "parent"):
        np.testing.assert_array_equal(getattr(indexed.fields("cutoff", dc), name), getattr(fresh.fields("cutoff", dc), name))


def test_a_deep_copy_shares_the_client_and_the_workers_trees(client, rng):
    model = DensityPeaks(backend="cpu", client=client, suggest="gamma").fit(CASES["blobs"](rng))
    clone = copy.deepcopy(model)
    assert clone.client is client and clone.indexed_.client is client
    assert clone.indexed_._replicas is model.indexed_._replicas
    clone.partial_fit(CASES["blobs"](rng)[:50])
    assert clone.indexed_._replicas is None  # its points changed: its own trees on next use
    assert model.indexed_._replicas is not None


def test_the_gpu_backend_is_refused_with_a_reason(client, rng):
    with pytest.raises(ValueError, match="cpu backend"):
        Replicas(client, rng.normal(size=(100, 2)).astype(np.float32), "gpu")


def test_ranges_of_leaves_and_positions_add_up_to_the_whole(rng):
    """What each worker computes: the leaves' rho and the positions' delta, over cuts anywhere, equal the whole."""
    points = CASES["with_duplicates"](rng).astype(np.float32)
    tree = build_vptree(points, graph=False)
    dc = 0.3
    for kernel in ("cutoff", "gaussian"):
        leaves = 1 << tree.depth
        cuts = np.unique(np.concatenate(([0, leaves], rng.integers(0, leaves, 3))))
        parts = [rho_of_leaves(tree, dc, kernel, a, b) for a, b in zip(cuts[:-1], cuts[1:])]
        rho_tree = np.concatenate(parts)
        whole = DensityPeaks(dc=dc, kernel=kernel, backend="cpu", suggest="gamma").fit(points)
        np.testing.assert_array_equal(rho_tree, whole.rho_[tree.ids])
        rank_tree = np.argsort(np.lexsort((np.arange(len(points)), -whole.rho_)))[tree.ids]
        cuts = np.unique(np.concatenate(([0, len(points)], rng.integers(0, len(points), 3))))
        ranges = list(zip(cuts[:-1], cuts[1:]))  # with and without the range's own neighbour lists, in turn
        graphs = [neighbour_graph(tree, first=a, last=b) if i % 2 else None for i, (a, b) in enumerate(ranges)]
        delta2 = np.concatenate([nearest_denser_in(tree, rank_tree, a, b, g)[0] for (a, b), g in zip(ranges, graphs)])
        np.testing.assert_array_equal(np.sqrt(delta2.astype(np.float64)), whole.delta_[tree.ids])


@pytest.mark.parametrize("parts", [1, 2, 3, 7])
def test_balanced_cuts_give_each_part_its_share(parts, rng):
    costs = rng.integers(0, 1000, rng.integers(1, 300)) ** 2
    cuts = balanced_cuts(costs, parts)
    assert cuts[0] == 0 and cuts[-1] == len(costs) and len(cuts) == parts + 1 and np.all(np.diff(cuts) >= 0)
    total, prefix = costs.sum(), np.concatenate(([0], np.cumsum(costs)))
    for k, cut in enumerate(cuts[1:-1], start=1):  # the leaf that reaches a share closes its part
        share = total * k / parts
        assert prefix[cut - 1] < share <= prefix[cut] or (share == 0 and cut == 1)


def test_leaf_costs_are_higher_where_points_are_dense(rng):
    dense = rng.normal(scale=0.05, size=(4000, 2))
    sparse = rng.uniform(-20, 20, size=(4000, 2))
    points = np.concatenate((dense, sparse)).astype(np.float32)
    tree = build_vptree(points, graph=False)
    costs = leaf_costs(tree, 0.05, "gaussian")  # every dense leaf scans the blob; a sparse one, about itself
    in_dense = np.array([tree.ids[tree.leaf_start[j]] < 4000 for j in range(1 << tree.depth)])
    assert costs[in_dense].mean() > 5 * costs[~in_dense].mean()  # by count alone they would be equal
