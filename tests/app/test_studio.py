"""The session's methods without a browser: switching DPC | DBSCAN | HDBSCAN on one index, eps relabels, the
hand-picked HDBSCAN selection, colouring by ground truth, the pinned comparison and the dc sweep."""

from __future__ import annotations

import threading

import holoviews as hv
import numpy as np
import pandas as pd
import panel as pn
import pytest
from sklearn.metrics import adjusted_rand_score

import dpstudio.app.state
from dpstudio import sample_data
from dpstudio.app.dbscan_plots import eps_steps
from dpstudio.app.compare import TABLE_CLUSTERS, adjusted_rand_index, contingency
from dpstudio.app.method_state import Unchanged
from dpstudio.app.reproduce import apply_session, read_session, session_json
from dpstudio.app.studio import Studio
from dpstudio.app.sweep import dc_sweep, plateaus, sweep_dcs
from dpstudio.app.sweep_plot import SweepPlot
from dpstudio.engine import DBSCAN, HDBSCAN, DensityPeaks


@pytest.fixture
def studio(cache):
    studio = Studio()
    studio.load(cache.sample("blobs"))
    return studio


def test_switching_method_keeps_the_data_set_index_and_view(studio, monkeypatch):
    dataset = studio.dataset
    studio.param.update(x_axis="PC1", y_axis="PC2")
    monkeypatch.setattr(dataset.indexed.backend, "build_vptree", lambda *a, **k: pytest.fail("index rebuilt"))
    dpc_labels = studio.labels().copy()
    for method in ("dbscan", "hdbscan", "dpc", "dbscan"):
        revision = studio.revision
        studio.set_method(method)
        assert studio.method == method and studio.dataset is dataset and studio.revision > revision
        assert studio.active.model.indexed_ is dataset.indexed and (studio.x_axis, studio.y_axis) == ("PC1", "PC2")
    np.testing.assert_array_equal(studio.dpc.labels(), dpc_labels)  # DPC kept its clustering meanwhile
    monkeypatch.undo()  # the reference builds its own index
    reference = DBSCAN(eps=None, min_samples=studio.dbscan.min_samples, backend="cpu").fit(dataset.points.values)
    np.testing.assert_array_equal(studio.labels(), reference.labels_)
    with pytest.raises(ValueError, match="method must be one of"):
        studio.set_method("kmeans")
    assert studio.method == "dbscan"


def test_eps_relabels_from_the_cached_tree_and_a_wrong_eps_changes_nothing(studio, monkeypatch):
    studio.set_method("dbscan")
    state, points = studio.dbscan, studio.dataset.points.values
    monkeypatch.setattr(studio.dataset.indexed, "neighbours", lambda *a, **k: pytest.fail("neighbours searched again"))
    curve = state.curve()
    for eps in (0.05, 0.2, 0.6, 3.0):
        revision = studio.revision
        state.set_eps(eps)
        labels = studio.labels()
        np.testing.assert_array_equal(labels, DBSCAN(eps=eps, min_samples=5, backend="cpu").fit(points).labels_)
        assert curve.at(eps) == (labels.max() + 1, (labels < 0).sum()) and studio.revision > revision
        assert len(state.cluster_table()) == labels.max() + 1
    before = (state.eps, state.revision, studio.labels().copy())
    for wrong, error in ((-1.0, ValueError), (float("nan"), ValueError), ("0.3", TypeError)):
        with pytest.raises(error, match="eps must be"):
            state.set_eps(wrong)
    assert (state.eps, state.revision) == before[:2]
    np.testing.assert_array_equal(studio.labels(), before[2])


def test_min_samples_and_core_points(studio):
    studio.set_method("dbscan")
    state = studio.dbscan
    eps = state.eps
    state.set_min_samples(12)
    assert state.min_samples == 12 and state.eps == eps
    reference = DBSCAN(eps=eps, min_samples=12, backend="cpu").fit(studio.dataset.points.values)
    np.testing.assert_array_equal(studio.labels(), reference.labels_)
    np.testing.assert_array_equal(np.flatnonzero(studio.large_points()), reference.core_sample_indices_)
    np.testing.assert_array_equal(state.k_distances(), np.sort(reference.core_distances_)[::-1])
    assert state.cluster_table()["core"].sum() == reference.core_sample_indices_.size
    state.set_show_core(False)
    assert studio.large_points() is None
    with pytest.raises(ValueError, match="min_samples must be a whole number from 1 to the number of points"):
        state.set_min_samples(0)
    assert state.min_samples == 12


