"""What the plots draw, without a browser: colours, margins, and how many center markers."""

from __future__ import annotations

import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import datashader as ds
import datashader.transfer_functions as tf
import holoviews as hv
import numpy as np
import pandas as pd
import param
import pytest

from dpstudio.app import priority
from dpstudio.app import plots as plots_module
from dpstudio.app.datasets import DatasetCache
from dpstudio.app.plots import (CLUSTER_COLOURS, HALO_GREY, MARKER_SIZE, MAX_MARKERS, PLOT_SIZE, SessionPlots, tools_on_markers_only,
                                 shade_categories, shade_counts)
from dpstudio.app.studio import Studio
from dpstudio.app.tree_plot import NO_BOXES, tree_boxes

from .layers import drawn


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
    assert drawn(plots._graph_centers(session.revision)) == MAX_MARKERS
    assert drawn(plots._view_centers(studio.revision, "x", "y")) == MAX_MARKERS
    studio.set_method("dbscan")  # centers are DPC's: no markers for the other methods
    assert drawn(plots._view_centers(studio.revision, "x", "y")) == 0


def test_a_lone_center_keeps_its_markers_colour_a_column(cache):
    """HoloViews sends a styled column of one value as that value: with one center (after Clear) the markers' glyph
    switched from a colour column to a constant, and BokehJS warned of a missing field at each draw."""
    studio = Studio()
    studio.load(cache.sample("blobs"))
    plots = SessionPlots(studio)
    studio.dpc.pick_count(1)
    for markers in (plots._graph_centers(studio.dpc.revision), plots._view_centers(studio.revision, "x", "y")):
        assert drawn(markers) == 1 and len(set(markers.dframe()["colour"])) > 1
    plots.close()
    studio.close()


def test_one_column_on_both_axes_is_drawn(cache):
    """HoloViews matches dimensions by label: x and y both labelled "x" were one dimension, and the image's bounds
    did not fit it (the same column chosen for both axes)."""
    studio = Studio()
    studio.load(cache.sample("blobs"))
    plots = SessionPlots(studio)
    studio.param.update(x_axis="x", y_axis="x")
    image = plots._view_image(studio.revision, "x", "x", None, None, 300, 200)
    assert [d.label.strip() for d in image.kdims] == ["x", "x"]
    plots.close()
    studio.close()


def test_a_frame_drawn_between_dpcs_new_data_set_and_the_studios_has_no_markers(cache):
    """While another data set is chosen, DPC shows its new model a moment before the studio shows the data set: a
    view drawn then took the new model's centers as rows of the old data set (IndexError, in the server's log)."""
    studio = Studio()
    studio.load(cache.sample("moons"))
    plots = SessionPlots(studio)
    larger = cache.sample("blobs")
    studio.dpc.load(larger)
    studio.dpc.pick_count(50)
    assert studio.dpc.centers.max() >= studio.dataset.n_points  # some past the end of the data set shown
    assert drawn(plots._view_centers(studio.revision, "x", "y")) == 0
    studio.load(larger)
    assert drawn(plots._view_centers(studio.revision, "x", "y")) == len(studio.dpc.centers)


def test_large_points_cover_more_pixels_in_their_colours():
    """A large (core) point is a disc of radius 2 px (21 pixels), a small one of radius 1 px, each in its cluster's
    colour; a small point next to a large one is drawn under it."""
    x, y = np.array([0.0, 0.4, 10.0]), np.array([0.0, 0.0, 10.0])  # 5 px per unit: the second point 2 px right
    labels, large = np.array([0, 1, 1]), np.array([True, False, False])
    image = shade_categories(x, y, labels, (-5.0, 15.0), (-5.0, 15.0), 100, 100, ("x", "y"), large=large)
    rgba = image.data

    def pixels(label):
        red, green, blue = (int(CLUSTER_COLOURS[label][i : i + 2], 16) for i in (1, 3, 5))
        return (rgba[..., 0] == red) & (rgba[..., 1] == green) & (rgba[..., 2] == blue) & (rgba[..., 3] > 0)

    core, border = pixels(0), pixels(1)
    lone = border.copy()
    lone[70:, :] = False  # the lone small point at (10, 10) only: rows are flipped, so it is near the top
    assert core.sum() == 21 and 1 < lone.sum() < 21 and not (core & border).any()
    assert border.sum() > lone.sum()  # the small point beside the core shows where the core's disc does not cover it


