"""The GPU's DBSCAN-family kernels (graph.cu: kNN, mutual-reachability MST, DBSCAN labels) and the brute-force
DBSCAN / MST baselines (brute.cu) against the NumPy oracle, the CPU backend and each other (real GPU only)."""

import numpy as np
import pytest

from dpstudio.engine import get_backend
from dpstudio.engine.hierarchy import single_linkage_chain

from . import oracle
from .gpu_support import gpu, needs_gpu, poison_outputs
from .datasets import CASES, blobs

if gpu is not None:
    import cupy as cp

    from dpstudio.engine.gpu import brute

pytestmark = needs_gpu

ORACLE_POINTS = 500  # the oracle's kNN and DBSCAN are Python loops: a few hundred points each
ORACLE_MST_POINTS = 300  # its Prim's is quadratic in Python
MIN_SAMPLES = [1, 2, 5, 10]


@pytest.fixture(autouse=True)
def poisoned_outputs(monkeypatch):
    if gpu is not None:
        poison_outputs(monkeypatch)


@pytest.fixture(params=["scalar scans", "tensor tiles"])
def leaf_tiles(request, monkeypatch):
    """Run a test once with each kind of leaf scan serving every d (normally d picks one)."""
    if gpu is not None:
        monkeypatch.setattr(gpu, "TENSOR_TILE_MIN_DIMS", 10**9 if request.param == "scalar scans" else 1)


def as_points(points) -> np.ndarray:
    return np.ascontiguousarray(points, dtype=np.float32)


def tree_of(points):
    return gpu.build_vptree(cp.asarray(as_points(points)))


def core_from_knn(knn_sq, min_samples: int):
    """Squared core distance from the kNN lists (min_samples - 1 others, the point itself counted)."""
    if min_samples == 1:
        return cp.zeros(knn_sq.shape[0], cp.float32)
    return cp.ascontiguousarray(knn_sq[:, min_samples - 2])


def assert_same_mst(got, expected):
    for name, g, e in zip(("u", "v", "w2"), got, expected):
        np.testing.assert_array_equal(cp.asnumpy(g), cp.asnumpy(e), err_msg=name)


def labels_at(eps2, chain, gap, core, ids, sq):
    return cp.asnumpy(gpu.dbscan_labels(cp.asarray(chain), cp.asarray(gap), core, ids, sq, eps2))


def eps_values(sq: np.ndarray, rng) -> list[float]:
    """0, an eps whose float32 square is an actual pair's squared distance, and a few quantiles of the distances."""
    off = sq[~np.eye(sq.shape[0], dtype=bool)]
    if off.size == 0:
        return [0.0, 1.0]
    pair = float(np.sqrt(np.float64(np.sort(off)[rng.integers(0, min(off.size, 50 * sq.shape[0]))])))
    assert np.float32(pair**2) in off
    return [0.0, pair, *(float(np.sqrt(np.quantile(off.astype(np.float64), q))) for q in (0.001, 0.01, 0.05, 0.3))]


# ---------------------------------------------------------------------------------------------------------
# kNN


@pytest.mark.parametrize("case", CASES)
def test_knn_matches_oracle(case, rng, leaf_tiles):
    points = as_points(CASES[case](rng)[:ORACLE_POINTS])
    expected_ids, expected_sq = oracle.knn(oracle.rule_sq_dists(points), 64)
    tree = tree_of(points)
    for k in [1, 4, 9, 17, 33, 64]:
        ids, sq = gpu.knn(tree, k)
        np.testing.assert_array_equal(cp.asnumpy(ids), expected_ids[:, :k], err_msg=f"k={k}")
        np.testing.assert_array_equal(cp.asnumpy(sq), expected_sq[:, :k], err_msg=f"k={k}")


