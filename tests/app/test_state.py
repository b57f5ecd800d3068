"""The app's session state without a browser: loading, choosing centers, dc changes, undo, errors, sharing."""

from __future__ import annotations

import gzip
import io
import tempfile

import numpy as np
import pandas as pd
import pytest

from dpstudio import sample_data
from dpstudio.app.datasets import ROW_AXIS, DatasetCache
from dpstudio.app.state import CONFIRM_ABOVE, ClusteringSession, Picks, follow_picks
from dpstudio.app.studio import Studio
from dpstudio.engine import DataError, DensityPeaks, to_points
from dpstudio.engine.centers import graph_coordinates


@pytest.fixture
def cache():
    return DatasetCache(max_datasets=2, backend="cpu")


@pytest.fixture
def session(cache):
    session = ClusteringSession()
    session.load(cache.sample("blobs"))
    return session


def top_right_lasso(session, k):
    """A polygon on the decision graph around exactly the k points of largest gamma (they stand apart in blobs)."""
    model = session.model
    peaks = np.argsort(-model.gamma_, kind="stable")[:k]
    rho, delta = model.rho_[peaks], model.delta_[peaks]
    r0, r1, d0, d1 = rho.min() * 0.99, rho.max() * 1.01, delta.min() * 0.99, delta.max() * 1.01
    return np.array([(r0, d0), (r1, d0), (r1, d1), (r0, d1)]), peaks


def test_load_suggests_centers_like_the_engine(session):
    reference = DensityPeaks(backend="cpu").fit(sample_data.path("blobs"))
    np.testing.assert_array_equal(session.centers, reference.centers_)
    assert session.dc == reference.dc_ and session.dc_percent == 2.0
    table = session.cluster_table()
    assert table["size"].sum() == 2300 and list(table["cluster"]) == list(range(len(reference.centers_)))


def test_lasso_becomes_the_centers_and_relabels_every_point(session):
    polygon, peaks = top_right_lasso(session, 2)
    revision = session.revision
    session.select_polygon(polygon)
    reference = DensityPeaks(backend="cpu").fit(sample_data.path("blobs")).assign(polygon=polygon)
    np.testing.assert_array_equal(session.centers, reference.centers_)
    assert set(peaks) <= set(session.centers) and session.centers_picked
    np.testing.assert_array_equal(session.labels(), reference.labels_)
    assert session.revision > revision and len(session.cluster_table()) == len(reference.centers_)


def test_box_selection_is_the_same_as_its_polygon(session):
    polygon, _ = top_right_lasso(session, 3)
    session.select_box((polygon[0, 0], polygon[0, 1], polygon[2, 0], polygon[2, 1]))
    by_box = session.centers.copy()
    session.select_polygon(polygon)
    np.testing.assert_array_equal(session.centers, by_box)


def test_a_click_sets_the_papers_rectangle_on_linear_and_log_axes(session):
    model = session.model
    rho, delta = model.rho_, model.delta_
    second = np.sort(delta)[-4]  # the corner just below the fourth largest delta, at half the largest rho
    session.select_corner(rho.max() / 2, second)
    inside = np.flatnonzero((rho >= rho.max() / 2) & (delta >= second))
    assert set(session.centers) == set(inside) | {int(np.argmax(rho))} and session.corner == (rho.max() / 2, second)
    session.set_log_axes(True)
    session.select_corner(np.log10(rho.max() / 3), np.log10(second))  # a click on log axes is a log10 position
    assert set(session.centers) == set(np.flatnonzero((rho >= rho.max() / 3) & (delta >= second))) | {int(np.argmax(rho))}
    session.set_dc(session.dc * 1.2)
    assert session.corner is None  # the rectangle belongs to the dc it was drawn at
    session.undo()
    with pytest.raises(ValueError, match="Nothing selected: the rectangle holds no point"):
        session.select_corner(10 * np.log10(rho.max() + 1), 0.0)


def test_a_lasso_on_log_axes_selects_what_the_log_graph_shows(session):
    model = session.model
    x, y = graph_coordinates(model.rho_, model.delta_, log_axes=True)
    x_cut, y_cut = np.quantile(x, 0.5), np.quantile(y, 0.995)
    polygon = np.array([(x_cut, y_cut), (x.max() + 1, y_cut), (x.max() + 1, y.max() + 1), (x_cut, y.max() + 1)])
    session.set_log_axes(True)
    session.select_polygon(polygon)
    inside = np.flatnonzero((x > x_cut) & (y > y_cut))
    assert inside.size > 3 and set(session.centers) == set(inside) | {int(np.argmax(model.rho_))}
    assert graph_coordinates(np.array([0.0, 4.0]), np.array([1.0, 1.0]), log_axes=True)[0].tolist() == [np.log10(2.0), np.log10(4.0)]


