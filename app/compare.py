"""Comparing two clusterings of the same points: the adjusted Rand index and the contingency table.

Noise (-1) counts as one more cluster, as scikit-learn's ``adjusted_rand_score`` counts it. Both work from the
pairs of labels that occur (sorted codes), never a dense table of every cluster against every cluster, so
thousands of clusters on each side cost O(N log N).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

TABLE_CLUSTERS = 12  # rows and columns of the shown contingency table; the rest is summed into "other"


def _pair_counts(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(a's values, b's values, a-index, b-index and count of every (a, b) pair that occurs)."""
    a, b = np.asarray(a).reshape(-1), np.asarray(b).reshape(-1)
    if a.shape != b.shape:
        raise ValueError(f"the clusterings label different numbers of points ({a.size} and {b.size})")
    a_values, a_codes = np.unique(a, return_inverse=True)
    b_values, b_codes = np.unique(b, return_inverse=True)
    pairs, counts = np.unique(a_codes.astype(np.int64) * b_values.size + b_codes, return_counts=True)
    return a_values, b_values, pairs // b_values.size, pairs % b_values.size, counts


def adjusted_rand_index(a: np.ndarray, b: np.ndarray) -> float:
    """Hubert and Arabie's adjusted Rand index: 1 for the same partition, about 0 for unrelated ones."""
    a_values, b_values, rows, cols, counts = _pair_counts(a, b)
    n = counts.sum()
    both = _pairs(counts).sum()
    in_a = _pairs(np.bincount(rows, counts, a_values.size)).sum()
    in_b = _pairs(np.bincount(cols, counts, b_values.size)).sum()
    expected = in_a * in_b / _pairs(np.float64(n)) if n > 1 else 0.0
    best = (in_a + in_b) / 2
    return 1.0 if best == expected else float((both - expected) / (best - expected))


def contingency(a: np.ndarray, b: np.ndarray, a_name: str, b_name: str) -> pd.DataFrame:
    """Points per (a cluster, b cluster): a row per cluster of ``a``, a column per cluster of ``b``, the
    TABLE_CLUSTERS largest of each, the rest summed into "other"; noise is "noise"."""
    a_values, b_values, rows, cols, counts = _pair_counts(a, b)
    shown_rows, row_names = _largest(a_values, np.bincount(rows, counts, a_values.size))
    shown_cols, col_names = _largest(b_values, np.bincount(cols, counts, b_values.size))
    table = np.zeros((len(row_names), len(col_names)), np.int64)
    np.add.at(table, (shown_rows[rows], shown_cols[cols]), counts)
    frame = pd.DataFrame(table, columns=col_names)
    frame.insert(0, f"{a_name} \\ {b_name}", row_names)
    return frame


def _largest(values: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Position in the shown table of each value (the largest TABLE_CLUSTERS in label order, then "other")."""
    shown = np.sort(np.argsort(-sizes, kind="stable")[:TABLE_CLUSTERS])
    position = np.full(values.size, len(shown))
    position[shown] = np.arange(len(shown))
    names = ["noise" if v < 0 else str(v) for v in values[shown]]
    return position, names + (["other"] if len(shown) < values.size else [])


def _pairs(counts):
    counts = np.asarray(counts, np.float64)
    return counts * (counts - 1) / 2
