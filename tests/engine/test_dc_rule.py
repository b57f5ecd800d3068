"""The dc percent rule: exact for small N, within its documented sampling error for large N."""

import numpy as np
import pytest

from dpstudio.engine.dc import SAMPLE_PAIRS, dc_from_percent

from . import oracle
from .datasets import blobs


def fraction_closer(points, dc):
    sq = oracle.rule_sq_dists(points)
    upper = sq[np.triu_indices(points.shape[0], 1)]
    return np.mean(upper < np.float32(dc**2))


@pytest.mark.parametrize("percent", [0.5, 2.0, 10.0])
def test_exact_for_small_n(percent, rng):
    points = blobs(rng, 1000).astype(np.float32)
    dc = dc_from_percent(points, percent)
    n_pairs = 1000 * 999 // 2
    # dc is the ceil(p * M)-th smallest distance: strictly closer pairs are just under p %
    assert percent / 100 - 2 / n_pairs <= fraction_closer(points, np.nextafter(dc, np.inf)) + 1e-12
    assert fraction_closer(points, dc) <= percent / 100


def test_sampled_estimate_within_documented_error(rng):
    points = blobs(rng, 3000).astype(np.float32)  # 4.5 M pairs: sampled
    p = 0.02
    achieved = fraction_closer(points, dc_from_percent(points, 100 * p))
    assert abs(achieved - p) <= 3 * np.sqrt(p * (1 - p) / SAMPLE_PAIRS) + 1e-6


def test_duplicates_and_identical_points():
    identical = np.ones((50, 2), np.float32)
    assert dc_from_percent(identical, 2.0) == 1.0
    mostly_same = np.vstack([np.zeros((40, 2)), [[3.0, 4.0]], [[6.0, 8.0]]]).astype(np.float32)
    assert dc_from_percent(mostly_same, 2.0) == 5.0  # the 2% quantile is 0: smallest positive distance


def test_same_dc_every_run(rng):
    points = blobs(rng, 5000).astype(np.float32)
    assert dc_from_percent(points, 2.0) == dc_from_percent(points, 2.0)
