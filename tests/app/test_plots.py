"""What the plots draw, without a browser: colours, margins, and how many center markers."""

from __future__ import annotations

import numpy as np

from dpstudio.app.datasets import DatasetCache
from dpstudio.app.plots import CLUSTER_COLOURS, HALO_GREY, MARKER_SIZE, MAX_MARKERS, SessionPlots, shade_categories
from dpstudio.app.studio import Studio


def test_no_cluster_colour_passes_for_the_halo_grey():
    assert HALO_GREY not in CLUSTER_COLOURS and len(set(CLUSTER_COLOURS)) == len(CLUSTER_COLOURS) == 20
    for colour in CLUSTER_COLOURS:
        channels = [int(colour[i : i + 2], 16) for i in (1, 3, 5)]
        assert max(channels) - min(channels) >= 64, colour


def test_extreme_points_leave_room_for_their_markers(rng):
    x, y = rng.normal(size=500), rng.exponential(size=500)
    width, height = 420, 300
    image = shade_categories(x, y, np.zeros(500, np.int64), None, None, width, height, ("x", "y"))
    left, bottom, right, top = image.bounds.lbrt()
    for values, low, high, pixels in ((x, left, right, width), (y, bottom, top, height)):
        to_pixels = pixels / (high - low)
        assert (values.min() - low) * to_pixels >= MARKER_SIZE / 2 and (high - values.max()) * to_pixels >= MARKER_SIZE / 2


def test_center_markers_are_capped():
    studio = Studio()
    studio.load(DatasetCache(backend="cpu").sample("blobs"))
    plots, session = SessionPlots(studio), studio.dpc
    session.pick_count(MAX_MARKERS + 50)
    assert len(session.centers) > MAX_MARKERS
    assert len(plots._graph_centers(session.revision).data) == MAX_MARKERS
    assert len(plots._view_centers(studio.revision, "x", "y").data) == MAX_MARKERS
    studio.set_method("dbscan")  # centers are DPC's: no markers for the other methods
    assert len(plots._view_centers(studio.revision, "x", "y").data) == 0
