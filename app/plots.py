"""The two plots of a session: the (rho, delta) decision graph and the 2-D view, both datashaded.

Datashading keeps every point on screen at millions of points and re-aggregates on zoom and pan (RangeXY).
Both plots colour points by cluster and mark the centers with large markers in their cluster colours.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import colorcet
import datashader as ds
import datashader.transfer_functions as tf
import holoviews as hv
import numpy as np
import pandas as pd

from .state import ClusteringSession

HALO_GREY = "#b4b4b4"
MAX_MARKERS = 200  # center markers drawn (the first, by gamma); thousands of markers would freeze the page


def _is_colourful(colour: str) -> bool:
    """Far enough from grey (its channels differ by a quarter of their range) never to pass for the halo."""
    channels = [int(colour[i : i + 2], 16) for i in (1, 3, 5)]
    return max(channels) - min(channels) >= 64


CLUSTER_COLOURS = tuple(c for c in colorcet.palette["glasbey_category10"] if _is_colourful(c))[:20]  # past 20: reused
PALETTE = (HALO_GREY, *CLUSTER_COLOURS)  # colour code 0 is the halo
CATEGORIES = [str(code) for code in range(len(PALETTE))]
PLOT_SIZE = (560, 460)
MARKER_SIZE = 16  # pixels across a center marker


def colour_codes(labels: np.ndarray) -> pd.Categorical:
    """Categorical colour code per point (datashader's count_cat needs a categorical column)."""
    codes = np.where(labels < 0, 0, labels % len(CLUSTER_COLOURS) + 1)
    return pd.Categorical.from_codes(codes, categories=CATEGORIES)


def cluster_colour(label: int) -> str:
    return PALETTE[0] if label < 0 else CLUSTER_COLOURS[label % len(CLUSTER_COLOURS)]


def shade_categories(x, y, labels, x_range, y_range, width: int, height: int, names: tuple[str, str]) -> hv.RGB:
    """Points aggregated per pixel and colour category, shaded, spread so lone points stay visible."""
    x_range, y_range = _padded(x, x_range, width), _padded(y, y_range, height)
    frame = pd.DataFrame({"x": x, "y": y, "colour": colour_codes(labels)})
    canvas = ds.Canvas(plot_width=int(width), plot_height=int(height), x_range=x_range, y_range=y_range)
    image = tf.shade(canvas.points(frame, "x", "y", ds.count_cat("colour")), color_key=list(PALETTE), min_alpha=200)
    image = tf.dynspread(image, threshold=0.5, max_px=4)
    rgba = image.data.view(np.uint8).reshape(*image.shape, 4)[::-1]  # datashader's row 0 is the bottom
    return hv.RGB(rgba, bounds=(x_range[0], y_range[0], x_range[1], y_range[1]), kdims=list(names), vdims=list("RGBA"))


def _padded(values: np.ndarray, current, pixels: int) -> tuple[float, float]:
    """The zoomed range if any, else the data's extent with a margin of 3% plus a center marker's radius, so
    the markers of extreme points are not cut by the frame (and some width when the data are flat)."""
    if current is not None and None not in current and current[1] > current[0]:
        return float(current[0]), float(current[1])
    low, high = float(np.min(values)), float(np.max(values))
    fraction = 0.03 + MARKER_SIZE / pixels
    margin = fraction * (high - low) / (1 - 2 * fraction) if high > low else max(abs(low), 1.0) * 0.5
    return low - margin, high + margin


class SessionPlots:
    """DynamicMaps over a ClusteringSession; ``render_seconds`` holds the last shading time of each plot."""

    def __init__(self, session: ClusteringSession, on_render: Callable[[], None] = lambda: None):
        self.session, self.on_render = session, on_render
        self.render_seconds: dict[str, float] = {}
        watched = hv.streams.Params(session, ["revision", "x_axis", "y_axis"])
        self.graph_ranges = hv.streams.RangeXY()
        self.view_ranges = hv.streams.RangeXY()
        size = [hv.streams.PlotSize(width=PLOT_SIZE[0], height=PLOT_SIZE[1]) for _ in range(2)]
        self.graph_image = hv.DynamicMap(self._graph_image, streams=[watched, self.graph_ranges, size[0]])
        self.view_image = hv.DynamicMap(self._view_image, streams=[watched, self.view_ranges, size[1]])
        self.lasso = hv.streams.Lasso(source=self.graph_image)
        self.box = hv.streams.BoundsXY(source=self.graph_image)
        self._streams = [watched, self.graph_ranges, self.view_ranges, *size, self.lasso, self.box]
        session.param.watch(self._reset_zoom, ["dataset", "dc", "kernel", "x_axis", "y_axis"])

    def decision_graph(self) -> hv.Overlay:
        centers = hv.DynamicMap(self._graph_centers, streams=[self._stream(hv.streams.Params(self.session, ["revision"]))])
        return (self.graph_image * centers).opts(
            hv.opts.RGB(
                tools=["lasso_select", "box_select"], active_tools=["lasso_select", "wheel_zoom"],
                xlabel="ρ (local density)", ylabel="δ (distance to a denser point)",
                title="Decision graph: lasso the peaks at the top right", framewise=True, **_size(),
            ),
            hv.opts.Points(color="colour", size=MARKER_SIZE - 2, line_color="black", line_width=1.5, tools=["hover"],
                           nonselection_alpha=1.0, hooks=[_select_on_markers_only]),
        )  # fmt: skip

    def data_view(self) -> hv.Overlay:
        centers = hv.DynamicMap(self._view_centers, streams=[self._stream(hv.streams.Params(self.session, ["revision", "x_axis", "y_axis"]))])
        return (self.view_image * centers).opts(
            hv.opts.RGB(title="Points by cluster", framewise=True, active_tools=["wheel_zoom"], **_size()),
            hv.opts.Points(color="colour", marker="x", size=MARKER_SIZE, line_width=3, tools=["hover"]),
        )  # fmt: skip

    def close(self) -> None:
        """Detach this session's streams from their plots. HoloViews keeps every stream in a registry keyed weakly
        by its plot, but the stream refers back to the plot, so without this the plot, this object, the session
        and its page would outlive the browser session."""
        for stream in self._streams:
            stream.source = None

    def _stream(self, stream: hv.streams.Stream) -> hv.streams.Stream:
        self._streams.append(stream)
        return stream

    # callbacks ----------------------------------------------------------------------------------------------
    def _graph_image(self, revision, x_axis, y_axis, x_range, y_range, width, height, scale=1.0):
        model, started = self.session.model, time.perf_counter()
        image = shade_categories(model.rho_, model.delta_, self.session.labels(), x_range, y_range, width, height, ("rho", "delta"))
        self.render_seconds["decision graph"] = time.perf_counter() - started
        self.on_render()
        return image

    def _view_image(self, revision, x_axis, y_axis, x_range, y_range, width, height, scale=1.0):
        dataset, started = self.session.dataset, time.perf_counter()
        x, y = dataset.axis_values(x_axis), dataset.axis_values(y_axis)
        image = shade_categories(x, y, self.session.labels(), x_range, y_range, width, height, _view_dims(x_axis, y_axis))
        self.render_seconds["2-D view"] = time.perf_counter() - started
        self.on_render()
        return image

    def _graph_centers(self, revision):
        model = self.session.model
        centers = model.centers_
        return self._centers(model.rho_[centers], model.delta_[centers], ("rho", "delta"))

    def _view_centers(self, revision, x_axis, y_axis):
        dataset, centers = self.session.dataset, self.session.model.centers_
        x, y = dataset.axis_values(x_axis)[centers], dataset.axis_values(y_axis)[centers]
        return self._centers(x, y, _view_dims(x_axis, y_axis))

    def _centers(self, x, y, names: tuple[str, str]) -> hv.Points:
        centers = self.session.model.centers_[:MAX_MARKERS]
        clusters = np.arange(len(centers))
        x, y = x[:MAX_MARKERS], y[:MAX_MARKERS]
        frame = pd.DataFrame({
            names[0]: x, names[1]: y, "cluster": clusters, "row": self.session.dataset.points.rows[centers],
            "colour": [cluster_colour(c) for c in clusters],
        })  # fmt: skip
        return hv.Points(frame, list(names), ["cluster", "row", "colour"])

    def _reset_zoom(self, *events) -> None:
        """New data, dc or axes: the old zoom means nothing, show the whole extent again."""
        for ranges in (self.graph_ranges, self.view_ranges):
            ranges.reset()


def _select_on_markers_only(plot, element) -> None:
    """Selection tools hit-test only the center markers: Bokeh cannot hit-test an image with a polygon, and the
    server maps the lasso's geometry to points itself. continuous=False: one event when the gesture ends."""
    from bokeh.models import BoxSelectTool, LassoSelectTool

    for tool in plot.state.tools:
        if isinstance(tool, (LassoSelectTool, BoxSelectTool)):
            tool.renderers = [plot.handles["glyph_renderer"]]
            tool.continuous = False


def _view_dims(x_axis: str, y_axis: str) -> tuple[str, str]:
    return (x_axis, y_axis) if x_axis != y_axis else (x_axis, f"{y_axis} ")  # one column on both axes


def _size() -> dict:
    return {"responsive": True, "min_width": 380, "min_height": PLOT_SIZE[1], "max_height": 640}
