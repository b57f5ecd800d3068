"""Random point sets for the exactness tests, each built to stress one corner of the semantics."""

import numpy as np


def blobs(rng, n=1500, d=2):
    centers = rng.normal(scale=6, size=(5, d))
    return centers[rng.integers(0, 5, n)] + rng.normal(size=(n, d))


def with_duplicates(rng, n=700, d=3):
    base = rng.normal(size=(n // 3, d))
    return base[rng.integers(0, base.shape[0], n)]  # about three copies of each point


def integer_grid(rng, n=900, d=2):
    return rng.integers(0, 10, size=(n, d)).astype(np.float64)  # equal distances and equal rho everywhere


def all_identical(rng, n=120, d=2):
    return np.repeat(rng.normal(size=(1, d)), n, axis=0)


def far_from_origin(rng, n=2000, d=9):
    # a tight cloud far out: distances from expanded norms (|q|^2 + |p|^2 - 2 q.p) would cancel catastrophically
    return 1e4 + 1e-2 * blobs(rng, n, d)


def line(rng, n=1200):
    return rng.exponential(size=(n, 1))


def high_dim(rng, n=500, d=50):
    return blobs(rng, n, d)


def uniform_deep(rng, n=4000, d=2):
    return rng.uniform(size=(n, d))


def two_points(rng):
    return rng.normal(size=(2, 2))


def three_points(rng):
    return rng.normal(size=(3, 4))


def collinear_ties(rng, n=300):
    # evenly spaced on a line: every point has two neighbours at exactly the same distance
    return np.column_stack([np.arange(n, dtype=np.float64), np.zeros(n)])


CASES = {f.__name__: f for f in (blobs, with_duplicates, integer_grid, all_identical, far_from_origin, line, high_dim,
                                 uniform_deep, two_points, three_points, collinear_ties)}  # fmt: skip
