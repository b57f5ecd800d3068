"""The estimator's contract: scikit-learn conventions, center choice, caching, and clear errors."""

import threading
import time

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score

from dpstudio import sample_data
from dpstudio.engine import DensityPeaks, IndexedPoints
from dpstudio.engine.cpu import points_in_polygon
from dpstudio.engine.indexed import index_wanted_elsewhere

from .datasets import blobs


def test_sklearn_conventions(rng):
    points = blobs(rng, 300)
    dp = DensityPeaks(dc_percent=3.0)
    assert dp.get_params() == {"dc": None, "dc_percent": 3.0, "dc_rule": "percent", "kernel": "cutoff", "suggest": "auto",
                               "density_k": 16, "significance": 2.5, "noise": False, "backend": "auto", "client": None}  # fmt: skip
    assert repr(dp) == "DensityPeaks(dc_percent=3.0)"
    assert dp.set_params(kernel="gaussian") is dp and dp.kernel == "gaussian"
    with pytest.raises(ValueError, match="invalid parameter 'k'"):
        dp.set_params(k=1)
    with pytest.raises(RuntimeError, match="not fitted"):
        dp.assign()
    assert dp.fit(points) is dp
    np.testing.assert_array_equal(DensityPeaks(dc_percent=3.0, kernel="gaussian").fit_predict(points), dp.labels_)


def test_set_dc_reuses_the_index_and_matches_a_fresh_fit(rng):
    points = blobs(rng, 800)
    dp = DensityPeaks(backend="cpu").fit(points)
    index = dp.index_
    dp.set_dc(0.7)
    assert dp.index_ is index
    fresh = DensityPeaks(dc=0.7, backend="cpu").fit(points)
    for name in ["rho_", "delta_", "parent_", "labels_"]:
        np.testing.assert_array_equal(getattr(dp, name), getattr(fresh, name))
    first = dp._fields
    dp.set_dc(0.9).set_dc(0.7)
    assert dp._fields is first  # cached: moving back costs nothing
    dp.set_dc(0.7, kernel="gaussian")
    assert dp.index_ is index and dp.kernel_ == "gaussian"
    dp.set_dc(0.7, centers=[5, 9])  # the centers to keep, assigned once with the new fields
    np.testing.assert_array_equal(dp.labels_, fresh.assign(centers=[5, 9]).labels_)
    np.testing.assert_array_equal(dp.centers_[:2], [5, 9])


def test_estimators_share_an_indexed_data_set_but_not_their_choices(rng):
    points = blobs(rng, 700)
    shared = IndexedPoints(points, backend="cpu")
    first = DensityPeaks(backend="cpu").fit(shared)
    second = DensityPeaks(backend="cpu").fit(shared)
    assert first.index_ is second.index_ is shared.index
    assert second.timings_["rho"] == 0.0 and "index" not in second.timings_  # computed once, by the first
    first_centers = first.centers_.copy()
    second.set_dc(first.dc_ * 0.5).assign(n_centers=2)
    assert first.dc_ != second.dc_
    np.testing.assert_array_equal(first.centers_, first_centers)
    fresh = DensityPeaks(dc=first.dc_ * 0.5, backend="cpu").fit(points).assign(n_centers=2)
    np.testing.assert_array_equal(second.labels_, fresh.labels_)
    np.testing.assert_array_equal(first.labels_, DensityPeaks(backend="cpu").fit(points).labels_)


