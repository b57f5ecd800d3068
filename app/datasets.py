"""Data sets for the app: loading (sample, path, upload) and a bounded cache shared by every browser session.

A data set is keyed by what it is (a sample's name, a file's path and modification time, an upload's content
hash), never by a Python object id, so a second session on the same data reuses its index at once.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

from dpstudio import sample_data
from dpstudio.engine import DataError, IndexedPoints, Points, to_points
from dpstudio.engine.data import feature_notes, file_type, read_upload
from dpstudio.engine.indexed import Progress
from dpstudio.engine.projection import pca_2d, tsne_2d

PCA_AXES = ("PC1", "PC2")
ROW_AXIS = "input row"  # the 2-D view's second axis for one feature, where PCA's second component is 0 (bracketed
# where the feature has that name)


@dataclass(frozen=True)
class Dataset:
    """A validated data set with its index (on the backend's device) and its 2-D projection (NumPy)."""

    key: str
    name: str
    points: Points
    indexed: IndexedPoints
    projection: np.ndarray  # (N, 2) float32 principal-component scores
    truth: np.ndarray | None = None  # ground-truth labels of a sample set (-1: background noise)
    table: Callable[[], Path | pd.DataFrame] | None = None  # reads the source again (for another choice of features)
    available: tuple[str, ...] = ()  # every numeric column of the source: the features one may choose
    standardized: bool = False  # each feature z-scored
    embeddings: dict[str, np.ndarray] = field(default_factory=dict, compare=False)  # 2-D views computed on request
    base: Dataset | None = None  # the shared data set this one's points were edited from (a session's own), if any

    @property
    def n_points(self) -> int:
        return self.indexed.n_points

    @property
    def original(self) -> Dataset:
        """The shared data set this one is, or was edited from."""
        return self if self.base is None else self.base

    @property
    def first_added_row(self) -> int:
        """One past the input's last row, kept or left out (NaN/inf): points added on the page are numbered from
        here (from the last kept row, an added point took a left-out row's number, and a download gave it twice)."""
        points = self.original.points
        return int(max(points.rows.max(initial=-1), points.dropped_rows.max(initial=-1))) + 1

    @property
    def added(self) -> np.ndarray:
        """Whether each point was added on the page (it has no row of the input)."""
        return self.points.rows >= self.first_added_row

    @property
    def axes(self) -> tuple[str, ...]:
        """Names the 2-D view can show: every feature column, the principal components (for one feature: the input
        row instead), then any embedding."""
        projected = (self._row_axis,) if len(self.points.columns) == 1 else PCA_AXES
        return (*self.points.columns, *projected, *(f"{name} {k}" for name in self.embeddings for k in (1, 2)))

    @property
    def _row_axis(self) -> str:
        return ROW_AXIS if ROW_AXIS not in self.points.columns else f"({ROW_AXIS})"

    def embed(self) -> tuple[str, str]:
        """Compute the t-SNE view once (kept with the data set, so every session shares it); its two axes."""
        if "t-SNE" not in self.embeddings:
            self.embeddings["t-SNE"] = tsne_2d(self.points.values)
        return "t-SNE 1", "t-SNE 2"

    def edited(self, indexed: IndexedPoints, order: np.ndarray | None = None) -> Dataset:
        """This data set after points were inserted or deleted in ``indexed`` (a session's own copy of the index;
        the shared data set stays as it was). ``order``: each point's place in the data set as loaded, past its
        end for a new point; by default the engine's arrival order (``indexed.rows``), and a given one becomes the
        engine's, so that points inserted later count on past both. Points keep their file rows; new ones count on
        past the file's last row. There is no ground truth for the new points, nor another reading of the source."""
        base = self.original
        first, file_rows = base.n_points, base.points.rows
        if order is not None:
            indexed.number_rows(order, max(first, int(order.max(initial=-1)) + 1))
        order = indexed.rows
        rows = np.where(order < first, file_rows[np.minimum(order, first - 1)], base.first_added_row + order - first)
        values = indexed.backend.to_numpy(indexed.points)
        points = Points(values, base.points.columns, rows, base.points.dropped_rows, feature_notes(values, base.points.columns))
        projection = indexed.backend.to_numpy(pca_2d(indexed.points, indexed.backend.xp))
        return Dataset(f"{base.key}|edited", f"{base.name} (edited)", points, indexed, projection, None, None,
                       base.points.columns, base.standardized, base=base)  # fmt: skip

    def default_axes(self) -> tuple[str, str]:
        columns = self.points.columns
        return {1: (columns[0], self._row_axis), 2: tuple(columns)}.get(len(columns), PCA_AXES)

    def axis_values(self, name: str) -> np.ndarray:
        if len(self.points.columns) == 1 and name == self._row_axis:
            return self.points.rows.astype(np.float64)
        if name in PCA_AXES:
            return self.projection[:, PCA_AXES.index(name)]
        embedding, _, k = name.rpartition(" ")
        if embedding in self.embeddings:
            return self.embeddings[embedding][:, int(k) - 1]
        return self.points.values[:, self.points.columns.index(name)]


def no_truth(dataset: Dataset) -> str:
    """Why a data set has no ground truth to colour by."""
    if dataset.original.truth is not None:  # a sample after a stream or an edit: points came and went
        return f"No ground truth for the edited points: choose {dataset.original.name} again for its own."
    return "No ground truth for this data set (the samples have one)."


class DatasetCache:
    """The last ``max_datasets`` data sets loaded by any session, least recently used dropped first. Thread-safe."""

    def __init__(self, max_datasets: int = 4, backend: str = "auto"):
        if max_datasets < 1:
            raise ValueError(f"max_datasets must be at least 1, got {max_datasets}")
        self.max_datasets = max_datasets
        self.backend = backend
        self._datasets: OrderedDict[str, Dataset] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._datasets)

    def sample(self, name: str, progress: Progress | None = None, cached_only: bool = False) -> Dataset | None:
        """A bundled sample set by name (see ``dpstudio.sample_data.SAMPLES``); None where ``cached_only`` and it
        is not in the cache."""
        path = sample_data.path(name)
        return self._get(f"sample:{name}", name, lambda: path, progress, truth=lambda: sample_data.truth(name),
                         cached_only=cached_only)  # fmt: skip

    def file(self, path: str | Path, progress: Progress | None = None, cached_only: bool = False) -> Dataset | None:
        """A file on the server (``dpstudio serve PATH``); reloaded if it changed on disk (None where
        ``cached_only``)."""
        path = Path(path).expanduser().resolve()
        if not path.is_file():
            raise DataError(f"file not found: {path}")
        stat = path.stat()
        key = f"file:{path}:{stat.st_mtime_ns}:{stat.st_size}"
        return self._get(key, path.name, lambda: path, progress, cached_only=cached_only)

    def holds(self, dataset: Dataset) -> bool:
        """Whether ``dataset`` itself is still in the cache (not dropped, nor read again since)."""
        with self._lock:
            return self._datasets.get(dataset.key) is dataset

    def upload(self, filename: str, content: bytes, max_bytes: int, progress: Progress | None = None,
               standardize: bool = False) -> Dataset:  # fmt: skip
        """A file sent from the browser, every numeric column a feature, each z-scored if ``standardize``: size
        and type checked before anything is parsed."""
        name = Path(filename or "upload").name  # never a path from the client
        if len(content) > max_bytes:
            raise DataError(f"{name} is {len(content) / 2**20:.1f} MB; the upload limit is {max_bytes / 2**20:.0f} MB")
        file_type(name)  # an unsupported type is refused before the content is hashed or parsed
        # the name too: the data set is shown, saved and copied as a command under it (the same bytes uploaded again
        # under another name, by this visitor or another, took the first one's name)
        key = f"upload:{hashlib.sha256(content).hexdigest()}:{hashlib.sha256(name.encode()).hexdigest()[:16]}"
        # parsed in memory: no copy of the user's file on disk, to be left behind if the server is killed
        # a compressed file expands to no more values than a CSV of the size limit could hold (2 bytes a value)
        table = partial(read_upload, name, content, max_values=max_bytes // 2)
        return self._get(f"{key}|*|standardized" if standardize else key, name, table, progress, standardize=standardize)

    def features(self, dataset: Dataset, columns, standardize: bool, progress: Progress | None = None) -> Dataset:
        """The same source with other feature columns (in the order given) and/or each z-scored, as the CLI's
        ``--columns`` and ``--standardize`` read it; an upload's content is kept for this while it is cached."""
        columns = tuple(columns)
        if dataset.base is not None:
            raise DataError("points were added or deleted on this page: choose the data set in the list again to "
                            "read it with other features (the edits are not kept)")  # fmt: skip
        if not columns:
            raise DataError("choose at least one feature column")
        unknown = [c for c in columns if c not in dataset.available]
        if unknown:
            raise DataError(f"no numeric column named {unknown[0]!r} (columns: {', '.join(dataset.available)})")
        source = dataset.key.split("|")[0]
        if columns == dataset.available and not standardize:
            key = source  # the default reading: the data set as first loaded
        else:
            key = f"{source}|{','.join(columns)}|{'standardized' if standardize else 'raw'}"
        truth = None if dataset.truth is None else (lambda: dataset.truth)
        return self._get(key, dataset.name, dataset.table, progress, truth, columns, standardize, dataset.available)

    def _get(self, key: str, name: str, table: Callable[[], Path | pd.DataFrame], progress: Progress | None,
             truth: Callable[[], np.ndarray] | None = None, columns: tuple[str, ...] | None = None,
             standardize: bool = False, available: tuple[str, ...] | None = None,
             cached_only: bool = False) -> Dataset | None:  # fmt: skip
        with self._lock:
            if key in self._datasets:
                self._datasets.move_to_end(key)
                return self._datasets[key]
        if cached_only:
            return None
        if progress:
            progress("read", 0.0)
        points = to_points(table(), list(columns) if columns else None, standardize=standardize, drop_nonfinite=True)
        indexed = IndexedPoints(points.values, backend=self.backend, progress=progress)
        projection = indexed.backend.to_numpy(pca_2d(indexed.points, indexed.backend.xp))
        dataset = Dataset(key, name, points, indexed, projection, truth() if truth else None, table,
                          available or points.columns, standardize)  # fmt: skip
        with self._lock:
            self._datasets[key] = dataset
            self._datasets.move_to_end(key)
            while len(self._datasets) > self.max_datasets:
                self._datasets.popitem(last=False)
        return dataset
