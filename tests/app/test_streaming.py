"""A data set streamed into DPC on the page, without a browser: after every batch (and after taking the last one
out) the session equals a fresh fit on the points streamed so far, rows and downloads included, and the shared
data set stays as loaded."""

from __future__ import annotations

import numpy as np
import pytest

from dpstudio.app.streaming import LOG_SHOWN, Streaming
from dpstudio.app.studio import Studio
from dpstudio.engine.notation import short
from dpstudio.engine import DensityPeaks
from dpstudio.engine.dpc import describe_changes


@pytest.fixture
def streaming(cache):
    studio = Studio()
    studio.load(cache.sample("noisy"))
    return Streaming(studio)


def assert_streamed(streaming, count):
    """The session shows the source's first ``count`` points, as a fresh fit on them at the stream's dc shows them."""
    studio, source = streaming.studio, streaming.studio.dataset.base
    dataset, model = studio.dataset, studio.dpc.model
    assert dataset.n_points == count == streaming.streamed
    np.testing.assert_array_equal(dataset.points.values, source.points.values[:count])
    np.testing.assert_array_equal(dataset.points.rows, source.points.rows[:count])  # each point keeps its file row
    fresh = DensityPeaks(dc=model.dc_, backend="cpu").fit(source.points.values[:count])
    for name in ("rho_", "delta_", "parent_", "labels_"):
        np.testing.assert_array_equal(getattr(model, name), getattr(fresh, name), err_msg=name)
    assert len(studio.dpc.labels_table()) == count


def test_batches_go_in_and_the_last_comes_out(streaming):
    studio = streaming.studio
    shared, dc = studio.dataset, studio.dpc.dc
    n = shared.n_points
    streaming.start(10)
    first = round(n / 10)
    assert_streamed(streaming, first)
    assert studio.dpc.dc == dc and studio.dpc.dc_percent is None  # dc stays fixed through the stream
    for k in range(3):
        streaming.next_batch(150)
        assert_streamed(streaming, first + 150 * (k + 1))
    assert [row.number for row in streaming.log] == [0, 1, 2, 3] and all(row.milliseconds > 0 for row in streaming.log)
    assert "points moved" in streaming.log[-1].changes
    none = {"appeared": [], "vanished": [], "merged": {}, "split": {}}
    assert [describe_changes({**none, "moved": k}) for k in (0, 1, 2)] == ["0 points moved", "1 point moved", "2 points moved"]
    streaming.delete_last()
    assert_streamed(streaming, first + 300)
    assert streaming.log[-1].added == -150 and streaming.log[-1].changes.startswith("batch 3 taken out")
    streaming.next_batch(10 * n)  # the rest, however large the batch asked for
    assert_streamed(streaming, n)
    assert streaming.remaining == 0 and len(streaming.log) <= LOG_SHOWN
    with pytest.raises(ValueError, match="every point is in"):
        streaming.next_batch(1)
    assert shared.n_points == n and shared.indexed.n_points == n  # other sessions' data set never changed


def test_a_dc_changed_mid_stream_is_a_line_of_the_log(streaming, cache):
    """A new dc changes the clusters at once and every batch after it: the log said nothing of it, so the counts
    of clusters jumped between two batches for no reason shown."""
    studio = streaming.studio
    streaming.start(10)
    dc = studio.dpc.dc * 1.5
    studio.dpc.set_dc(dc)
    assert streaming.log[-1].changes == f"dc set to {short(dc)} after the first fit: later batches use it"
    streaming.next_batch(100)
    studio.dpc.set_dc(dc * 1.2)
    row = streaming.log[-1]
    assert row.changes == f"dc set to {short(dc * 1.2)} after batch 1: later batches use it"
    assert (row.number, row.added, row.n_points, row.clusters) == (1, 0, streaming.streamed, len(studio.dpc.centers))
    assert row.milliseconds > 0
    streaming.next_batch(100)
    assert_streamed(streaming, streaming.streamed)  # at the new dc
    studio.dpc.set_dc(kernel="gaussian")
    assert streaming.log[-1].changes == "Gaussian kernel after batch 2: later batches use it"
    assert len(streaming.log) == 6 and streaming.batches == 2
    # another data set ends the stream; its dc, which DPC has a moment before the studio shows it, is no row
    logs = []
    streaming.param.watch(lambda event: logs.append(event.new), "log")
    studio.load(cache.sample("blobs"))
    assert streaming.streamed is None and logs == [[]]
    studio.dpc.set_dc(studio.dpc.dc * 1.2)  # no stream: no row
    assert streaming.log == []


def test_wrong_steps_say_why(streaming, cache):
    with pytest.raises(ValueError, match="no stream"):
        streaming.next_batch(10)
    for percent, shown in ((0, "0"), (100, "100"), (None, "nothing"), ("abc", "abc")):  # the box has no bounds now
        with pytest.raises(ValueError, match=f"a percentage of the points between 0 and 100, got {shown}$"):
            streaming.start(percent)
    streaming.start(5)
    with pytest.raises(ValueError, match="only the first fit"):
        streaming.delete_last()
    for size, shown in ((0, "0"), (2.5, "2.5"), (None, "nothing"), (1e23, "1e\\+23")):  # a slice of 2.5 or None raised a TypeError
        with pytest.raises(ValueError, match=f"a whole number of points, at least 1, got {shown}"):
            streaming.next_batch(size)
    streaming.studio.set_method("dbscan")
    with pytest.raises(ValueError, match="show DPC first"):
        streaming.next_batch(10)
    streaming.studio.set_method("dpc")
    streaming.studio.add_point(0.0, 0.0)  # the points edited otherwise: the stream is over, the edit stays
    assert streaming.streamed is None and streaming.log == []
    streaming.start(5)  # and a new one starts from the data set as loaded, and says the edit is left out
    assert streaming.studio.dataset.n_points == round(streaming.studio.dataset.base.n_points / 20)
    assert "yours added or deleted by hand are left out" in streaming.log[0].changes
    streaming.start(5)  # a stream started again: nothing of the user's own is left out
    assert "by hand" not in streaming.log[0].changes
    streaming.studio.load(cache.sample("blobs"))
    assert streaming.streamed is None
