"""Points added by a click and deleted by a lasso on the 2-D view, without a browser: the session's result equals
a fresh fit on the edited points, and the shared data set (other sessions') stays as it was."""

from __future__ import annotations

import numpy as np
import pytest

from dpstudio.app.reproduce import apply_session, command_line, read_session, session_json
from dpstudio.app.studio import Studio
from dpstudio.engine import DataError, DensityPeaks


@pytest.fixture
def studio(cache):
    studio = Studio()
    studio.load(cache.sample("blobs"))
    return studio


def assert_fresh(studio, picked_rows=None):
    """The session's DPC equals a fit from scratch on the points it shows, with its dc and, where centers were
    picked, those of the input rows ``picked_rows`` that are still shown (the automatic clusters otherwise)."""
    model = studio.dpc.model
    fresh = DensityPeaks(dc=model.dc_, suggest="gamma", backend="cpu").fit(studio.dataset.points.values)
    chosen = None
    if picked_rows is not None:
        rows = studio.dataset.points.rows
        chosen = np.searchsorted(rows, picked_rows[np.isin(picked_rows, rows)])
        np.testing.assert_array_equal(model.chosen_centers_, chosen)
        fresh.assign(centers=chosen)
    for name in ("rho_", "delta_", "parent_"):
        np.testing.assert_array_equal(getattr(model, name), getattr(fresh, name), err_msg=name)
    if chosen is not None:
        np.testing.assert_array_equal(model.labels_, fresh.labels_)


def square_around(x, y, half):
    return [(x - half, y - half), (x + half, y - half), (x + half, y + half), (x - half, y + half)]


def test_a_click_adds_a_point_and_a_lasso_deletes_points(cache, studio):
    shared = studio.dataset
    shared_rho = studio.dpc.model.rho_.copy()
    studio.dpc.pick_count(5)
    picked_rows = shared.points.rows[studio.dpc.model.chosen_centers_]
    n = shared.n_points
    studio.add_point(0.5, -0.25)
    edited = studio.dataset
    assert edited.n_points == n + 1 and edited.base is shared and edited.name == "blobs (edited)"
    np.testing.assert_array_equal(edited.points.values[-1], np.float32([0.5, -0.25]))
    assert edited.points.rows[-1] == shared.points.rows.max() + 1  # the new point's row counts on past the file
    assert len(studio.dpc.centers) == 5 and studio.dpc.centers_picked  # the picks stay picked
    assert_fresh(studio, picked_rows)
    x, y = studio.plot_coordinates("view")
    gone = studio.dpc.model.chosen_centers_[1]  # a picked center and the points around it: the others renumbered
    inside = square_around(float(x[gone]), float(y[gone]), 0.4)
    doomed = studio.dataset.points.rows[(np.abs(x - x[gone]) < 0.4) & (np.abs(y - y[gone]) < 0.4)]
    studio.delete_in_view(inside)
    assert studio.dataset.n_points == n + 1 - doomed.size and not np.isin(doomed, studio.dataset.points.rows).any()
    assert_fresh(studio, picked_rows)
    assert len(studio.dpc.labels_table()) == studio.dataset.n_points  # the download follows the edits
    assert "points were added or deleted on the page" in command_line(studio)
    # the shared data set, and a session opening on it, never saw the edits
    assert shared.n_points == n and shared.indexed.n_points == n
    other = Studio()
    other.load(cache.sample("blobs"))
    assert other.dataset is shared
    np.testing.assert_array_equal(other.dpc.model.rho_, shared_rho)


def test_edits_of_the_automatic_clusters_and_other_methods(studio):
    studio.add_point(1.0, 1.0)
    assert not studio.dpc.centers_picked  # the automatic clusters, computed again for the new points
    assert_fresh(studio)
    studio.set_method("dbscan")  # the other methods work on the edited points
    assert studio.dbscan.model.indexed_.n_points == studio.dataset.n_points
    with pytest.raises(ValueError, match="while DPC is shown"):
        studio.add_point(0.0, 0.0)
    studio.set_method("dpc")
    studio.add_point(0.0, 0.0)  # a second edit goes on with the same private copy
    assert studio.dataset.base.base is None and studio.dataset.n_points == studio.dataset.base.n_points + 2
    for method in ("dbscan", "hdbscan"):  # fitted on that copy before the second edit: fitted again on its points
        studio.set_method(method)
        assert studio.labels().shape == (studio.dataset.n_points,)


def test_back_to_the_automatic_clusters_after_an_edit_clusters_the_edited_points(studio):
    """Picks, an added point, then Automatic clusters: the clustering cached before the edit came back (2300
    labels for 2301 points, and centers read past the end of an array)."""
    studio.dpc.pick_count(3)
    studio.add_point(0.5, -0.25)
    studio.dpc.suggest()
    assert studio.labels().shape == (2301,)
    assert_fresh(studio)
    fresh = DensityPeaks(dc=studio.dpc.model.dc_, backend="cpu").fit(studio.dataset.points.values)
    np.testing.assert_array_equal(studio.dpc.model.centers_, fresh.centers_)