def test_dc_change_reuses_the_index_and_follows_picked_centers(session, monkeypatch):
    dataset = session.dataset
    index = dataset.indexed.index
    monkeypatch.setattr(dataset.indexed.backend, "build_vptree", lambda *a, **k: pytest.fail("index rebuilt"))
    session.pick_count(3)
    picks = session._picks
    session.set_dc(session.dc * 1.5)
    assert session.model.index_ is index and session.dc_percent is None and session.centers_picked
    np.testing.assert_array_equal(session.centers[:-1] if len(session.centers) > 3 else session.centers,
                                  follow_picks(picks, session.dc, session.model.parent_, session.model.delta_))  # fmt: skip
    monkeypatch.undo()  # the reference below builds its own index
    reference = DensityPeaks(dc=session.dc, backend="cpu").fit(dataset.points.values).assign(centers=session.centers)
    np.testing.assert_array_equal(session.labels(), reference.labels_)
    np.testing.assert_array_equal(session.model.rho_, reference.rho_)


def test_follow_picks_climbs_each_chain_to_its_first_peak():
    #          0     1     2     3     4     5     6
    parent = np.array([-1, 0, 1, 2, 1, 4, 5])
    delta = np.array([9.0, 5.0, 0.1, 0.2, 0.3, 3.0, 0.1])
    picks = Picks(np.array([3, 6, 2]), "cutoff", dc=1.0, delta_min=4.0)
    # at dc 2: peaks are delta >= min(max(2, 1), 4) = 2: 3 -> 2 -> 1; 6 -> 5; 2 -> 1 (the same peak as 3's)
    np.testing.assert_array_equal(follow_picks(picks, 2.0, parent, delta), [1, 5])
    # at dc 4 the bound is 4: 5 (delta 3) is no peak any more, its chain goes on to 1
    np.testing.assert_array_equal(follow_picks(picks, 4.0, parent, delta), [1])
    # a pick below every bound climbs to the densest point, where every chain ends
    np.testing.assert_array_equal(follow_picks(Picks(np.array([6]), "cutoff", 1.0, 99.0), 50.0, parent, delta), [0])


def test_picked_centers_come_back_with_their_dc_and_never_keep_the_densest_point(session):
    polygon, peaks = top_right_lasso(session, 2)
    session.select_polygon(polygon)
    start = (session.dc, session.centers.copy(), session.model.labels_.copy())
    seen = {}
    for dc in (0.99, 2.08, 0.63, 0.99, 2.08, 0.63):
        session.set_dc(dc)
        model = session.model
        densest = int(np.argmax(model.parent_ < 0))
        picked_here = [c for c in session.centers if c != densest]
        # every followed pick is a peak there: nothing denser within max(dc, the picked dc)
        assert all(model.delta_[c] >= min(dc, model.delta_.max()) for c in picked_here)
        assert len(session.centers) <= 3  # two picks, plus the densest point if neither reached it
        if dc in seen:  # the same dc gives the same clustering again
            np.testing.assert_array_equal(session.centers, seen[dc])
        seen[dc] = session.centers.copy()
    session.set_dc(start[0])
    np.testing.assert_array_equal(session.centers, start[1])
    np.testing.assert_array_equal(session.model.labels_, start[2])
    assert sorted(np.bincount(session.model.labels_)) == [250, 2050]


def test_switching_data_sets_leaves_nothing_to_undo(cache):
    session = ClusteringSession()
    session.load(cache.sample("blobs"))
    session.pick_count(2)
    assert session.can_undo
    session.load(cache.sample("nested"))
    assert not session.can_undo
    centers = session.centers.copy()
    session.undo()
    np.testing.assert_array_equal(session.centers, centers)
    session.load(cache.sample("moons"))
    session.undo()  # blobs' center 1522 does not exist in moons' 1400 points
    assert not session.can_undo and session.centers.max() < 1400