def test_shading_counts_equals_datashaders_shade(rng):
    """The fast shading of per-colour counts gives datashader's own ``tf.shade`` image, pixel for pixel: mixed
    colours, eq_hist alpha, empty pixels; on random points with ties, all points in one pixel, one colour, none in
    range, and every colour in every pixel (datashader then mixes the counts above the smallest); and again for the
    same points coloured anew (a relabel: the alpha is reused)."""
    cases = [(20_000, 9, 1.0, 120, 90), (5_000, 1, 1.0, 120, 90), (3_000, 4, 0.0, 120, 90), (50, 3, 100.0, 120, 90),
             (100_000, 20, 0.3, 120, 90), (30_000, 3, 10.0, 4, 3)]  # fmt: skip
    for n, n_colours, spread, width, height in cases:
        x, y = (np.round(rng.normal(size=n) * spread, 1) for _ in range(2))  # rounded: many points per pixel
        canvas = ds.Canvas(plot_width=width, plot_height=height, x_range=(-3, 3), y_range=(-2, 2))
        for relabel in range(2):
            codes = rng.integers(0, n_colours, n)
            frame = pd.DataFrame({"x": x, "y": y, "colour": pd.Categorical.from_codes(codes, categories=[str(c) for c in range(n_colours)])})
            counts = canvas.points(frame, "x", "y", ds.count_cat("colour"))
            colours = list(rng.choice(CLUSTER_COLOURS + (HALO_GREY,), n_colours, replace=False))
            expected = tf.shade(counts, color_key=colours, min_alpha=200)
            assert np.array_equal(shade_counts(counts, colours).data, expected.data), (n, n_colours, spread, relabel)
        if width == 4:
            assert counts.data.min() > 0  # the case it is there for
    assert not shade_counts(counts[..., :0], []).data.any()  # no colours at all: an empty image


def test_a_plot_is_shaded_again_only_when_what_it_shows_changed(monkeypatch):
    """HoloViews asks for each image twice as a plot is first made (without ranges, then with the ones drawn):
    shaded once; then once per change of labels, zoom or selection, and not for the same zoom again. A change of
    the state is shaded ahead on the shading threads (the redraw takes that image); a zoom where it is asked for."""
    shaded, threads = [], []

    def shade(*args, **kwargs):
        shaded.append(args[7])
        threads.append(threading.current_thread().name.split("_")[0])
        return shade_categories(*args, **kwargs)

    monkeypatch.setattr(plots_module, "shade_categories", shade)
    studio = Studio()
    studio.load(DatasetCache(backend="cpu").sample("blobs"))
    plots = SessionPlots(studio)
    renderer = hv.renderer("bokeh")
    renderer.get_plot(plots.data_view()), renderer.get_plot(plots.decision_graph())
    assert shaded == [("x", "y"), ("rho", "delta")]
    studio.dpc.pick_count(2)  # relabels both plots
    assert shaded[2:] == [("x", "y"), ("rho", "delta")] or shaded[2:] == [("rho", "delta"), ("x", "y")]
    for _ in range(2):
        plots.view_ranges.event(x_range=(-5.0, 5.0), y_range=(-4.0, 4.0))
    assert shaded[4:] == [("x", "y")]
    with param.edit_constant(studio):
        studio.selected = np.arange(studio.dataset.n_points) < 10  # the lassoed points drawn larger on the graph
    assert shaded[5:] == [("rho", "delta")]
    assert threads == ["MainThread"] * 2 + ["dpstudio-shading"] * 2 + ["MainThread", "dpstudio-shading"]
    plots.close()  # the session's page is gone: nothing is shaded ahead for it any more
    studio.dpc.pick_count(3)
    assert "dpstudio-shading" not in threads[6:]