def test_a_computation_knows_when_another_thread_waits_for_its_index(rng):
    """A progress callback inside a shared index's computation can tell that another thread (a second session, or
    a server's event loop) waits for that index, and not hold it longer; a caller that must not wait is told at
    once that the index is busy."""
    shared = IndexedPoints(blobs(rng, 500), backend="cpu")
    seen, other_waits, done = [], threading.Event(), threading.Event()

    def progress(phase, fraction):
        if not seen:  # first report: nobody waits yet; then another thread asks for the same index
            seen.append(index_wanted_elsewhere())
            threading.Thread(target=lambda: (other_waits.set(), shared.fields("cutoff", 0.5), done.set())).start()
            other_waits.wait(5)
            deadline = time.monotonic() + 5
            while not index_wanted_elsewhere() and time.monotonic() < deadline:
                time.sleep(0.01)
            seen.append(index_wanted_elsewhere())
            with shared.unless_busy() as held:  # this thread holds it: the lock is re-entrant
                seen.append(held)

    shared.fields("cutoff", 1.0, progress=progress)
    assert done.wait(10)
    assert seen == [False, True, True]
    assert not index_wanted_elsewhere()  # nothing held now

    def try_to_hold() -> bool:
        with shared.unless_busy() as held:
            return held

    answers = []
    with shared._lock:  # held by this thread: another one is told at once that it is busy
        other = threading.Thread(target=lambda: answers.append(try_to_hold()))
        other.start()
        other.join(5)
    assert answers == [False] and try_to_hold()


def test_assign_by_rectangle_polygon_and_count(rng):
    points = blobs(rng, 600)
    dp = DensityPeaks(backend="cpu").fit(points)
    rho_min, delta_min = np.quantile(dp.rho_, 0.5), np.quantile(dp.delta_, 0.98)
    dp.assign(rho_min=rho_min, delta_min=delta_min)
    chosen = np.flatnonzero((dp.rho_ >= rho_min) & (dp.delta_ >= delta_min))
    assert set(dp.centers_) == set(chosen) | {int(np.argmax(dp.delta_))}
    assert np.all(np.diff(dp.gamma_[dp.centers_[: len(chosen)]]) <= 0)  # ordered by decreasing gamma

    square = [(rho_min, delta_min), (1e9, delta_min), (1e9, 1e9), (rho_min, 1e9)]
    rectangle_centers = dp.centers_.copy()
    np.testing.assert_array_equal(dp.assign(polygon=square).centers_, rectangle_centers)

    dp.assign(n_centers=3)
    np.testing.assert_array_equal(dp.centers_, np.argsort(-dp.gamma_, kind="stable")[:3])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"centers": [0], "n_centers": 2}, "one way at a time"),
        ({"centers": [10_000]}, "out of range"),
        ({"centers": [1, 1]}, "same point twice"),
        ({"centers": [0.5]}, "integer"),
        ({"polygon": [(0, 0), (1, 1)]}, "at least 3"),
        ({"polygon": [(0, 0), (1, np.nan), (2, 0)]}, "finite"),
        ({"rho_min": np.nan}, "rho_min must be a finite number"),  # nothing passes >= nan: it gave the densest point alone
        ({"delta_min": np.inf}, "delta_min must be a finite number"),
        ({"n_centers": 0}, "whole number from 1 to 100, got 0"),
        ({"n_centers": 101}, "whole number from 1 to 100, got 101"),
        ({"n_centers": 2.5}, "got 2.5"),  # refused, where int() cut it to 2
        ({"n_centers": True}, "got True"),
        ({"n_centers": "3"}, "got '3'"),
        ({"n_centers": np.int64(0)}, "got 0$"),
        ({"n_centers": 10**400}, "got 1000"),  # a ValueError, where float() overflowed
    ],
)
def test_bad_center_choices(kwargs, message, rng):
    dp = DensityPeaks(backend="cpu").fit(blobs(rng, 100))
    with pytest.raises(ValueError, match=message):
        dp.assign(**kwargs)