def test_watchers_never_see_a_new_data_set_beside_the_old_ones_dc_or_centers(cache):
    """A load, a dc change and an edit publish in one update: a watcher of the data set or the percent rule saw the
    old data set's dc and centers (the dc slider kept a range around blobs' dc on moons; markers indexed blobs' rows
    in moons' 1,400 points)."""
    session = ClusteringSession()
    session.load(cache.sample("blobs"))
    session.set_dc(0.8)  # typed: the percent rule is off, so the next load turns it on again
    seen = []
    session.param.watch(lambda *events: seen.append((session.dataset.name, session.dc, int(session.centers.max()))),
                        ["dataset", "dc", "dc_percent", "centers"])
    session.load(cache.sample("moons"))
    expected_dc = DensityPeaks(dc_percent=2.0).fit(cache.sample("moons").indexed).dc_
    assert seen == [("moons", expected_dc, int(session.centers.max()))] and session.centers.max() < 1400
    session.set_dc(dc_percent=3.0)
    assert len(seen) == 2 and seen[1][1] == session.dc != expected_dc


def test_the_same_choice_again_is_no_undo_step(session):
    session.pick_count(2)
    revision = session.revision
    session.pick_count(2)
    session.suggest()
    session.suggest()
    assert session.revision == revision + 1  # only the suggest changed anything
    session.undo()
    session.undo()
    assert not session.can_undo and not session.centers_picked


def test_an_empty_lasso_says_so_and_keeps_the_centers(session):
    before = (session.centers.copy(), session.revision)
    far_away = [(-10, -10), (-9, -10), (-9, -9)]
    with pytest.raises(ValueError, match="Nothing selected: the lasso holds no point"):
        session.select_polygon(far_away)
    with pytest.raises(ValueError, match="polygon vertices must be finite"):
        session.select_polygon([(np.nan, 1), (2, 2), (3, 1)])
    np.testing.assert_array_equal(session.centers, before[0])
    assert session.revision == before[1] and not session.can_undo


def test_thousands_of_centers_wait_for_confirmation(session):
    before = session.centers.copy()
    session.pick_count(CONFIRM_ABOVE + 1)
    assert session.pending_centers == CONFIRM_ABOVE + 1
    np.testing.assert_array_equal(session.centers, before)
    session.cancel()
    assert session.pending_centers == 0 and not session.can_undo
    session.pick_count(CONFIRM_ABOVE + 1)
    session.confirm()
    assert session.pending_centers == 0 and len(session.centers) >= CONFIRM_ABOVE + 1
    session.undo()
    np.testing.assert_array_equal(session.centers, before)
    session.pick_count(CONFIRM_ABOVE)  # at the threshold: applied at once
    assert len(session.centers) >= CONFIRM_ABOVE and session.pending_centers == 0


def test_a_dc_below_every_distance_is_warned_about(session):
    assert session.notice == ""
    session.set_dc(1e-9)
    assert session.dc == 1e-9 and "every ρ is 0" in session.notice and "1e-9" in session.notice
    session.set_dc(dc_percent=2.0)
    assert session.notice == ""


def test_dc_change_re_suggests_when_centers_were_suggested(session):
    session.set_dc(dc_percent=1.0)
    reference = DensityPeaks(dc_percent=1.0, backend="cpu").fit(session.dataset.points.values)
    assert session.dc == reference.dc_ and session.dc_percent == 1.0
    np.testing.assert_array_equal(session.centers, reference.centers_)
    session.set_dc(kernel="gaussian")
    assert session.kernel == "gaussian" and session.dc == reference.dc_ and session.dc_percent == 1.0


def test_undo_and_clear(session):
    suggested = session.centers.copy()
    session.pick_count(2)
    session.clear()
    assert len(session.cluster_table()) == 1 and (session.labels() == 0).all()  # only the densest point
    session.undo()
    assert len(session.centers) == 2
    session.undo()
    np.testing.assert_array_equal(session.centers, suggested)
    assert not session.can_undo
    session.undo()  # nothing left: no change, no error
    np.testing.assert_array_equal(session.centers, suggested)


def test_a_failed_action_leaves_the_state_as_it_was(session):
    before = (session.dc, session.centers.copy(), session.revision, session.model.labels_.copy())
    with pytest.raises(ValueError, match="dc must be a finite positive number"):
        session.set_dc(-1.0)
    with pytest.raises(ValueError, match="the number of clusters \\(n_centers\\) must be a whole number from 1 to"):
        session.pick_count(0)
    assert session.dc == before[0] and session.revision == before[2]
    np.testing.assert_array_equal(session.centers, before[1])
    np.testing.assert_array_equal(session.model.labels_, before[3])