def shaded_ahead(plots: SessionPlots) -> None:
    """Wait for the images being shaded ahead."""
    for _, image in list(plots._next_images.values()):
        image.result()


def test_an_edit_keeps_the_2d_views_zoom_and_its_redraw_takes_the_images_shaded_ahead(monkeypatch):
    """Points added: each plot is shaded ahead from the state its redraw then sees (the 2-D view's zoom kept: a
    teacher zooms in to add a point; the decision graph's whole extent again, as every rho may change), and the
    redraw takes that image. (Not through HoloViews: outside a server it would redraw at once, mid-change, where a
    server's page waits.) Another data set shows its whole extent again."""
    threads = []

    def shade(*args, **kwargs):
        threads.append(threading.current_thread().name.split("_")[0])
        return shade_categories(*args, **kwargs)

    monkeypatch.setattr(plots_module, "shade_categories", shade)
    cache = DatasetCache(backend="cpu")
    studio = Studio()
    studio.load(cache.sample("blobs"))
    plots = SessionPlots(studio)
    laid_out(plots)
    plots._drawn.update(["decision graph", "2-D view"])  # as if on a page
    zoom = {"x_range": (0.0, 5.0), "y_range": (0.0, 4.0)}
    plots.graph_ranges.event(**zoom)
    plots.view_ranges.event(**zoom)
    shaded_ahead(plots)
    threads.clear()
    studio.add_point(1.0, 1.0)
    shaded_ahead(plots)
    assert threads == ["dpstudio-shading"] * 2  # one image each, on the shading threads
    size = (plots.graph_size.width, plots.graph_size.height)
    assert plots.graph_ranges.x_range is None and plots.view_ranges.x_range == zoom["x_range"]
    graph = plots._graph_image(studio.dpc.revision, studio.selected, None, None, *size)
    view = plots._view_image(studio.revision, studio.x_axis, studio.y_axis, *zoom.values(), *size)
    assert threads == ["dpstudio-shading"] * 2  # the redraws took them
    assert graph.data.shape[:2] == view.data.shape[:2] == (size[1], size[0])
    studio.load(cache.sample("moons"))
    assert plots.graph_ranges.x_range is None and plots.view_ranges.x_range is None


def laid_out(plots: SessionPlots) -> None:
    """Give the plots the size a browser reports once it has laid them out."""
    for size in (plots.graph_size, plots.view_size):
        size.event(width=PLOT_SIZE[0], height=PLOT_SIZE[1])


def test_before_the_browser_gives_a_size_the_images_are_blank_over_the_datas_ranges():
    """The page was sent with the images shaded at PLOT_SIZE (1 MB each), which the browser's first report of the
    plots' real size replaced at once: now they are blank until that report, then shaded at its size."""
    studio = Studio()
    studio.load(DatasetCache(backend="cpu").sample("blobs"))
    studio.pin()
    plots, renderer = SessionPlots(studio), hv.renderer("bokeh")
    drawn = [renderer.get_plot(view) for view in (plots.decision_graph(), plots.data_view(), plots.pinned_view())]
    images = (plots.graph_image, plots.view_image, plots.pinned_image)
    blanks = [image.last for image in images]
    assert all(blank.data.shape == (1, 1, 4) and not blank.data.any() for blank in blanks)
    assert blanks[2].label == studio.pinned.name  # the pinned plot's title is right at once
    for size in (plots.graph_size, plots.view_size, plots.pinned_size):  # as the browser reports them
        size.event(width=640, height=400)
    for blank, image in zip(blanks, images):
        assert image.last.data.shape == (400, 640, 4) and image.last.data.any()
        span = image.last.bounds.lbrt()[2] - image.last.bounds.lbrt()[0]  # the axes hardly move (the margins differ)
        assert blank.bounds.lbrt() == pytest.approx(image.last.bounds.lbrt(), abs=0.02 * span)
    assert drawn
    plots.close()


