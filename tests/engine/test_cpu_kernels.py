"""The CPU backend's special paths against the brute-force oracle: the 2-D strip sweep for cut-off rho, the
neighbour graph, and delta read from that graph (with the tree search where the graph has no denser point)."""

import dataclasses

import numpy as np
import pytest

from dpstudio.engine import cpu
from dpstudio.engine.cpu import strips
from dpstudio.engine.cpu.search import neighbour_graph

from . import oracle
from .datasets import CASES


def flat_2d(rng, n=800):
    return np.column_stack([rng.normal(size=n), np.zeros(n)])  # one strip holds everything


def upright_2d(rng, n=800):
    return np.column_stack([np.full(n, 3.0), rng.integers(0, 50, n).astype(np.float64)])  # one x, tied y


def far_apart_2d(rng, n=600):
    return rng.normal(size=(n, 2)) * [1.0, 1e6]  # y range far beyond dc: the strip count is capped at N


def wide_2d(rng, n=600):
    points = rng.normal(size=(n, 2))
    points[:5, 0] = [-1e7, -3e6, 2.5e6, 4e6, 1e7]  # x outliers: every x-bin spans far more than dc
    return points


def crowded_2d(rng, n=900):
    points = rng.normal(size=(n, 2))
    points[: n // 2] = 0.0  # half the points on one spot (one bin no band edge can split) ...
    points[: n // 4, 1] = -0.0  # ... some of them as -0.0, which is the same point
    points[n // 2 : n // 2 + 50] = points[n // 2 + 50]  # and a second crowd
    return rng.permutation(points)


CASES_2D = {
    "blobs": lambda rng: CASES["blobs"](rng),
    "with_duplicates": lambda rng: CASES["with_duplicates"](rng, d=2),
    "integer_grid": CASES["integer_grid"],
    "all_identical": CASES["all_identical"],
    "collinear_ties": CASES["collinear_ties"],
    "two_points": CASES["two_points"],
    "flat": flat_2d,
    "upright": upright_2d,
    "far_apart": far_apart_2d,
    "wide": wide_2d,
    "crowded": crowded_2d,
}


@pytest.mark.parametrize("case", CASES_2D)
@pytest.mark.parametrize("mean_rho", [0.0, 3200.0, 1e9])  # 1, 2 and 16 strips per dc: any guess stays exact
def test_strip_sweep_counts_exactly(case, mean_rho, rng):
    points = CASES_2D[case](rng).astype(np.float32)
    sq = oracle.rule_sq_dists(points)
    positive = np.sqrt(sq[sq > 0].astype(np.float64))
    for dc in ([float(rng.choice(positive)), float(np.quantile(positive, 0.3))] if positive.size else [1.0]):
        # dc drawn from the pair distances: pairs exactly at dc must not count
        got = strips.cutoff_rho(np.ascontiguousarray(points.T), dc, mean_rho)
        np.testing.assert_array_equal(got, oracle.rho(sq, dc, "cutoff"))


def brute_neighbours(points, k):
    sq = oracle.rule_sq_dists(points)
    n = points.shape[0]
    lists = []
    for i in range(n):
        others = np.array([j for j in range(n) if j != i], np.int64)
        by_distance = others[np.lexsort((others, sq[i, others]))]  # nearest first, ties by index
        lists.append((by_distance[:k], sq[i, by_distance[:k]]))
    return lists


@pytest.mark.parametrize("case", ["blobs", "with_duplicates", "integer_grid", "all_identical", "high_dim", "three_points"])
def test_neighbour_graph_is_the_exact_k_nearest(case, rng):
    points = CASES[case](rng).astype(np.float32)
    tree = cpu.build_vptree(points)
    k = 8
    expected = brute_neighbours(points, k)
    graph = tree.neighbours
    assert graph.positions.shape == (points.shape[0], k)
    for p in range(points.shape[0]):
        i = tree.ids[p]
        ids, sq = expected[i]
        listed = graph.positions[p][graph.positions[p] >= 0]
        np.testing.assert_array_equal(tree.ids[listed], ids)
        np.testing.assert_array_equal(graph.sq_dists[p][: len(ids)], sq)
        assert np.all(graph.positions[p][len(ids) :] == -1)  # fewer than k others: padded


@pytest.mark.parametrize("case", ["blobs", "with_duplicates", "integer_grid", "uniform_deep"])
@pytest.mark.parametrize("k", [1, 8])
def test_delta_from_the_graph_equals_the_tree_search(case, k, rng):
    points = CASES[case](rng).astype(np.float32)
    bare = dataclasses.replace(cpu.build_vptree(points), neighbours=None)
    with_graph = dataclasses.replace(bare, neighbours=neighbour_graph(bare, k))
    sq = oracle.rule_sq_dists(points)
    for dc in np.quantile(np.sqrt(sq[sq > 0].astype(np.float64)), [0.01, 0.2]):
        rho = cpu.rho(bare, dc, "cutoff")
        _, rank = cpu.density_order(rho)
        expected = oracle.delta_parent(sq, rho)
        for tree in (bare, with_graph):
            delta, parent = cpu.delta(tree, rank)
            np.testing.assert_array_equal(parent, expected[1])
            np.testing.assert_array_equal(delta, expected[0])


@pytest.mark.parametrize(
    "values",
    [
        lambda rng: rng.integers(0, 40, 3000).astype(np.float64),  # cut-off counts with many ties: counting sort
        lambda rng: np.zeros(500),  # one tie over everything
        lambda rng: np.array([2.0]),
        lambda rng: rng.integers(0, 40, 3000) + 0.5,  # not whole numbers: the general sort
        lambda rng: np.full(10, 10.0),  # whole but not below N: the general sort
        lambda rng: rng.integers(0, 40, 3000).astype(np.uint32),  # counts as Dask's workers send them
        lambda rng: np.full(10, 10, np.uint32),  # unsigned and not below N: -rho must not wrap
        lambda rng: rng.random(2000),  # Gaussian-like densities
        lambda rng: np.round(rng.normal(size=3000), 2),  # log densities: negative too, runs of ties among distinct values
    ],
)
def test_density_order_is_densest_first_ties_by_index(values, rng):
    rho = values(rng)
    order, rank = cpu.density_order(rho)
    np.testing.assert_array_equal(order, np.lexsort((np.arange(rho.size), -rho.astype(np.float64))))
    np.testing.assert_array_equal(rank[order], np.arange(rho.size))
