"""DPC's sensitivity to dc: from the dc sweep, the number of suggested clusters, the halo fraction and the ARI
of each dc's clustering with the current one; plateaus (stable choices) shaded, the current dc marked. A click
on any of them asks for the swept dc nearest the click (``dc_at``).
"""

from __future__ import annotations

import holoviews as hv
import numpy as np
import pandas as pd

from .dbscan_plots import EPS_LINE, SMALL_SIZE
from .state import ClusteringSession

PLATEAU_COLOUR = "#2ca02c"
SERIES = (("clusters", "suggested clusters", "#1f77b4"), ("halo", "halo fraction", "#7f7f7f"),
          ("ari", "ARI with the current clustering", "#9467bd"))  # fmt: skip


def dc_at(dcs: np.ndarray, x: float) -> float:
    """The swept dc nearest x on the log axis."""
    return float(dcs[np.argmin(np.abs(np.log(dcs) - np.log(max(x, 1e-300))))])


class SweepPlot:
    def __init__(self, session: ClusteringSession):
        self.session = session
        watched = hv.streams.Params(session, ["revision", "sweep"])
        self.curves = [hv.DynamicMap(lambda column=column, **kw: self._series(column), streams=[watched]) for column, _, _ in SERIES]
        self.taps = [hv.streams.Tap(source=curve) for curve in self.curves]
        self._streams = [watched, *self.taps]

    def plots(self) -> list[hv.DynamicMap]:
        return [
            curve.opts(hv.opts.Curve(color=colour, title=title, logx=True, tools=["hover"], default_tools=["reset"], **SMALL_SIZE),
                       hv.opts.Scatter(color=colour, size=6, tools=["hover", "tap"], nonselection_alpha=1.0),
                       hv.opts.VLine(**EPS_LINE), hv.opts.VSpans(color=PLATEAU_COLOUR, alpha=0.15))
            for curve, (_, title, colour) in zip(self.curves, SERIES)
        ]  # fmt: skip

    def clicked_dc(self, x: float | None) -> float | None:
        sweep = self.session.sweep
        return None if x is None or sweep is None else dc_at(sweep.dc, x)

    def close(self) -> None:
        for stream in self._streams:
            stream.source = None

    def _series(self, column: str) -> hv.Overlay:
        frame = self.session.sweep_frame() if self.session.loaded else None
        if frame is None:
            frame = pd.DataFrame({"dc": [], "clusters": [], "halo": [], "ari": [], "plateau": []})
        runs = frame[frame["plateau"] >= 0].groupby("plateau")["dc"]
        plateaus = hv.VSpans((runs.min().to_numpy(), runs.max().to_numpy()))
        current = hv.VLine(self.session.dc if self.session.loaded else 1.0)
        return plateaus * hv.Curve(frame, "dc", [column, "clusters"]) * hv.Scatter(frame, "dc", [column, "clusters"]) * current