def test_an_image_a_redraw_waits_for_is_not_shaded_ahead_again(monkeypatch):
    """An edit is heard by two watchers that shade the decision graph ahead (DPC's revision, then the studio's): when
    HoloViews' redraw, between them, already waits for the image of the first, the second does not shade it again
    (it used to: the image was unlisted while awaited, and a whole shading went to waste at every stream batch)."""
    release, shaded = threading.Event(), []

    def shade(*args, **kwargs):
        shaded.append(args[7])
        release.wait(30)
        return shade_categories(*args, **kwargs)

    studio = Studio()
    studio.load(DatasetCache(backend="cpu").sample("blobs"))
    plots = SessionPlots(studio)
    laid_out(plots)
    plots._drawn.update(["decision graph", "2-D view"])  # as if on a page
    monkeypatch.setattr(plots_module, "shade_categories", shade)
    studio.add_point(1.0, 1.0)
    key, future = plots._next_images["decision graph"]
    waiting = threading.Event()

    class Awaited:  # the image shaded ahead, telling when the redraw waits for it
        def result(self):
            waiting.set()
            return future.result()

        def cancel(self):
            return future.cancel()

    plots._next_images["decision graph"] = (key, Awaited())
    size = (plots.graph_size.width, plots.graph_size.height)
    with ThreadPoolExecutor(1) as redraws:
        redraw = redraws.submit(plots._graph_image, studio.dpc.revision, studio.selected, None, None, *size)
        assert waiting.wait(30)
        plots._shade_ahead("decision graph")
        release.set()
        assert redraw.result().data.shape[:2] == (size[1], size[0])
    shaded_ahead(plots)
    assert shaded.count(("rho", "delta")) == 1
    plots.close()


def test_the_2d_view_has_no_legend():
    """The view's image is labelled with the method (for its title's hook), which HoloViews drew as a legend box
    reading "dpc" over the top right of the points."""
    studio = Studio()
    studio.load(DatasetCache(backend="cpu").sample("blobs"))
    plots = SessionPlots(studio)
    figure = hv.renderer("bokeh").get_plot(plots.data_view()).state
    assert not [item for legend in figure.legend for item in legend.items]
    plots.close()


def test_only_the_center_markers_show_a_tooltip_and_it_names_the_center():
    """The ring around the point under the mouse had the markers' hover tool: over a center marker, which the ring
    then surrounds, two tooltips showed, the ring's with the marker's ρ and δ again; and the teaching layers' markers
    had it too, and once another method was shown so had the image, over every pixel (a tooltip of "???"). The
    markers' own listed their colour's hex code."""
    from bokeh.models import BoxSelectTool, HoverTool, LassoSelectTool

    from dpstudio.app.teaching import Teaching
    from dpstudio.app.teaching_plot import TeachingPlots

    renderer = hv.renderer("bokeh")  # loads HoloViews' Bokeh backend, whose options the overlays name
    studio = Studio()
    studio.load(DatasetCache(backend="cpu").sample("blobs"))
    plots, teaching = SessionPlots(studio), Teaching(studio)
    layers = TeachingPlots(teaching)
    studio.point_at("graph", *(float(c[studio.dpc.model.centers_[0]]) for c in studio.plot_coordinates("graph")))
    x, y = studio.plot_coordinates("view")
    teaching.explain_at(float(x[17]), float(y[17]), None, None)  # its rings, arrows and circle drawn
    for overlay, tooltips in ((tools_on_markers_only(plots.decision_graph() * layers.graph_layer()), ["rho", "delta", "cluster", "row"]),
                              (tools_on_markers_only(plots.data_view() * layers.view_layers()), ["cluster", "row"])):  # as the page does
        figure = renderer.get_plot(overlay).state
        [hover] = [tool for tool in figure.tools if isinstance(tool, HoverTool)]
        [markers] = [r for r in figure.renderers if "cluster" in r.data_source.data]
        assert hover.renderers == [markers] and [name for name, _ in hover.tooltips] == tooltips
        # the lasso and the box hit-test the markers alone, and report once, at the gesture's end
        selecting = [tool for tool in figure.tools if isinstance(tool, (LassoSelectTool, BoxSelectTool))]
        assert selecting and all(tool.renderers == [markers] and tool.continuous is False for tool in selecting)
    studio.set_method("dbscan")  # the 2-D view redrawn for another method: HoloViews gave the image the tooltip too
    assert hover.renderers == [markers]
    layers.close()
    plots.close()


