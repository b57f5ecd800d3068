"""The teaching view's layers: over the 2-D view the explained point's dc (or ε) circle, the points within it
and (DPC) its chain of arrows to a center, DPC's parent forest and step-through picture, DBSCAN's tree edges
within ε and its core points' ε circles; on the decision graph a ring around the explained point. Functions of a ``Teaching`` state.

Three layers carry it all (arrows, markers, the circle), each row with its own colour and size: every layer
costs Bokeh models at page load and a message at each redraw.
"""

from __future__ import annotations

import colorcet
import holoviews as hv
import numpy as np

from .plots import HALO_GREY, MARKER_SIZE, OVER_THE_IMAGE, POINTED, UNSEEN_COLOURS, cluster_colour, detach_streams, view_dims, with_unseen_rows
from .teaching import MAX_RINGED, Teaching, arrow_segments

DENSITY_COLOURS = colorcet.palette["bmy"]  # dark to bright: sparse to dense
NOT_YET = "#e6e6e6"  # a point the step-through has not reached
CIRCLE_VERTICES = 96
CORE_CIRCLE_VERTICES = 32  # thousands of them: fewer vertices each
CORE_CIRCLE_COLOUR = "#666666"  # grey, the colour of no cluster
CHAIN_COLOUR = "#d62728"
# arrows: (colour, line width, opacity)
ARROWS = {"forest": ("#555555", 1.0, 0.5), "faint": ("#999999", 0.8, 0.4), "bold": ("#333333", 1.2, 1.0),
          "chain": (CHAIN_COLOUR, 2.5, 1.0), "edges": ("#333333", 1.2, 0.8)}  # fmt: skip
# markers: (marker, size, line width, fill opacity); their colour is per point
MARKERS = {"step": ("circle", 6, 0.5, 1.0), "center": ("x", MARKER_SIZE, 3.0, 1.0), "counted": ("circle", 7, 1.0, 0.0)}
# two rows each layer draws nowhere, whose styles differ (see plots.with_unseen_rows)
UNSEEN_ARROWS = {"colour": UNSEEN_COLOURS, "width": (0.0, 1.0), "alpha": (0.0, 0.5)}
UNSEEN_MARKERS = {"colour": UNSEEN_COLOURS, "marker": ("circle", "x"), "size": (0.0, 1.0), "width": (0.0, 1.0),
                  "fill": (0.0, 0.5)}  # fmt: skip


