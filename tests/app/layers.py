"""What a plot's layer draws, for the headless tests."""

from __future__ import annotations

import holoviews as hv
import numpy as np


def drawn(layer: hv.Element) -> int:
    """Rows a layer draws: those with coordinates (two more, at NaN, keep its styles columns: see
    ``plots.with_unseen_rows``)."""
    return int(np.isfinite(layer.dframe()[layer.kdims[0].name]).sum())
