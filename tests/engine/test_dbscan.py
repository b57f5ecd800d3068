"""DBSCAN and HDBSCAN on the CPU backend: every kernel against the brute-force oracle, the estimators against
scikit-learn (and GLOSH against the hdbscan package) themselves."""

import warnings

import numpy as np
import pytest
import sklearn.cluster
from hdbscan import _hdbscan_tree as hdbscan_tree
from sklearn.cluster._hdbscan._tree import HIERARCHY_dtype, tree_to_labels

from dpstudio.app.bench_dbscan import pair_f1
from dpstudio.engine import DBSCAN, HDBSCAN, IndexedPoints, cpu
from dpstudio.engine.cpu import nndescent
from dpstudio.engine.hierarchy import graph_spanning_forest, single_linkage_chain, single_linkage_tree

from . import oracle
from .datasets import CASES, blobs


def eps_values(sq, rng):
    """Radii at a few quantiles of the pair distances, one exactly at a pair distance, one below every distance."""
    positive = np.sqrt(sq[sq > 0].astype(np.float64))
    if not positive.size:
        return [1.0]
    return [float(np.quantile(positive, q)) for q in (0.005, 0.05, 0.3)] + [float(rng.choice(positive)), positive.min() / 2]


@pytest.mark.parametrize("case", CASES)
def test_neighbours_equal_the_oracle(case, rng):
    points = CASES[case](rng).astype(np.float32)
    sq = oracle.rule_sq_dists(points)
    tree = cpu.build_vptree(points)
    for k in (1, 7, 8, 9, 20):  # below, at and above the index's own graph
        ids, dists = cpu.knn(tree, k)
        want_ids, want_dists = oracle.knn(sq, k)
        np.testing.assert_array_equal(ids, want_ids)
        np.testing.assert_array_equal(dists, want_dists)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("min_samples", [1, 2, 5, 10])
@pytest.mark.parametrize("listed", [None, 3, 16])  # the index's own 8 neighbours, or lists shorter / longer
def test_spanning_tree_equals_the_oracle(case, min_samples, listed, rng):
    points = CASES[case](rng).astype(np.float32)
    sq = oracle.rule_sq_dists(points)
    core = oracle.core_sq(sq, min_samples)
    tree = cpu.build_vptree(points)
    u, v, w2 = cpu.mst(tree, core, neighbours=None if listed is None else cpu.knn(tree, listed))
    want_u, want_v, want_w2 = oracle.mst(sq, core)
    np.testing.assert_array_equal(u, want_u)
    np.testing.assert_array_equal(v, want_v)
    np.testing.assert_array_equal(w2, want_w2)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("min_samples", [1, 3, 10])
def test_dbscan_equals_the_oracle_at_every_eps(case, min_samples, rng):
    points = CASES[case](rng).astype(np.float32)
    sq = oracle.rule_sq_dists(points)
    model = DBSCAN(eps=1.0, min_samples=min_samples, backend="cpu").fit(points)
    for eps in eps_values(sq, rng):
        want, core = oracle.dbscan(sq, eps, min_samples)
        model.set_eps(eps)
        np.testing.assert_array_equal(model.labels_, want, err_msg=f"eps={eps}")
        np.testing.assert_array_equal(model.core_sample_indices_, np.flatnonzero(core))
        # and a fresh fit at that eps agrees with the relabel
        np.testing.assert_array_equal(DBSCAN(eps=eps, min_samples=min_samples, backend="cpu").fit(points).labels_, want)