class TeachingPlots:
    def __init__(self, teaching: Teaching):
        self.teaching, self.studio = teaching, teaching.studio
        # redrawn when the teaching choices or the axes change and, while something is shown, when the labels do;
        # not on every relabel of a page that shows nothing here
        self.changed = hv.streams.Counter()
        active = lambda: (teaching.point is not None or teaching.forest or teaching.edges or teaching.circles  # noqa: E731
                          or teaching.step is not None)  # fmt: skip
        self._watchers = [
            (teaching, teaching.param.watch(lambda *events: self.changed.event(), ["point", "forest", "edges", "circles", "step"])),
            (self.studio, self.studio.param.watch(
                lambda *events: (active() or any(e.name != "revision" for e in events)) and self.changed.event(),
                ["revision", "x_axis", "y_axis"])),
        ]  # fmt: skip
        self._drawn: tuple | None = None  # (counter, explanation, step picture): computed once per redraw

    def view_layers(self) -> hv.Overlay:
        """The layers over the 2-D view: arrows, then markers, then the circles."""
        return (self._dynamic(self._arrows) * self._dynamic(self._markers) * self._dynamic(self._circle)).opts(
            hv.opts.Segments("Teaching", color="colour", line_width="width", alpha="alpha", **OVER_THE_IMAGE),
            hv.opts.Points("Teaching", color="colour", marker="marker", size="size", line_width="width", fill_alpha="fill", **OVER_THE_IMAGE),
            hv.opts.Path("Teaching.Explained", color="black", line_width=2, line_dash="dashed", **OVER_THE_IMAGE),
            hv.opts.Path("Teaching.Core", color=CORE_CIRCLE_COLOUR, line_width=0.8, alpha=0.35, **OVER_THE_IMAGE),
        )

    def graph_layer(self) -> hv.DynamicMap:
        """A ring around the explained point on the decision graph."""
        return self._dynamic(self._graph_ring).opts(hv.opts.Points("Explained", **{**POINTED, "line_color": CHAIN_COLOUR}, **OVER_THE_IMAGE))

    def close(self) -> None:
        for owner, watcher in self._watchers:
            owner.param.unwatch(watcher)
        detach_streams([self.changed])

    # layers -------------------------------------------------------------------------------------------------
    def _dynamic(self, layer) -> hv.DynamicMap:
        return hv.DynamicMap(lambda counter: layer(), streams=[self.changed])

    def _state(self) -> tuple[dict | None, dict | None]:
        """(explanation, step picture) of this redraw, computed once for every layer."""
        if self._drawn is None or self._drawn[0] != self.changed.counter:
            shown = self.teaching.explains
            self._drawn = (self.changed.counter, self.teaching.explanation() if shown else None,
                           self.teaching.step_picture() if shown else None)  # fmt: skip
        return self._drawn[1:]

    def _arrows(self) -> hv.Segments:
        facts, picture = self._state()
        kinds = [("forest", *self.teaching.forest_arrows()), ("edges", *self.teaching.joining_edges())]  # (kind, tails, heads)
        if picture is not None:
            kinds += [(kind, *picture[kind]) for kind in ("faint", "bold") if picture[kind] is not None]
        if facts is not None:
            kinds.append(("chain", facts["chain"][:-1], facts["chain"][1:]))
        x, y, names = self._coordinates()
        spans = (float(np.ptp(x)), float(np.ptp(y)))
        columns = {name: [] for name in ("x", "y", "x_end", "y_end", "colour", "width", "alpha")}
        for kind, tails, heads in kinds if self.teaching.explains else []:
            # the tree's edges have no direction: lines, not arrows
            segments = (x[tails], y[tails], x[heads], y[heads]) if kind == "edges" else arrow_segments(x, y, tails, heads, spans)
            for name, values in zip(("x", "y", "x_end", "y_end"), segments):
                columns[name].append(values)
            for name, value in zip(("colour", "width", "alpha"), ARROWS[kind]):
                columns[name].append(np.full(segments[0].size, value, object if name == "colour" else float))
        columns = {name: np.concatenate(parts) if parts else np.empty(0, object if name == "colour" else float)
                   for name, parts in columns.items()}  # fmt: skip
        return hv.Segments(with_unseen_rows(columns, UNSEEN_ARROWS), [*names, "x_end", "y_end"], ["colour", "width", "alpha"],
                           group="Teaching")  # fmt: skip

    def _markers(self) -> hv.Points:
        facts, picture = self._state()
        groups = []  # (kind, points, colours), drawn in this order
        if picture is not None:
            groups.append(("step", np.arange(picture["rho"].size), _step_colours(picture)))
            if picture["stage"] not in ("rho", "delta"):
                centers = picture["centers"]
                groups.append(("center", centers, np.array([cluster_colour(k) for k in range(centers.size)], object)))
        if facts is not None:
            counted = np.flatnonzero(facts["counted"])
            if counted.size <= MAX_RINGED:
                groups.append(("counted", counted, np.full(counted.size, "black", object)))
        x, y, names = self._coordinates()
        columns = {
            "x": np.concatenate([x[points] for _, points, _ in groups] or [np.empty(0)]),
            "y": np.concatenate([y[points] for _, points, _ in groups] or [np.empty(0)]),
            "colour": np.concatenate([colours for _, _, colours in groups] or [np.empty(0, object)]),
            **{name: np.concatenate([np.full(points.size, MARKERS[kind][k], object if k == 0 else float)
                                     for kind, points, _ in groups] or [np.empty(0, object if k == 0 else float)])
               for k, name in enumerate(("marker", "size", "width", "fill"))},
        }  # fmt: skip
        return hv.Points(with_unseen_rows(columns, UNSEEN_MARKERS), list(names), ["colour", "marker", "size", "width", "fill"],
                         group="Teaching")  # fmt: skip

    def _circle(self) -> hv.Overlay:
        """DBSCAN's core points' ε circles under the explained point's dc (or ε) circle, where the 2-D view shows the
        very features distances are measured in (else a circle in a projection would mislead: the ringed points
        tell which are within dc)."""
        x, y, names = self._coordinates()
        facts, _ = self._state()
        explained = np.empty(0, np.int64)
        if facts is not None and self.studio.view_shows_features:
            explained = facts["chain"][:1]
        cores, eps = self.teaching.core_circles()
        radius = facts["radius"] if facts is not None else 0.0
        return (hv.Path(_circle_paths(x, y, cores, eps, CORE_CIRCLE_VERTICES), list(names), group="Teaching", label="Core")
                * hv.Path(_circle_paths(x, y, explained, radius, CIRCLE_VERTICES), list(names), group="Teaching", label="Explained"))  # fmt: skip

    def _graph_ring(self) -> hv.Points:
        x = y = np.empty(0)
        point = self.teaching.point
        if point is not None and self.studio.dpc.loaded:
            x, y = self.studio.plot_coordinates("graph")
            x, y = x[point : point + 1], y[point : point + 1]
        return hv.Points((x, y), ["rho", "delta"], group="Explained")

    def _coordinates(self):
        x, y = self.studio.plot_coordinates("view")
        return x, y, view_dims(self.studio.x_axis, self.studio.y_axis)


def _circle_paths(x: np.ndarray, y: np.ndarray, centers: np.ndarray, radius: float, vertices: int) -> list[np.ndarray]:
    """Circles around the points ``centers`` as one path broken by NaN rows (one path per circle costs HoloViews
    about 12 ms each: 26 s for 2,000 core points; Bokeh draws a NaN as a gap)."""
    if not centers.size:
        return []
    turn = np.append(np.linspace(0, 2 * np.pi, vertices), np.nan)  # closed (the last vertex is the first), then a break
    path = np.stack([x[centers, None] + radius * np.cos(turn), y[centers, None] + radius * np.sin(turn)], axis=-1)
    return [path.reshape(-1, 2)[:-1]]


def _step_colours(picture: dict) -> np.ndarray:
    """Per point: its density (rho, delta), not yet reached (peaks, labels), its cluster (labels, halo)."""
    if picture["labels"] is None:
        rank = np.argsort(np.argsort(picture["rho"], kind="stable"), kind="stable")
        shade = (rank * (len(DENSITY_COLOURS) - 1)) // max(rank.size - 1, 1)
        colours = np.asarray(DENSITY_COLOURS, object)[shade]
        if picture["stage"] == "peaks":
            colours[:] = NOT_YET
        return colours
    labels = picture["labels"]
    colours = np.array([cluster_colour(label) for label in range(int(labels.max(initial=-1)) + 1)] + [NOT_YET], object)
    colours = colours[labels]  # label -1 takes the last entry: not reached yet
    if picture["stage"] == "halo":
        colours[labels < 0] = HALO_GREY
    return colours