@pytest.mark.parametrize("min_samples", [5, "every point"])
def test_the_count_curves_show_where_clusters_start_and_where_they_end(studio, min_samples):
    """Over the drawn range the curves start with no cluster and every point noise, and end with one cluster and
    none; also at min_samples = N, whose only step (0 -> 1 cluster, N -> 0 noise) the range began at, so both
    curves were flat."""
    studio.set_method("dbscan")
    state = studio.dbscan
    state.set_min_samples(studio.dataset.n_points if min_samples == "every point" else min_samples)
    _, clusters, noise = eps_steps(state.curve(), state.curve().eps_range())
    assert (clusters[0], noise[0]) == (0, studio.dataset.n_points)
    assert (clusters[-1], noise[-1]) == (1, 0)


def test_the_k_distance_curve_leaves_out_zeros_which_its_log_axis_cannot_show():
    from dpstudio.app.dbscan_plots import CURVE_POINTS, k_distance_points

    ranks, distances = k_distance_points(np.array([5.0, 3.0, 3.0, 1.0, 0.0, 0.0]))
    np.testing.assert_array_equal(ranks, [0, 1, 2, 3])
    np.testing.assert_array_equal(distances, [5.0, 3.0, 3.0, 1.0])
    assert [a.size for a in k_distance_points(np.zeros(10))] == [0, 0]  # min_samples 1: nothing to draw
    ranks, distances = k_distance_points(np.linspace(10.0, 0.0, 10 * CURVE_POINTS))
    assert ranks.size == CURVE_POINTS and ranks[0] == 0 and distances[-1] > 0 and ranks[-1] == 10 * CURVE_POINTS - 2