@pytest.mark.parametrize("case", ["blobs", "with_duplicates", "integer_grid", "all_identical", "collinear_ties", "two_points"])
@pytest.mark.parametrize("min_samples", [1, 4])
def test_eps_curve_counts_clusters_and_noise_at_every_eps(case, min_samples, rng):
    points = CASES[case](rng).astype(np.float32)
    sq = oracle.rule_sq_dists(points)
    eps, clusters, noise = DBSCAN(min_samples=min_samples, backend="cpu").fit(points).eps_curve()
    assert np.all(np.diff(eps) > 0)
    # every step's own eps, a point between two steps, and one below the first (no step at all: fewer points
    # than min_samples, nothing is ever core)
    probes = list(eps) + [float(np.mean(eps[i : i + 2])) for i in range(0, eps.size - 1, 7)] + [eps[0] / 2 if eps.size else 1.0]
    for value in probes:
        if value <= 0:
            continue
        labels, _ = oracle.dbscan(sq, value, min_samples)
        at = np.searchsorted(eps, value, "right") - 1  # the step in force at this eps
        want_clusters, want_noise = (clusters[at], noise[at]) if at >= 0 else (0 if min_samples > 1 else points.shape[0], points.shape[0] if min_samples > 1 else 0)
        assert (labels.max() + 1, (labels < 0).sum()) == (want_clusters, want_noise), f"eps={value}"


def test_chain_runs_are_the_components_below_every_height(rng):
    points = blobs(rng, 400).astype(np.float32)
    sq = oracle.rule_sq_dists(points)
    u, v, w2 = oracle.mst(sq, oracle.core_sq(sq, 4))
    chain, gap = single_linkage_chain(u, v, w2, points.shape[0])
    assert sorted(chain) == list(range(points.shape[0]))
    for height in np.quantile(w2, [0.1, 0.5, 0.9, 0.99]).astype(np.float32):
        root = np.arange(points.shape[0])

        def find(x):
            while root[x] != x:
                x = root[x]
            return x

        for a, b, w in zip(u, v, w2):
            if w <= height:
                root[find(a)] = find(b)
        components = np.array([find(p) for p in chain])
        runs = np.concatenate([[0], np.cumsum(gap > height)])
        # same partition: a run never spans two components and a component is never split over two runs
        assert len(set(zip(runs, components))) == len(set(runs)) == len(set(components))


def sklearn_safe_blobs(rng, n, d, noise):
    """Blobs plus uniform noise, in float32 so that scikit-learn sees the very same points."""
    points = np.concatenate([blobs(rng, n, d), rng.uniform(-15, 15, size=(noise, d))])
    return points.astype(np.float32)


def eps_off_the_rounding_band(points, rng, quantile):
    """A radius that no pair distance comes within 1e-5 (relative) of: float32 and float64 distances agree there."""
    exact = np.sqrt(oracle.exact_sq_dists(points))
    eps = float(np.quantile(exact[exact > 0], quantile))
    while np.any(np.abs(exact - eps) < 1e-5 * eps):
        eps *= 1 + 1e-4 * rng.uniform(1, 2)
    return eps


@pytest.mark.parametrize("d", [2, 3, 16])
def test_dbscan_equals_scikit_learn(d, rng):
    points = sklearn_safe_blobs(rng, 1500, d, 150)
    index = IndexedPoints(points, backend="cpu")
    model = DBSCAN(min_samples=5, backend="cpu").fit(index)
    for min_samples in (5, 10, 17, 30):  # up to 17 reuse the first neighbour list, 30 makes a longer one
        model.set_min_samples(min_samples)
        for quantile in (0.002, 0.01, 0.05):
            eps = eps_off_the_rounding_band(points, rng, quantile)
            want = sklearn.cluster.DBSCAN(eps=eps, min_samples=min_samples).fit(points.astype(np.float64))
            model.set_eps(eps)
            np.testing.assert_array_equal(model.labels_, want.labels_)
            np.testing.assert_array_equal(model.core_sample_indices_, want.core_sample_indices_)


