"""The teaching view without a browser: the points a point's rho counts, its chain to a center in the engine's
density order, the step-through's labels and arrows, the arrows' geometry, DBSCAN's eps neighbours and tree edges, and
the layers drawn from them."""

from __future__ import annotations

import numpy as np
import pytest

from dpstudio.app.studio import Studio
from dpstudio.app.teaching import TEACHING_MAX, Teaching, arrow_segments, chain_to_center, follow_parents, steps, within
from dpstudio.app.teaching_plot import TeachingPlots
from dpstudio.engine import DBSCAN, DensityPeaks
from dpstudio.engine.cpu import density_order

from ..engine.datasets import CASES
from .layers import drawn


@pytest.fixture
def teaching(cache):
    studio = Studio()
    studio.load(cache.sample("blobs"))
    return Teaching(studio)


def fitted(points, percent=3.0, suggest="gamma") -> DensityPeaks:
    return DensityPeaks(dc_percent=percent, suggest=suggest, backend="cpu").fit(points)


@pytest.mark.parametrize("case", ["blobs", "with_duplicates", "integer_grid", "all_identical", "line", "collinear_ties", "three_points"])
def test_the_points_within_dc_are_the_ones_rho_counts(case):
    rng = np.random.default_rng(len(case))
    points = CASES[case](rng).astype(np.float32)
    model = fitted(points)
    for i in rng.choice(points.shape[0], size=min(60, points.shape[0]), replace=False):
        counted = within(points, i, model.dc_)
        assert not counted[i]
        assert counted.sum() == model.rho_[i], f"point {i}"
        # against float64 distances: the same except for pairs within float32 rounding of dc
        distance = np.sqrt(((points.astype(np.float64) - points[i]) ** 2).sum(axis=1))
        clear = np.abs(distance - model.dc_) > 1e-5 * max(model.dc_, 1.0)
        np.testing.assert_array_equal(counted[clear], ((distance < model.dc_) & (np.arange(points.shape[0]) != i))[clear])


@pytest.mark.parametrize("case", ["blobs", "with_duplicates", "integer_grid", "collinear_ties"])
def test_density_order_and_the_chains_to_the_centers(case):
    rng = np.random.default_rng(7)
    points = CASES[case](rng)
    model = fitted(points)
    rho, (order, _) = model.rho_, density_order(model.rho_)
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    for a, b in zip(order[:-1], order[1:]):  # denser first; equal rho: smaller index first
        assert rho[a] > rho[b] or (rho[a] == rho[b] and a < b)
    labels, centers = model.labels_, model.centers_
    for i in rng.choice(points.shape[0], size=80, replace=False):
        chain = chain_to_center(model.parent_, centers, i)
        assert chain[0] == i and np.isin(chain[-1], centers)
        np.testing.assert_array_equal(model.parent_[chain[:-1]], chain[1:])  # each link is the point's parent
        assert np.all(np.diff(rank[chain]) < 0)  # every step goes to a denser point
        assert not np.isin(chain[:-1], centers).any()  # it stops at the first center
        assert labels[chain[-1]] == labels[i] == int(np.flatnonzero(centers == chain[-1])[0])


