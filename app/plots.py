"""The two main plots of a session: the (rho, delta) decision graph and the 2-D view, both datashaded.

Datashading keeps every point on screen at millions of points and re-aggregates on zoom and pan (RangeXY).
Both plots colour points by cluster (the same colours for every method); DPC's centers get large markers in their
cluster colours, and DBSCAN's core points are drawn larger than its border points.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

import colorcet
import datashader as ds
import datashader.transfer_functions as tf
import holoviews as hv
import numpy as np
import pandas as pd
import param
import xarray as xr
from datashader.colors import rgb

from dpstudio.engine.centers import graph_coordinates

from .plot_frame import PLOT_SIZE, frame, full_size, instruction_line
from .studio import Studio

HALO_GREY = "#b4b4b4"
MAX_MARKERS = 200  # center markers drawn (the first, by gamma); thousands of markers would freeze the page
UNSEEN_COLOURS = ("#ffffff00", "#00000000")  # two transparent colours for a layer's unseen rows (with_unseen_rows)
log = logging.getLogger("dpstudio")
SHADING_THREADS = 2  # both plots of a change at once
_SHADING = ThreadPoolExecutor(SHADING_THREADS, thread_name_prefix="dpstudio-shading")


def start_shading_threads() -> None:
    """Start the shading threads now, in this thread (the server's main thread, after it forked its workers). A thread
    takes the priority of the thread that starts it, and the pool starts one at a submit: one started from a load's
    thread (run behind the page, ``priority.behind_the_page``) would shade every later redraw behind it too."""
    all_started = threading.Barrier(SHADING_THREADS + 1)
    for _ in range(SHADING_THREADS):
        _SHADING.submit(all_started.wait)  # a waiting task keeps its thread busy: the next submit starts another
    all_started.wait()


def _is_colourful(colour: str) -> bool:
    """Far enough from grey (its channels differ by a quarter of their range) never to pass for the halo."""
    channels = [int(colour[i : i + 2], 16) for i in (1, 3, 5)]
    return max(channels) - min(channels) >= 64


CLUSTER_COLOURS = tuple(c for c in colorcet.palette["glasbey_category10"] if _is_colourful(c))[:20]  # past 20: reused
PALETTE = (HALO_GREY, *CLUSTER_COLOURS)  # colour code 0 is the halo
CATEGORIES = [str(code) for code in range(len(PALETTE))]
MARKER_SIZE = 16  # pixels across a center marker
VIEW_INSTRUCTION = "lasso some to see them on the decision graph"  # DPC's alone: the other methods have no graph
VIEW_COUNTS = "lasso some to count them by cluster"  # theirs (no line: the view sat higher than the plot beside it)
# the layers over a plot's image leave its ranges to the image (shaded for the zoom, or the data's extent with room
# for a marker): a plot made again (the teaching layers joining) keeps the zoom, and redraws skip their extents
OVER_THE_IMAGE = {"apply_ranges": False}
POINTED = {"marker": "circle", "size": MARKER_SIZE + 6, "color": "black", "fill_alpha": 0.0, "line_width": 2.5}  # a ring
# The center markers' own group: their options (a hover tool and its tooltip) reach no other Points layer.
# As plain Points, the ring around the point under the mouse had their hover tool too (over a marker, which the ring
# then surrounds, a second tooltip showed), and so had the teaching layers' markers (a tooltip of "???").
CENTERS = "Centers"


def colour_codes(labels: np.ndarray) -> pd.Categorical:
    """Categorical colour code per point (datashader's count_cat needs a categorical column), over the whole
    palette: datashader compiles its aggregation for each number of categories (half a second each, at the first
    relabel to a new number of colours), and the unused ones cost 5-15 ms a shading."""
    return pd.Categorical.from_codes(np.where(labels < 0, 0, labels % len(CLUSTER_COLOURS) + 1).astype(np.int8), categories=CATEGORIES)


def detach_streams(streams: list[hv.streams.Stream]) -> None:
    """Let go of a closed session's streams. Each stops watching its state and drops its subscribers (the plots'
    redraws): an action still running for the session would otherwise redraw them, and HoloViews redraws a plot
    whose document is gone in the action's worker thread, beside the event loop building another session's page
    (once, that page failed to build). And each lets go of its source: HoloViews keeps every stream in a registry
    keyed weakly by its plot, but the stream refers back to the plot, so the plot, the session and its page would
    outlive the browser session."""
    for stream in streams:
        if isinstance(stream, hv.streams.Params):
            stream.unwatch()
        stream.clear()
        stream.source = None


def cluster_colour(label: int) -> str:
    return PALETTE[0] if label < 0 else CLUSTER_COLOURS[label % len(CLUSTER_COLOURS)]


def shade_categories(x, y, labels, x_range, y_range, width: int | None, height: int | None, names: tuple[str, str],
                     large: np.ndarray | None = None) -> hv.RGB:  # fmt: skip
    """Points aggregated per pixel and colour category, shaded, spread so lone points stay visible; the pixels that
    hold points of the ``large`` mask are drawn a pixel wider on every side, over the others. Without a size (the
    browser has not laid the plot out yet, and its size comes next), a transparent image over the same ranges:
    one of PLOT_SIZE, sent with the page and replaced at once, was 1 MB per plot."""
    x_range, y_range = _ranges(x, y, x_range, y_range, width, height)
    if width is None or height is None:
        return hv.RGB(np.zeros((1, 1, 4), np.uint8), bounds=(x_range[0], y_range[0], x_range[1], y_range[1]),
                      kdims=list(names), vdims=list("RGBA"))  # fmt: skip
    frame = pd.DataFrame({"x": x, "y": y, "colour": colour_codes(labels)})
    canvas = ds.Canvas(plot_width=int(width), plot_height=int(height), x_range=x_range, y_range=y_range)
    counts = canvas.points(frame, "x", "y", ds.count_cat("colour"))
    image = shade_counts(counts, list(PALETTE))
    if large is None:
        image = tf.dynspread(image, threshold=0.5, max_px=4)
    else:  # shaded once (shading is most of the time); large points' pixels spread 2 px over the others' 1 px
        frame["large"] = np.asarray(large, np.float32)
        large_count = np.nan_to_num(canvas.points(frame, "x", "y", ds.sum("large")).data)  # NaN: no point there
        with_large, with_small = large_count > 0, counts.data.sum(axis=2) > large_count
        image = tf.stack(*(tf.spread(tf.Image(np.where(mask, image.data, 0), coords=image.coords, dims=image.dims), px=px)
                           for mask, px in ((with_small, 1), (with_large, 2))))
    rgba = image.data.view(np.uint8).reshape(*image.shape, 4)[::-1]  # datashader's row 0 is the bottom
    return hv.RGB(rgba, bounds=(x_range[0], y_range[0], x_range[1], y_range[1]), kdims=list(names), vdims=list("RGBA"))


def shade_counts(counts: xr.DataArray, colours: list[str], min_alpha: int = 200) -> tf.Image:
    """``tf.shade(counts, color_key=colours, min_alpha=min_alpha)`` for a ``count_cat`` aggregate, pixel for pixel,
    in a fraction of its time: datashader's general path makes about twenty passes over the (height, width,
    category) array, NaN handling included, that counts never need; here only the pixels that hold points are
    mixed (two matrix products) and given an alpha (datashader's eq_hist), and the alpha is reused while those
    counts stay the same."""
    height, width, n_colours = counts.shape
    if not n_colours or counts.dtype.kind != "u":  # no points; or signed counts, where datashader does not mask zeros
        return tf.shade(counts, color_key=colours, min_alpha=min_alpha)
    per_pixel = counts.data.reshape(-1, n_colours)
    total = per_pixel @ np.ones(n_colours, per_pixel.dtype)  # exact, for the alpha
    # as datashader mixes: the counts above the smallest one (not 0 only where every pixel holds every colour)
    base = per_pixel.min() if total.min() >= n_colours else 0
    palette = np.array([rgb(colour) for colour in colours], np.float32)
    weight_total = total - base * n_colours
    mixed = np.empty((total.shape[0], 3), np.float32)
    mixed[:] = palette.mean(axis=0)  # as datashader colours pixels without weight (empty ones)
    weighted = np.flatnonzero(weight_total)  # each of these pixels' colours weighted by their counts, in float32
    mixed[weighted] = (per_pixel[weighted] - base).astype(np.float32) @ palette / weight_total[weighted, None].astype(np.float32)
    rgba = np.empty((height, width, 4), np.uint8)
    rgba[..., :3] = mixed.reshape(height, width, 3)  # cast as datashader casts (truncation)
    rgba[..., 3] = _alpha(total.tobytes(), total.dtype.str, height, width, min_alpha)
    dims = counts.dims[:2]
    return tf.Image(rgba.view(np.uint32)[..., 0], dims=dims, coords={dim: counts.coords[dim] for dim in dims})


@functools.lru_cache(maxsize=8)  # a relabel (a lasso, eps, the colouring) changes colours, not the counts
def _alpha(total: bytes, dtype: str, height: int, width: int, min_alpha: int) -> np.ndarray:
    """Datashader's alpha for ``total`` points per pixel: its own path for one category of counts, given only the
    pixels that hold points and, if there are empty ones, one of them. That is the same alpha: eq_hist ranks the
    counts of the pixels that hold points (the empty ones, masked, are transparent), and datashader takes another
    path for an image with empty pixels than for one without."""
    total = np.frombuffer(total, dtype)
    held = np.flatnonzero(total)
    empty = int(held.shape[0] < total.shape[0])
    compact = np.zeros(held.shape[0] + empty, total.dtype)
    compact[empty:] = total[held]
    counts = xr.DataArray(compact.reshape(1, -1, 1), dims=("y", "x", "c"), coords={"c": ["c"]})
    rgba = tf.shade(counts, color_key=["black"], min_alpha=min_alpha).data
    alpha = np.zeros(height * width, np.uint8)
    alpha[held] = rgba.view(np.uint8).reshape(-1, 4)[empty:, 3]
    alpha = alpha.reshape(height, width)
    alpha.flags.writeable = False  # the cache hands this array out again
    return alpha


def _same(key: tuple, other: tuple) -> bool:
    """Image keys equal; arrays (a selection) compared by identity: a key holds them, so an id is never reused
    while compared."""
    return len(key) == len(other) and all(a is b if isinstance(a, np.ndarray) or isinstance(b, np.ndarray) else a == b
                                          for a, b in zip(key, other))  # fmt: skip


def _edited(old, new) -> bool:
    """Whether data set ``new`` is ``old`` with points added or deleted (``Dataset.edited``), or the other way."""
    return old is not None and new is not None and old.original is new.original


def _ranges_and_size(ranges: hv.streams.RangeXY, size: hv.streams.PlotSize) -> tuple:
    """A plot's stream values as its DynamicMap's callback receives them."""
    return ranges.x_range, ranges.y_range, size.width, size.height


def _ranges(x, y, x_range, y_range, width: int | None, height: int | None) -> tuple[tuple[float, float], ...]:
    """The image's (x, y) ranges: ``_padded`` for its size, or for PLOT_SIZE before the browser gives one."""
    return _padded(x, x_range, width or PLOT_SIZE[0]), _padded(y, y_range, height or PLOT_SIZE[1])


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
    """DynamicMaps over a Studio; ``render_seconds`` holds the last shading time of each plot."""

    def __init__(self, studio: Studio, on_render: Callable[[], None] = lambda: None):
        self.studio, self.session, self.on_render = studio, studio.dpc, on_render
        self.render_seconds: dict[str, float] = {}
        self._last_images: dict[str, tuple[tuple, hv.RGB]] = {}  # each plot's last (key, image): see _shaded
        self._next_images: dict[str, tuple[tuple, Future]] = {}  # each plot's image being shaded ahead: see _shade_ahead
        self._awaited: set[Future] = set()  # those of them a redraw waits for
        self._drawn: set[str] = set()  # plots on a page: only those are shaded ahead
        self._watchers: list[tuple] = []  # (owner, watcher) on the studio and the session, removed by close()
        self.graph_ranges = hv.streams.RangeXY()
        self.view_ranges = hv.streams.RangeXY()
        # no size until the browser lays the plots out (see shade_categories)
        self.graph_size, self.view_size = size = [hv.streams.PlotSize() for _ in range(2)]
        # before the streams' own watchers (and first of a batched update's, which start with the data set): new data
        # resets the zoom, then the images are shaded ahead
        self._watch(studio, self._studio_changed, ["dataset", "x_axis", "y_axis", "revision", "selected"])
        # DPC's points (an edit too: every rho may change), before its revision, whose image is then shaded ahead once
        self._watch(self.session, lambda *e: self.graph_ranges.reset(), ["dataset", "dc", "kernel", "log_axes"])
        self._watch(self.session, lambda *e: self._shade_ahead("decision graph"), ["revision"])
        # one stream per watched set, shared by every layer that redraws on it: HoloViews then updates the overlay
        # once per change, not once per layer (each update walks the whole overlay)
        self.graph_revision = hv.streams.Params(self.session, ["revision"])
        graph_watched = [self.graph_revision, hv.streams.Params(studio, ["selected"])]
        self.view_watched = view_watched = hv.streams.Params(studio, ["revision", "x_axis", "y_axis"])
        self.graph_image = hv.DynamicMap(self._graph_image, streams=[*graph_watched, self.graph_ranges, size[0]])
        self.view_image = hv.DynamicMap(self._view_image, streams=[view_watched, self.view_ranges, size[1]])
        self.lasso = hv.streams.Lasso(source=self.graph_image)
        self.box = hv.streams.BoundsXY(source=self.graph_image)
        self.corner_tap = hv.streams.Tap(source=self.graph_image)  # the rectangle's corner
        self.graph_pointer = hv.streams.PointerXY(source=self.graph_image)
        self.view_pointer = hv.streams.PointerXY(source=self.view_image)
        self.view_lasso = hv.streams.Lasso(source=self.view_image)
        self.view_tap = hv.streams.Tap(source=self.view_image)  # the teaching view's point
        pinned_watched = hv.streams.Params(studio, ["pinned", "x_axis", "y_axis"])
        self.pinned_size = hv.streams.PlotSize()
        self.pinned_image = hv.DynamicMap(self._pinned_image, streams=[pinned_watched, self.pinned_size])
        self._streams = [*graph_watched, view_watched, pinned_watched, self.graph_ranges, self.view_ranges, *size, self.pinned_size,
                         self.lasso, self.box, self.corner_tap, self.graph_pointer, self.view_pointer, self.view_lasso, self.view_tap]  # fmt: skip

    def decision_graph(self) -> hv.Overlay:
        centers = hv.DynamicMap(self._graph_centers, streams=[self.graph_revision])
        corner = hv.DynamicMap(self._graph_corner, streams=[self.graph_revision])
        pointed = self._ring("graph", ["revision"])
        return tools_on_markers_only(self.graph_image * corner * centers * pointed).opts(
            hv.opts.RGB(
                tools=["lasso_select", "box_select"], active_tools=["lasso_select", "wheel_zoom"],
                framewise=True, **frame("Decision graph", "lasso the peaks at the top right, or click a corner"), **full_size(),
            ),
            hv.opts.Path(color="black", line_dash="dashed", line_width=1.5, **OVER_THE_IMAGE),
            hv.opts.Points(CENTERS, color="colour", size=MARKER_SIZE - 2, line_color="black", line_width=1.5, tools=["hover"],
                           hover_tooltips=["rho", "delta", "cluster", "row"], nonselection_alpha=1.0, **OVER_THE_IMAGE),
            hv.opts.Points("Pointed", **POINTED, **OVER_THE_IMAGE),
        )  # fmt: skip

    def data_view(self) -> hv.Overlay:
        centers = hv.DynamicMap(self._view_centers, streams=[self.view_watched])
        pointed = self._ring("view", ["x_axis", "y_axis"])
        return tools_on_markers_only(self.view_image * centers * pointed).opts(
            hv.opts.RGB(framewise=True, tools=["lasso_select"], active_tools=["lasso_select", "wheel_zoom"],
                        **frame("Points by cluster", VIEW_INSTRUCTION, hooks=(_view_instruction,)), **full_size()),
            # the axes' columns change names with the axes: the facts of the point under the mouse give the rest
            hv.opts.Points(CENTERS, color="colour", marker="x", size=MARKER_SIZE, line_width=3, tools=["hover"],
                           hover_tooltips=["cluster", "row"], nonselection_alpha=1.0, **OVER_THE_IMAGE),
            hv.opts.Points("Pointed", **POINTED, **OVER_THE_IMAGE),
        )  # fmt: skip

    def pinned_view(self) -> hv.DynamicMap:
        """The pinned clustering in the same 2-D view, small, for the comparison strip."""
        return self.pinned_image.opts(hv.opts.RGB(**frame("Pinned: {label}"), responsive=True, height=300, framewise=True,
                                                  default_tools=["save"], toolbar=None))  # fmt: skip

    def close(self) -> None:
        detach_streams(self._streams)
        for owner, watcher in self._watchers:
            owner.param.unwatch(watcher)
        for _, image in self._next_images.values():
            image.cancel()
        self._last_images.clear()  # the images (and a selection mask) go now, not when the page's cycle is collected
        self._next_images.clear()

    def _ring(self, plot: str, moved_by: list[str]) -> hv.DynamicMap:
        """The ring around the pointed point, redrawn when another point is pointed at or, while one is, when the
        studio parameters ``moved_by`` move it; not at every relabel (each redraw walks the whole overlay)."""
        changed = self._stream(hv.streams.Counter())

        def moved(*events) -> None:
            if self.studio.pointed is not None or any(event.name == "pointed" for event in events):
                changed.event()

        self._watch(self.studio, moved, ["pointed", *moved_by])
        return hv.DynamicMap(lambda counter: self._pointed(plot, self.studio.pointed), streams=[changed])

    def _watch(self, owner: param.Parameterized, callback, names: list[str]) -> None:
        self._watchers.append((owner, owner.param.watch(callback, names)))

    def _stream(self, stream: hv.streams.Stream) -> hv.streams.Stream:
        self._streams.append(stream)
        return stream

    # callbacks ----------------------------------------------------------------------------------------------
    def _graph_image(self, revision, selected, x_range, y_range, width, height, scale=1.0):
        if not self.session.loaded:  # DPC not shown since the data set changed: it loads when chosen again
            return hv.RGB(np.zeros((1, 1, 4), np.uint8), kdims=["rho", "delta"], vdims=list("RGBA"))
        return self._shaded("decision graph", *self._graph_job(revision, selected, x_range, y_range, width, height))

    def _view_image(self, revision, x_axis, y_axis, x_range, y_range, width, height, scale=1.0):
        image = self._shaded("2-D view", *self._view_job(revision, x_axis, y_axis, x_range, y_range, width, height))
        return image.relabel(group=self.studio.method)  # for _view_instruction (a label would make a legend entry)

    def _graph_job(self, revision, selected, x_range, y_range, width, height) -> tuple[tuple, Callable[[], hv.RGB]]:
        x, y = self._graph_coordinates()
        selected = selected if self.studio.dpc_shows_dataset else None  # a lasso of the shown points, not DPC's new ones
        prefix = "log₁₀ " if self.session.log_axes else ""
        names = (hv.Dimension("rho", label=f"{prefix}ρ (local density)"), hv.Dimension("delta", label=f"{prefix}δ (distance to a denser point)"))
        # the points lassoed in the 2-D view drawn larger, over the others
        return self._job("decision graph", (revision, selected, prefix), x, y, x_range, y_range, width, height, names,
                         lambda: (self.session.labels(), selected))  # fmt: skip

    def _view_job(self, revision, x_axis, y_axis, x_range, y_range, width, height) -> tuple[tuple, Callable[[], hv.RGB]]:
        studio = self.studio
        x, y = studio.dataset.axis_values(x_axis), studio.dataset.axis_values(y_axis)
        return self._job("2-D view", (revision, x_axis, y_axis), x, y, x_range, y_range, width, height, view_dims(x_axis, y_axis),
                         lambda: (studio.labels(), studio.large_points()))  # fmt: skip

    def _job(self, plot: str, key: tuple, x, y, x_range, y_range, width, height, names, colours) -> tuple[tuple, Callable[[], hv.RGB]]:
        """(key, shade): ``shade()`` makes the plot's image, ``shade_categories`` of its points coloured by
        ``colours()`` = (labels, large), timed; ``key`` is what the image depends on (``key`` given: the stream
        values it depends on besides ranges and size)."""
        ranges = _ranges(x, y, x_range, y_range, width, height)
        labels, large = colours()  # now, with the points: the state may change again before the shading starts

        def shade() -> hv.RGB:
            started = time.perf_counter()
            image = shade_categories(x, y, labels, *ranges, width, height, names, large=large)
            self.render_seconds[plot] = time.perf_counter() - started
            return image

        return (*key, *ranges, width, height), shade

    def _shaded(self, plot: str, key: tuple, shade: Callable[[], hv.RGB]) -> hv.RGB:
        """The plot's image for ``key``: its last one when asked for the same again (HoloViews draws each plot twice
        as a page is first made, without ranges and then with those it drew), the one shaded ahead for it, or
        ``shade()``."""
        self._drawn.add(plot)
        last_key, last_image = self._last_images.get(plot, ((), None))
        if _same(last_key, key):
            return last_image
        next_key, next_image = self._next_images.get(plot, ((), None))
        if not _same(next_key, key):
            image = shade()
        else:  # left listed while awaited: a shade-ahead for the same key (a watcher after HoloViews') sees it
            self._awaited.add(next_image)  # and a newer one does not cancel it
            try:
                image = next_image.result()
            except Exception:  # shaded ahead from a state that was still changing (a selection of the old points)
                image = shade()
            finally:
                self._awaited.discard(next_image)
                if self._next_images.get(plot, ((), None))[1] is next_image:  # not superseded meanwhile
                    del self._next_images[plot]
        self._last_images[plot] = (key, image)
        self.on_render()
        return image

    def _studio_changed(self, *events) -> None:
        changed = {event.name: event for event in events}
        # other data or axes: the old zoom means nothing. Points added or deleted keep the 2-D view's (a teacher
        # zoomed in to add one), not the decision graph's (reset with DPC's points: a stream's first fit on a tenth
        # of the points kept the whole set's rho axis, five times too long, and its batches would outgrow it)
        if "dataset" in changed and not _edited(changed["dataset"].old, changed["dataset"].new):
            self.view_ranges.reset()
        elif changed.keys() & {"x_axis", "y_axis"}:
            self.view_ranges.reset()
        if "revision" in changed:
            self._shade_ahead("2-D view")
        if changed.keys() & {"revision", "selected"}:  # the graph too: an edit's selection is cleared after DPC's revision
            self._shade_ahead("decision graph")

    def _shade_ahead(self, plot: str) -> None:
        """Start shading a plot's next image on a shading thread as soon as what it shows changes (in the thread
        that changed it, before HoloViews hears of it): its redraw, which HoloViews runs on the event loop one plot
        after the other, then only takes it, and the two plots are shaded at once. Nothing is lost if this fails:
        the redraw shades."""
        if plot not in self._drawn or (plot == "decision graph" and not self.session.loaded):
            return
        try:
            if plot == "decision graph":  # the stream values its DynamicMap's callback will receive
                key, shade = self._graph_job(self.session.revision, self.studio.selected,
                                             *_ranges_and_size(self.graph_ranges, self.graph_size))
            else:
                key, shade = self._view_job(self.studio.revision, self.studio.x_axis, self.studio.y_axis,
                                            *_ranges_and_size(self.view_ranges, self.view_size))
        except Exception:
            log.warning("the %s was not shaded ahead", plot, exc_info=True)
            return
        next_key, next_image = self._next_images.get(plot, ((), None))
        if _same(key, next_key) or _same(key, self._last_images.get(plot, ((), None))[0]):
            return
        if next_image is not None and next_image not in self._awaited:
            next_image.cancel()  # superseded: not shaded at all if it has not started
        self._next_images[plot] = (key, _SHADING.submit(shade))

    def _pinned_image(self, pinned, x_axis, y_axis, width, height, scale=1.0):
        dims = view_dims(x_axis, y_axis)
        if pinned is None:
            return hv.RGB(np.zeros((1, 1, 4), np.uint8), kdims=list(dims), vdims=list("RGBA"), label="nothing yet")
        x, y = self.studio.dataset.axis_values(x_axis), self.studio.dataset.axis_values(y_axis)
        return shade_categories(x, y, pinned.labels, None, None, width, height, dims).relabel(pinned.name)

    def _graph_centers(self, revision):
        if not self.session.loaded:
            return self._centers(np.empty(0), np.empty(0), ("rho", "delta"), np.empty(0, np.int64), np.empty(0, np.int64))
        centers = self.session.model.centers_
        x, y = self._graph_coordinates()
        # rows of DPC's own data set: the studio shows a data set that loads only after DPC has it
        return self._centers(x[centers], y[centers], ("rho", "delta"), centers, self.session.dataset.points.rows)

    def _graph_corner(self, revision):
        """The rectangle that chose the centers: dashed lines from its corner to the right and to the top."""
        corner = self.session.corner if self.session.loaded else None
        if corner is None:
            return hv.Path([], ["rho", "delta"])
        x, y = self._graph_coordinates()
        (left, bottom), log = corner, self.session.log_axes
        left, bottom = (np.log10(left), np.log10(bottom)) if log else (left, bottom)
        right = max(float(x.max()), left) + 0.05 * (float(np.ptp(x)) or 1.0)  # a little past the farthest point
        top = max(float(y.max()), bottom) + 0.05 * (float(np.ptp(y)) or 1.0)
        return hv.Path([[(left, top), (left, bottom), (right, bottom)]], ["rho", "delta"])

    def _pointed(self, plot: str, pointed: int | None) -> hv.Points:
        """A ring around the point under the mouse, on both plots at once."""
        names = ("rho", "delta") if plot == "graph" else view_dims(self.studio.x_axis, self.studio.y_axis)
        x = y = np.empty(0)
        if pointed is not None and (plot == "view" or self.session.loaded):
            x, y = self.studio.plot_coordinates(plot)
            x, y = x[pointed : pointed + 1], y[pointed : pointed + 1]
        return hv.Points((x, y), list(names), group="Pointed")

    def _graph_coordinates(self) -> tuple[np.ndarray, np.ndarray]:
        model = self.session.model
        return graph_coordinates(model.rho_, model.delta_, self.session.log_axes)

    def _view_centers(self, revision, x_axis, y_axis):
        """DPC's centers while its clusters are shown; no marker for the other methods or the ground truth, nor
        while DPC's model is of a data set the studio does not show yet (another one loading)."""
        studio = self.studio
        shown = studio.method == "dpc" and studio.colour_by == "clusters" and studio.dpc_shows_dataset
        dataset, centers = studio.dataset, self.session.model.centers_ if shown else np.empty(0, np.int64)
        x, y = dataset.axis_values(x_axis)[centers], dataset.axis_values(y_axis)[centers]
        return self._centers(x, y, view_dims(x_axis, y_axis), centers, dataset.points.rows)

    def _centers(self, x, y, names: tuple, centers: np.ndarray, rows: np.ndarray) -> hv.Points:
        """Markers of the centers at (x, y), with their row of the data set they index (``rows``)."""
        centers = centers[:MAX_MARKERS]
        clusters = np.arange(len(centers))
        x, y = x[:MAX_MARKERS], y[:MAX_MARKERS]
        columns = {
            **{hv.Dimension(name).name: values for name, values in zip(names, (x, y))},
            "cluster": clusters, "row": rows[centers],
            "colour": np.array([cluster_colour(c) for c in clusters], object),  # strings even when empty (BokehJS)
        }  # fmt: skip
        columns = with_unseen_rows(columns, {"colour": UNSEEN_COLOURS})
        # columns, not a DataFrame: a cheaper redraw
        return hv.Points(columns, list(names), ["cluster", "row", "colour"], group=CENTERS)


def tools_on_markers_only(overlay: hv.DynamicMap) -> hv.DynamicMap:
    """``overlay`` (a plot's layers) with its selection and hover tools on the center markers alone (see
    _tools_on_markers_only). An overlay's option, lost when another overlay is multiplied in: call again on the
    product (the teaching layers)."""
    return overlay.opts(hv.opts.Overlay(hooks=[_tools_on_markers_only]))


def _tools_on_markers_only(plot, element) -> None:
    """Selection and hover tools hit-test only the center markers. Selection: Bokeh cannot hit-test an image with a
    polygon, and the server maps the lasso's geometry to points itself; continuous=False, one event when the gesture
    ends. Hover: the markers' tooltip alone, where HoloViews gives an overlay's hover tool every layer it makes after
    the first draw (the 2-D view's image, made again when another method is shown, read "???" over every pixel). An
    overlay's hook: it runs after every layer's, and after that. Set only when changed: the ring's layer and the
    markers' setting their own renderer in turn changed the tools at every redraw, which made Bokeh walk all the
    page's models."""
    from bokeh.models import BoxSelectTool, HoverTool, LassoSelectTool

    markers = [subplot.handles["glyph_renderer"] for subplot in plot.subplots.values()
               if subplot.current_frame is not None and subplot.current_frame.group == CENTERS]  # fmt: skip
    for tool in plot.state.tools if markers else ():
        if isinstance(tool, (LassoSelectTool, BoxSelectTool, HoverTool)) and tool.renderers != markers:
            tool.renderers = markers
        if isinstance(tool, (LassoSelectTool, BoxSelectTool)):
            tool.continuous = False


def _view_instruction(plot, element) -> None:
    """The 2-D view's instruction, after each redraw: under DPC its lasso shows points on the decision graph, which
    only DPC has; under the others it counts them by cluster. The image's group names the method: a hook is kept in
    HoloViews' options for good, so one that held a session's plots kept every closed page alive. (As its label, the
    method made a legend box reading "dpc" over the view wherever the image joined another overlay, as the teaching
    layers' does.)"""
    if (line := instruction_line(plot)) is not None:
        line.text = VIEW_INSTRUCTION if element.group == "dpc" else VIEW_COUNTS


def view_dims(x_axis: str, y_axis: str) -> tuple[hv.Dimension, hv.Dimension]:
    """The 2-D view's dimensions: named x and y whatever the axes show, labelled with them. Named after the axes,
    the layers' columns changed names with the axes, and BokehJS drew a glyph's new fields before its data's
    (a console warning per draw, 40 on opening a one-column file). HoloViews matches a dimension by its label too,
    so a layer's dimensions are found by position, and one column on both axes labels y apart (equal labels made
    one dimension of two: the image's bounds did not fit)."""
    return hv.Dimension("x", label=x_axis), hv.Dimension("y", label=y_axis if y_axis != x_axis else f"{y_axis} ")


def with_unseen_rows(columns: dict[str, np.ndarray], styles: dict[str, tuple]) -> dict[str, np.ndarray]:
    """``columns`` and two rows drawn nowhere whose ``styles`` differ (the other columns NaN where float, else -1:
    coordinates, and signed whole numbers such as clusters and rows). HoloViews sends a styled column that holds
    one value as that value: as the rows changed (a center alone after Clear, one explained point's rings), a
    layer's glyph switched between a constant and a column of its data, in an update BokehJS drew before the
    data's own (a console warning at each draw: 146 for one explaining click)."""

    def unseen(name: str, values: np.ndarray) -> np.ndarray:
        if name in styles:
            return np.asarray(styles[name], values.dtype)
        return np.full(2, np.nan if values.dtype.kind == "f" else -1, values.dtype)

    return {name: np.concatenate([values, unseen(name, values)]) for name, values in columns.items()}

