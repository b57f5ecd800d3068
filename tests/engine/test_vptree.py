"""Invariants of the GDPC layout: permutation, leaf sizes, median splits, covering balls."""

import numpy as np
import pytest

from dpstudio.engine.cpu import build_vptree
from dpstudio.engine.vptree import LEAF_SIZE, tree_depth

from . import oracle
from .datasets import CASES


def run(n, level, j):
    return (j * n) >> level, ((j + 1) * n) >> level


@pytest.mark.parametrize("case", ["blobs", "with_duplicates", "integer_grid", "all_identical", "line", "high_dim", "two_points"])
def test_layout_invariants(case, rng):
    points = CASES[case](rng).astype(np.float32)
    n = points.shape[0]
    tree = build_vptree(points)
    assert tree.depth == tree_depth(n)
    assert sorted(tree.ids) == list(range(n))
    np.testing.assert_array_equal(tree.coords.T, points[tree.ids])
    leaf_sizes = [b - a for a, b in (run(n, tree.depth, j) for j in range(1 << tree.depth))]
    assert max(leaf_sizes) <= LEAF_SIZE and min(leaf_sizes) >= 1
    sq = oracle.rule_sq_dists(points)
    for k in range(tree.n_nodes):
        level = int(np.log2(k + 1))
        start, end = run(n, level, k - (1 << level) + 1)
        members = tree.ids[start:end]
        assert tree.min_id[k] == members.min()
        covered = np.sqrt(oracle.exact_sq_dists(np.vstack([tree.center[k], points[members]]))[0, 1:])
        assert np.all(covered <= tree.cover_radius[k] * (1 + 1e-5) + 1e-30)
        if level < tree.depth:  # vantage point in the node; near half within the split radius, far half beyond
            mid = run(n, level + 1, 2 * (k - (1 << level) + 1) + 1)[0]
            vp = tree.vantage[k]
            assert vp in members
            near, far = np.sqrt(sq[vp, tree.ids[start:mid]]), np.sqrt(sq[vp, tree.ids[mid:end]])
            assert near.max() == np.float32(tree.split_radius[k]) or np.isclose(near.max(), tree.split_radius[k])
            assert far.min() >= near.max()
