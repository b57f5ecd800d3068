"""The entropy dc rule: one-pass potentials against a float64 all-pairs reference, and sigma* against the
reference's least interior minimum of H on a fine grid."""

import numpy as np
import pytest

from dpstudio.engine import DensityPeaks, IndexedPoints, cpu, entropy

from . import oracle
from .datasets import CASES, blobs


def reference_entropy(sq, beta, queries=None):
    """H(beta) with phi_i = 1 + sum_{j != i, d_ij < 3 sigma} exp(-d_ij^2 beta), from all pairs in float64; over
    ``queries`` only (the sampled estimate) when given."""
    n = sq.shape[0]
    rows = np.arange(n) if queries is None else np.asarray(queries)
    out = []
    for b in beta:
        reach = np.float32((3.0 / np.sqrt(b)) ** 2)
        w = np.exp(-sq[rows].astype(np.float64) * b)
        w[(sq[rows] >= reach) | (rows[:, None] == np.arange(n)[None, :])] = 0.0
        phi = 1.0 + w.sum(axis=1)
        out.append(np.log(n * phi.mean()) - (phi * np.log(phi)).mean() / phi.mean())
    return np.array(out)


def leaf_points(tree, leaves):
    return np.concatenate([tree.ids[(j * tree.n_points) >> tree.depth : ((j + 1) * tree.n_points) >> tree.depth] for j in leaves])


@pytest.mark.parametrize("case", CASES)
def test_one_pass_curve_matches_the_reference(case, rng):
    points = CASES[case](rng).astype(np.float32)
    indexed = IndexedPoints(points, backend="cpu")
    tree, sq = indexed.index, oracle.rule_sq_dists(points)
    positive = sq[sq > 0]
    scale = float(np.median(positive)) if positive.size else 1.0
    windows = 3
    dbeta = 2.0 ** np.arange(windows) / (4 * scale)  # octaves of 4 steps, as the locate grid
    first = np.full(windows, 4)
    every = np.arange(1 << tree.depth)
    beta, h = entropy.entropy_curve(cpu, tree, every, dbeta, first, 4)
    np.testing.assert_allclose(beta, ((first[:, None] + np.arange(4)) * dbeta[:, None]).ravel(), rtol=0)
    np.testing.assert_allclose(h, reference_entropy(sq, beta), rtol=1e-12, atol=1e-12)
    some = every[:: max(1, every.size // 3)][:3]  # the sampled estimate: phi of these leaves' points only
    beta, h = entropy.entropy_curve(cpu, tree, some, [dbeta[1]], [7], 9)
    np.testing.assert_allclose(h, reference_entropy(sq, beta, leaf_points(tree, some)), rtol=1e-12, atol=1e-12)


def least_interior_minimum_sigma(sq, sigmas):
    h = reference_entropy(sq, 1.0 / sigmas**2)
    return sigmas[::-1][entropy.least_interior_minimum(h[::-1])]  # the engine reads H ascending in beta


def mixed(rng):
    """Blobs of different spread, a dense clump and integer-valued points with duplicates."""
    return np.vstack([blobs(rng, 900), rng.normal(size=(250, 2)) * 0.3 + 12, rng.integers(-4, 4, (200, 2))])


@pytest.mark.parametrize("make", [blobs, mixed, lambda rng: blobs(rng, 800, d=5)], ids=["blobs", "mixed", "blobs5d"])
def test_sigma_is_the_reference_minimum(make, rng):
    points = make(rng).astype(np.float32)
    sq = oracle.rule_sq_dists(points)
    result = IndexedPoints(points, backend="cpu").entropy_dc()
    nearest = np.sqrt(np.median(np.where(np.eye(len(points), dtype=bool), np.inf, sq).min(axis=1)))
    sigmas = np.geomspace(nearest / 2, np.sqrt(np.quantile(sq, 0.25)) / 3, 240)  # ratio 1.5 % between values
    expected = least_interior_minimum_sigma(sq, sigmas)
    assert abs(np.log(result.sigma / expected)) <= 0.03
    assert result.dc == pytest.approx(3 / np.sqrt(2) * result.sigma)
    exact = reference_entropy(sq, result.beta)  # the exact stage is exact: every point, every pair in reach
    np.testing.assert_allclose(result.entropy, exact, rtol=1e-12)


def test_the_sampled_locate_picks_the_window_of_the_full_search(rng, monkeypatch):
    """Above LOCATE_LEAVES leaves the locate stage reads a sample of leaves; here it finds the same minimum as
    reading every leaf does: the exact stages agree within their refinement (a fraction of a 2-4 % step)."""
    points = np.vstack([blobs(rng, 12_000), rng.uniform(-20, 20, (2000, 2))]).astype(np.float32)
    sampled = IndexedPoints(points, backend="cpu").entropy_dc()
    monkeypatch.setattr(entropy, "LOCATE_LEAVES", 1 << 20)
    full = IndexedPoints(points, backend="cpu").entropy_dc()
    assert sampled.sigma == pytest.approx(full.sigma, rel=0.01)


@pytest.mark.parametrize("points", [np.zeros((2, 3)), np.ones((40, 2)), np.array([[0.0, 0], [3, 4]])],
                         ids=["two identical", "all identical", "two"])  # fmt: skip
def test_degenerate_sets_get_a_finite_dc(points):
    dc = IndexedPoints(points, backend="cpu").dc_for_entropy()
    assert np.isfinite(dc) and dc > 0  # one point cannot be indexed at all (DataError: need at least 2 points)


def test_copies_of_every_point_leave_the_dc_at_the_datas_scale(rng):
    """Every nearest other point at distance 0 made the rule take all points for identical: dc = 1 at any scale."""
    base = rng.normal(size=(200, 2)) * 1000
    once = IndexedPoints(base, backend="cpu").dc_for_entropy()
    assert IndexedPoints(np.repeat(base, 2, axis=0), backend="cpu").dc_for_entropy() == pytest.approx(once, rel=0.1)
    many = IndexedPoints(np.repeat(base, 20, axis=0), backend="cpu").dc_for_entropy()  # more copies than a list holds
    assert 100 < many < 10_000


def test_estimator_uses_the_rule_and_caches_it(rng):
    points = blobs(rng, 600)
    indexed = IndexedPoints(points, backend="cpu")
    dp = DensityPeaks(dc_rule="entropy", backend="cpu").fit(indexed)
    assert dp.dc_ == indexed.dc_for_entropy() and dp.timings_["dc"] > 0
    assert DensityPeaks(dc_rule="entropy", backend="cpu").fit(indexed).timings_["dc"] == 0.0
    assert dp.set_dc(dc_percent=2.0).dc_ == indexed.dc_for_percent(2.0)  # an explicit percent wins
    with pytest.raises(ValueError, match="dc_rule must be one of percent, entropy"):
        DensityPeaks(dc_rule="median").fit(points)