def test_halo_greys_points_and_counts_per_cluster(cache):
    session = ClusteringSession()
    session.load(cache.sample("noisy"))
    session.set_halo(True)
    halo = session.model.halo_
    assert halo.any(), "clusters in background noise have a halo"
    np.testing.assert_array_equal(session.labels(), np.where(halo, -1, session.model.labels_))
    assert session.cluster_table()["halo"].sum() == halo.sum()


def test_sessions_share_the_data_set_but_not_their_choices(cache):
    first, second = ClusteringSession(), ClusteringSession()
    first.load(cache.sample("blobs"))
    second.load(cache.sample("blobs"))
    assert first.dataset is second.dataset and first.model.index_ is second.model.index_
    assert second.timings["rho"] == 0.0  # computed once, for the first session
    second.pick_count(2)
    assert len(first.centers) == 5 and len(second.centers) == 2


def test_the_cache_is_bounded(cache):
    blobs = cache.sample("blobs")
    cache.sample("moons")
    cache.sample("nested")
    assert len(cache) == 2 and cache.sample("blobs") is not blobs


def test_uploads_are_checked_and_keyed_by_content_and_name(cache):
    """The same bytes uploaded under another name, by this visitor or another, were shown, saved and copied as a
    command under the first upload's name."""
    content = b"a,b\n" + b"".join(f"{i},{i % 7}\n".encode() for i in range(50))
    dataset = cache.upload("../../etc/mine.csv", content, max_bytes=2**20)
    assert dataset.name == "mine.csv" and dataset.n_points == 50
    assert cache.upload("mine.csv", content, max_bytes=2**20) is dataset  # the same file again: from the cache
    other = cache.upload("alpha.csv", content, max_bytes=2**20)
    assert other.name == "alpha.csv" and other is not dataset
    with pytest.raises(DataError, match="upload limit"):
        cache.upload("big.csv", content, max_bytes=100)
    with pytest.raises(DataError, match="unsupported file type '.xlsx'"):
        cache.upload("table.xlsx", content, max_bytes=2**20)
    with pytest.raises(DataError, match=r"column 'b' is not numeric: value 'x' at row 1 \(0-based\)"):
        cache.upload("bad.csv", b"a,b\n1,2\n3,x\n4,5\n", max_bytes=2**20)


def test_an_upload_too_large_for_float32_loads_standardized_as_the_message_advises(cache, rng):
    values = rng.normal(size=(60, 2)) * 1e30
    content = pd.DataFrame(values, columns=["a", "b"]).to_csv(index=False).encode()
    with pytest.raises(DataError, match="too large.*tick Standardize and load it again"):
        cache.upload("huge.csv", content, max_bytes=2**20)
    dataset = cache.upload("huge.csv", content, max_bytes=2**20, standardize=True)
    assert dataset.standardized and dataset.n_points == 60
    np.testing.assert_allclose(dataset.points.values.std(axis=0), 1, rtol=1e-5)


def test_a_small_parquet_file_that_expands_past_the_limit_is_refused_unread(cache):
    buffer = io.BytesIO()
    pd.DataFrame({"x": np.zeros(400_000), "y": np.zeros(400_000)}).to_parquet(buffer)  # a few KB compressed
    content = buffer.getvalue()
    assert len(content) < 2**16
    with pytest.raises(DataError, match="zeros.parquet expands to 400,000 rows x 2 columns; the limit is 32,768 values"):
        cache.upload("zeros.parquet", content, max_bytes=2**16)
    assert cache.upload("zeros.parquet", content, max_bytes=2**21).n_points == 400_000


def test_other_features_read_the_source_as_the_cli_does_and_are_cached(cache, tmp_path):
    rng = np.random.default_rng(5)
    table = pd.DataFrame({"id": np.arange(300) * 1000.0, "a": rng.normal(size=300), "b": rng.normal(size=300) * 50})
    table.loc[7, "a"] = np.nan  # a row left out whatever the features
    path = tmp_path / "with_id.csv"
    table.to_csv(path, index=False)
    full = cache.file(path)
    assert full.available == ("id", "a", "b") and not full.standardized
    chosen = cache.features(full, ["b", "a"], standardize=True)
    expected = to_points(path, ["b", "a"], standardize=True, drop_nonfinite=True)
    np.testing.assert_array_equal(chosen.points.values, expected.values)
    assert chosen.points.columns == ("b", "a") and chosen.standardized and chosen.available == full.available
    assert cache.features(chosen, ["b", "a"], standardize=True) is chosen
    assert cache.features(chosen, ["id", "a", "b"], standardize=False) is full  # back to the data set as loaded
    with pytest.raises(DataError, match="no numeric column named 'c'"):
        cache.features(full, ["a", "c"], standardize=False)
    with pytest.raises(DataError, match="choose at least one feature column"):
        cache.features(full, [], standardize=False)