def test_bad_parameters(rng):
    with pytest.raises(ValueError, match="kernel must be"):
        DensityPeaks(kernel="tophat").fit(blobs(rng, 50))
    with pytest.raises(ValueError, match="dc must be a finite positive"):
        DensityPeaks(dc=-1.0, backend="cpu").fit(blobs(rng, 50))
    for dc in (1e-20, 1e20, 1e30, 1e308):  # its float32 square would be 0 (every rho -1) or inf (1e308: float64 too)
        with pytest.raises(ValueError, match="outside what float32 distances resolve"):
            DensityPeaks(dc=dc, backend="cpu").fit(blobs(rng, 50))
    with pytest.raises(ValueError, match="outside what float32 distances resolve"):
        DensityPeaks(dc=1e19, kernel="gaussian", backend="cpu").fit(blobs(rng, 50))  # its reach is 3 dc
    with pytest.raises(TypeError, match="dc must be a number, got '0.5'"):
        DensityPeaks(dc="0.5", backend="cpu").fit(blobs(rng, 50))
    with pytest.raises(TypeError, match="dc_percent must be a number, got '2'"):
        DensityPeaks(dc_percent="2", backend="cpu").fit(blobs(rng, 50))
    with pytest.raises(ValueError, match="backend must be"):
        DensityPeaks(backend="tpu").fit(blobs(rng, 50))
    with pytest.raises(ValueError, match="dc_percent"):
        DensityPeaks(dc_percent=0, backend="cpu").fit(blobs(rng, 50))
    fitted = DensityPeaks(backend="cpu").fit(blobs(rng, 50))
    with pytest.raises(ValueError, match=r"dc_percent must be in \(0, 100\), got 0"):  # not the estimator's 2% instead
        fitted.set_dc(dc_percent=0)


def test_densest_point_is_always_a_center(rng):
    dp = DensityPeaks(backend="cpu").fit(blobs(rng, 300))
    densest = int(np.flatnonzero(dp.parent_ == -1)[0])
    others = [i for i in range(5) if i != densest]
    dp.assign(centers=others)
    assert list(dp.centers_) == others + [densest]
    assert dp.labels_.max() == len(others)
    dp.assign(rho_min=1e12)  # selects nothing: one cluster
    assert list(dp.centers_) == [densest] and np.all(dp.labels_ == 0)


def test_points_in_polygon_matches_a_plain_ray_cast(rng):
    x, y = rng.uniform(-1, 2, 500), rng.uniform(-1, 2, 500)
    angles = np.sort(rng.uniform(0, 2 * np.pi, 9))
    polygon = np.column_stack([0.5 + rng.uniform(0.3, 1, 9) * np.cos(angles), 0.5 + rng.uniform(0.3, 1, 9) * np.sin(angles)])

    def inside(px, py):
        hits = False
        for a in range(len(polygon)):
            (xa, ya), (xb, yb) = polygon[a], polygon[(a + 1) % len(polygon)]
            if (ya > py) != (yb > py) and px < xa + (py - ya) * (xb - xa) / (yb - ya):
                hits = not hits
        return hits

    np.testing.assert_array_equal(points_in_polygon(x, y, polygon), [inside(a, b) for a, b in zip(x, y)])


@pytest.mark.parametrize("name", ["blobs", "moons", "nested", "noisy", "blobs3d"])
@pytest.mark.parametrize(("suggest", "kernel"), [("auto", "cutoff"), ("gamma", "cutoff"), ("gamma", "gaussian")])
def test_suggested_clusters_recover_the_sample_sets(name, suggest, kernel):
    """The default (the topography, which no kernel changes) and the largest-gamma-drop rule both find these."""
    truth = sample_data.truth(name)
    dp = DensityPeaks(kernel=kernel, suggest=suggest, backend="cpu").fit(sample_data.path(name))
    clustered = truth >= 0  # background noise has no true cluster
    assert len(dp.centers_) == len(set(truth[clustered]))
    assert adjusted_rand_score(truth[clustered], dp.labels_[clustered]) > 0.95


def test_to_frame_maps_rows_and_parents(rng):
    dp = DensityPeaks(backend="cpu").fit(blobs(rng, 50))
    rows = np.arange(50) * 2 + 7
    frame = dp.to_frame(rows)
    assert list(frame.columns) == ["index", "label", "halo", "rho", "delta", "parent"]
    np.testing.assert_array_equal(frame["index"], rows)
    np.testing.assert_array_equal(frame["parent"], np.where(dp.parent_ >= 0, rows[dp.parent_], -1))