def test_markers_and_colours_stay_with_their_own_data_set_while_another_loads():
    """Between DPC's load of a data set and the studio showing it, the graph's markers take DPC's rows, and the 2-D
    view (still the old points) is drawn without the new clusters: they indexed or coloured one data set by
    another's points (an IndexError and a ValueError in the server's log when a URL's failure was rolled back)."""
    cache = DatasetCache(backend="cpu")
    studio = Studio()
    studio.load(cache.sample("moons"))
    plots = SessionPlots(studio)
    laid_out(plots)
    with param.edit_constant(studio):
        studio.selected = np.arange(studio.dataset.n_points) < 10  # a lasso on moons' 2-D view
    studio.dpc.load(cache.sample("blobs"))  # as Studio.load does, a moment before the studio shows blobs
    assert studio.dataset.name == "moons" and studio.dpc.dataset.name == "blobs"
    markers = plots._graph_centers(studio.dpc.revision)  # blobs' centers (1522 among them) in moons' rows raised
    rows = cache.sample("blobs").points.rows[studio.dpc.model.centers_]
    assert rows.max() >= 1400
    np.testing.assert_array_equal(markers.dframe()["row"][: len(rows)], rows)
    size = (plots.graph_size.width, plots.graph_size.height)
    plots._graph_image(studio.dpc.revision, studio.selected, None, None, *size)  # moons' lasso on blobs' rho raised
    assert studio.labels().shape == (studio.dataset.n_points,) and (studio.labels() == -1).all()
    assert studio.label_of(0) == -1 and studio.large_points() is None
    plots.close()


def test_the_decision_graphs_axes_say_what_they_show():
    studio = Studio()
    studio.load(DatasetCache(backend="cpu").sample("blobs"))
    plot = hv.renderer("bokeh").get_plot(SessionPlots(studio).decision_graph()).state
    assert (plot.xaxis[0].axis_label, plot.yaxis[0].axis_label) == ("ρ (local density)", "δ (distance to a denser point)")
    studio.dpc.set_log_axes(True)
    assert (plot.xaxis[0].axis_label, plot.yaxis[0].axis_label) == ("log₁₀ ρ (local density)", "log₁₀ δ (distance to a denser point)")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a thread's own priority is Linux's")
def test_shading_threads_keep_the_servers_priority_whoever_shades_first(monkeypatch):
    """The server starts the shading threads itself: a load's thread runs behind the page, and shading threads it
    started would inherit that and shade every later redraw behind the page too."""
    thread_priority = lambda: os.getpriority(os.PRIO_PROCESS, threading.get_native_id())  # noqa: E731
    own = thread_priority()
    if own + priority.BUILD_NICENESS > 19:
        pytest.skip("the tests already run at a priority too low to lower further")
    pool = ThreadPoolExecutor(plots_module.SHADING_THREADS)
    monkeypatch.setattr(plots_module, "_SHADING", pool)
    plots_module.start_shading_threads()
    with ThreadPoolExecutor(1, initializer=priority.behind_the_page) as loads:  # as the page's loads run
        assert loads.submit(lambda: [pool.submit(thread_priority).result() for _ in range(4)]).result() == [own] * 4
    pool.shutdown()