def sklearn_hdbscan(points, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scikit-learn warns about its future default of copy
        return sklearn.cluster.HDBSCAN(**params).fit(points.astype(np.float64))


def reference_selection(left, right, height, size, params):
    """(labels, probabilities) that scikit-learn selects on a given tree; with cluster_selection_epsilon the hdbscan
    package's, because scikit-learn 1.9's epsilon search converts a one-element array to a scalar, which NumPy 2.4
    refuses."""
    method = params.get("cluster_selection_method", "eom")
    epsilon = params.get("cluster_selection_epsilon", 0.0)
    if epsilon:
        condensed = hdbscan_tree.condense_tree(np.column_stack([left, right, height, size]).astype(np.float64), params["min_cluster_size"])
        return hdbscan_tree.get_clusters(condensed, hdbscan_tree.compute_stability(condensed), method, False, False, epsilon)[:2]
    linkage = np.empty(left.size, HIERARCHY_dtype)
    linkage["left_node"], linkage["right_node"], linkage["value"], linkage["cluster_size"] = left, right, height, size
    return tree_to_labels(linkage, params["min_cluster_size"], method, False, 0.0)


SELECTIONS = [
    {"min_cluster_size": 5},
    {"min_cluster_size": 15, "cluster_selection_method": "leaf"},
    {"min_cluster_size": 8, "cluster_selection_epsilon": 1.5},
    {"min_cluster_size": 30},
]


@pytest.mark.parametrize("params", [p for p in SELECTIONS if "cluster_selection_epsilon" not in p])
def test_hdbscan_equals_scikit_learn_without_ties(params, rng):
    # min_samples=1: mutual reachability is the distance itself, so random points leave no ties to break.
    # (epsilon is compared on the same tree below: scikit-learn cannot run it here, and the hdbscan package
    # numbers clusters by its own Boruvka tree's left/right order.)
    points = sklearn_safe_blobs(rng, 1200, 2, 120)
    got = HDBSCAN(min_samples=1, backend="cpu", **params).fit(points)
    want = sklearn_hdbscan(points, min_samples=1, **params)
    assert want.labels_.max() >= 1
    np.testing.assert_array_equal(got.labels_, want.labels_)
    np.testing.assert_allclose(got.probabilities_, want.probabilities_, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("params", SELECTIONS)
@pytest.mark.parametrize("min_samples", [1, None, 3, 10])
def test_hdbscan_equals_scikit_learn_on_the_same_tree(params, min_samples, rng):
    """With core distances, equal mutual-reachability distances abound and the single-linkage tree depends on how
    they are broken. The merge heights are unique and must equal scikit-learn's; given our tree, scikit-learn's
    own selection must give our labels and probabilities, and the hdbscan package our GLOSH scores."""
    points = sklearn_safe_blobs(rng, 1200, 2, 120)
    got = HDBSCAN(min_samples=min_samples, backend="cpu", **params).fit(points)
    tree_params = {**params, "cluster_selection_epsilon": 0.0}  # the tree does not depend on the selection
    reference = sklearn_hdbscan(points, min_samples=min_samples, **tree_params)
    tree = got._tree
    left, right, height, size = single_linkage_tree(tree.u, tree.v, tree.w2, points.shape[0])
    np.testing.assert_allclose(height, np.sort(reference._single_linkage_tree_["value"]), rtol=1e-6)

    labels, probabilities = reference_selection(left, right, height, size, params)
    np.testing.assert_array_equal(got.labels_, labels)
    np.testing.assert_allclose(got.probabilities_, probabilities, rtol=1e-12)
    condensed = hdbscan_tree.condense_tree(np.column_stack([left, right, height, size]).astype(np.float64), params["min_cluster_size"])
    np.testing.assert_allclose(got.outlier_scores_, hdbscan_tree.outlier_scores(condensed), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", CASES)
def test_hdbscan_runs_on_degenerate_data(case, rng):
    points = CASES[case](rng).astype(np.float32)
    model = HDBSCAN(min_cluster_size=2, min_samples=min(2, points.shape[0]), backend="cpu").fit(points)
    labels = model.labels_
    assert labels.shape == (points.shape[0],) and labels.min() >= -1
    assert np.all((model.probabilities_ >= 0) & (model.probabilities_ <= 1))
    np.testing.assert_array_equal(model.probabilities_[labels < 0], 0)


@pytest.mark.parametrize("method", ["eom", "leaf"])
def test_chosen_clusters_label_like_the_rule_that_chose_them(method, rng):
    points = blobs(rng, 1500).astype(np.float32)
    model = HDBSCAN(min_cluster_size=10, cluster_selection_method=method, backend="cpu").fit(points)
    by_rule = (model.labels_.copy(), model.probabilities_.copy(), model.outlier_scores_.copy(), model.selected_clusters_)
    model.set_clusters(by_rule[3])
    for got, expected in zip((model.labels_, model.probabilities_, model.outlier_scores_), by_rule):
        np.testing.assert_array_equal(got, expected)
    # the root's children: two clusters that hold every point between them, labelled in increasing id
    n, tree = points.shape[0], model.condensed_tree_
    top = np.sort(tree.child[(tree.parent == n) & (tree.child >= n)])
    model.set_clusters(top[::-1])
    assert set(model.labels_[model.labels_ >= 0]) == set(range(len(top)))
    for label, cluster in enumerate(top):
        members = np.isin(np.arange(n), _points_under(tree, cluster))
        np.testing.assert_array_equal(model.labels_ == label, members)
    model.set_clusters([])
    assert (model.labels_ == -1).all()
    model.set_selection()
    np.testing.assert_array_equal(model.labels_, by_rule[0])


def _points_under(tree, cluster):
    """Every point in the subtree of a condensed-tree cluster (the slow, obvious way)."""
    inside, points = {cluster}, []
    for parent, child in zip(tree.parent, tree.child):  # rows come parents first (breadth first)
        if parent in inside:
            (inside.add if child >= tree.n_points else points.append)(child)
    return points


def test_chosen_clusters_must_be_in_the_tree_and_apart(rng):
    model = HDBSCAN(min_cluster_size=10, backend="cpu").fit(blobs(rng, 800).astype(np.float32))
    n, tree = 800, model.condensed_tree_
    with pytest.raises(ValueError, match="cluster ids must be between"):
        model.set_clusters([n])  # the root
    child = tree.child.max()  # the root has two children, n + 1 and n + 2: any later cluster lies in one of them
    assert child > n + 2
    with pytest.raises(ValueError, match="lies inside cluster"):
        model.set_clusters([tree.parent[tree.child == child][0], child])


def test_estimators_share_one_index_and_cache_per_min_samples(rng):
    points = blobs(rng, 2000).astype(np.float32)
    index = IndexedPoints(points, backend="cpu")
    first = DBSCAN(eps=0.5, min_samples=10, backend="cpu").fit(index)
    second = HDBSCAN(min_cluster_size=10, backend="cpu").fit(index)
    assert second.timings_["mst"] == 0.0 and second._tree is first._tree  # same min_samples: not rebuilt
    assert first.get_params() == {"eps": 0.5, "min_samples": 10, "neighbors": "exact", "backend": "cpu"}
    assert repr(first) == "DBSCAN(min_samples=10, backend='cpu')"  # eps=0.5 is the default
    assert isinstance(first.fit_predict(index), np.ndarray)
    frame = second.to_frame()
    assert list(frame.columns) == ["index", "label", "probability", "outlier_score"]
    np.testing.assert_allclose(first.core_distances_, np.sqrt(oracle.core_sq(oracle.rule_sq_dists(points), 10).astype(np.float64)))


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: DBSCAN(eps=0), "eps must be a finite number > 0"),
        (lambda: DBSCAN(eps=float("nan")), "eps must be a finite number > 0"),
        (lambda: DBSCAN(min_samples=0), "min_samples must be a whole number >= 1"),
        (lambda: DBSCAN(min_samples=2.5), "min_samples must be a whole number >= 1"),
        (lambda: HDBSCAN(min_cluster_size=1), "min_cluster_size must be a whole number >= 2"),
        (lambda: HDBSCAN(cluster_selection_method="top"), "cluster_selection_method must be one of eom, leaf"),
        (lambda: HDBSCAN(cluster_selection_epsilon=-1.0), "cluster_selection_epsilon must be a finite number >= 0"),
        (lambda: HDBSCAN(min_cluster_size=5, min_samples=50), r"min_samples \(50\) must be at most the number of points"),
    ],
)
def test_bad_parameters_say_what_is_wrong(make, message, rng):
    with pytest.raises(ValueError, match=message):
        make().set_params(backend="cpu").fit(blobs(rng, 40))


