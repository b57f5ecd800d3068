"""A data set streamed into DPC on the page (no UI code), as ``dpstudio stream`` replays a file: a fit on its
first rows, then batch after batch inserted by the incremental engine, each logged with what it did to the
clusters and how long it took; the last batch can be deleted again.

The stream is the session's own (``Studio.edit``): other sessions keep the data set as loaded.
"""

from __future__ import annotations

import numbers
import time
from dataclasses import dataclass

import numpy as np
import param

from dpstudio.engine import DensityPeaks, IndexedPoints
from dpstudio.engine.dpc import describe_changes
from dpstudio.engine.notation import short

from .wording import KERNEL_NAMES

BASE_PERCENT = 10.0  # the stream starts from this share of the points
LOG_SHOWN = 12  # rows the log keeps


@dataclass(frozen=True)
class Batch:
    """One line of the log."""

    number: int  # 0: the first fit
    added: int  # points in (negative: taken out)
    n_points: int
    clusters: int
    milliseconds: float  # the whole change as the session sees it: update, relabel and the automatic clusters (a
    # dc or kernel changed mid-stream: the engine's time for it)
    changes: str


class Streaming(param.Parameterized):
    log = param.List(default=[], constant=True, doc="the last LOG_SHOWN rows, oldest first")
    streamed = param.Integer(default=None, allow_None=True, constant=True, doc="the source's points in; None: no stream")

    def __init__(self, studio, **params):
        super().__init__(**params)
        self.studio = studio
        self._source = None  # the data set streamed
        self._shown = None  # the data set the stream last gave: another one means the stream is over
        self._batches: list[int] = []  # sizes of the batches in, to take the last one out
        studio.param.watch(self._left, ["dataset"])
        studio.dpc.param.watch(self._dc_changed, ["dc", "kernel"])

    @property
    def batches(self) -> int:
        """Batches in since the first fit (each can be taken out again, the last first)."""
        return len(self._batches)

    @property
    def remaining(self) -> int:
        return 0 if self.streamed is None else self._source.n_points - self.streamed

    def start(self, percent: float | None = BASE_PERCENT) -> None:
        """Show the first ``percent`` of the data set's points (at least 2), fitted afresh at the current dc."""
        if isinstance(percent, bool) or not isinstance(percent, numbers.Real) or not 0 < percent < 100:
            shown = "nothing" if percent is None else percent
            raise ValueError(f"the stream starts from a percentage of the points between 0 and 100, got {shown}")
        source = self.studio.dataset.original
        # points added or deleted by hand (not a stream's, which ends at any other edit) are not streamed
        dropped = " (the file's points: yours added or deleted by hand are left out)" if (
            self.streamed is None and self.studio.dataset is not source) else ""  # fmt: skip
        first = max(2, round(source.n_points * percent / 100))
        dpc = self.studio.dpc
        fresh = DensityPeaks(dc=dpc.dc, kernel=dpc.kernel)
        seconds = self._change(lambda: self.studio.show_points(
            fresh.fit(IndexedPoints(source.points.values[:first], backend=source.indexed.backend.name)), np.arange(first)))
        self._source, self._batches = source, []
        self._record(first, Batch(0, first, first, len(dpc.centers), 1000 * seconds,
                                  f"fit on the first {first:,} of {source.n_points:,} points{dropped}"), fresh=True)  # fmt: skip

    def next_batch(self, size: int) -> None:
        """Insert the next ``size`` points of the data set."""
        self._require_stream()
        if isinstance(size, bool) or not isinstance(size, numbers.Integral) or size < 1:
            raise ValueError(f"a batch holds a whole number of points, at least 1, got {'nothing' if size is None else size}")
        if not self.remaining:
            raise ValueError("every point is in: the stream is over (delete the last batch, or start again)")
        batch = self._source.points.values[self.streamed : self.streamed + size]
        seconds = self._change(lambda: self.studio.edit(lambda model: model.partial_fit(batch), np.arange(self.streamed + len(batch))))
        self._batches.append(len(batch))
        self._record(self.streamed + len(batch), self._row(len(self._batches), len(batch), seconds, ""))

    def delete_last(self) -> None:
        """Take the last batch out again (the engine's delete)."""
        self._require_stream()
        if not self._batches:
            raise ValueError("no batch to delete: only the first fit is in")
        size, n = self._batches[-1], self.studio.dataset.n_points
        seconds = self._change(lambda: self.studio.edit(lambda model: model.delete(np.arange(n - size, n)), np.arange(self.streamed - size)))
        number = len(self._batches)
        self._batches.pop()
        self._record(self.streamed - size, self._row(number, -size, seconds, f"batch {number} taken out: "))

    def stop(self) -> None:
        """Forget the stream (the points stay as they are)."""
        self._source = self._shown = None
        self._batches = []
        with param.edit_constant(self):
            self.param.update(streamed=None, log=[])

    # helpers ------------------------------------------------------------------------------------------------
    def _change(self, change) -> float:
        """Seconds ``change()`` took to show the source's first points (in their order: each point is the
        source's point, ``Dataset.edited``'s order)."""
        if self.studio.method != "dpc":
            raise ValueError("a stream goes into DPC: show DPC first")
        started = time.perf_counter()
        self._shown = None  # the data set changes here, not elsewhere
        change()
        self._shown = self.studio.dataset
        return time.perf_counter() - started

    def _row(self, number: int, added: int, seconds: float, prefix: str) -> Batch:
        dpc = self.studio.dpc
        return Batch(number, added, self.studio.dataset.n_points, len(dpc.centers), 1000 * seconds,
                     prefix + describe_changes(dpc.model.changes_))  # fmt: skip

    def _record(self, streamed: int, row: Batch, fresh: bool = False) -> None:
        log = [] if fresh else self.log[-(LOG_SHOWN - 1) :]
        with param.edit_constant(self):
            self.param.update(streamed=streamed, log=[*log, row])

    def _require_stream(self) -> None:
        if self.streamed is None:
            raise ValueError("no stream: start one first")

    def _dc_changed(self, *events) -> None:
        """dc or the kernel set mid-stream: a row of the log, as the clusters may change at once and later batches
        are clustered at it. Not a load's (DPC has the new data set before the studio shows it): that ends the stream."""
        dpc = self.studio.dpc
        if self.streamed is None or self._shown is None or dpc.dataset is not self._shown:
            return
        what = " and ".join(f"dc set to {short(e.new)}" if e.name == "dc" else f"{KERNEL_NAMES[e.new]} kernel" for e in events)
        batch = len(self._batches)
        self._record(self.streamed, Batch(batch, 0, dpc.dataset.n_points, len(dpc.centers), 1000 * sum(dpc.timings.values()),
                                          f"{what} after {f'batch {batch}' if batch else 'the first fit'}: later batches use it"))

    def _left(self, *events) -> None:
        """The data set changed other than by the stream (another data set, or points edited): it is over."""
        if self._shown is not None and self.studio.dataset is not self._shown:
            self.stop()