def test_wrong_edits_say_why_and_change_nothing(cache, studio):
    before = studio.dataset
    studio.param.update(x_axis="PC1", y_axis="PC2")
    with pytest.raises(ValueError, match="shows the data's two features"):
        studio.add_point(0.0, 0.0)
    with pytest.raises(ValueError, match="Nothing deleted: the lasso holds no point"):
        studio.delete_in_view(square_around(1e6, 1e6, 1.0))
    with pytest.raises(ValueError, match="draw a lasso"):
        studio.delete_in_view([(0.0, 0.0)])
    x, y = studio.plot_coordinates("view")
    everything = square_around(0.0, 0.0, 10 * float(max(np.ptp(x), np.ptp(y))))
    with pytest.raises(DataError, match="fewer than 2"):
        studio.delete_in_view(everything)
    assert studio.dataset is before and studio.dpc.model.indexed_ is before.indexed
    studio.param.update(x_axis="x", y_axis="y")
    studio.add_point(0.0, 0.0)
    with pytest.raises(DataError, match="choose the data set in the list again"):
        cache.features(studio.dataset, ["x"], standardize=False)


def test_a_point_added_after_a_left_out_last_row_takes_a_row_of_its_own(cache, tmp_path):
    """Added points were numbered from the last kept row: after a file whose last row is NaN, an added point took
    that row's number, and the download listed the row twice (once empty, for the NaN)."""
    rows = [f"{i % 7 * 0.3},{i // 7 * 0.3}" for i in range(40)] + ["nan,1"]
    (tmp_path / "tail.csv").write_text("u,v\n" + "\n".join(rows) + "\n")
    studio = Studio()
    studio.load(cache.file(tmp_path / "tail.csv"))
    studio.add_point(5.0, 5.0)
    assert studio.dataset.points.rows[-1] == 41 and studio.dataset.added.tolist() == [False] * 40 + [True]
    table = studio.dpc.labels_table()
    assert table["index"].tolist() == list(range(42)) and table.loc[40, "reason"] == "NaN or infinite value"
    fresh = Studio()  # a saved session gives the same rows back
    fresh.load(cache.file(tmp_path / "tail.csv"))
    apply_session(fresh, read_session(session_json(studio)), cache)
    np.testing.assert_array_equal(fresh.dataset.points.rows, studio.dataset.points.rows)
    np.testing.assert_array_equal(fresh.dataset.points.values, studio.dataset.points.values)
    studio.close()
    fresh.close()


def test_one_feature_says_why_a_click_adds_no_point(cache, tmp_path):
    (tmp_path / "one.csv").write_text("t\n" + "\n".join(str(i % 9) for i in range(30)) + "\n")
    studio = Studio()
    studio.load(cache.file(tmp_path / "one.csv"))
    with pytest.raises(ValueError, match="data of two features.*this data set has 1"):
        studio.add_point(1.0, 3.0)
    studio.close()


def test_undo_takes_edits_back_one_by_one_to_the_data_set_as_loaded(cache, studio):
    """A stray lasso deleted points for good: only choosing the data set again gave them back, with every other
    edit lost."""
    blobs = cache.sample("blobs")
    studio.dpc.pick_count(3)
    picked, dc_percent = studio.dpc.centers.copy(), studio.dpc.dc_percent
    studio.add_point(0.5, -0.25)
    after_add = studio.labels().copy()
    studio.delete_in_view(square_around(0.0, 0.0, 1.0))
    assert studio.dataset.n_points < 2301 and studio.can_undo_edit
    studio.undo_edit()
    assert studio.dataset.n_points == 2301 and studio.dataset.base is blobs
    np.testing.assert_array_equal(studio.labels(), after_add)
    assert_fresh(studio, picked_rows=blobs.points.rows[picked])
    studio.undo_edit()
    assert studio.dataset is blobs and not studio.can_undo_edit
    assert studio.dpc.dc_percent == dc_percent and studio.dpc.centers_picked
    np.testing.assert_array_equal(studio.dpc.centers, picked)
    np.testing.assert_array_equal(studio.labels(), DensityPeaks(dc=studio.dpc.dc, backend="cpu").fit(blobs.indexed).assign(centers=picked).labels_)
    studio.dpc.undo()  # the centers' own history comes back with the points: back to the automatic clusters
    assert not studio.dpc.centers_picked
    with pytest.raises(ValueError, match="no edit to undo"):
        studio.undo_edit()


def test_edits_undone_after_more_edits_are_of_their_own_points_and_a_stream_batch_leaves_none(studio):
    for x in (0.5, 1.5, 2.5):  # the later edits change the session's own index in place: the kept ones are copies
        studio.add_point(x, -0.25)
    studio.undo_edit()
    assert studio.dataset.n_points == 2302
    assert_fresh(studio)
    studio.add_point(3.0, 3.0)
    studio.edit(lambda model: model.partial_fit(np.array([[4.0, 4.0]])))  # a stream's batch: no undo across it
    assert not studio.can_undo_edit


def test_an_edit_undone_after_a_kernel_change_shows_the_kernel_it_was_made_with(studio):
    """Undo gave back the cut-off model while the page, a saved session and the copied command said Gaussian."""
    studio.add_point(0.5, -0.25)
    studio.dpc.set_dc(kernel="gaussian")
    studio.undo_edit()
    assert studio.dpc.kernel == studio.dpc.model.kernel_ == "cutoff"
    assert "--kernel gaussian" not in command_line(studio)
