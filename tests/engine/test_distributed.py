"""Density peaks on a real Dask cluster (a LocalCluster of 2 worker processes) against one process on the same
backend, on the random cases of the exactness tests: identical rho, delta, parent, labels and halo. On a GPU
machine the same with GPU workers (both on its one GPU), and a dask-cuda LocalCUDACluster of a worker per GPU."""

import copy
import dataclasses
import time
import types

import numpy as np
import pytest

from dpstudio.engine import DensityPeaks, IndexedPoints, get_backend
from dpstudio.engine.cpu.density import costs_of_leaves, delta_of_leaves, rho_of_leaves, sampled_leaves
from dpstudio.engine.cpu.index import build_vptree
from dpstudio.engine.cpu.search import neighbour_graph
from dpstudio.engine.distributed import (
    Cuts, Replicas, _to_send, balanced_cuts, counted_run_of, in_point_order, local_cluster, tree_run,
    ucx_comms_installed,
)  # fmt: skip

from . import oracle
from .datasets import CASES
from .gpu_support import gpu, needs_gpu

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        with distributed.Client(cluster) as connected:
            yield connected


def assert_same_fit(a: DensityPeaks, b: DensityPeaks) -> None:
    for name in ("dc_", "rho_", "delta_", "parent_", "gamma_", "centers_", "labels_", "halo_"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    # the density order too (the first worker's, where it sends it), whole: labels show only part of it
    for name in ("order", "order_rho"):
        given, expected = (m.indexed_.backend.to_numpy(getattr(m.indexed_.fields(m.kernel_, m.dc_), name)) for m in (a, b))
        assert given.dtype == expected.dtype, name
        np.testing.assert_array_equal(given, expected, err_msg=name)


def test_a_local_cluster_refuses_an_unknown_protocol_and_says_what_ucx_needs():
    with pytest.raises(ValueError, match="protocol must be one of tcp, ucx"):
        local_cluster("cpu", 1, protocol="udp")
    with pytest.raises(ValueError, match="protocol ucx is for GPU workers"):
        local_cluster("cpu", 1, protocol="ucx")
    if not ucx_comms_installed():
        with pytest.raises(ValueError, match="pip install distributed-ucxx"):
            local_cluster("gpu", 1, protocol="ucx")


class _OnTheDevice:
    """Stands for a CuPy array: ``get()`` copies it to the host."""

    def get(self):
        return np.arange(3)


@pytest.mark.parametrize(("address", "stays"), [("ucx://10.0.0.1:4000", True), ("ucxx://10.0.0.1:4000", True),
                                                ("tcp://10.0.0.1:4000", False), ("inproc://10.0.0.1/1/2", False)])  # fmt: skip
def test_a_result_stays_on_the_gpu_only_where_the_comms_are_ucx(address, stays, monkeypatch):
    monkeypatch.setattr(distributed, "get_worker", lambda: types.SimpleNamespace(address=address))
    result = _OnTheDevice()
    sent = _to_send(result)
    if stays:
        assert sent is result
    else:
        np.testing.assert_array_equal(sent, np.arange(3))


@pytest.mark.parametrize("backend", ["cpu", pytest.param("gpu", marks=needs_gpu)])
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("kernel", ["cutoff", "gaussian"])
def test_a_cluster_gives_the_single_process_result(case, kernel, backend, client, rng):
    points = CASES[case](rng)
    alone = DensityPeaks(kernel=kernel, suggest="gamma", backend=backend).fit(points)
    spread = DensityPeaks(kernel=kernel, suggest="gamma", backend=backend, client=client).fit(points)
    assert_same_fit(spread, alone)


@pytest.mark.parametrize("d", [pytest.param(d, marks=needs_gpu) for d in (2, 3, 16)])  # 16: tensor-tile kernels
def test_larger_sets_on_gpu_workers_equal_one_gpu(d, client, rng):
    points = CASES["blobs"](rng, n=30_000, d=d)
    alone = DensityPeaks(suggest="gamma", backend="gpu").fit(points)
    spread = DensityPeaks(suggest="gamma", backend="gpu", client=client).fit(points)
    assert_same_fit(spread, alone)


@pytest.mark.parametrize("protocol", ["tcp", "ucx"])  # ucx: GPU to GPU, where the ucxx packages are installed
@pytest.mark.parametrize("workers", [1, 2])  # one per GPU: 2 where the machine has two
@pytest.mark.parametrize("kernel", [pytest.param(k, marks=needs_gpu) for k in ("cutoff", "gaussian")])
def test_a_local_cuda_cluster_equals_one_gpu(kernel, workers, protocol, rng):
    pytest.importorskip("dask_cuda")
    if protocol == "ucx" and not ucx_comms_installed():
        pytest.skip("Dask's UCX comms are not installed")
    import cupy  # noqa: PLC0415  (a GPU test)

    if cupy.cuda.runtime.getDeviceCount() < workers:
        pytest.skip(f"a worker per GPU: {workers} workers need {workers} GPUs")
    points = CASES["with_duplicates"](rng, n=5000)
    with local_cluster("gpu", workers, protocol=protocol) as cluster, distributed.Client(cluster) as gpus:
        assert all(address.startswith(protocol) for address in gpus.scheduler_info()["workers"])
        spread = DensityPeaks(kernel=kernel, suggest="gamma", backend="gpu", client=gpus).fit(points)
    assert_same_fit(spread, DensityPeaks(kernel=kernel, suggest="gamma", backend="gpu").fit(points))


@pytest.mark.parametrize("backend", ["cpu", pytest.param("gpu", marks=needs_gpu)])
@pytest.mark.parametrize("case", ["blobs", "with_duplicates", "integer_grid", "uniform_deep", "two_points"])
def test_three_workers_of_two_threads_give_the_single_process_result(case, backend, rng):
    """An odd number of shares (strips, cost-balanced leaves, equal leaves; on the GPU a middle run of cut-off pair
    counts with runs on both sides, at the 2% rule and at a small dc), each worker running parallel kernels."""
    points = CASES[case](rng)
    with distributed.LocalCluster(n_workers=3, threads_per_worker=2, processes=True, dashboard_address=None) as cluster:
        with distributed.Client(cluster) as three:
            for kernel, percent in (("cutoff", 2.0), ("cutoff", 0.05), ("gaussian", 2.0)):
                spread = DensityPeaks(kernel=kernel, dc_percent=percent, suggest="gamma", backend=backend, client=three).fit(points)
                alone = DensityPeaks(kernel=kernel, dc_percent=percent, suggest="gamma", backend=backend).fit(points)
                assert_same_fit(spread, alone)


def test_shares_go_back_to_point_order_and_those_that_miss_a_point_or_give_one_twice_raise():
    cpu, ids = get_backend("cpu"), np.array([2, 0, 1, 3])
    np.testing.assert_array_equal(in_point_order([tree_run(0, np.array([5.0, 6.0])), tree_run(2, np.array([7.0, 8.0]))], ids, cpu), [6.0, 7.0, 5.0, 8.0])
    np.testing.assert_array_equal(in_point_order([(np.array([3, 1]), np.array([1, 2])), (np.array([0, 2]), np.array([3, 4]))], ids, cpu), [3, 2, 4, 1])
    # counted runs of tree positions 0-1, 2 and 3: 5 5 | 5 + 1 | 4 + 2 + 3 with the earlier runs' parts, less 1 each
    u32 = lambda *values: np.array(values, np.uint32)  # noqa: E731
    runs = [tree_run(0, u32(5, 5), u32(1, 2)), tree_run(2, u32(5), (np.array([0], np.int32), u32(3))), tree_run(3, u32(4), u32())]
    np.testing.assert_array_equal(in_point_order(runs, ids, cpu), [4, 5, 4, 8])
    with pytest.raises(RuntimeError):
        in_point_order([tree_run(0, np.array([5.0, 6.0, 7.0]))], ids, cpu)
    with pytest.raises(RuntimeError):
        in_point_order([(np.array([3, 1]), np.array([1, 2])), (np.array([0, 1]), np.array([3, 4]))], ids, cpu)
    for wrong in (runs[:2], [runs[0], tree_run(2, u32(5), (np.array([-1], np.int32), u32(3))), runs[2]],
                  [runs[0], tree_run(2, u32(5), (np.array([1], np.int32), u32(3))), runs[2]]):  # fmt: skip
        with pytest.raises(RuntimeError):  # missing a run, or a later point before or past the end
            in_point_order(wrong, ids, cpu)


def test_runs_that_do_not_tile_the_tree_order_raise_whatever_their_lengths_add_up_to():
    """Workers that cut their runs differently (a gap here, an overlap there) must never give a result."""
    cpu, ids = get_backend("cpu"), np.arange(6)
    fits = [tree_run(0, np.arange(2.0)), tree_run(2, np.arange(2.0)), tree_run(4, np.arange(2.0))]
    np.testing.assert_array_equal(in_point_order(fits, ids, cpu), [0, 1, 0, 1, 0, 1])
    u32 = lambda *values: np.array(values, np.uint32)  # noqa: E731
    for wrong in (
        [tree_run(0, np.arange(3.0)), tree_run(2, np.arange(1.0)), tree_run(4, np.arange(2.0))],  # overlap, then a gap
        [tree_run(0, np.arange(2.0)), tree_run(3, np.arange(2.0)), tree_run(4, np.arange(2.0))],
        [tree_run(0, u32(1, 1, 1), u32(0, 0, 0)), tree_run(3, u32(1, 1, 1))],  # counted runs mixed with plain ones
    ):
        with pytest.raises(RuntimeError, match="do not fit together"):
            in_point_order(wrong, ids, cpu)


@pytest.mark.parametrize("dense", [True, False])
def test_counted_runs_add_up_to_the_whole_counts(dense, rng):
    """A GPU run's shares as ``_cutoff_counts`` makes them from its pair totals: its own points' counts and its part
    of the later points' (whole where most are reached, else the non-zero ones), added up by whoever gathers."""
    n, cuts = 500, [0, 120, 121, 380, 500]
    parts = []
    for start, end in zip(cuts[:-1], cuts[1:]):
        part = np.zeros(n)
        part[start:end] = rng.integers(1, 50, end - start)  # each point counted itself at least
        reached = rng.random(n - end) < (0.9 if dense else 0.1)
        part[end:][reached] = rng.integers(1, 50, reached.sum())
        parts.append(part)
    runs = [counted_run_of(part, start, end) for part, start, end in zip(parts, cuts[:-1], cuts[1:])]
    assert isinstance(runs[0]["later"], tuple) != dense
    ids = rng.permutation(n)
    expected = np.empty(n)
    expected[ids] = np.sum(parts, axis=0) - 1
    np.testing.assert_array_equal(in_point_order(runs, ids, get_backend("cpu")), expected)


def test_every_worker_cuts_the_same_balanced_runs_from_its_own_cost_pass(rng):
    points = CASES["blobs"](rng, n=20_000).astype(np.float32)
    tree, cpu = build_vptree(points, graph=False), get_backend("cpu")
    leaves = sampled_leaves(1 << tree.depth, 64)
    cuts = Cuts(1 << tree.depth, 3, leaves=leaves)
    costs = costs_of_leaves(tree, 0.5, "gaussian", leaves)
    runs = [cuts.balanced_run(cpu, tree, 0.5, "gaussian", k) for k in range(3)]
    assert runs == [cuts.run(k, costs) for k in range(3)]
    assert runs[0][0] == 0 and runs[-1][1] == 1 << tree.depth and all(a[1] == b[0] for a, b in zip(runs, runs[1:]))
    with pytest.raises(ValueError, match="need those costs"):
        cuts.run(0)


def test_an_index_without_the_estimators_client_is_refused(client, rng):
    index = IndexedPoints(CASES["blobs"](rng), backend="cpu")
    with pytest.raises(ValueError, match="give it the client"):
        DensityPeaks(backend="cpu", client=client).fit(index)


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
    for name in ("rho", "delta", "parent", "order"):
        np.testing.assert_array_equal(getattr(indexed.fields("cutoff", dc), name), getattr(fresh.fields("cutoff", dc), name))


def test_a_deep_copy_shares_the_client_and_the_workers_trees(client, rng):
    model = DensityPeaks(backend="cpu", client=client, suggest="gamma").fit(CASES["blobs"](rng))
    clone = copy.deepcopy(model)
    assert clone.client is client and clone.indexed_.client is client
    assert clone.indexed_._replicas is model.indexed_._replicas
    clone.partial_fit(CASES["blobs"](rng)[:50])
    assert clone.indexed_._replicas is None  # its points changed: its own trees on next use
    assert model.indexed_._replicas is not None


def test_shares_of_leaves_add_up_to_the_whole(rng):
    """What each CPU worker computes: rho and delta of a range of leaves, over cuts anywhere, equal the whole."""
    points = CASES["with_duplicates"](rng).astype(np.float32)
    tree = build_vptree(points, graph=False)
    leaves, dc = 1 << tree.depth, 0.3
    for kernel in ("cutoff", "gaussian"):
        whole = DensityPeaks(dc=dc, kernel=kernel, backend="cpu", suggest="gamma").fit(points)
        cuts = np.unique(np.concatenate(([0, leaves], rng.integers(0, leaves, 3))))
        ranges = list(zip(cuts[:-1], cuts[1:]))
        rho_tree = np.concatenate([rho_of_leaves(tree, dc, kernel, a, b) for a, b in ranges])
        np.testing.assert_array_equal(rho_tree, whole.rho_[tree.ids])
        rank_tree = np.argsort(np.lexsort((np.arange(len(points)), -whole.rho_)))[tree.ids]
        positions = [(int(tree.leaf_start[a]), int(tree.leaf_start[b])) for a, b in ranges]
        # with and without the share's own neighbour lists, in turn
        graphs = [neighbour_graph(tree, first=p, last=q) if i % 2 else None for i, (p, q) in enumerate(positions)]
        delta2 = np.concatenate([delta_of_leaves(tree, rank_tree, a, b, g)[0] for (a, b), g in zip(ranges, graphs)])
        np.testing.assert_array_equal(np.sqrt(delta2.astype(np.float64)), whole.delta_[tree.ids])


@pytest.mark.gpu
@pytest.mark.skipif(gpu is None, reason="no GPU")
@pytest.mark.parametrize("case", ["with_duplicates", "integer_grid", "blobs"])
def test_gpu_runs_of_pair_counts_add_up_to_the_brute_force_counts(case, rng):
    """What each GPU worker computes for cut-off rho: its run's part of every point's count (each pair once, for
    both points), zero before the run; the parts of runs cut anywhere add up to the brute-force counts, and so do
    the shares the workers send (their own points' counts, and the later points' part, whole or the non-zero ones)."""
    points = CASES[case](rng).astype(np.float32)
    tree = gpu.build_vptree(gpu.asarray(points))
    leaves, ids = 1 << tree.depth, gpu.to_numpy(tree.ids)
    dc = float(np.quantile(oracle.rule_sq_dists(points[:300]), 0.05)) ** 0.5
    rho = oracle.rho(oracle.rule_sq_dists(points), dc, "cutoff")
    expected = rho[ids]  # tree order
    cuts = np.concatenate(([0], np.sort(rng.choice(np.arange(1, leaves), 3, replace=False)), [leaves]))  # 4 runs
    total, shares = np.zeros(len(points)), []
    for a, b in zip(cuts[:-1], cuts[1:]):
        part = gpu.to_numpy(gpu.cutoff_pair_totals(tree, dc, int(a), int(b)))
        start, end = int(tree.leaf_start[a]), int(tree.leaf_start[b])
        assert not part[:start].any()
        total += part
        shares.append(counted_run_of(part, start, end))
    np.testing.assert_array_equal(total, expected + 1)  # the point itself too
    np.testing.assert_array_equal(in_point_order(shares, ids, get_backend("cpu")), rho)


@pytest.mark.gpu
@pytest.mark.skipif(gpu is None, reason="no GPU")
@pytest.mark.parametrize("case", ["with_duplicates", "integer_grid", "blobs", "uniform_deep", "two_points", "deep_blobs"])
def test_gpu_leaf_costs_equal_the_cpu_pass_over_the_same_tree(case, rng):
    """Every worker's cost pass on the GPU: the CPU's costs_of_leaves over the GPU tree's own balls, exactly (the
    shares must be cut the same on every worker), at a small, a middle and a huge reach, both kernels, once or not;
    deep_blobs (14 levels, the reach of the 2% rule crossing thousands of nodes) fills the walks' stacks most."""
    points = (CASES["blobs"](rng, n=400_000) if case == "deep_blobs" else CASES[case](rng)).astype(np.float32)
    tree = gpu.build_vptree(gpu.asarray(points))
    host = dataclasses.replace(tree, **{name: gpu.to_numpy(getattr(tree, name)) for name in ("coords", "leaf_start", "center", "cover_radius")})
    leaves = sampled_leaves(1 << tree.depth, 2048)
    spread = float(np.ptp(points, axis=0).max()) or 1.0
    for dc in (spread / 500, spread / 20, 2 * spread):
        for kernel, once in (("cutoff", True), ("cutoff", False), ("gaussian", False)):
            expected = costs_of_leaves(host, dc, kernel, leaves, once)
            np.testing.assert_array_equal(gpu.to_numpy(gpu.costs_of_leaves(tree, dc, kernel, leaves, once)), expected)


def test_leaf_costs_of_pairs_counted_once_leave_out_earlier_leaves(rng):
    points = CASES["blobs"](rng, n=5000).astype(np.float32)
    tree = build_vptree(points, graph=False)
    leaves = np.arange(1 << tree.depth)
    every, once = costs_of_leaves(tree, 0.5, "cutoff", leaves), costs_of_leaves(tree, 0.5, "cutoff", leaves, once=True)
    assert np.all(once <= every) and once[-1] < every[-1] and once[0] == every[0]  # the first leaf has no earlier
    assert 0.3 < once.sum() / every.sum() < 0.7  # about half of every pair's work


@pytest.mark.parametrize("parts", [1, 2, 3, 7])
def test_balanced_cuts_give_each_part_its_share(parts, rng):
    costs = rng.integers(0, 1000, rng.integers(1, 300)) ** 2
    cuts = balanced_cuts(costs, parts)
    assert cuts[0] == 0 and cuts[-1] == len(costs) and len(cuts) == parts + 1 and np.all(np.diff(cuts) >= 0)
    total, prefix = costs.sum(), np.concatenate(([0], np.cumsum(costs)))
    for k, cut in enumerate(cuts[1:-1], start=1):  # the leaf that reaches a share closes its part
        share = total * k / parts
        assert prefix[cut - 1] < share <= prefix[cut] or (share == 0 and cut == 1)


@pytest.mark.parametrize("parts", [2, 3])
def test_cuts_from_the_sampled_costs(parts, rng):
    """Each sampled leaf's cost stands for the leaves up to the next sampled one."""
    n_leaves, leaves = 1 << 12, sampled_leaves(1 << 12, 64)
    sampled = rng.integers(0, 100, leaves.shape[0]) ** 2
    cuts = Cuts(n_leaves, parts, leaves=leaves)
    runs = [cuts.run(k, sampled) for k in range(parts)]
    starts = np.append(leaves, n_leaves)
    every_leaf = balanced_cuts(np.repeat(sampled, n_leaves // leaves.shape[0]), parts)
    expected = starts[np.searchsorted(starts, every_leaf)]  # the same, rounded up to where a sampled run begins
    assert runs == list(zip(expected[:-1], expected[1:]))
    assert Cuts(n_leaves).run(0) == (0, n_leaves)


def test_leaf_costs_are_higher_where_points_are_dense(rng):
    dense = rng.normal(scale=0.05, size=(4000, 2))
    sparse = rng.uniform(-20, 20, size=(4000, 2))
    points = np.concatenate((dense, sparse)).astype(np.float32)
    tree = build_vptree(points, graph=False)
    costs = costs_of_leaves(tree, 0.05, "gaussian", np.arange(1 << tree.depth))  # a dense leaf scans the blob; a sparse one, about itself
    in_dense = np.array([tree.ids[tree.leaf_start[j]] < 4000 for j in range(1 << tree.depth)])
    assert costs[in_dense].mean() > 5 * costs[~in_dense].mean()  # by count alone they would be equal


def test_sampled_leaf_costs_are_those_of_every_kth_leaf(rng):
    """(Each stands for the leaves up to the next when the shares are cut: see the test of Cuts above.)"""
    points = CASES["blobs"](rng, n=20_000).astype(np.float32)
    tree = build_vptree(points, graph=False)
    full = costs_of_leaves(tree, 0.5, "cutoff", np.arange(1 << tree.depth))
    leaves = sampled_leaves(1 << tree.depth, 64)
    step = (1 << tree.depth) // 64
    np.testing.assert_array_equal(leaves, np.arange(0, 1 << tree.depth, step))
    np.testing.assert_array_equal(costs_of_leaves(tree, 0.5, "cutoff", leaves), full[::step])  # the measured leaves, exactly


@pytest.mark.parametrize("parts", [2, 3, 5])
def test_strip_shares_cover_every_point_once_however_many_strips(parts, rng):
    """Thousands of strips (a y-extent far beyond dc): the progress chunks must not shift a share's strips."""
    from dpstudio.engine.cpu.strips import cutoff_rho

    points = np.column_stack([rng.uniform(0, 5, 40_000), rng.uniform(0, 30_000, 40_000)]).astype(np.float32)
    points[:500, 1] = rng.uniform(0, 3, 500)  # and a dense corner
    coords = np.ascontiguousarray(points.T)
    whole = cutoff_rho(coords, 1.0, 1.0)
    shares = [cutoff_rho(coords, 1.0, 1.0, part=k, parts=parts) for k in range(parts)]
    swept = np.stack([~np.isnan(share) for share in shares])
    assert np.array_equal(swept.sum(axis=0), np.ones(len(points)))
    np.testing.assert_array_equal(np.nansum(np.stack(shares), axis=0), whole)


def _count_relayed_gathers(dask_scheduler) -> None:
    """On the scheduler: count the gathers it serves (fetching results from the workers to pass them on)."""
    relay = dask_scheduler.handlers["gather"]

    async def counted(*args, **kwargs):
        dask_scheduler.relayed_gathers += 1
        return await relay(*args, **kwargs)

    dask_scheduler.relayed_gathers, dask_scheduler.uncounted_gather = 0, relay
    dask_scheduler.handlers["gather"] = counted


def _uncount_gathers(dask_scheduler) -> None:
    dask_scheduler.handlers["gather"] = dask_scheduler.uncounted_gather


def test_results_come_from_the_workers_not_through_the_scheduler(client, rng):
    """The caller fetches the shares and the tree order from the workers that hold them: passed on by the scheduler
    (Dask's default for a client outside the cluster), 100M points' results took 5.5 s a call instead of 0.38 s."""
    client.run_on_scheduler(_count_relayed_gathers)
    relayed = lambda: client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.relayed_gathers)  # noqa: E731
    try:
        client.gather(client.submit(int, 1, pure=False), direct=False)
        assert relayed() == 1  # the count sees a gather through the scheduler
        points = CASES["blobs"](rng)
        spread = DensityPeaks(suggest="gamma", backend="cpu", client=client).fit(points)
        spread.set_dc(spread.dc_ / 2)  # a second call on the same workers
        assert relayed() == 1
    finally:
        client.run_on_scheduler(_uncount_gathers)
    assert_same_fit(spread, DensityPeaks(dc=spread.dc_, suggest="gamma", backend="cpu").fit(points))


def test_a_cancelled_share_raises_where_its_result_was_wanted(client):
    """A share cancelled by another hand (client.cancel, a restart) is an error, not a result to read values from."""
    first = client.submit(time.sleep, 0.3, pure=False)
    cancelled = client.submit(lambda _: 1, first, pure=False)
    cancelled.cancel()
    with pytest.raises(distributed.CancelledError):
        Replicas._gather(None, [first, cancelled], None, "delta")  # (reads nothing of the Replicas)


def test_delta_of_given_densities_on_a_cluster(client, rng):
    """delta from another computation's rho (the workers rank it themselves), and the phases' timings recorded."""
    points = CASES["with_duplicates"](rng)
    alone = IndexedPoints(points, backend="cpu")
    spread = IndexedPoints(points, backend="cpu", client=client)
    dc = alone.dc_for_percent(2.0)
    rho = alone.fields("gaussian", dc).rho + rng.integers(0, 3, len(points))  # not the workers' own: ties moved
    timings = {}
    given, expected = spread.fields_from_rho("gaussian", dc, rho, timings=timings), alone.fields_from_rho("gaussian", dc, rho)
    for name in ("rho", "delta", "parent", "order", "gamma"):
        np.testing.assert_array_equal(getattr(given, name), getattr(expected, name), err_msg=name)
    spread.fields("cutoff", dc, timings=timings)
    assert set(timings) == {"rho", "delta"} and min(timings.values()) >= 0
