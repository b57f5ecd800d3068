"""The dc sweep: Density Peaks at many dc values on the shared index, for the sensitivity view.

Each dc is clustered on its own, from the centers the largest-gamma-drop rule suggests at that dc (never from the
picks of another dc; not from the automatic clusters, whose kNN density does not depend on dc, so a sweep of them
was flat whatever the data), so the result depends only on the set of dc values, not on the order they were
visited in; and with ``cache=False`` so the sweep does not push the user's recent dc values out of the index's
cache.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpstudio.engine import DensityPeaks, IndexedPoints
from dpstudio.engine.indexed import Progress

from .compare import adjusted_rand_index

SWEEP_DCS = 32
SWEEP_PERCENTS = (0.1, 10.0)  # the dc rules at the ends of the sweep
PLATEAU_ARI = 0.95  # neighbouring dc values this alike (and with as many clusters) are one stable choice
PLATEAU_MIN = 3  # dc values in a row that make a plateau


@dataclass(frozen=True, eq=False)  # arrays: no value equality (a comparison of two sweeps raised)
class DcSweep:
    kernel: str
    dc: np.ndarray  # increasing
    clusters: np.ndarray  # suggested clusters at each dc
    halo_fraction: np.ndarray
    labels: np.ndarray  # (len(dc), N) int8: at most 33 suggested centers (MAX_SUGGESTED + the densest point)
    neighbour_ari: np.ndarray  # ARI of each dc's clustering with the next one's (len(dc) - 1)

    def frame(self, current: np.ndarray) -> pd.DataFrame:
        """One row per dc: clusters, halo fraction, ARI with ``current`` labels, and its plateau (-1: none)."""
        ari = [adjusted_rand_index(labels, current) for labels in self.labels]
        return pd.DataFrame({"dc": self.dc, "clusters": self.clusters, "halo": self.halo_fraction, "ari": ari,
                             "plateau": plateaus(self.clusters, self.neighbour_ari)})  # fmt: skip


def sweep_dcs(indexed: IndexedPoints, count: int = SWEEP_DCS) -> np.ndarray:
    """``count`` dc values spaced evenly in log between the 0.1% and the 10% rule's dc."""
    low, high = (indexed.dc_for_percent(p) for p in SWEEP_PERCENTS)
    return np.geomspace(low, max(high, low * 1.01), count)


def dc_sweep(indexed: IndexedPoints, kernel: str, dcs, progress: Progress | None = None) -> DcSweep:
    """Cluster at every dc of ``dcs`` (any order; the result is sorted by dc)."""
    dcs = np.unique(np.asarray(dcs, np.float64))
    model = DensityPeaks(dc=float(dcs[0]), kernel=kernel, suggest="gamma").fit(indexed)  # the one dc it leaves in the cache
    clusters, halo, labels = [], [], np.empty((dcs.size, indexed.n_points), np.int8)
    for i, dc in enumerate(dcs):
        if progress:
            progress("sweep", i / dcs.size)
        model.set_dc(float(dc), cache=False)
        labels[i] = model.labels_
        clusters.append(len(model.centers_))
        halo.append(float(model.halo_.mean()))
    neighbour_ari = np.array([adjusted_rand_index(labels[i], labels[i + 1]) for i in range(dcs.size - 1)])
    return DcSweep(kernel, dcs, np.array(clusters), np.array(halo), labels, neighbour_ari)


def plateaus(clusters: np.ndarray, neighbour_ari: np.ndarray) -> np.ndarray:
    """Plateau number per dc (-1: none): runs of at least PLATEAU_MIN dc values in a row with the same number of
    clusters, each clustering at least PLATEAU_ARI alike the next."""
    same = (clusters[1:] == clusters[:-1]) & (neighbour_ari >= PLATEAU_ARI)
    plateau = np.full(clusters.size, -1)
    start, number = 0, 0
    for i in range(1, clusters.size + 1):
        if i == clusters.size or not same[i - 1]:
            if i - start >= PLATEAU_MIN:
                plateau[start:i], number = number, number + 1
            start = i
    return plateau
