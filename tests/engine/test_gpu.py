"""The GPU backend against the CPU backend, the NumPy oracle and the brute-force GPU reference (real GPU only)."""

import numpy as np
import pytest

from dpstudio import sample_data
from dpstudio.engine import DensityPeaks, IndexedPoints, get_backend
from dpstudio.engine.projection import pca_2d

from . import oracle
from .gpu_support import gpu, needs_gpu, poison_outputs
from .datasets import CASES, blobs

if gpu is not None:
    import cupy as cp

    from dpstudio.engine.gpu import brute

pytestmark = needs_gpu


@pytest.fixture(autouse=True)
def poisoned_outputs(monkeypatch):
    if gpu is not None:
        poison_outputs(monkeypatch)


@pytest.fixture(params=["float32 tiles", "tensor tiles"])
def leaf_tiles(request, monkeypatch):
    """Run a test once with each kind of leaf scan serving every d (normally d picks one)."""
    if gpu is not None:
        monkeypatch.setattr(gpu, "TENSOR_TILE_MIN_DIMS", 10**9 if request.param == "float32 tiles" else 1)


def both(points, **params):
    return DensityPeaks(backend="cpu", **params).fit(points), DensityPeaks(backend="gpu", **params).fit(points)


def assert_same_clustering(cpu_dp, gpu_dp, kernel):
    # the automatic clustering reads the kNN lists, which both backends list exactly (ties by index)
    np.testing.assert_array_equal(gpu_dp.labels_, cpu_dp.labels_)
    if kernel == "cutoff":
        np.testing.assert_array_equal(gpu_dp.rho_, cpu_dp.rho_)
    else:
        np.testing.assert_allclose(gpu_dp.rho_, cpu_dp.rho_, rtol=1e-12, atol=oracle.GAUSSIAN_ATOL)  # (CUDA's exp)
    # delta/parent/labels/halo from the GPU's own rho must match the CPU's on that same rho
    cpu_dp._fields = cpu_dp.indexed_.fields_from_rho(cpu_dp.kernel_, cpu_dp.dc_, gpu_dp.rho_)
    np.testing.assert_array_equal(gpu_dp.parent_, cpu_dp.parent_)
    np.testing.assert_array_equal(gpu_dp.delta_, cpu_dp.delta_)
    # the automatic clusters' centers are their densest points by rho (Gaussian rho differs in its last bits)
    np.testing.assert_array_equal(gpu_dp.centers_, cpu_dp.assign().centers_)
    cpu_dp.assign(centers=gpu_dp.centers_)
    gpu_dp.assign(centers=gpu_dp.centers_)  # DPC's parent chains from the same centers
    np.testing.assert_array_equal(gpu_dp.labels_, cpu_dp.labels_)
    np.testing.assert_array_equal(gpu_dp.halo_, cpu_dp.halo_)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("kernel", ["cutoff", "gaussian"])
def test_matches_cpu_and_oracle_on_random_sets(case, kernel, rng, leaf_tiles):
    points = CASES[case](rng)
    cpu_dp, gpu_dp = both(points, kernel=kernel)
    assert gpu_dp.dc_ == cpu_dp.dc_
    assert_same_clustering(cpu_dp, gpu_dp, kernel)
    sq = oracle.rule_sq_dists(points)
    expected_delta, expected_parent = oracle.delta_parent(sq, gpu_dp.rho_)
    np.testing.assert_array_equal(gpu_dp.parent_, expected_parent)