def test_a_plot_made_again_with_the_teaching_layers_keeps_the_zoom():
    """The page makes the 2-D view again when the teaching layers join it: the new figure shows the zoom, since only
    the image (shaded for the zoom) sets the ranges; the center markers elsewhere used to widen them."""
    from dpstudio.app.teaching import Teaching
    from dpstudio.app.teaching_plot import TeachingPlots

    studio = Studio()
    studio.load(DatasetCache(backend="cpu").sample("blobs"))
    plots = SessionPlots(studio)
    renderer = hv.renderer("bokeh")  # before any options are set
    view = plots.data_view()
    renderer.get_plot(view)
    zoom = {"x_range": (-7.0, -5.5), "y_range": (-1.0, 0.5)}  # no center marker in it
    plots.view_ranges.event(**zoom)
    figure = renderer.get_plot(view * TeachingPlots(Teaching(studio)).view_layers()).state
    assert (figure.x_range.start, figure.x_range.end) == zoom["x_range"]
    assert (figure.y_range.start, figure.y_range.end) == zoom["y_range"]
    plots.close()


@pytest.mark.parametrize("min_cluster_size", [15, 2300])  # 2300 = N: the tree is the root alone, with no box
def test_the_condensed_trees_boxes_keep_their_column_types_with_or_without_boxes(cache, min_cluster_size):
    """BokehJS takes each frame's columns as typed as the first's: colours must stay strings, also with no box."""
    studio = Studio()
    studio.load(cache.sample("blobs"))
    studio.set_method("hdbscan")
    studio.hdbscan.set_parameters(min_cluster_size=min_cluster_size)
    model = studio.hdbscan.model
    boxes = tree_boxes(model.condensed_tree_, model.selected_clusters_)
    assert (len(boxes) == 0) == (min_cluster_size == studio.dataset.n_points)
    assert set(boxes.columns) == set(NO_BOXES.columns)
    for name in boxes.columns:  # the colours never a float column (what an empty list becomes)
        assert pd.api.types.is_numeric_dtype(boxes[name]) == (name != "colour"), name


def test_frame_adds_one_instruction_line_and_compact_ticks_and_log_ticks():
    from bokeh.models import CustomJSTicker, CustomJSTickFormatter, LogAxis, NoOverlap, Title
    from bokeh.plotting import figure

    from dpstudio.app.plot_frame import LOG_TICKS, frame

    options = frame("Decision graph", "lasso the peaks", hooks=(lambda plot, element: seen.append(element),))
    assert options["title"] == "Decision graph"
    plot, seen = type("Plot", (), {"state": figure(y_axis_type="log")})(), []
    for _ in range(3):  # HoloViews runs the hooks again at every redraw
        for hook in options["hooks"]:
            hook(plot, "element")
    lines = [item for item in plot.state.above if isinstance(item, Title)]
    assert [line.text for line in lines] == ["lasso the peaks"] and seen == ["element"] * 3
    x_axis, y_axis = plot.state.xaxis[0], plot.state.yaxis[0]
    assert isinstance(x_axis.formatter, CustomJSTickFormatter) and x_axis.formatter.args == {"log": False}
    assert isinstance(y_axis, LogAxis) and y_axis.formatter.args == {"log": True}
    assert isinstance(y_axis.ticker, CustomJSTicker) and y_axis.ticker.major_code == LOG_TICKS
    assert isinstance(x_axis.major_label_policy, NoOverlap) and isinstance(y_axis.major_label_policy, NoOverlap)
    assert plot.state.toolbar.logo is None


def test_a_short_plots_toolbar_has_no_buttons_for_pointing_and_clicking():
    """The short plots' toolbars ended in Bokeh's "..." menu, reset out of sight: hover and tap, on without their
    buttons, save and any other tool give their places to the four a user switches."""
    from bokeh.plotting import figure

    from dpstudio.app.plot_frame import SMALL_HEIGHT, small_frame

    options = small_frame("γ by rank", "click rank K")
    assert options["height"] == SMALL_HEIGHT and options["responsive"]
    plot = type("Plot", (), {"state": figure(tools="pan,box_zoom,wheel_zoom,hover,tap,save,reset,lasso_select")})()
    for hook in options["hooks"]:
        hook(plot, "element")
    shown = {type(tool).__name__ for tool in plot.state.toolbar.tools if tool.visible}
    assert shown == {"PanTool", "BoxZoomTool", "WheelZoomTool", "ResetTool"}
    assert plot.state.toolbar.active_scroll is None  # the wheel scrolls the page until the wheel zoom is chosen