@pytest.mark.parametrize("eps", [1e30, 1e308])
def test_an_eps_past_float32_reaches_every_point_without_a_warning(eps, rng):
    """Its square is inf in float32 (past float64 too at 1e308): every point is a core point of one cluster."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = DBSCAN(eps=eps, min_samples=5, backend="cpu").fit(blobs(rng, 40))
    assert set(model.labels_) == {0} and len(model.core_sample_indices_) == 40


def test_unfitted_estimators_say_so():
    with pytest.raises(RuntimeError, match="not fitted yet"):
        DBSCAN().labels_
    with pytest.raises(RuntimeError, match="not fitted yet"):
        HDBSCAN().set_selection(method="leaf")


def same_partition(a, b) -> bool:
    """The same clusters and the same noise, whatever the numbering."""
    return bool(np.array_equal(a < 0, b < 0)) and len(set(zip(a[a >= 0], b[b >= 0]))) == len(set(a[a >= 0])) == len(set(b[b >= 0]))


@pytest.mark.parametrize("case", ["blobs", "with_duplicates", "high_dim", "collinear_ties"])  # (a grid of ~9 copies per cell saturates every list)
def test_neighbour_graph_mode_is_exact_when_no_core_is_saturated(case, rng, monkeypatch):
    """KG-DBSCAN's certificate: with true k-nearest lists and no core whose whole list lies within eps, the
    listed edges give DBSCAN exactly (fed the exact lists here, so the claim itself is what is tested)."""
    points = CASES[case](rng).astype(np.float32)
    sq = oracle.rule_sq_dists(points)
    monkeypatch.setattr(nndescent, "approximate_knn", lambda values, k: oracle.knn(sq, k))
    # lists (2 * min_samples) longer than the longest run of copies, so that an eps below every distance certifies:
    # with a fixed 6, one run of 13 copies in with_duplicates (about one seed in a hundred) saturated lists of 12
    copies = np.unique(points, axis=0, return_counts=True)[1].max()
    min_samples = max(6, copies // 2 + 1)
    model = DBSCAN(min_samples=min_samples, neighbors="approximate", backend="cpu").fit(points)
    certified = 0
    for eps in eps_values(sq, rng):
        model.set_eps(eps)
        if model.saturated_cores_ == 0:
            certified += 1
            np.testing.assert_array_equal(model.labels_, oracle.dbscan(sq, eps, min_samples)[0], err_msg=f"eps={eps}")
    assert certified >= 1


def test_spanning_forest_chain_keeps_trees_apart(rng):
    points = blobs(rng, 300).astype(np.float32)
    sq = oracle.rule_sq_dists(points)
    ids, dists = oracle.knn(sq, 3)  # a sparse graph: several trees
    core = dists[:, 1]
    u, v, w2 = graph_spanning_forest(ids, dists, core)
    chain, gap = single_linkage_chain(u, v, w2, points.shape[0])
    assert sorted(chain) == list(range(points.shape[0]))
    n_trees = points.shape[0] - u.size
    assert np.isinf(gap).sum() == n_trees - 1
    runs = np.concatenate([[0], np.cumsum(np.isinf(gap))])
    root = np.arange(points.shape[0])

    def find(x):
        while root[x] != x:
            x = root[x]
        return x

    for a, b in zip(u, v):
        root[find(a)] = find(b)
    assert len(set(zip(runs, [find(p) for p in chain]))) == n_trees


def test_approximate_neighbours_by_nn_descent(rng):
    points = sklearn_safe_blobs(rng, 3000, 32, 150)
    sq = oracle.rule_sq_dists(points)
    exact_ids = oracle.knn(sq, 20)[0]
    model = DBSCAN(eps=None, min_samples=10, neighbors="approximate", backend="cpu").fit(points)
    ids = model._tree.neighbour_ids
    recall = np.mean([len(set(a) & set(b)) / 20 for a, b in zip(ids, exact_ids)])
    assert recall >= 0.95
    exact = DBSCAN(eps=model.eps_, min_samples=10, backend="cpu").fit(points).labels_
    assert same_partition(model.labels_, exact) or pair_f1(model.labels_, exact) >= 0.98


def test_approximate_mode_checks_its_name(rng):
    with pytest.raises(ValueError, match="neighbors must be one of exact, approximate"):
        DBSCAN(neighbors="fast", backend="cpu").fit(blobs(rng, 200))
