"""The app's session state without a browser: loading, choosing centers, dc changes, undo, errors, sharing."""

from __future__ import annotations

import numpy as np
import pytest

from dpstudio import sample_data
from dpstudio.app.datasets import DatasetCache
from dpstudio.app.state import ClusteringSession
from dpstudio.engine import DataError, DensityPeaks


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
    assert (session.x_axis, session.y_axis) == ("x", "y")
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


def test_dc_change_reuses_the_index_and_keeps_picked_centers(session, monkeypatch):
    dataset = session.dataset
    index = dataset.indexed.index
    monkeypatch.setattr(dataset.indexed.backend, "build_vptree", lambda *a, **k: pytest.fail("index rebuilt"))
    session.pick_count(3)
    picked = session.centers.copy()
    session.set_dc(session.dc * 1.5)
    assert session.model.index_ is index and session.dc_percent is None
    np.testing.assert_array_equal(session.centers[: len(picked)], picked)
    monkeypatch.undo()  # the reference below builds its own index
    reference = DensityPeaks(dc=session.dc, backend="cpu").fit(dataset.points.values).assign(centers=session.centers)
    np.testing.assert_array_equal(session.labels(), reference.labels_)
    np.testing.assert_array_equal(session.model.rho_, reference.rho_)


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
    with pytest.raises(ValueError, match="dc must be a positive number"):
        session.set_dc(-1.0)
    with pytest.raises(ValueError, match="n_centers"):
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


def test_uploads_are_checked_and_keyed_by_content(cache):
    content = b"a,b\n" + b"".join(f"{i},{i % 7}\n".encode() for i in range(50))
    dataset = cache.upload("../../etc/mine.csv", content, max_bytes=2**20)
    assert dataset.name == "mine.csv" and dataset.n_points == 50
    assert cache.upload("again.csv", content, max_bytes=2**20) is dataset
    with pytest.raises(DataError, match="upload limit"):
        cache.upload("big.csv", content, max_bytes=100)
    with pytest.raises(DataError, match="unsupported file type '.xlsx'"):
        cache.upload("table.xlsx", content, max_bytes=2**20)
    with pytest.raises(DataError, match=r"column 'b' is not numeric: value 'x' at row 1 \(0-based\)"):
        cache.upload("bad.csv", b"a,b\n1,2\n3,x\n4,5\n", max_bytes=2**20)


def test_download_rows_point_back_to_the_input(cache, tmp_path):
    rows = [f"{i * 0.1},{(i * 7) % 5}" for i in range(40)]
    rows[3] = "nan,1"
    path = tmp_path / "with_nan.csv"
    path.write_text("u,v\n" + "\n".join(rows) + "\n")
    session = ClusteringSession()
    session.load(cache.file(path))
    table = session.labels_table()
    assert len(table) == 39 and 3 not in set(table["index"]) and table["index"].max() == 39
    assert session.dataset.points.dropped_rows.tolist() == [3]


def test_high_dimensional_data_opens_on_principal_components(cache):
    session = ClusteringSession()
    session.load(cache.sample("blobs3d"))
    assert (session.x_axis, session.y_axis) == ("PC1", "PC2")
    assert session.dataset.axis_values("PC1").shape == (session.dataset.n_points,)