def test_labels_flow_in_density_order_to_the_engines_labels():
    rng = np.random.default_rng(3)
    points = CASES["blobs"](rng)
    model = fitted(points)
    order, _ = density_order(model.rho_)
    np.testing.assert_array_equal(follow_parents(model.parent_, order, model.centers_, order.size), model.labels_)
    half = follow_parents(model.parent_, order, model.centers_, order.size // 2)
    reached = np.zeros(order.size, bool)
    reached[order[: order.size // 2]] = True
    reached[model.centers_] = True
    np.testing.assert_array_equal(half[reached], model.labels_[reached])
    assert (half[~reached] == -1).all()
    # centers that leave the densest point out (the automatic clusters): its chain meets no center
    others = model.centers_[model.centers_ != order[0]]
    assert follow_parents(model.parent_, order, others, order.size)[order[0]] == -1


def test_the_steps_go_from_rho_to_the_halo():
    all_steps = steps(1000, chunks=4)
    assert [s.stage for s in all_steps] == ["rho", *["delta"] * 4, "peaks", *["labels"] * 4, "halo"]
    assert [s.reached for s in all_steps if s.stage == "delta"] == [250, 500, 750, 1000]
    assert steps(3, chunks=8)[8].reached == 3  # fewer points than steps: the last step reaches them all


def test_arrows_run_from_tail_to_head_with_barbs_at_the_head():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=50) * 100, rng.normal(size=50)  # axes of very different scales
    tails, heads = np.arange(0, 20), np.arange(20, 40)
    heads[0] = tails[0]  # a zero-length arrow draws nothing wrong
    x0, y0, x1, y1 = arrow_segments(x, y, tails, heads, (float(np.ptp(x)), float(np.ptp(y))))
    assert x0.size == 3 * tails.size and np.isfinite([x0, y0, x1, y1]).all()
    np.testing.assert_array_equal(x0[:20], x[tails])
    np.testing.assert_array_equal(x1[:20], x[heads])
    for barb in (1, 2):
        part = slice(20 * barb, 20 * barb + 20)
        np.testing.assert_array_equal(x0[part], x[heads])  # barbs start at the head
        along = ((x1[part] - x[heads]) * (x[heads] - x[tails]) / np.ptp(x) ** 2
                 + (y1[part] - y[heads]) * (y[heads] - y[tails]) / np.ptp(y) ** 2)  # fmt: skip
        assert (along[1:] < 0).all()  # swept back along the shaft
        size = np.hypot((x1[part] - x0[part]) / np.ptp(x), (y1[part] - y0[part]) / np.ptp(y))
        assert (size <= 0.015 + 1e-12).all()


def test_a_clicked_point_is_explained(teaching):
    studio = teaching.studio
    x, y = studio.plot_coordinates("view")
    i = int(np.argmax(studio.dpc.model.rho_ < np.median(studio.dpc.model.rho_)))  # a point that is no center
    teaching.explain_at(float(x[i]), float(y[i]))
    assert teaching.point == i
    facts = teaching.explanation()
    assert facts["counted"].sum() == studio.dpc.model.rho_[i]
    text = teaching.describe()
    assert f"Row {studio.dataset.points.rows[i]}" in text and "nearest denser point" in text and "(ringed)" in text
    teaching.explain_at(float(x.max()) * 10, float(y.max()) * 10)  # a click on no point
    assert teaching.point is None and teaching.describe() == ""
    with pytest.raises(ValueError, match="no point"):
        teaching.explain(studio.dataset.n_points)


def circles_in(path) -> list[np.ndarray]:
    """The circles a path layer draws: its paths' vertices, broken at NaN rows (Bokeh's gaps)."""
    pieces = []
    for part in path.split():
        vertices = part.array()
        gaps = np.flatnonzero(np.isnan(vertices).any(axis=1))
        pieces += [kept for piece in np.split(vertices, gaps) if (kept := piece[~np.isnan(piece).any(axis=1)]).size]
    return pieces


def test_the_layers_draw_the_circle_the_counted_points_and_the_chain(teaching):
    studio, plots = teaching.studio, TeachingPlots(teaching)
    i = 5
    studio.dpc.pick_count(5)  # DPC's own centers: the chain ends at one
    teaching.explain(i)
    facts = teaching.explanation()
    markers, arrows, (cores, circle) = plots._markers(), plots._arrows(), plots._circle()
    assert drawn(markers) == facts["counted"].sum()  # a ring per counted point
    assert drawn(arrows) == 3 * (facts["chain"].size - 1)  # shaft and two barbs per link
    (ring,) = circles_in(circle)
    assert not circles_in(cores)  # DPC has no core points' circles
    x, y = studio.plot_coordinates("view")
    radius = np.hypot(ring[:, 0] - x[i], ring[:, 1] - y[i])
    np.testing.assert_allclose(radius, studio.dpc.model.dc_, rtol=1e-6)
    studio.param.update(x_axis="PC1", y_axis="PC2")  # a projection: no circle, the rings stay
    assert not circles_in(plots._circle().Teaching.Explained) and drawn(plots._markers()) == facts["counted"].sum()
    plots.close()


def test_the_forest_and_the_step_through(teaching):
    studio, plots = teaching.studio, TeachingPlots(teaching)
    n = studio.dataset.n_points
    teaching.show_forest(True)
    assert drawn(plots._arrows()) == 3 * (n - 1)  # every point but the densest has an arrow
    teaching.show_forest(False)
    studio.dpc.pick_count(5)
    last = len(teaching.steps()) - 1
    for step in range(last + 1):
        teaching.go_to_step(step)
        picture = teaching.step_picture()
        markers = plots._markers()
        assert drawn(markers) == n + (0 if picture["stage"] in ("rho", "delta") else 5)
    teaching.go_to_step(last - 1)  # all labels passed on: DPC's labels
    np.testing.assert_array_equal(teaching.step_picture()["labels"], studio.dpc.model.labels_)
    with pytest.raises(ValueError, match="steps 0 to"):
        teaching.go_to_step(last + 1)
    teaching.go_to_step(None)
    assert teaching.step_picture() is None and drawn(plots._markers()) == 0
    plots.close()


def test_with_the_automatic_clusters_the_labels_flow_from_their_centers_down_dpcs_arrows(teaching):
    """The page opens with the automatic clusters, whose centers are each cluster's densest point by rho: every arrow
    meets one, and the labels they carry are the automatic clusters' but for a few points. (Their centers were the
    kNN density's peaks, which most arrows missed: most points stayed grey.) The peaks' step says whose centers
    they are, until centers are picked."""
    studio = teaching.studio
    assert not studio.dpc.centers_picked
    last = len(teaching.steps()) - 1
    teaching.go_to_step(last - 1)
    labels = teaching.step_picture()["labels"]
    assert (labels >= 0).all() and np.mean(labels == studio.dpc.model.labels_) > 0.95
    stages = {step.stage: step.text for step in teaching.steps()}
    assert "the automatic clusters' centers, each cluster's densest point" in stages["peaks"]
    studio.dpc.pick_count(5)
    assert not any("automatic" in step.text for step in teaching.steps())
    teaching.go_to_step(None)


def test_a_new_data_set_resets_and_a_large_one_is_explained_but_not_stepped(cache, teaching):
    teaching.explain(3)
    teaching.show_forest(True)
    teaching.go_to_step(2)
    points = np.random.default_rng(0).normal(size=(TEACHING_MAX + 1, 2))
    content = "x,y\n".encode() + "\n".join(f"{a},{b}" for a, b in points).encode()
    teaching.studio.load(cache.upload("large.csv", content, max_bytes=2**30))
    assert (teaching.point, teaching.forest, teaching.step) == (None, False, None)
    assert not teaching.available
    for show in (lambda: teaching.show_forest(True), lambda: teaching.go_to_step(0), lambda: teaching.show_circles(True)):
        with pytest.raises(ValueError, match=f"up to {TEACHING_MAX:,} points"):
            show()
    teaching.explain(10)  # one point is explained at any size
    assert teaching.explanation()["counted"].sum() == teaching.studio.dpc.model.rho_[10]


@pytest.mark.parametrize("case", ["blobs", "with_duplicates", "integer_grid", "collinear_ties"])
def test_the_points_within_eps_make_the_core_points_and_the_edges_join_them(case):
    rng = np.random.default_rng(11)
    points = CASES[case](rng).astype(np.float32)
    model = DBSCAN(eps=None, min_samples=5, backend="cpu").fit(points)
    core = np.zeros(points.shape[0], bool)
    core[model.core_sample_indices_] = True
    near = np.array([within(points, i, model.eps_, closed=True).sum() + 1 for i in range(points.shape[0])])
    np.testing.assert_array_equal(near >= 5, core)  # the point itself counted, as scikit-learn counts it
    u, v = model.joining_edges_
    labels = model.labels_
    assert core[u].all() and core[v].all() and (labels[u] == labels[v]).all()
    # the edges' components among the core points are the clusters
    component = np.arange(points.shape[0])

    def root(i):
        while component[i] != i:
            component[i] = component[component[i]]
            i = component[i]
        return i

    for a, b in zip(u, v):
        component[root(a)] = root(b)
    roots = np.array([root(i) for i in np.flatnonzero(core)])
    assert np.unique(roots).size == np.unique(labels[core]).size


def test_dbscan_points_are_explained_as_core_border_or_noise(teaching):
    studio, plots = teaching.studio, TeachingPlots(teaching)
    studio.set_method("dbscan")
    state = studio.dbscan
    core, labels = state.core(), state.labels()
    kinds = {"a core point": np.flatnonzero(core), "a border point": np.flatnonzero(~core & (labels >= 0)),
             "noise": np.flatnonzero(labels < 0)}  # fmt: skip
    for kind, points in kinds.items():
        if points.size:
            teaching.explain(int(points[0]))
            assert kind in teaching.describe()
            assert drawn(plots._markers()) == teaching.explanation()["counted"].sum()  # rings, and no arrows
            assert drawn(plots._arrows()) == 0
    teaching.show_edges(True)
    assert drawn(plots._arrows()) == state.model.joining_edges_[0].size  # a line per edge
    teaching.show_forest(True)  # DPC's forest is not drawn over DBSCAN
    assert drawn(plots._arrows()) == state.model.joining_edges_[0].size
    plots.close()


def test_the_eps_circles_of_the_core_points(teaching):
    studio, plots = teaching.studio, TeachingPlots(teaching)
    studio.set_method("dbscan")
    model = studio.dbscan.model
    teaching.explain(int(model.core_sample_indices_[0]))
    core_paths, explained_paths = (circles_in(path) for path in plots._circle())
    assert (len(core_paths), len(explained_paths)) == (0, 1)  # the explained point's circle only
    teaching.show_circles(True)
    cores, eps = teaching.core_circles()
    np.testing.assert_array_equal(cores, model.core_sample_indices_)
    core_paths, explained_paths = (circles_in(path) for path in plots._circle())
    assert (len(core_paths), len(explained_paths)) == (cores.size, 1) and eps == model.eps_
    x, y = studio.plot_coordinates("view")
    for k in (0, cores.size - 1):  # each core circle has radius eps about its point
        vertices = core_paths[k]
        np.testing.assert_allclose(np.hypot(vertices[:, 0] - x[cores[k]], vertices[:, 1] - y[cores[k]]), eps)
    studio.set_method("dpc")  # DPC has no core points
    assert teaching.core_circles()[0].size == 0
    plots.close()


def test_every_styled_column_of_the_layers_holds_two_values_at_least(teaching):
    """HoloViews sends a styled column of one value as a constant: the glyph would switch between a constant and a
    column as the rows change (BokehJS then warned of a missing column at each draw). Nothing shown, one explained
    point, and the step-through's steps."""
    studio, plots = teaching.studio, TeachingPlots(teaching)

    def assert_columns():
        for layer in (plots._markers(), plots._arrows()):
            frame = layer.dframe()
            for name in (dimension.name for dimension in layer.vdims):
                assert frame[name].nunique() >= 2, (type(layer).__name__, name)

    assert_columns()
    teaching.explain(5)
    assert_columns()
    teaching.explain(None)
    studio.dpc.pick_count(5)
    for step in range(len(teaching.steps())):
        teaching.go_to_step(step)
        assert_columns()
    plots.close()
