"""The page of one browser session: controls, the two plots, the cluster table and the status line.

Widgets call ``ClusteringSession`` methods; anything that may take long runs in a worker thread (the Numba
kernels release the GIL), with a progress bar, so the page never freezes and other sessions keep going.
An error becomes a message on the page and the session keeps its last good state.
"""

from __future__ import annotations

import asyncio
import inspect
import io
import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import panel as pn

from dpstudio import sample_data
from dpstudio.engine.data import READABLE

from .datasets import Dataset, DatasetCache
from .plots import SessionPlots
from .state import ClusteringSession

log = logging.getLogger("dpstudio")

YOUR_FILE = "(your file)"  # the sample choice while an uploaded or served file is shown
PHASES = {"read": "Reading data", "index": "Building the index", "rho": "Computing ρ", "delta": "Computing δ"}
CSS = """
.dp-status { font-size: 0.85em; color: #555; }
"""


@dataclass(frozen=True)
class PageSettings:
    max_upload_bytes: int = 200 * 2**20
    initial_path: str | None = None  # a file given to ``dpstudio serve PATH``; else the default sample
    dc_percent: float = 2.0  # the percent rule a new session starts with


class StudioPage:
    """One session's page, built on a loaded data set. ``layout`` is what Panel serves."""

    def __init__(self, cache: DatasetCache, settings: PageSettings, initial: Dataset):
        self.cache, self.settings = cache, settings
        self.session = ClusteringSession(dc_percent=settings.dc_percent)
        self.session.load(initial)
        self._slider_dataset: Dataset | None = None
        self.plots = SessionPlots(self.session, on_render=self._show_status)
        self._work = asyncio.Lock()  # one action at a time per session; others wait their turn
        self._build_widgets(initial)
        self._bind()
        self._show_dataset()
        self.layout = self._layout()

    # widgets ------------------------------------------------------------------------------------------------
    def _build_widgets(self, initial: Dataset) -> None:
        session = self.session
        is_sample = initial.key.startswith("sample:")
        self.sample = pn.widgets.Select(name="Sample data set", options=[YOUR_FILE, *sample_data.SAMPLES],
                                        value=initial.name if is_sample else YOUR_FILE)  # fmt: skip
        self.upload = pn.widgets.FileInput(accept=",".join(READABLE), name="Upload")
        self.upload_note = pn.pane.Markdown(
            f"CSV, TSV, TXT, Parquet or NPY, up to {self.settings.max_upload_bytes / 2**20:.0f} MB. "
            "Every numeric column is a feature.", css_classes=["dp-status"])  # fmt: skip
        self.dataset_info = pn.pane.Markdown()
        self.x_axis = pn.widgets.Select.from_param(session.param.x_axis, name="2-D view: x")
        self.y_axis = pn.widgets.Select.from_param(session.param.y_axis, name="2-D view: y")
        self.dc = pn.widgets.EditableFloatSlider(name="dc (cut-off distance)", format="0.[0000]")
        self.dc_percent = pn.widgets.FloatInput(name="dc from the percent rule (% neighbours)", value=2.0,
                                                start=0.01, end=100, step=0.5)  # fmt: skip
        self.kernel = pn.widgets.RadioButtonGroup(name="Kernel", options={"cut-off": "cutoff", "Gaussian": "gaussian"})
        self.halo = pn.widgets.Checkbox(name="Grey out the halo (cluster borders)")
        self.suggest = pn.widgets.Button(name="Suggest centers", button_type="primary")
        self.n_clusters = pn.widgets.IntInput(name="Number of clusters", value=3, start=1, width=130)
        self.pick = pn.widgets.Button(name="Pick top γ", align="end")
        self.clear = pn.widgets.Button(name="Clear")
        self.undo = pn.widgets.Button(name="Undo", disabled=True)
        self.download_csv = pn.widgets.FileDownload(callback=partial(self._labels_file, "csv"), filename="labels.csv",
                                                    label="Download labels (CSV)", button_type="success")  # fmt: skip
        self.download_parquet = pn.widgets.FileDownload(callback=partial(self._labels_file, "parquet"),
                                                        filename="labels.parquet", label="Download labels (Parquet)")  # fmt: skip
        self.alert = pn.pane.Alert(alert_type="danger", visible=False, sizing_mode="stretch_width")
        self.progress = pn.indicators.Progress(active=False, visible=False, sizing_mode="stretch_width", max=100)
        self.busy = pn.pane.Markdown(visible=False)
        self.table = pn.pane.DataFrame(index=False, float_format="{:.4g}".format, sizing_mode="stretch_width")
        self.status = pn.pane.Markdown(css_classes=["dp-status"])

    def _bind(self) -> None:
        session = self.session
        self.sample.param.watch(lambda e: self._start("Loading", self._load_sample, e.new), "value")
        self.upload.param.watch(lambda e: self._start("Loading", self._load_upload), "value")
        self.dc.param.watch(lambda e: self._start("Changing dc", session.set_dc, e.new), "value_throttled")
        self.dc_percent.param.watch(lambda e: self._start("Changing dc", session.set_dc, dc_percent=e.new), "value_throttled")
        self.kernel.param.watch(lambda e: self._start("Changing kernel", session.set_dc, kernel=e.new), "value")
        self.halo.param.watch(lambda e: self._start("Computing the halo", session.set_halo, e.new), "value")
        self.suggest.on_click(lambda e: self._start("Relabelling", session.suggest))
        self.pick.on_click(lambda e: self._start("Relabelling", session.pick_count, self.n_clusters.value))
        self.clear.on_click(lambda e: self._start("Relabelling", session.clear))
        self.undo.on_click(lambda e: self._start("Relabelling", session.undo))
        self.plots.lasso.add_subscriber(lambda geometry: self._start("Relabelling", session.select_polygon, geometry))
        self.plots.box.add_subscriber(lambda bounds: self._start("Relabelling", session.select_box, bounds))
        session.param.watch(self._show_parameters, ["dc", "dc_percent", "kernel"])
        session.param.watch(self._show_clusters, ["revision", "show_halo"])
        session.param.watch(lambda e: setattr(self.undo, "disabled", not e.new), "can_undo")
        self._show_parameters()
        self._show_clusters()

    def _layout(self) -> pn.viewable.Viewable:
        backend = self.session.dataset.indexed.backend.device_name()
        sidebar = pn.Column(
            "### Data", self.sample, self.upload, self.upload_note, self.dataset_info, self.x_axis, self.y_axis,
            "### Density", self.dc, self.dc_percent, self.kernel, self.halo,
            "### Centers",
            pn.pane.Markdown("Lasso (or box-select) points at the top right of the decision graph: each becomes a "
                             "cluster center and every point is relabelled.", css_classes=["dp-status"]),
            self.suggest, pn.Row(self.n_clusters, self.pick), pn.Row(self.clear, self.undo),
            "### Results", self.download_csv, self.download_parquet,
            pn.pane.Markdown(f"Engine: **{backend}**", css_classes=["dp-status"]),
            width=330,
        )  # fmt: skip
        plots = pn.Row(
            pn.pane.HoloViews(self.plots.decision_graph(), sizing_mode="stretch_width", name="decision-graph"),
            pn.pane.HoloViews(self.plots.data_view(), sizing_mode="stretch_width", name="data-view"),
            sizing_mode="stretch_width",
        )
        main = pn.Column(
            self.alert, self.busy, self.progress, plots,
            pn.Row(pn.Column("### Clusters", self.table, sizing_mode="stretch_width"), pn.Column("### Timings", self.status, width=360)),
            sizing_mode="stretch_width",
        )  # fmt: skip
        header = pn.pane.Markdown("## dpstudio · Density Peaks Clustering", margin=(0, 10))
        return pn.Column(header, pn.Row(sidebar, main, sizing_mode="stretch_width"), sizing_mode="stretch_width",
                         stylesheets=[CSS])  # fmt: skip

    # actions ------------------------------------------------------------------------------------------------
    def _start(self, label: str, action: Callable, *args, **kwargs) -> None:
        """Run an action off the event loop (called from widget and stream callbacks on the loop)."""
        pn.state.execute(partial(self.run, label, action, *args, **kwargs))

    async def run(self, label: str, action: Callable, *args, **kwargs) -> bool:
        """Run ``action`` in a worker thread with progress shown; on failure show why and keep the last state."""
        async with self._work:
            self.alert.visible = False
            self.busy.object, self.busy.visible = f"**{label}…**", True
            self.progress.value, self.progress.visible = -1, True
            loop = asyncio.get_running_loop()
            report = partial(loop.call_soon_threadsafe, self._show_progress)
            try:
                if "progress" in _parameters(action):
                    kwargs["progress"] = report
                await asyncio.to_thread(action, *args, **kwargs)
                return True
            except Exception as exc:  # any engine or data error: shown, and the session stays as it was
                log.info("%s failed: %s", label, exc, exc_info=not isinstance(exc, ValueError))
                self.alert.object = f"**{label} failed:** {exc}"
                self.alert.visible = True
                self._show_parameters()  # put widgets back to the values in use
                return False
            finally:
                self.busy.visible = self.progress.visible = False

    def _load_sample(self, name: str, progress=None) -> None:
        if name in sample_data.SAMPLES:
            self._load(self.cache.sample(name, progress=progress), progress)

    def _load_upload(self, progress=None) -> None:
        if self.upload.value is None:
            return
        dataset = self.cache.upload(self.upload.filename, self.upload.value, self.settings.max_upload_bytes, progress)
        self._load(dataset, progress)

    def _load(self, dataset: Dataset, progress=None) -> None:
        self.session.load(dataset, progress=progress)
        self._show_dataset()

    # showing the state --------------------------------------------------------------------------------------
    def _show_progress(self, phase: str, fraction: float) -> None:
        self.busy.object = f"**{PHASES.get(phase, phase)}… {100 * fraction:.0f}%**"
        self.progress.value = int(100 * fraction)

    def _show_dataset(self) -> None:
        dataset = self.session.dataset
        points = dataset.points
        dropped = f", {points.dropped_rows.size} rows with NaN/inf left out" if points.dropped_rows.size else ""
        self.dataset_info.object = f"**{dataset.name}**: {dataset.n_points:,} points × {len(points.columns)} features{dropped}"
        self.sample.value = dataset.name if dataset.key.startswith("sample:") else YOUR_FILE

    def _show_parameters(self, *events) -> None:
        session = self.session
        dc = session.dc
        if session.dataset is not self._slider_dataset or not self.dc.start <= dc <= self.dc.end:
            self.dc.param.update(start=dc / 20, end=dc * 4, step=dc / 100)  # around the percent rule's dc
            self._slider_dataset = session.dataset
        self.dc.value = dc
        if session.dc_percent is not None:
            self.dc_percent.value = session.dc_percent
        self.kernel.value = session.kernel

    def _show_clusters(self, *events) -> None:
        self.table.object = self.session.cluster_table()
        self._show_status()

    def _show_status(self) -> None:
        timings = {**self.session.timings, **{f"render {k}": v for k, v in self.plots.render_seconds.items()}}
        self.status.object = "\n".join(
            f"- {phase}: " + ("cached" if seconds == 0 and phase in PHASES else f"{1000 * seconds:.1f} ms")
            for phase, seconds in timings.items()
        )

    def _labels_file(self, kind: str) -> io.BytesIO:
        table = self.session.labels_table()
        buffer = io.BytesIO()
        if kind == "csv":
            table.to_csv(buffer, index=False)
        else:
            table.to_parquet(buffer, index=False)
        buffer.seek(0)
        return buffer

    def close(self) -> None:
        """The browser went away: drop this session's arrays (the shared data set stays in the cache)."""
        self.session.close()


def _parameters(action: Callable) -> tuple[str, ...]:
    return tuple(inspect.signature(action).parameters)
