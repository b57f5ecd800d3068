"""DPC's sensitivity to dc: from the dc sweep, the number of suggested clusters, the halo fraction and the ARI
of each dc's clustering with the current one; plateaus (stable choices) shaded, the current dc marked. A click
on any of them asks for the swept dc nearest the click (``dc_at``).
"""

from __future__ import annotations

import holoviews as hv
import numpy as np
import pandas as pd

from .dbscan_plots import EPS_LINE
from .plot_frame import small_frame, whole_ticks
from .plots import detach_streams
from .state import ClusteringSession

PLATEAU_COLOUR = "#2ca02c"
SERIES = (("clusters", "Suggested clusters", "#1f77b4"), ("halo", "Halo fraction", "#7f7f7f"),
          ("ari", "ARI with the current clustering", "#9467bd"))  # fmt: skip
# an ARI is at most 1: its axis spans 0 to 1 with room for the markers (lower where an ARI is negative), never
# past 1 (it read 0 to 2 when every ARI was 1)
ARI_TOP = 1.05
ARI = hv.Dimension("ari", soft_range=(-0.05, ARI_TOP))
# a fraction is never negative: its axis starts at 0 (it ran -1 to 1 when every fraction was 0)
HALO = hv.Dimension("halo", range=(0, None), soft_range=(0, 0.05))


def dc_at(dcs: np.ndarray, x: float) -> float:
    """The swept dc nearest x on the log axis."""
    return float(dcs[np.argmin(np.abs(np.log(dcs) - np.log(max(x, 1e-300))))])


class SweepPlot:
    def __init__(self, session: ClusteringSession):
        self.session = session
        self._frame_of: tuple | None = None  # (revision, sweep, frame): one frame for every layer of a redraw
        # redrawn when a sweep arrives and, while there is one, when the labels change (its ARI curve); not on
        # every relabel of a page that never swept: its twelve layers would be sent to the browser each time
        watched = hv.streams.Counter()
        # (one event per parameter of a batched update: a load gives both)
        self._watcher = session.param.watch(
            lambda *events: (session.sweep is not None or any(e.name == "sweep" for e in events)) and watched.event(),
            ["revision", "sweep"])  # fmt: skip
        layer = lambda draw: hv.DynamicMap(lambda counter: draw(self._frame()), streams=[watched])  # noqa: E731
        values = {"clusters": "clusters", "halo": HALO, "ari": ARI}
        self.points = {column: layer(lambda frame, c=values[column]: hv.Scatter(frame, "dc", [c, "clusters"])) for column, _, _ in SERIES}
        self.curves = [
            (layer(_plateaus) * layer(lambda frame, c=values[column]: hv.Curve(frame, "dc", c)) * self.points[column]
             * layer(lambda frame: hv.VLine(self.session.dc if self.session.loaded else 1.0))).opts(
                hv.opts.Curve(color=colour, **small_frame(title, "click a point to go to its dc", hooks=(whole_ticks,) if column == "clusters" else ()),
                              logx=True, xlabel="dc", tools=["hover"], **({"ylim": (None, ARI_TOP)} if column == "ari" else {})),
                hv.opts.Scatter(color=colour, size=6, tools=["hover"]),
                hv.opts.VLine(**EPS_LINE), hv.opts.VSpans(color=PLATEAU_COLOUR, alpha=0.15))
            for column, title, colour in SERIES
        ]  # fmt: skip
        # on a layer, not on the overlay: a tap on the overlay's own DynamicMap never fired in Chromium
        self.taps = [hv.streams.Tap(source=points) for points in self.points.values()]
        self._streams = [watched, *self.taps]

    def clicked_dc(self, x: float | None) -> float | None:
        sweep = self.session.sweep
        return None if x is None or sweep is None else dc_at(sweep.dc, x)

    def close(self) -> None:
        self.session.param.unwatch(self._watcher)
        detach_streams(self._streams)

    def _frame(self) -> pd.DataFrame:
        session = self.session
        key = (session.revision, session.sweep)
        if self._frame_of is None or self._frame_of[:2] != key:
            frame = session.sweep_frame() if session.loaded else None
            self._frame_of = (*key, NO_SWEEP if frame is None else frame)
        return self._frame_of[2]


NO_SWEEP = pd.DataFrame({"dc": np.empty(0), "clusters": np.empty(0, np.int64), "halo": np.empty(0), "ari": np.empty(0),
                         "plateau": np.empty(0, np.int64)})  # fmt: skip


def _plateaus(frame: pd.DataFrame) -> hv.VSpans:
    runs = frame[frame["plateau"] >= 0].groupby("plateau")["dc"]
    return hv.VSpans((runs.min().to_numpy(), runs.max().to_numpy()))
