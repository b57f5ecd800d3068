"""Pointing at points: the point under the mouse on either plot, what it is (row, ρ, δ, parent, label), and the
points inside a lasso drawn on the 2-D view. Plain functions of arrays, so the Studio stays free of geometry."""

from __future__ import annotations

import numpy as np

from dpstudio.engine import cpu

REACH = 0.02  # a point is under the mouse within 2% of the shown ranges (about 10 pixels)


def nearest_point(x: np.ndarray, y: np.ndarray, at: tuple[float, float], x_range, y_range) -> int | None:
    """The point nearest ``at`` in screen proportions (each axis divided by its shown range), or None when none
    lies within REACH of it. Ranges are (low, high), or None for the data's extent."""
    x_span, y_span = (_span(values, shown) for values, shown in ((x, x_range), (y, y_range)))
    distance2 = ((x - at[0]) / x_span) ** 2 + ((y - at[1]) / y_span) ** 2
    nearest = int(np.argmin(distance2))
    return nearest if distance2[nearest] <= REACH**2 else None


def inside_lasso(x: np.ndarray, y: np.ndarray, vertices) -> np.ndarray:
    """Mask of the points inside a lasso's polygon (even-odd rule, as on the decision graph)."""
    polygon = np.asarray(vertices, dtype=np.float64)
    if polygon.ndim != 2 or polygon.shape[1] != 2 or not np.isfinite(polygon).all():
        raise ValueError("a lasso needs finite (x, y) vertices")
    return cpu.points_in_polygon(np.asarray(x, np.float64), np.asarray(y, np.float64), polygon)


def _span(values: np.ndarray, shown) -> float:
    low, high = (float(values.min()), float(values.max())) if shown is None or None in shown else shown
    return (high - low) or 1.0
