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
import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import panel as pn
from panel.links import Callback

from dpstudio import sample_data
from dpstudio.engine import DataError
from dpstudio.engine.data import READABLE

from .datasets import Dataset, DatasetCache
from .plots import MAX_MARKERS, SessionPlots
from .state import ClusteringSession

log = logging.getLogger("dpstudio")

YOUR_FILE = "{} (your file)"  # the data-set choice for the last uploaded or served file
UPLOAD_CHUNK = 4 * 2**20  # bytes per websocket message of an upload
TABLE_PAGE = 20  # clusters per page of the table
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
        self._your_file = None if initial.key.startswith("sample:") else initial  # the last uploaded or served file
        self.plots = SessionPlots(self.session, on_render=self._show_status)
        self._work = asyncio.Lock()  # one action at a time per session; others wait their turn
        self._build_widgets()
        self._bind()
        self._show_dataset()
        self.layout = self._layout()

    # widgets ------------------------------------------------------------------------------------------------
    def _build_widgets(self) -> None:
        session = self.session
        self.sample = pn.widgets.Select(name="Data set", options=list(sample_data.SAMPLES))
        # FilePond refuses a file over the limit in the browser, and sends the rest in chunks the websocket takes
        self.upload = pn.widgets.FileDropper(accepted_filetypes=list(READABLE), chunk_size=UPLOAD_CHUNK,
                                             max_file_size=f"{self.settings.max_upload_bytes // 2**10}KB")  # fmt: skip
        self.upload_note = pn.pane.Markdown(
            f"CSV, TSV, TXT, Parquet or NPY, up to {self.settings.max_upload_bytes / 2**20:g} MB. "
            "Every numeric column is a feature.", css_classes=["dp-status"])  # fmt: skip
        self.dataset_info = pn.pane.Markdown()
        self.x_axis = pn.widgets.Select.from_param(session.param.x_axis, name="2-D view: x")
        self.y_axis = pn.widgets.Select.from_param(session.param.y_axis, name="2-D view: y")
        self.dc = pn.widgets.EditableFloatSlider(name="dc (cut-off distance)")
        # text, so that it can be blank while dc is set directly (a number field shows NaN)
        self.dc_percent = pn.widgets.TextInput(name="dc from the percent rule (% neighbours)",
                                               placeholder="dc set directly: type a percent for the rule")  # fmt: skip
        self.notice = pn.pane.Alert(alert_type="warning", visible=False, sizing_mode="stretch_width")
        self.kernel = pn.widgets.RadioButtonGroup(name="Kernel", options={"cut-off": "cutoff", "Gaussian": "gaussian"})
        self.halo = pn.widgets.Checkbox(name="Grey out the halo (cluster borders)")
        self.suggest = pn.widgets.Button(name="Automatic clusters", button_type="primary")
        self.n_clusters = pn.widgets.IntInput(name="Number of clusters", value=3, start=1, width=130)
        self.pick = pn.widgets.Button(name="Pick top γ", align="end")
        self.clear = pn.widgets.Button(name="Clear")
        self.undo = pn.widgets.Button(name="Undo", disabled=True)
        self.pending_note = pn.pane.Markdown()
        self.accept = pn.widgets.Button(name="Accept them", button_type="warning")
        self.cancel = pn.widgets.Button(name="Cancel")
        self.pending = pn.Row(self.pending_note, self.accept, self.cancel, visible=False, sizing_mode="stretch_width",
                              styles={"background": "#fff3cd", "border-radius": "4px"})  # fmt: skip
        self.download_csv = pn.widgets.FileDownload(callback=partial(self._labels_file, "csv"), filename="labels.csv",
                                                    label="Download labels (CSV)", button_type="success")  # fmt: skip
        self.download_parquet = pn.widgets.FileDownload(callback=partial(self._labels_file, "parquet"),
                                                        filename="labels.parquet", label="Download labels (Parquet)")  # fmt: skip
        self.alert = pn.pane.Alert(alert_type="danger", visible=False, sizing_mode="stretch_width")
        self.progress = pn.indicators.Progress(active=False, visible=False, sizing_mode="stretch_width", max=100)
        self.busy = pn.pane.Markdown(visible=False)
        self.table = pn.widgets.Tabulator(show_index=False, disabled=True, pagination="remote", page_size=TABLE_PAGE,
                                          sizing_mode="stretch_width")  # fmt: skip
        self.table_note = pn.pane.Markdown(css_classes=["dp-status"], visible=False)
        self.status = pn.pane.Markdown(css_classes=["dp-status"])

    def _bind(self) -> None:
        session = self.session
        self.sample.param.watch(self._sample_chosen, "value")
        self.upload.param.watch(self._file_chosen, "value")
        self.dc.param.watch(lambda e: self._start("Changing dc", session.set_dc, e.new), "value_throttled")
        self.dc_percent.param.watch(self._percent_typed, "value")
        self.kernel.param.watch(lambda e: self._start("Changing kernel", session.set_dc, kernel=e.new), "value")
        self.halo.param.watch(lambda e: self._start("Computing the halo", session.set_halo, e.new), "value")
        self.suggest.on_click(lambda e: self._start("Relabelling", session.suggest))
        self.pick.on_click(lambda e: self._start("Relabelling", session.pick_count, self.n_clusters.value))
        self.clear.on_click(lambda e: self._start("Relabelling", session.clear))
        self.undo.on_click(lambda e: self._start("Relabelling", session.undo))
        self.accept.on_click(lambda e: self._start("Relabelling", session.confirm))
        self.cancel.on_click(lambda e: session.cancel())
        self.plots.lasso.add_subscriber(lambda geometry: self._start("Relabelling", session.select_polygon, geometry))
        self.plots.box.add_subscriber(lambda bounds: self._start("Relabelling", session.select_box, bounds))
        session.param.watch(self._show_parameters, ["dc", "dc_percent", "kernel"])
        session.param.watch(self._show_clusters, ["revision", "show_halo"])
        session.param.watch(lambda e: setattr(self.undo, "disabled", not e.new), "can_undo")
        session.param.watch(self._show_pending, "pending_centers")
        session.param.watch(self._show_notice, "notice")
        self._show_parameters()
        self._show_clusters()

    def _layout(self) -> pn.viewable.Viewable:
        backend = self.session.dataset.indexed.backend.device_name()
        sidebar = pn.Column(
            "### Data", self.sample, self.upload, self.upload_note, self.dataset_info, self.x_axis, self.y_axis,
            "### Density", self.dc, self.dc_percent, self.notice, self.kernel, self.halo,
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
            self.alert, self.pending, self.busy, self.progress, plots,
            pn.Row(pn.Column("### Clusters", self.table_note, self.table, sizing_mode="stretch_width"),
                   pn.Column("### Timings", self.status, width=360)),
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

    def _file_chosen(self, event) -> None:
        if event.new:  # {}: emptied, here or by removing the file in the widget
            filename, content = event.new.popitem()
            # forgotten at once, so the widget holds only the next file (also when it is this one again)
            self.upload.value = {}
            self._start("Loading", self._load_upload, filename, content)

    def _sample_chosen(self, event) -> None:
        if event.new != self._choice(self.session.dataset):  # not just the list following what is shown
            self._start("Loading", self._load_sample, event.new)

    def _load_sample(self, choice: str, progress=None) -> None:
        """A sample by name, or the user's file again."""
        self._load(self.cache.sample(choice, progress=progress) if choice in sample_data.SAMPLES else self._your_file, progress)

    def _load_upload(self, filename: str, content: bytes | str, progress=None) -> None:
        if isinstance(content, str):  # FileDropper decodes text files that are valid UTF-8
            content = content.encode()
        if not content:
            raise DataError(f"{filename} is empty")
        self._your_file = self.cache.upload(filename, content, self.settings.max_upload_bytes, progress)
        self._load(self._your_file, progress)

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
        your_file = [self._choice(self._your_file)] if self._your_file else []
        self.sample.param.update(options=[*sample_data.SAMPLES, *your_file], value=self._choice(dataset))

    def _choice(self, dataset: Dataset) -> str:
        """The data-set list's entry for a data set."""
        return YOUR_FILE.format(dataset.name) if dataset is self._your_file else dataset.name

    def _show_parameters(self, *events) -> None:
        session = self.session
        dc = session.dc
        if session.dataset is not self._slider_dataset or not self.dc.start <= dc <= self.dc.end:
            self.dc.param.update(start=dc / 20, end=dc * 4, step=dc / 100, format=_dc_format(dc / 20))  # around the rule's dc
            self._slider_dataset = session.dataset
        self.dc.value = dc
        self.dc_percent.value = _percent_text(session.dc_percent)  # blank while dc is set directly: any percent typed applies
        self.kernel.value = session.kernel

    def _percent_typed(self, event) -> None:
        if event.new.strip() and event.new != _percent_text(self.session.dc_percent):
            self._start("Changing dc", self._set_percent, event.new)

    def _set_percent(self, text: str, progress=None) -> None:
        try:
            percent = float(text)
        except ValueError:
            raise ValueError(f"the percent must be a number, got {text!r}") from None
        self.session.set_dc(dc_percent=percent, progress=progress)

    def _show_notice(self, *events) -> None:
        self.notice.object, self.notice.visible = self.session.notice, bool(self.session.notice)

    def _show_pending(self, *events) -> None:
        count = self.session.pending_centers
        self.pending_note.object = (f"**{count:,} centers selected.** That many is rarely meant (a lasso across the dense "
                                    "band?). Accept them, or cancel and keep the current centers.")  # fmt: skip
        self.pending.visible = count > 0

    def _show_clusters(self, *events) -> None:
        table = self.session.cluster_table()
        self.table_note.object = (f"{len(table):,} clusters: the plots mark the first {MAX_MARKERS} (largest γ); "
                                  "the table and the downloads have them all.")  # fmt: skip
        self.table_note.visible = len(table) > MAX_MARKERS
        self.table.value = table.assign(**{name: table[name].map(lambda v: float(f"{v:.4g}")) for name in ("rho", "delta")})
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
        """The browser went away: drop this session's arrays (the shared data set stays in the cache), and let go
        of what keeps the page alive after its session: the plots' streams, and Panel's registry of JS callbacks
        (weakly keyed, but each callback refers back to its widget, like the dc slider's text box)."""
        self.session.close()
        self.plots.close()
        for widget in self.layout.select():
            Callback.registry.pop(widget, None)


def _percent_text(percent: float | None) -> str:
    return "" if percent is None else f"{percent:g}"


def _dc_format(smallest: float) -> str:
    """A numeral.js format with three significant digits at the slider's smallest value, and never fewer than 4
    decimals: a tiny dc is shown as what it is, not as 0."""
    decimals = max(4, 2 - math.floor(math.log10(smallest)))
    return f"0.[{'0' * decimals}]"


def _parameters(action: Callable) -> tuple[str, ...]:
    return tuple(inspect.signature(action).parameters)