@pytest.mark.parametrize("d", [1, 2, 3, 16, 57, 128])
@pytest.mark.parametrize("n", [2, 33, 1000, 20_000])
def test_dimensions_and_sizes(d, n, rng, leaf_tiles):
    points = blobs(rng, n, d)
    points[rng.integers(0, n, n // 10)] = points[0]  # duplicates of one point
    for kernel in ["cutoff", "gaussian"]:
        assert_same_clustering(*both(points, kernel=kernel), kernel)


@pytest.mark.parametrize(("n", "d"), [(1_000_000, 2), (200_000, 16)])
def test_large_against_brute_force(n, d, rng):
    points = blobs(rng, n, d).astype(np.float32)
    dp = DensityPeaks(backend="gpu").fit(points)
    device_points = cp.asarray(points)
    np.testing.assert_array_equal(dp.rho_, cp.asnumpy(brute.rho(device_points, dp.dc_)))
    _, rank = gpu.density_order(cp.asarray(dp.rho_))
    brute_delta, brute_parent = (cp.asnumpy(a) for a in brute.delta(device_points, rank))
    brute_parent[brute_parent < 0] = -1
    np.testing.assert_array_equal(dp.parent_, brute_parent)
    np.testing.assert_array_equal(dp.delta_, brute_delta)


@pytest.mark.parametrize("name", list(sample_data.SAMPLES))
def test_sample_sets(name):
    for kernel in ["cutoff", "gaussian"]:
        assert_same_clustering(*both(sample_data.path(name), kernel=kernel), kernel)


def test_tree_is_the_cpu_tree(rng):
    points = blobs(rng, 50_000, 3).astype(np.float32)
    cpu_tree = get_backend("cpu").build_vptree(points)
    gpu_tree = gpu.build_vptree(cp.asarray(points))
    np.testing.assert_array_equal(cp.asnumpy(gpu_tree.ids), cpu_tree.ids)
    np.testing.assert_array_equal(cp.asnumpy(gpu_tree.vantage), cpu_tree.vantage)
    np.testing.assert_allclose(cp.asnumpy(gpu_tree.cover_radius), cpu_tree.cover_radius, rtol=1e-5)


def test_lasso_and_selection_modes_match(rng):
    cpu_dp, gpu_dp = both(blobs(rng, 3000))
    polygon = [(0, 0), (1e9, 0), (1e9, 1e9), (0, 1e9)]
    np.testing.assert_array_equal(gpu_dp.assign(polygon=polygon).centers_, cpu_dp.assign(polygon=polygon).centers_)
    np.testing.assert_array_equal(gpu_dp.assign(n_centers=7).centers_, cpu_dp.assign(n_centers=7).centers_)
    np.testing.assert_array_equal(gpu_dp.suggest_centers(), cpu_dp.suggest_centers())
    # a lasso drawn on log axes: the bulk of points, at log10 of rho and delta (zeros at half the smallest value)
    x, y = np.log10(np.maximum(cpu_dp.rho_, 0.5)), np.log10(cpu_dp.delta_)
    x0, y0 = np.quantile(x, 0.5) + 1e-7, np.quantile(y, 0.9) + 1e-7  # off every point: rho has ties
    on_log_axes = [(x0, y0), (x.max() + 1, y0), (x.max() + 1, y.max() + 1), (x0, y.max() + 1)]
    chosen = gpu_dp.choose_centers(polygon=on_log_axes, log_axes=True)
    np.testing.assert_array_equal(chosen, cpu_dp.choose_centers(polygon=on_log_axes, log_axes=True))
    assert set(chosen) == set(np.flatnonzero((x > x0) & (y > y0)))


def test_out_of_memory_is_a_clear_error(rng):
    pool = cp.get_default_memory_pool()
    pool.free_all_blocks()
    pool.set_limit(size=1 << 20)
    try:
        with pytest.raises(MemoryError, match="GPU out of memory while"):
            DensityPeaks(backend="gpu").fit(blobs(rng, 200_000, 3))
    finally:
        pool.set_limit(size=0)


def test_shared_index_and_projection_on_the_gpu(rng):
    points = blobs(rng, 20_000, 3).astype(np.float32)
    shared = IndexedPoints(points, backend="gpu")
    first, second = DensityPeaks().fit(shared), DensityPeaks().fit(shared)
    assert first.index_ is second.index_ and second.timings_["rho"] == 0.0
    second.set_dc(first.dc_ / 2).assign(n_centers=4)
    reference = DensityPeaks(dc=first.dc_ / 2, backend="cpu").fit(points).assign(n_centers=4)
    np.testing.assert_array_equal(second.labels_, reference.labels_)
    np.testing.assert_allclose(cp.asnumpy(pca_2d(shared.points, cp)), pca_2d(points, np), rtol=1e-4, atol=1e-4)
    gpu.free_memory()


@pytest.mark.parametrize("depth", [None, 12])  # 12: past the fewest levels, so some leaves are empty
def test_node_minima_and_maxima_are_those_of_each_nodes_run(depth, rng):
    """The per-node bounds every pruning walk reads (delta, halo, updates, the MST): a node's run's min and max,
    INT32_MAX / INT32_MIN for an empty node, against a plain loop over the runs."""
    points = blobs(rng, n=3000).astype(np.float32)
    tree = gpu.build_vptree(gpu.asarray(points), depth=depth)
    values = rng.integers(-(2**31), 2**31 - 1, tree.n_points, dtype=np.int32)
    values[rng.integers(0, tree.n_points, 50)] = values[0]  # ties
    leaf_start = gpu.to_numpy(tree.leaf_start)
    lowest, highest = np.empty(tree.n_nodes, np.int32), np.empty(tree.n_nodes, np.int32)
    for level in range(tree.depth + 1):
        shift = tree.depth - level
        for j in range(1 << level):
            run = values[leaf_start[j << shift] : leaf_start[(j + 1) << shift]]
            lowest[(1 << level) - 1 + j] = run.min() if run.size else np.iinfo(np.int32).max
            highest[(1 << level) - 1 + j] = run.max() if run.size else np.iinfo(np.int32).min
    assert depth is None or (lowest == np.iinfo(np.int32).max).any()  # the empty leaves are there
    np.testing.assert_array_equal(gpu.to_numpy(gpu._node_min(gpu.asarray(values), tree)), lowest)
    np.testing.assert_array_equal(gpu.to_numpy(gpu._node_max(gpu.asarray(values), tree)), highest)


@pytest.mark.parametrize(
    "values",
    ["counts", "counts as uint32", "counts to 65535", "counts to 65535 as uint32", "counts to 65536",
     "counts to 65536 as uint32", "large counts", "real"],  # fmt: skip
)
def test_density_order_is_the_cpus_whatever_the_values_type(values, rng):
    """Whole counts take the GPU's uint16 or uint32 sort, anything else the float64 one: the same order, ties by
    index."""
    n = 20_000
    rho = rng.integers(0, 40, n).astype(np.float64)  # many ties
    if values.startswith("counts to"):  # uint16's largest, then the smallest that needs uint32
        largest = float(values.split()[2])
        rho[::7] = largest - rng.integers(0, 2, rho[::7].shape[0])
    elif values == "large counts":
        rho[::7] = 2.0**32 + rng.integers(0, 3, rho[::7].shape[0])  # past uint32: the float64 sort
    elif values == "real":
        rho = rho + rng.choice([0.0, 0.5, 0.25], n)
    expected = get_backend("cpu").density_order(rho)
    given = gpu.density_order(gpu.asarray(rho.astype(np.uint32) if values.endswith("as uint32") else rho))
    for name, a, b in zip(("order", "rank"), given, expected):
        np.testing.assert_array_equal(gpu.to_numpy(a), b, err_msg=name)
