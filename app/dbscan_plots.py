"""DBSCAN's plots: the k-distance curve with eps as a line, and the exact numbers of clusters and noise points at
every eps. Clicking or dragging on any of them sets eps (the streams ``eps_events`` carry x or y to the page).
"""

from __future__ import annotations

import holoviews as hv
import numpy as np

from .density_state import DBSCANState, EpsCurve
from .plot_frame import frame, full_size, small_frame, whole_ticks
from .plots import detach_streams

CURVE_POINTS = 2000  # points drawn of a curve over N values; the curves are monotone, so this keeps their shape
EXACT_STEPS = 4000  # step curves with more steps than this are drawn from their exact counts at CURVE_POINTS eps
EPS_LINE = {"color": "#d62728", "line_width": 2, "line_dash": "dashed"}


def k_distance_points(distances: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rank, distance) of at most CURVE_POINTS points of the curve (sorted largest first), both ends of its
    positive part included: its log axis has no place for 0 (the core distance of a point with duplicates enough,
    and of every point at min_samples 1, where the server logged a warning at each redraw)."""
    distances = distances[distances > 0]
    ranks = np.unique(np.linspace(0, distances.size - 1, min(distances.size, CURVE_POINTS)).astype(np.int64))
    return ranks, distances[ranks]


def eps_steps(curve: EpsCurve, eps_range: tuple[float, float]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(eps, clusters, noise) to draw as steps over ``eps_range``: every step when few, else the exact counts at
    CURVE_POINTS eps spaced evenly in log."""
    low, high = eps_range
    if curve.eps.size <= EXACT_STEPS:
        inside = (curve.eps >= low) & (curve.eps <= high)
        eps = np.concatenate([[low], curve.eps[inside], [high]])
    else:
        eps = np.geomspace(low, high, CURVE_POINTS)
    return (eps, *curve.counts(eps))


class DBSCANPlots:
    def __init__(self, state: DBSCANState):
        self.state = state
        tree = hv.streams.Params(state, ["min_samples", "dataset"])
        counts = hv.streams.Params(state, ["min_samples", "dataset", "eps_view"])
        eps = hv.streams.Params(state, ["eps"])
        self.k_curve = hv.DynamicMap(self._k_distance, streams=[tree])
        self.clusters_curve = hv.DynamicMap(lambda **kw: self._counts("clusters", **kw), streams=[counts])
        self.noise_curve = hv.DynamicMap(lambda **kw: self._counts("noise", **kw), streams=[counts])
        self.h_line = hv.DynamicMap(lambda eps: hv.HLine(eps or 1.0), streams=[eps])
        self.v_lines = [hv.DynamicMap(lambda eps: hv.VLine(eps or 1.0), streams=[eps]) for _ in range(2)]
        # a click sets eps, and so does a drag (pan events, no pan tool on these plots): y on the k-distance
        # plot, x on the counts
        self.eps_events = [
            (axis, stream(source=source))
            for axis, source in (("y", self.k_curve), ("x", self.clusters_curve), ("x", self.noise_curve))
            for stream in (hv.streams.Tap, hv.streams.Draw)
        ]
        self._streams = [tree, counts, eps, *(s for _, s in self.eps_events)]

    def k_distance(self) -> hv.Overlay:
        return (self.k_curve * self.h_line).opts(
            hv.opts.Curve(logy=True, color="#333", tools=["hover"],
                          **frame("k-distance", "click or drag to set ε"), framewise=True,
                          **full_size()),  # as tall as the 2-D view beside it
            hv.opts.HLine(**EPS_LINE),
        )  # fmt: skip

    def sensitivity(self) -> list[hv.Overlay]:
        """Clusters and noise at every eps, as separate plots for the page to stack: with an hv.Layout's grid
        on this page, BokehJS in Chromium never reached idle and stopped sending the page's events."""
        # counts: whole ticks from 0 (a count that never changes, such as no noise at min_samples 1, had ticks at -1.0
        # and 0.5)
        opts = {"logx": True, "interpolation": "steps-post", "tools": ["hover"], "ylim": (0, None)}
        return [
            (self.clusters_curve * self.v_lines[0]).opts(hv.opts.Curve(**small_frame("Clusters at every ε (exact)", "click or drag to set ε", (whole_ticks,)), color="#1f77b4", **opts), hv.opts.VLine(**EPS_LINE)),
            (self.noise_curve * self.v_lines[1]).opts(hv.opts.Curve(**small_frame("Noise points at every ε (exact)", "click or drag to set ε", (whole_ticks,)), color="#7f7f7f", **opts), hv.opts.VLine(**EPS_LINE)),
        ]  # fmt: skip

    def close(self) -> None:
        detach_streams(self._streams)

    def _k_distance(self, min_samples, dataset):
        # the same dimension names whatever is shown: BokehJS keeps the first columns it was sent
        ranks, distances = k_distance_points(self.state.k_distances()) if self.state.loaded else ([], [])
        return hv.Curve((ranks, distances), "points, by core distance",
                        hv.Dimension("core distance", label=f"distance to the {ordinal(min_samples)} nearest"))  # fmt: skip

    def _counts(self, which: str, min_samples, dataset, eps_view):
        if not self.state.loaded:
            return hv.Curve([], "ε", which)
        eps, clusters, noise = eps_steps(self.state.curve(), eps_view)
        return hv.Curve((eps, clusters if which == "clusters" else noise), "ε", which)


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, ..., 11th, 12th, 13th, ..., 21st."""
    suffix = "th" if n % 100 in (11, 12, 13) else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