def test_the_k_distance_axis_names_its_neighbour_in_english(studio):
    from dpstudio.app.dbscan_plots import DBSCANPlots, ordinal

    assert [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 23, 101, 111)] == [
        "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "23rd", "101st", "111th"]  # fmt: skip
    studio.set_method("dbscan")
    plots = DBSCANPlots(studio.dbscan)
    studio.dbscan.set_min_samples(2)
    label = plots._k_distance(2, studio.dataset).vdims[0].label
    assert label == "distance to the 2nd nearest"  # not "2-th"
    plots.close()


def test_an_eps_far_outside_the_curves_is_drawn_on_them(studio):
    """An eps far past either end of the curves widens what they and the slider cover, so its marker shows; an eps
    back inside keeps the range (no slider re-ranged under the mouse), but one typed back gives the curves' own range
    again (it stayed thirty decades wide after 1e-30); a new min_samples starts afresh."""
    from dpstudio.app.dbscan_plots import DBSCANPlots

    studio.set_method("dbscan")
    state = studio.dbscan
    plots = DBSCANPlots(state)
    natural = state.curve().eps_range()
    assert state.eps_view == natural
    for eps in (natural[1] * 1000, natural[0] / 1000):
        state.set_eps(eps)
        drawn = plots.noise_curve[()].dimension_values("ε")  # the DynamicMap's curve for the state's own view
        assert drawn.min() < eps < drawn.max()
        assert state.eps_view[0] < eps < state.eps_view[1]
    widened = state.eps_view
    inside = float(np.sqrt(np.prod(natural)))
    state.set_eps(inside)
    assert state.eps_view == widened
    state.set_eps(1e-30, typed=True)
    assert state.eps_view == (1e-30 / 1.5, natural[1])
    state.set_eps(inside * 1.01, typed=True)
    assert state.eps_view == natural
    state.set_eps(natural[1] * 1000)
    state.set_eps(inside)  # by the slider: the range stays widened
    assert state.eps_view != natural
    state.set_min_samples(7)
    assert state.eps_view == state.curve().eps_range()
    plots.close()


def test_hdbscan_parameters_and_a_hand_picked_selection(studio):
    studio.set_method("hdbscan")
    state, points = studio.hdbscan, studio.dataset.points.values
    state.set_parameters(min_cluster_size=20, selection="leaf")
    reference = HDBSCAN(min_cluster_size=20, min_samples=15, cluster_selection_method="leaf", backend="cpu").fit(points)
    np.testing.assert_array_equal(studio.labels(), reference.labels_)
    chosen, tree, n = state.model.selected_clusters_.copy(), state.model.condensed_tree_, studio.dataset.n_points
    # deselect the first cluster: its points become noise, the others keep their clusters
    state.toggle_cluster(int(chosen[0]))
    assert state.hand_picked and list(state.model.selected_clusters_) == list(chosen[1:])
    np.testing.assert_array_equal(studio.labels() < 0, (reference.labels_ < 0) | (reference.labels_ == 0))
    state.toggle_cluster(int(chosen[0]))  # clicked back: the rule's selection, and it says so
    assert not state.hand_picked and list(state.model.selected_clusters_) == list(chosen)
    state.toggle_cluster(int(chosen[0]))
    # the root's first child holds several chosen leaves: choosing it drops them
    top = int(np.sort(tree.child[(tree.parent == n) & (tree.child >= n)])[0])
    state.toggle_cluster(top)
    assert top in state.model.selected_clusters_
    np.testing.assert_array_equal(studio.labels(), HDBSCAN(min_cluster_size=20, min_samples=15, backend="cpu")
                                  .fit(points).set_clusters(state.model.selected_clusters_).labels_)  # fmt: skip
    with pytest.raises(ValueError, match="no cluster 5 in the condensed tree"):
        state.toggle_cluster(5)
    for size in (1, state.dataset.n_points + 1):  # larger than the data: no cluster, and an empty tree, said nowhere
        with pytest.raises(ValueError, match=f"min_cluster_size must be a whole number from 2 to the number of points .*, got {size}"):
            state.set_parameters(min_cluster_size=size)
    assert state.min_cluster_size == 20 and state.hand_picked and top in state.model.selected_clusters_
    state.set_parameters(selection="leaf")  # the rule again
    np.testing.assert_array_equal(studio.labels(), reference.labels_)
    assert not state.hand_picked


def test_colour_by_ground_truth_and_its_ari(studio, cache, tmp_path):
    truth = sample_data.truth("blobs")
    studio.set_colour_by("truth")
    np.testing.assert_array_equal(studio.labels(), truth)
    assert studio.truth_ari() == pytest.approx(adjusted_rand_score(truth, studio.active.labels()))
    studio.set_colour_by("clusters")
    path = tmp_path / "mine.csv"
    path.write_text("a,b\n" + "".join(f"{i % 13},{(i * 7) % 11}\n" for i in range(100)))
    studio.load(cache.file(path))
    assert studio.truth_ari() is None
    with pytest.raises(ValueError, match="No ground truth for this data set"):
        studio.set_colour_by("truth")
    assert studio.colour_by == "clusters"


def test_a_sweep_of_points_that_change_under_it_is_dropped_and_never_reads_them_halfway(studio, cache):
    """The page runs a sweep beside edits and stream batches, which change this session's own index in place."""
    studio.add_point(0.0, 0.0)  # this session's own points from here on
    edited = studio.dataset
    studio.dpc.run_sweep()  # nothing changed meanwhile: kept
    assert studio.dpc.sweep is not None and studio.dpc.sweep.labels.shape[1] == edited.n_points == 2301
    # swept on an index of its own, built from the points: the same clusterings as on the session's index
    np.testing.assert_array_equal(studio.dpc.sweep.labels, dc_sweep(edited.indexed, "cutoff", studio.dpc.sweep.dc).labels)
    studio.add_point(1.0, 1.0)
    assert studio.dpc.sweep is None

    def edit_halfway(phase, fraction):  # an edit (a stream batch, a click) lands in the middle of the sweep
        if fraction >= 0.5 and studio.dataset.n_points == 2302:
            studio.add_point(2.0, 2.0)

    # it failed: "could not broadcast input array from shape ...", or ran on to its end to be dropped then
    with pytest.raises(Unchanged, match="The dc sweep stopped: the data set or the kernel it was sweeping is no longer shown"):
        studio.dpc.run_sweep(edit_halfway)
    assert studio.dataset.n_points == 2303 and studio.dpc.sweep is None
    with pytest.raises(Unchanged, match="The dc sweep stopped"):
        studio.dpc.run_sweep(lambda phase, fraction: fraction >= 0.5 and studio.dataset.n_points == 2303 and studio.load(cache.sample("blobs")))
    assert studio.dataset.n_points == 2300 and studio.dpc.sweep is None  # the same sample loaded again: another data set


def test_a_sweep_that_ends_as_another_thread_shows_another_data_set_is_not_kept_for_it(studio, cache, monkeypatch):
    """The sweep's last check and the keeping of its result are one step against a load of another data set: a
    load that landed between them once got the old data set's sweep, and one whose model was in place before its
    publish failed the page's view of the sweep ("the clusterings label different numbers of points")."""
    session, moons = studio.dpc, cache.sample("moons")
    frames = []
    session.param.watch(lambda event: frames.append(session.sweep_frame()), "sweep")  # as the page's sweep plot
    swept, loaded = threading.Event(), threading.Event()
    sweep_of_blobs = dpstudio.app.state.dc_sweep

    def sweep_to_its_end(*args):
        result = sweep_of_blobs(*args)
        swept.set()
        return result

    def load_moons() -> None:
        studio.load(moons)
        loaded.set()

    loader = threading.Thread(target=load_moons)
    checked = session._sweeps

    def last_check_then_a_load(dataset, kernel):
        still = checked(dataset, kernel)
        if swept.is_set() and not loader.is_alive() and not loaded.is_set():
            loader.start()
            loaded.wait(1.0)  # the load's publish waits for the sweep's step to end (it ran on through here before)
        return still

    monkeypatch.setattr(dpstudio.app.state, "dc_sweep", sweep_to_its_end)
    monkeypatch.setattr(session, "_sweeps", last_check_then_a_load)
    session.run_sweep()
    loader.join()
    assert loaded.is_set() and studio.dataset is moons and session.sweep is None
    assert len(frames) == 2 and frames[0] is not None and frames[1] is None  # kept for blobs, then dropped by the load


def test_the_pinned_name_says_the_halo_is_noise_and_an_edited_sample_why_it_has_no_truth(studio, cache):
    studio.load(cache.sample("noisy"))
    studio.dpc.set_halo(True)
    studio.pin()
    assert studio.pinned.name.endswith("clusters, halo as noise") and (studio.pinned.labels == -1).any()
    studio.add_point(0.0, 0.0)
    with pytest.raises(ValueError, match="No ground truth for the edited points: choose noisy again for its own"):
        studio.set_colour_by("truth")


def test_a_set_eps_is_kept_through_edits_and_a_new_data_set_starts_at_its_knee(studio, cache):
    studio.set_method("dbscan")
    knee = studio.dbscan.eps
    studio.dbscan.set_eps(0.25)
    studio.dbscan.set_min_samples(8)
    studio.set_method("dpc")
    studio.add_point(0.0, 0.0)
    studio.set_method("dbscan")
    assert (studio.dbscan.eps, studio.dbscan.min_samples) == (0.25, 8)  # ε went back to the knee, min_samples stayed
    reference = DBSCAN(eps=0.25, min_samples=8, backend="cpu").fit(studio.dataset.points.values)
    np.testing.assert_array_equal(studio.labels(), reference.labels_)
    studio.set_method("dpc")
    studio.undo_edit()
    studio.set_method("dbscan")
    assert studio.dbscan.eps == 0.25
    studio.set_method("dpc")  # loads while DBSCAN is not shown: its ε came back with blobs from the cache
    studio.load(cache.sample("moons"))
    studio.load(cache.sample("blobs"))  # another data set and back: each at its own knee, as first shown
    studio.set_method("dbscan")
    assert studio.dbscan.eps == DBSCAN(eps=None, min_samples=8, backend="cpu").fit(studio.dataset.points.values).eps_ != 0.25
    assert knee != studio.dbscan.eps  # (the knee of min_samples 8, not of 5)


def test_a_data_set_loaded_after_dc_was_set_directly_takes_the_sessions_first_rule(cache):
    studio = Studio(dc_percent=5.0)
    studio.load(cache.sample("blobs"))
    studio.dpc.set_dc(0.3)
    assert studio.dpc.dc_percent is None
    studio.load(cache.sample("moons"))  # it took the 2% rule, not the server's --dc-percent
    assert studio.dpc.dc_percent == 5.0
    assert studio.dpc.dc == DensityPeaks(dc_percent=5.0, backend="cpu").fit(studio.dataset.points.values).dc_


def test_pinned_clustering_is_compared_across_methods(studio, cache):
    studio.pin()
    pinned = studio.pinned
    assert pinned.name.startswith("DPC dc=") and studio.comparison()[0] == pytest.approx(1.0)
    studio.set_method("dbscan")
    ari, table = studio.comparison()
    assert ari == pytest.approx(adjusted_rand_score(pinned.labels, studio.labels()))
    assert table.iloc[:, 1:].to_numpy().sum() == studio.dataset.n_points
    studio.load(cache.sample("moons"))
    assert studio.pinned is None and studio.comparison() is None  # another data set's labels mean nothing here


def test_ari_and_contingency_match_scikit_learn(rng):
    for _ in range(5):
        a, b = rng.integers(-1, rng.integers(1, 30), 500), rng.integers(-1, rng.integers(1, 30), 500)
        assert adjusted_rand_index(a, b) == pytest.approx(adjusted_rand_score(a, b))
        table = contingency(a, b, "a", "b")
        assert table.iloc[:, 1:].to_numpy().sum() == 500 and len(table) <= TABLE_CLUSTERS + 1
    assert adjusted_rand_index(np.zeros(10), np.zeros(10)) == 1.0
    with pytest.raises(ValueError, match="different numbers of points"):
        adjusted_rand_index(np.zeros(3), np.zeros(4))


def test_the_dc_sweep_does_not_depend_on_the_order_of_dc_values(studio):
    indexed = studio.dataset.indexed
    dcs = sweep_dcs(indexed, 8)
    forward = dc_sweep(indexed, "cutoff", dcs)
    studio.dpc.set_dc(float(dcs[5]))  # the user visited another dc first
    backward = dc_sweep(indexed, "cutoff", dcs[::-1])
    for name in ("dc", "clusters", "halo_fraction", "labels", "neighbour_ari"):
        np.testing.assert_array_equal(getattr(forward, name), getattr(backward, name))
    assert np.all(np.diff(forward.dc) > 0) and forward.labels.shape == (8, indexed.n_points)
    low, high = (indexed.dc_for_percent(p) for p in (0.1, 10.0))
    assert dcs[0] == pytest.approx(low) and dcs[-1] == pytest.approx(high)


def test_each_dc_of_the_sweep_is_clustered_by_the_gamma_rule_at_that_dc(cache):
    """The sweep took the automatic clusters, whose kNN density does not depend on dc: its curves were flat on
    every data set (digits: 12 clusters at every dc)."""
    indexed = cache.sample("digits").indexed
    dcs = sweep_dcs(indexed, 6)
    sweep = dc_sweep(indexed, "cutoff", dcs)
    points = indexed.backend.to_numpy(indexed.points)
    for i in (0, 5):
        fresh = DensityPeaks(dc=float(dcs[i]), suggest="gamma", backend="cpu").fit(points)
        np.testing.assert_array_equal(sweep.labels[i], fresh.labels_)
        assert sweep.clusters[i] == len(fresh.centers_)
    assert len(set(sweep.clusters.tolist())) > 1  # digits' count changes with dc


def test_the_sweep_runs_on_the_session_and_compares_with_its_clustering(studio, cache):
    revision = studio.dpc.revision
    studio.dpc.run_sweep()
    frame = studio.dpc.sweep_frame()
    assert len(frame) == 32 and studio.dpc.revision == revision  # the clustering shown did not change
    at_rule = frame.iloc[(frame["dc"] - studio.dpc.dc).abs().argmin()]
    fresh = DensityPeaks(dc=float(at_rule["dc"]), suggest="gamma", backend="cpu").fit(studio.dataset.points.values)
    assert at_rule["ari"] == pytest.approx(adjusted_rand_score(fresh.labels_, studio.labels()))  # against the labels shown
    assert (at_rule["clusters"], at_rule["halo"]) == (len(fresh.centers_), pytest.approx(fresh.halo_.mean()))
    pn.extension(notifications=False)  # as the server does
    plot = SweepPlot(studio.dpc)
    figures = [hv.renderer("bokeh").get_plot(curve).state for curve in plot.curves]
    assert [figure.yaxis[0].ticker.min_interval for figure in figures] == [1, 0, 0]  # clusters tick in whole steps
    # the wheel scrolls the page over them until their wheel zoom is chosen (HoloViews made it active after the hook)
    assert [figure.toolbar.active_scroll for figure in figures] == [None] * 3
    assert frame["ari"].min() > 0.9  # the blobs' clusterings nearly alike: the ARI axis read 0 to 2 at 1 everywhere
    assert (figures[2].y_range.start, figures[2].y_range.end) == (-0.05, 1.05)
    assert figures[1].y_range.start == 0  # the halo fraction's axis: it ran -1 to 1 when every fraction was 0
    first = plot._frame()
    studio.dpc.run_sweep()  # again: the plot's frame is made for the new sweep (comparing the two sweeps raised)
    pd.testing.assert_frame_equal(plot._frame(), first)
    # with the plot watching (its watcher took one event, and a batched update sends one per parameter): a dc
    # change keeps the sweep, a kernel change, an edit and a load drop it, and the studio follows each
    studio.dpc.set_dc(studio.dpc.dc * 1.1)
    assert studio.dpc.sweep is not None
    studio.dpc.set_dc(kernel="gaussian")
    assert studio.dpc.sweep is None  # it was for the cut-off kernel
    studio.dpc.run_sweep()
    studio.add_point(0.0, 0.0)
    assert studio.dpc.sweep is None and studio.dataset.n_points == studio.dpc.dataset.n_points == 2301
    studio.dpc.run_sweep()
    studio.load(cache.sample("moons"))
    assert studio.dpc.sweep is None and studio.dataset.name == studio.dpc.dataset.name == "moons"
    plot.close()


def test_plateaus_are_runs_of_alike_clusterings():
    clusters = np.array([9, 5, 5, 5, 5, 3, 3, 2, 2, 2])
    alike = np.array([0.1, 0.99, 0.99, 0.97, 0.5, 0.99, 0.2, 0.99, 0.96])
    np.testing.assert_array_equal(plateaus(clusters, alike), [-1, 0, 0, 0, 0, -1, -1, 1, 1, 1])
    alike[2] = 0.5  # 5, 5 | 5, 5: two runs of two, too short
    np.testing.assert_array_equal(plateaus(clusters, alike), [-1, -1, -1, -1, -1, -1, -1, 0, 0, 0])


def test_pointing_finds_the_point_under_the_mouse_on_either_plot(studio):
    x, y = studio.plot_coordinates("view")
    studio.point_at("view", float(x[17]) + 1e-4, float(y[17]))
    assert studio.pointed == 17
    facts = studio.point_facts(17)
    model = studio.dpc.model
    assert facts == {"row": 17, "label": int(model.labels_[17]), "rho": model.rho_[17], "delta": model.delta_[17],
                     "parent": int(model.parent_[17])}  # fmt: skip
    gx, gy = studio.plot_coordinates("graph")
    densest = int(np.argmax(gx))
    studio.point_at("graph", float(gx[densest]), float(gy[densest]))
    assert studio.pointed == densest and studio.point_facts(densest)["parent"] is None
    studio.set_method("dbscan")  # its cluster beside DPC's rho and delta read as one method's facts
    core = studio.dbscan.core()
    assert studio.point_facts(densest) == {"row": densest, "label": studio.label_of(densest), "core": bool(core[densest])}
    border = int(np.flatnonzero(~core & (studio.labels() >= 0))[0])
    assert studio.point_facts(border)["core"] is False
    studio.set_method("dpc")
    studio.point_at("view", float(x.max()) + 100 * np.ptp(x), float(y.max()))  # far from every point
    assert studio.pointed is None


def test_a_lasso_in_the_view_selects_the_points_inside_and_a_click_clears(studio):
    x, y = studio.plot_coordinates("view")
    x0, x1, y0, y1 = np.quantile(x, 0.2), np.quantile(x, 0.6), np.quantile(y, 0.3), np.quantile(y, 0.7)
    studio.select_in_view([(x0, y0), (x1, y0), (x1, y1), (x0, y1)])
    np.testing.assert_array_equal(studio.selected, (x > x0) & (x < x1) & (y > y0) & (y < y1))
    lassoed = studio.selected
    far = x.max() + 10
    with pytest.raises(Unchanged, match="Nothing selected: the lasso holds no point of the 2-D view"):
        studio.select_in_view([(far, y0), (far + 1, y0), (far + 1, y1)])  # (every point was drawn larger)
    assert studio.selected is lassoed  # nothing changed
    studio.select_in_view([(x0, y0)])
    assert studio.selected is None
    with pytest.raises(ValueError, match="finite"):
        studio.select_in_view([(x0, y0), (np.nan, y0), (x1, y1)])


def test_a_t_sne_view_is_computed_once_per_data_set_and_shared(studio, cache):
    studio.load(cache.sample("moons"))
    studio.show_embedding()
    assert (studio.x_axis, studio.y_axis) == ("t-SNE 1", "t-SNE 2")
    embedding = studio.dataset.embeddings["t-SNE"]
    assert embedding.shape == (studio.dataset.n_points, 2) and np.isfinite(embedding).all()
    np.testing.assert_array_equal(studio.dataset.axis_values("t-SNE 2"), embedding[:, 1])
    other = Studio()
    other.load(cache.sample("moons"))  # another session on the same data set: the view is there already
    assert "t-SNE 1" in other.param.x_axis.objects
    other.show_embedding()
    assert other.dataset.embeddings["t-SNE"] is embedding
    other.close()


def test_a_dragged_eps_is_set_once_and_exactly(studio):
    """The slider's eps is kept to the last digit: the typed-value box shows it rounded, and writing that rounded
    value back must not set eps a second time (a second relabel and redraw per drag, at a slightly other eps)."""
    from dpstudio.app.dbscan_plots import DBSCANPlots
    from dpstudio.app.method_controls import DBSCANControls

    studio.set_method("dbscan")
    state, calls = studio.dbscan, []

    def follow(label, action, value):
        calls.append(value)
        action(value)

    controls = DBSCANControls(state, DBSCANPlots(state), start=lambda *a: pytest.fail("not a long action"), follow=follow)
    controls.show()
    power = 10 ** np.ceil(controls.eps.start)  # a power of 10 on the slider: its 6 digits round 1.0000049 by 5e-6
    assert power < 10**controls.eps.end
    log_eps = float(np.log10(power * (1 + 4.9e-6)))
    controls.eps.value = log_eps
    assert calls == [10**log_eps] and state.eps == 10**log_eps
    assert controls.eps_typed.value == float(f"{state.eps:.6g}") != state.eps
    controls.eps_typed.value = 0.5  # a typed value is set as typed
    assert calls[-1] == 0.5 and state.eps == 0.5
    controls.eps_typed.value = None  # emptied: the box shows the eps in use (the browser wrote "NaN")
    assert controls.eps_typed.value == 0.5 and len(calls) == 2


@pytest.mark.parametrize("method", ["dbscan", "hdbscan"])
def test_min_samples_set_is_kept_across_a_data_set_of_fewer_points(studio, cache, method):
    """A data set of fewer points than min_samples uses all of them; the next data set the value set again (it
    stuck at the small file's N: the same steps gave another clustering after a visit to a tiny file)."""
    studio.set_method(method)
    state = studio.active
    if method == "dbscan":
        state.set_min_samples(7)
    else:
        state.set_parameters(min_samples=7, min_cluster_size=20)
    tiny = cache.upload("tiny.csv", b"x,y\n0,0\n1,1\n2,0\n", 2**20)
    studio.load(tiny)
    assert state.min_samples == 3
    assert method == "dbscan" or state.min_cluster_size == 3  # as min_samples
    saved = read_session(session_json(studio))  # in use, so a session of it loads back (a size of 2000 on 1,400 did not)
    studio.load(cache.sample("blobs"))
    assert state.min_samples == 7 and (method == "dbscan" or state.min_cluster_size == 20)
    wrong = state.set_min_samples if method == "dbscan" else (lambda value: state.set_parameters(min_samples=value))
    with pytest.raises(ValueError, match="min_samples must be"):
        wrong(0)
    studio.load(cache.sample("moons"))
    assert state.min_samples == 7  # a refused value is not kept
    studio.load(tiny)  # (an upload's session loads on its file)
    apply_session(studio, saved, cache)
    assert studio.dataset is tiny and state.min_samples == 3


def test_one_points_label_is_its_entry_of_the_labels_whatever_is_shown(studio, rng):
    """The pointed point's label, read at every relabel without making all N labels, is what the view colours."""
    points = rng.integers(0, studio.dataset.n_points, 40)

    def agree():
        labels = studio.labels()
        assert [studio.label_of(int(i)) for i in points] == labels[points].tolist()

    studio.dpc.pick_count(8)  # clusters that touch: a halo
    studio.dpc.set_halo(True)
    assert (studio.labels() == -1).any()  # the halo points, shown as -1
    agree()
    studio.set_colour_by("truth")
    agree()
    studio.set_colour_by("clusters")
    for method in ("dbscan", "hdbscan"):
        studio.set_method(method)
        agree()
