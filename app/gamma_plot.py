"""The γ-rank plot (the original paper's second figure): γ = ρ·δ of the points in decreasing order, on a log
scale, where the real peaks stand above a smooth tail. A click at rank K makes the K largest the centers.
"""

from __future__ import annotations

import holoviews as hv
import numpy as np

from .dbscan_plots import EPS_LINE
from .plot_frame import small_frame
from .plots import detach_streams
from .state import ClusteringSession

RANKS_SHOWN = 60  # peaks are among the first few dozen; the tail beyond is flat on a log scale


class GammaPlot:
    def __init__(self, session: ClusteringSession):
        self.session = session
        watched = hv.streams.Params(session, ["revision"])
        self.ranks = hv.DynamicMap(self._ranks, streams=[watched])
        self.plot = (self.ranks * hv.DynamicMap(self._count, streams=[watched])).opts(
            hv.opts.Scatter(color="#1f77b4", size=6, logy=True, tools=["hover", "tap"],
                            xlabel="rank", ylabel="γ = ρ·δ", **small_frame("γ by rank", "click rank K for the K largest")),
            hv.opts.VLine(**EPS_LINE),
        )  # fmt: skip
        # on a layer, not on the overlay: a tap on the overlay's own DynamicMap never fires in Chromium
        self.tap = hv.streams.Tap(source=self.ranks)
        self._streams = [watched, self.tap]

    def clicked_count(self, x: float | None) -> int | None:
        """The number of centers a click at x asks for (the nearest rank shown), or None off the plot."""
        if x is None or not self.session.loaded:
            return None
        return int(np.clip(round(x), 1, min(RANKS_SHOWN, self.session.model.n_points_)))

    def close(self) -> None:
        detach_streams(self._streams)

    def _ranks(self, revision) -> hv.Scatter:
        gamma = np.empty(0)
        if self.session.loaded:
            gamma = self.session.model.gamma_
            gamma = gamma[gamma > 0]  # a log scale has no place for 0
            if gamma.size > RANKS_SHOWN:  # the largest only: a partition, not a sort of every point
                gamma = np.partition(gamma, gamma.size - RANKS_SHOWN)[-RANKS_SHOWN:]
            gamma = np.sort(gamma)[::-1]
        return hv.Scatter((np.arange(1, gamma.size + 1), gamma), "rank", "γ")

    def _count(self, revision) -> hv.VLine:
        """Between the last center and the next rank: the cut the current centers make (their number)."""
        return hv.VLine(len(self.session.centers) + 0.5 if self.session.loaded else 0.5)