@pytest.mark.parametrize("d", [1, 2, 3, 16, 57, 128])
@pytest.mark.parametrize("n", [2, 3, 33, 800])
def test_knn_dimensions_and_sizes(d, n, rng, leaf_tiles):
    points = as_points(blobs(rng, n, d))
    points[rng.integers(0, n, n // 10)] = points[0]  # duplicates of one point
    expected_ids, expected_sq = oracle.knn(oracle.rule_sq_dists(points), 10)
    ids, sq = gpu.knn(tree_of(points), 10)
    np.testing.assert_array_equal(cp.asnumpy(ids), expected_ids)
    np.testing.assert_array_equal(cp.asnumpy(sq), expected_sq)
    empty_ids, empty_sq = gpu.knn(tree_of(points), 0)
    assert empty_ids.shape == (n, 0) and empty_sq.shape == (n, 0)


def rule_rows(points_gpu, rows):
    """Squared distances by the float32 rule from the listed points to all points (CuPy, one op at a time: no FMA)."""
    acc = cp.zeros((rows.shape[0], points_gpu.shape[0]), cp.float32)
    for c in range(points_gpu.shape[1]):
        diff = points_gpu[None, :, c] - points_gpu[rows, c][:, None]
        acc += diff * diff
    return acc


@pytest.mark.parametrize(("n", "d", "k"), [(400_000, 2, 9), (100_000, 16, 32), (50_000, 128, 20)])
def test_knn_large_against_all_pairs_rows(n, d, k, rng):
    points = as_points(blobs(rng, n, d))
    points[rng.integers(0, n, n // 100)] = points[1]
    device = cp.asarray(points)
    ids, sq = gpu.knn(gpu.build_vptree(device), k)
    rows = cp.asarray(np.r_[1, rng.choice(n, 300, replace=False)])
    d2 = rule_rows(device, rows)
    d2[cp.arange(rows.shape[0]), rows] = cp.inf  # the point itself is not its own neighbour
    key = (d2.view(cp.uint32).astype(cp.uint64) << cp.uint64(32)) | cp.arange(n, dtype=cp.uint64)[None, :]
    nearest = cp.sort(key, axis=1)[:, :k]
    np.testing.assert_array_equal(cp.asnumpy(ids[rows]), cp.asnumpy((nearest & cp.uint64(0xFFFFFFFF)).astype(cp.int64)))
    nearest_sq = (nearest >> cp.uint64(32)).astype(cp.uint32).view(cp.float32)
    np.testing.assert_array_equal(cp.asnumpy(sq[rows]), cp.asnumpy(nearest_sq))
    cpu = get_backend("cpu")
    if hasattr(cpu, "knn"):  # the CPU backend's kNN (the lead's, on main)
        cpu_ids, cpu_sq = cpu.knn(cpu.build_vptree(points), k)
        np.testing.assert_array_equal(cp.asnumpy(ids), cpu_ids)
        np.testing.assert_array_equal(cp.asnumpy(sq), cpu_sq)


# ---------------------------------------------------------------------------------------------------------
# MST


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("min_samples", MIN_SAMPLES)
def test_mst_matches_oracle(case, min_samples, rng, leaf_tiles):
    points = as_points(CASES[case](rng)[:ORACLE_MST_POINTS])
    sq = oracle.rule_sq_dists(points)
    core = oracle.core_sq(sq, min_samples)
    got = gpu.mst(tree_of(points), cp.asarray(core))
    assert_same_mst(got, oracle.mst(sq, core))


@pytest.mark.parametrize("d", [1, 2, 3, 16, 57, 128])
@pytest.mark.parametrize("n", [2, 3, 33, 3000])
def test_mst_dimensions_and_sizes(d, n, rng, leaf_tiles):
    points = as_points(blobs(rng, n, d))
    points[rng.integers(0, n, n // 10)] = points[0]
    tree = tree_of(points)
    knn_sq = gpu.knn(tree, 9)[1]
    for min_samples in [1, 4, 10]:
        core = core_from_knn(knn_sq, min_samples)
        assert_same_mst(gpu.mst(tree, core), brute.mst(cp.asarray(points), core))


def test_mst_all_infinite_and_ties(rng, leaf_tiles):
    """Every edge at +inf (fewer points than min_samples) or at one weight: the ids alone decide."""
    for points in [CASES["integer_grid"](rng), CASES["all_identical"](rng), CASES["collinear_ties"](rng)]:
        points = as_points(points)
        tree = tree_of(points)
        for core in [cp.full(points.shape[0], cp.inf, cp.float32), cp.zeros(points.shape[0], cp.float32)]:
            assert_same_mst(gpu.mst(tree, core), brute.mst(cp.asarray(points), core))


@pytest.mark.parametrize(("n", "d", "min_samples"), [(200_000, 2, 10), (100_000, 3, 1), (30_000, 57, 5)])
def test_mst_large_against_brute_force(n, d, min_samples, rng):
    points = as_points(blobs(rng, n, d))
    points[rng.integers(0, n, n // 100)] = points[2]
    tree = gpu.build_vptree(cp.asarray(points))
    core = core_from_knn(gpu.knn(tree, max(min_samples - 1, 1))[1], min_samples)
    got = gpu.mst(tree, core)
    assert_same_mst(got, brute.mst(cp.asarray(points), core))
    cpu = get_backend("cpu")
    if hasattr(cpu, "mst"):  # the CPU backend's Borůvka (the lead's, on main)
        assert_same_mst(got, cpu.mst(cpu.build_vptree(points), cp.asnumpy(core)))


# ---------------------------------------------------------------------------------------------------------
# DBSCAN labels


def cached_arrays(points, min_samples):
    """What the index caches for min_samples: kNN lists, core distances, the MST's single-linkage chain."""
    tree = tree_of(points)
    ids, sq = gpu.knn(tree, min_samples - 1)
    core = core_from_knn(sq, min_samples)
    u, v, w2 = (cp.asnumpy(a) for a in gpu.mst(tree, core))
    chain, gap = single_linkage_chain(u, v, w2, points.shape[0])
    return chain, gap, core, ids, sq


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("min_samples", MIN_SAMPLES)
def test_dbscan_labels_match_oracle(case, min_samples, rng, leaf_tiles):
    points = as_points(CASES[case](rng)[:ORACLE_POINTS])
    sq = oracle.rule_sq_dists(points)
    cached = cached_arrays(points, min_samples)
    np.testing.assert_array_equal(cp.asnumpy(cached[2]), oracle.core_sq(sq, min_samples))
    for eps in eps_values(sq, rng):
        expected, _ = oracle.dbscan(sq, eps, min_samples)
        got = labels_at(np.float32(np.float64(eps) ** 2), *cached)
        np.testing.assert_array_equal(got, expected, err_msg=f"eps={eps!r}")


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("min_samples", [1, 4, 10])
def test_brute_dbscan_matches_oracle(case, min_samples, rng):
    points = as_points(CASES[case](rng)[:ORACLE_POINTS])
    sq = oracle.rule_sq_dists(points)
    for eps in eps_values(sq, rng):
        expected, _ = oracle.dbscan(sq, eps, min_samples)
        got = cp.asnumpy(brute.dbscan(cp.asarray(points), eps, min_samples))
        np.testing.assert_array_equal(got, expected, err_msg=f"eps={eps!r}")


@pytest.mark.parametrize(
    ("n", "d", "min_samples"), [(2, 2, 1), (3, 4, 2), (800, 128, 5), (200_000, 2, 10), (50_000, 57, 10)]
)
def test_dbscan_labels_against_brute_force(n, d, min_samples, rng):
    points = as_points(blobs(rng, n, d))
    points[rng.integers(0, n, n // 50)] = points[0]
    chain, gap, core, ids, sq = cached_arrays(points, min_samples)
    reach = np.sqrt(np.sort(cp.asnumpy(core)).astype(np.float64))
    cpu = get_backend("cpu")
    for eps in [0.0, reach[n // 10], reach[n // 2], reach[(9 * n) // 10], 3 * reach[n // 2]]:
        eps2 = np.float32(np.float64(eps) ** 2)
        expected = cp.asnumpy(brute.dbscan(cp.asarray(points), eps, min_samples))
        got = labels_at(eps2, chain, gap, core, ids, sq)
        np.testing.assert_array_equal(got, expected, err_msg=f"eps={eps!r}")
        if hasattr(cpu, "dbscan_labels"):  # the CPU backend's (the lead's, on main), from the same arrays
            on_cpu = cpu.dbscan_labels(chain, gap, *(cp.asnumpy(a) for a in (core, ids, sq)), eps2)
            np.testing.assert_array_equal(got, on_cpu, err_msg=f"eps={eps!r}")


def test_dbscan_labels_checks_its_inputs(rng):
    chain, gap, core, ids, sq = cached_arrays(as_points(blobs(rng, 100)), 5)
    with pytest.raises(TypeError, match="eps2"):
        gpu.dbscan_labels(cp.asarray(chain), cp.asarray(gap), core, ids, sq, 0.5)
    with pytest.raises(ValueError, match="gap"):
        gpu.dbscan_labels(cp.asarray(chain), cp.asarray(gap[1:]), core, ids, sq, np.float32(0.5))
    with pytest.raises(ValueError, match="k <="):
        gpu.knn(tree_of(blobs(rng, 100)), 1000)


# ---------------------------------------------------------------------------------------------------------
# the estimators on the GPU backend


@pytest.mark.parametrize(("n", "d"), [(30_000, 2), (4_000, 57)])
def test_estimators_on_the_gpu_equal_the_cpu(n, d, rng):
    """DBSCAN and HDBSCAN fitted with backend="gpu" give the CPU backend's results: labels and cores, after a new eps
    and a new min_samples too."""
    from dpstudio.engine import DBSCAN, HDBSCAN

    points = as_points(blobs(rng, n, d))
    points[rng.integers(0, n, n // 50)] = points[0]
    on_cpu = DBSCAN(min_samples=10, backend="cpu").fit(points)
    reach = np.sort(on_cpu.core_distances_)
    eps_list = [float(reach[n // 10]), float(reach[n // 2]), float(reach[(9 * n) // 10])]  # the estimator wants eps > 0
    on_cpu.set_eps(eps_list[0])
    on_gpu = DBSCAN(eps=eps_list[0], min_samples=10, backend="gpu").fit(points)
    for min_samples in [10, 4]:
        if min_samples != 10:
            on_cpu.set_min_samples(min_samples)
            on_gpu.set_min_samples(min_samples)
        np.testing.assert_array_equal(on_gpu.core_distances_, on_cpu.core_distances_)
        for eps in eps_list:
            on_cpu.set_eps(eps)
            on_gpu.set_eps(eps)
            np.testing.assert_array_equal(on_gpu.labels_, on_cpu.labels_, err_msg=f"eps={eps!r}")
            np.testing.assert_array_equal(on_gpu.core_sample_indices_, on_cpu.core_sample_indices_)
            # the tree's edges within eps (the teaching view's layer): a spanning forest of each cluster's cores
            # (tied weights may pick other edges than the CPU's, never another number of them)
            u, v = on_gpu.joining_edges_
            cores, labels = on_gpu.core_sample_indices_, on_gpu.labels_
            assert np.isin(u, cores).all() and np.isin(v, cores).all() and (labels[u] == labels[v]).all()
            assert u.size == cores.size - np.unique(labels[cores]).size == on_cpu.joining_edges_[0].size
    hdbscan_cpu = HDBSCAN(min_cluster_size=25, backend="cpu").fit(points)
    hdbscan_gpu = HDBSCAN(min_cluster_size=25, backend="gpu").fit(points)
    np.testing.assert_array_equal(hdbscan_gpu.labels_, hdbscan_cpu.labels_)
    np.testing.assert_array_equal(hdbscan_gpu.probabilities_, hdbscan_cpu.probabilities_)
    gpu.free_memory()


@pytest.mark.parametrize(("n", "d"), [(20_000, 16), (3_000, 128)])
def test_neighbour_graph_mode_on_the_gpu_equals_the_cpu_given_exact_lists(n, d, rng, monkeypatch):
    """neighbors="approximate" on the GPU lists the exact 2 * min_samples nearest; the CPU, fed the same exact lists
    in place of NN-descent's, must give the same labels, cores and saturated-core count at every eps."""
    from dpstudio.engine import DBSCAN, IndexedPoints
    from dpstudio.engine.cpu import nndescent

    points = as_points(blobs(rng, n, d))
    cpu_index = IndexedPoints(points, backend="cpu")
    monkeypatch.setattr(nndescent, "approximate_knn", lambda values, k: cpu_index.backend.knn(cpu_index.index, k))
    on_cpu = DBSCAN(min_samples=8, neighbors="approximate", backend="cpu").fit(cpu_index)
    on_gpu = DBSCAN(min_samples=8, neighbors="approximate", backend="gpu").fit(points)
    reach = np.sort(on_cpu.core_distances_)
    for eps in [float(reach[n // 10]), float(reach[n // 2]), float(reach[-1]) * 1.5]:
        on_cpu.set_eps(eps)
        on_gpu.set_eps(eps)
        np.testing.assert_array_equal(on_gpu.labels_, on_cpu.labels_, err_msg=f"eps={eps!r}")
        np.testing.assert_array_equal(on_gpu.core_sample_indices_, on_cpu.core_sample_indices_)
        assert on_gpu.saturated_cores_ == on_cpu.saturated_cores_
    gpu.free_memory()