def test_download_rows_point_back_to_the_input(cache, tmp_path):
    rows = [f"{i * 0.1},{(i * 7) % 5}" for i in range(40)]
    rows[3] = "nan,1"
    path = tmp_path / "with_nan.csv"
    path.write_text("u,v\n" + "\n".join(rows) + "\n")
    session = ClusteringSession()
    session.load(cache.file(path))
    table = session.labels_table()
    assert list(table["index"]) == list(range(40))  # one row per input row
    assert table["label"].isna().tolist() == [i == 3 for i in range(40)] and table.loc[3, "reason"] == "NaN or infinite value"
    assert session.dataset.points.dropped_rows.tolist() == [3]


def test_high_dimensional_data_opens_on_principal_components(cache):
    studio = Studio()
    studio.load(cache.sample("blobs"))
    assert (studio.x_axis, studio.y_axis) == ("x", "y")
    studio.load(cache.sample("blobs3d"))
    assert (studio.x_axis, studio.y_axis) == ("PC1", "PC2")
    assert studio.dataset.axis_values("PC1").shape == (studio.dataset.n_points,)


def test_one_feature_is_drawn_against_its_input_row(cache, tmp_path):
    """A one-column file opened on PC1 against a PC2 of zeros, every point on one line; now on the value against
    the input row (rows left out for NaN keep their numbers), and no principal component is offered."""
    values = [0.1, 0.2, float("nan"), 5.0, 5.1, 5.2]
    (tmp_path / "one.csv").write_text("t\n" + "\n".join(map(str, values)) + "\n")
    studio = Studio()
    studio.load(cache.file(tmp_path / "one.csv"))
    assert (studio.x_axis, studio.y_axis) == ("t", ROW_AXIS) and studio.param.x_axis.objects == ["t", ROW_AXIS]
    x, y = studio.plot_coordinates("view")
    np.testing.assert_allclose(x, [0.1, 0.2, 5.0, 5.1, 5.2], rtol=1e-6)
    np.testing.assert_array_equal(y, [0, 1, 3, 4, 5])
    studio.close()


def test_uploads_are_parsed_in_memory_in_every_format(cache, tmp_path, monkeypatch, rng):
    values = rng.normal(size=(30, 2))
    frame = pd.DataFrame(values, columns=["u", "v"])
    frame.to_parquet(tmp_path / "a.parquet")
    np.save(tmp_path / "a.npy", values)
    for make in ("mkdtemp", "mkstemp"):  # what temporary files and folders are made with
        monkeypatch.setattr(tempfile, make, lambda *a, **k: pytest.fail("an upload was written to disk"))
    for name, content in [("a.csv", frame.to_csv(index=False).encode()), ("a.tsv", frame.to_csv(index=False, sep="\t").encode()),
                          ("a.parquet", (tmp_path / "a.parquet").read_bytes()), ("a.npy", (tmp_path / "a.npy").read_bytes()),
                          ("a.csv.gz", gzip.compress(frame.to_csv(index=False).encode()))]:  # fmt: skip
        dataset = cache.upload(name, content, max_bytes=2**20)
        np.testing.assert_allclose(dataset.points.values, values.astype(np.float32), err_msg=name)
    assert cache.upload("l.csv", "größe,wert\n1,2\n3,4\n".encode("latin-1"), max_bytes=2**20).points.columns == ("größe", "wert")
    with pytest.raises(DataError, match="garbage.npy is not a NumPy .npy file"):
        cache.upload("garbage.npy", b"\xe9t\xe9", max_bytes=2**20)
    with pytest.raises(DataError, match="zeros.csv.gz expands past the upload limit of 1 MB"):  # 2 MB of text in 2 KB
        cache.upload("zeros.csv.gz", gzip.compress(b"0,0\n" * 2**19), max_bytes=2**20)
