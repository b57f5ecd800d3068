"""The engine against the brute-force oracle on fresh random data: rho, delta, parent, labels and halo."""

import numpy as np
import pytest

from dpstudio.engine import DensityPeaks

from . import oracle
from .datasets import CASES


def fitted(points, kernel, dc=None, backend="cpu"):
    # the largest-gamma-drop suggestion: its labels follow parent_, which is what these tests pin
    return DensityPeaks(dc=dc, kernel=kernel, suggest="gamma", backend=backend).fit(points)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("kernel", ["cutoff", "gaussian"])
def test_matches_oracle(case, kernel, rng):
    points = CASES[case](rng)
    dp = fitted(points, kernel)
    sq = oracle.rule_sq_dists(points)

    expected_rho = oracle.rho(sq, dp.dc_, kernel)
    if kernel == "cutoff":
        np.testing.assert_array_equal(dp.rho_, expected_rho)
    else:
        np.testing.assert_allclose(dp.rho_, expected_rho, rtol=1e-12, atol=oracle.GAUSSIAN_ATOL)

    # delta/parent from the engine's own rho: the oracle's exp may round a Gaussian term to another unit
    expected_delta, expected_parent = oracle.delta_parent(sq, dp.rho_)
    np.testing.assert_array_equal(dp.parent_, expected_parent)
    np.testing.assert_array_equal(dp.delta_, expected_delta)

    # gamma from the engine's rho and delta (checked above); the suggestion, then the densest point if not in it
    np.testing.assert_array_equal(dp.gamma_, oracle.gamma(dp.rho_, dp.delta_, dp.parent_))
    np.testing.assert_array_equal(dp.centers_, oracle.with_densest(oracle.gamma_suggestion(dp.gamma_), dp.rho_))

    centers = list(dp.centers_)
    np.testing.assert_array_equal(dp.labels_, oracle.labels(dp.parent_, centers))
    np.testing.assert_array_equal(dp.halo_, oracle.halo(sq, dp.rho_, dp.labels_, dp.dc_))


@pytest.mark.parametrize("case", ["blobs", "integer_grid", "high_dim"])
def test_explicit_dc_and_chosen_centers(case, rng):
    points = CASES[case](rng)
    sq = oracle.rule_sq_dists(points)
    positive = np.sqrt(sq[sq > 0].astype(np.float64))
    dc = float(rng.choice(positive))  # an actual pair distance: pairs exactly at dc must not count
    dp = fitted(points, "cutoff", dc=dc)
    np.testing.assert_array_equal(dp.rho_, oracle.rho(sq, dc, "cutoff"))
    centers = [int(c) for c in rng.choice(len(points), size=4, replace=False)]
    dp.assign(centers=centers)
    expected_centers = oracle.with_densest(centers, dp.rho_)
    np.testing.assert_array_equal(dp.centers_, expected_centers)
    np.testing.assert_array_equal(dp.labels_, oracle.labels(dp.parent_, expected_centers))
    np.testing.assert_array_equal(dp.halo_, oracle.halo(sq, dp.rho_, dp.labels_, dc))


@pytest.mark.parametrize("d", [1, 2, 16, 128])
def test_distance_rule_is_within_documented_rounding_of_float64(d, rng):
    points = rng.normal(scale=rng.uniform(1e-3, 1e3), size=(300, d))
    rule, exact = oracle.rule_sq_dists(points).astype(np.float64), oracle.exact_sq_dists(points)
    assert np.all(np.abs(rule - exact) <= (d + 3) * 2.0**-24 * exact)
