"""The page of one browser session: controls, the method's plots beside the 2-D view, the sensitivity curves,
the comparison strip, the cluster table and the status line.

Widgets call ``Studio`` and method-state methods; anything that may take long runs in a worker thread (the Numba
kernels release the GIL), with a progress bar, so the page never freezes and other sessions keep going.
An error becomes a message on the page and the session keeps its last good state.
"""

from __future__ import annotations

import asyncio
import contextvars
import importlib.util
import inspect
import io
import logging
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd
import panel as pn
from bokeh.models import NumberFormatter, PrintfTickFormatter, ScientificFormatter
from panel.links import Callback

from dpstudio import sample_data
from dpstudio.engine import DataError
from dpstudio.engine.indexed import index_wanted_elsewhere
from dpstudio.engine.notation import short

from .datasets import Dataset, DatasetCache, no_truth
from .dbscan_plots import DBSCANPlots
from .document import walk_held
from .gamma_plot import GammaPlot
from .method_controls import CHOICE_STYLE, DBSCANControls, HDBSCANControls, whole_number_input
from .method_state import Unchanged
from .plots import MAX_MARKERS, SessionPlots, tools_on_markers_only
from .priority import BUILDS, PAGES_OPENING, WAITS_LONGEST_S
from .reproduce import (apply_session, command_line, page_query, query_document, query_fallbacks, read_session, saved_name,
                        session_json)
from .studio import EDIT_UNDO_DEPTH, Studio
from .sweep import SWEEP_DCS, SWEEP_PERCENTS
from .streaming import BASE_PERCENT, Streaming
from .sweep_plot import SweepPlot
from .teaching import TEACHING_MAX, Teaching
from .teaching_plot import TeachingPlots
from .tree_plot import TreePlot
from .wording import KERNEL_NAMES, column_decimals, counted

log = logging.getLogger("dpstudio")

YOUR_FILE = "{} (your file)"  # the data-set choice for the last uploaded or served file
UPLOAD_CHUNK = 4 * 2**20  # bytes per websocket message of an upload
TABLE_PAGE = 20  # clusters per page of the table
LOOP_WAIT_S = 60.0  # the longest a worker waits for the event loop to make views (it takes well under a second)
CLUSTERS_TAB = 0  # the DPC panel's tab that picks the clusters
TEACH_TAB = 1  # the DPC panel's tab that teaches (its layers join the plots when it is opened)
EDIT_TAB = 2  # the DPC panel's tab that edits and streams the points
BUSY_AFTER = 1.0  # seconds an action runs before its progress is shown: quicker ones show their result instead
PHASES = {"read": "Reading data", "index": "Building the index", "rho": "Computing ρ", "delta": "Computing δ",
          "neighbours": "Listing neighbours", "mst": "Building the spanning tree", "sweep": "Clustering at each dc"}
METHOD_NAMES = {"DPC": "dpc", "DBSCAN": "dbscan", "HDBSCAN": "hdbscan"}
ADDRESS_FOLLOWS = ("const query = cb_obj.value.slice(cb_obj.value.indexOf(' ') + 1);"  # after the revision
                   "window.history.replaceState(window.history.state, '', window.location.pathname + query + window.location.hash)")
# the data-set list set to the data set shown, in the browser too: a link's data set, shown as the visitor chose
# another, crossed the choice on its way to the browser, and the list went on naming the link's beside the choice's
# clusters (the server's list already held the choice, so showing it changed, and sent, nothing)
LIST_NAMES_THE_SHOWN = "list.value = cb_obj.value.slice(cb_obj.value.indexOf(' ') + 1);"
# the upload box emptied of the files it has sent with FilePond's own calls (Panel's FileDropper cannot be cleared
# from the server): it went on listing the last file, "Sent", while a sample was shown. A file on its way stays
EMPTY_THE_UPLOAD_BOX = """
const root = Bokeh.index.find_one(box)?.shadow_el.querySelector('.filepond--root');
const pond = root && window.FilePond.find(root);
const name = cb_obj.value.slice(cb_obj.value.indexOf(' ') + 1);
const {PROCESSING, PROCESSING_COMPLETE} = window.FilePond.FileStatus;
for (const file of pond ? pond.getFiles() : []) {
  if (file.filename !== name) continue;  // a file sent since, still on its way, say
  if (file.status === PROCESSING_COMPLETE) pond.removeFile(file.id);
  else if (file.status === PROCESSING) {  // sent whole, but FilePond says so only once its ring has filled (about 1 s)
    const sent = (error, done) => { if (done.id === file.id) { pond.off('processfile', sent); pond.removeFile(file.id); } };
    pond.on('processfile', sent);
  }
}
"""
COLOUR_NAMES = {"clusters": "clusters", "ground truth": "truth"}
CLICK_MODES = {"Click explains a point": "explain", "Click adds a point": "add"}
LASSO_MODES = {"Lasso selects": "select", "Lasso deletes": "delete"}
POINT_AT = "Point at a point (either plot) to see what it is."
# a file FilePond has sent is grey and "Sent", not green and "Upload complete": whether it loads is said above the
# plots, and a file that fails (a header without rows) showed a success beside the error. No "tap to undo" under
# it: its button clears the box, and the data set loaded stays
SENT_FILE_CSS = """
.filepond--root [data-filepond-item-state='processing-complete'] .filepond--item-panel { background-color: #64605e; }
.filepond--root [data-filepond-item-state='processing-complete'] .filepond--file-status-sub { display: none; }
.filepond--root [data-filepond-item-state='processing-complete'] .filepond--file-status-main { font-size: 0; }
.filepond--root [data-filepond-item-state='processing-complete'] .filepond--file-status-main::after {
  content: "Sent"; font-size: 0.75rem;
}
:host(.dp-refused) .filepond--root [data-filepond-item-state='processing-complete'] .filepond--item-panel { background-color: #b3261e; }
:host(.dp-refused) .filepond--root [data-filepond-item-state='processing-complete'] .filepond--file-status-main::after {
  content: "Refused";
}
"""
CSS = """
.dp-status { font-size: 0.85em; color: #555; }
"""


class SessionEnded(BaseException):
    """Raised at a worker's next progress report once its page has closed: nobody waits for that work any more. A
    BaseException, as asyncio's CancelledError is: no ``except Exception`` on its way out (a session file's rollback,
    say) takes it for a failure and does more work."""


@dataclass(frozen=True)
class PageSettings:
    max_upload_bytes: int = 200 * 2**20
    initial_path: str | None = None  # a file given to ``dpstudio serve PATH``; else the default sample
    dc_percent: float = 2.0  # the percent rule a new session starts with


@dataclass
class Activity:
    """Where a kind of work shows that it runs, and the lock that makes its actions wait their turn."""

    busy: pn.pane.Markdown = field(default_factory=lambda: pn.pane.Markdown(visible=False))
    progress: pn.indicators.Progress = field(
        default_factory=lambda: pn.indicators.Progress(active=False, visible=False, sizing_mode="stretch_width", max=100))
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    text: str = ""  # what the busy line says once shown: the action, then its last progress report
    fraction: float = -1.0  # its last progress report (-1: none yet, the bar runs without a value)

    def show(self) -> None:
        self.busy.object, self.progress.value = self.text, round(100 * self.fraction) if self.fraction >= 0 else -1
        self.busy.visible = self.progress.visible = True

    def report(self, text: str, fraction: float) -> None:
        self.text, self.fraction = text, fraction
        if self.busy.visible:
            self.show()


class StudioPage:
    """One session's page, built on a loaded data set. ``layout`` is what Panel serves."""

    def __init__(self, cache: DatasetCache, settings: PageSettings, initial: Dataset):
        self.cache, self.settings = cache, settings
        self.studio = Studio(dc_percent=settings.dc_percent)
        self.studio.load(initial)
        self.session = self.studio.dpc
        self._slider_dataset: Dataset | None = None
        self._dc_shown: float | None = None  # the dc the box shows: the one in use, or the last one asked for
        # DPC's kernel and view toggles: the values in use, or asked for last
        self._asked = {"kernel": self.session.kernel, "show_halo": False, "log_axes": False}
        self._centers_counted: int | None = None  # the count of centers the number-of-clusters box was last given
        self._your_file = None if initial.key.startswith("sample:") else initial  # the last uploaded or served file
        self._box_lists: str | None = None  # the name of the file the upload box lists: the one shown, or one refused since
        self.plots = SessionPlots(self.studio, on_render=self._show_status)
        self.dbscan_plots, self.tree_plot = DBSCANPlots(self.studio.dbscan), TreePlot(self.studio.hdbscan)
        self.sweep_plot = SweepPlot(self.session)
        self.gamma_plot = GammaPlot(self.session)
        self.teaching = Teaching(self.studio)
        self.teaching_plots = TeachingPlots(self.teaching)
        self.streaming = Streaming(self.studio)
        self._playing = None  # the periodic callback that plays the stream
        self._stream_paused = ""  # why the stream stopped playing, said until Play
        self.closed = False  # the browser went away (``close``): work for it stops at its next progress report
        self._workers = 0  # actions running in a worker thread now
        self._switches_queued = 0  # method switches clicked and not yet run (counted on the event loop)
        self._method_wanted = self.studio.method  # what the method buttons show: the last one clicked, while queued
        self._sample_wanted: str | None = None  # the data set chosen in the list and waiting to be loaded
        self._visitor_chose = False  # a data set chosen in the list: a link's parameters not yet opened are stale
        self.work = Activity()  # one action at a time per session; others wait their turn
        self.sweeping = Activity()  # the dc sweep runs beside them, with its own progress
        self._wanted: dict[str, tuple] = {}  # the latest value of each followed stream (see follow)
        self._build_widgets()
        self.layout = self._layout()
        self._bind()
        self._show_dataset()

    # widgets ------------------------------------------------------------------------------------------------
    def _build_widgets(self) -> None:
        self.sample = pn.widgets.Select(name="Data set", options=list(sample_data.SAMPLES))
        # FilePond refuses a file over the limit in the browser, and sends the rest in chunks the websocket takes.
        # No accepted types: FilePond checks MIME types only, and browsers give .npy and .parquet none (""), so it
        # refused them; the server names what it reads instead (read_upload)
        self.upload = pn.widgets.FileDropper(chunk_size=UPLOAD_CHUNK, max_file_size=f"{self.settings.max_upload_bytes // 2**10}KB",
                                             stylesheets=[SENT_FILE_CSS])  # fmt: skip
        # "N name": the N-th time the box is to let go of the file it lists, by name
        self.upload_emptied = pn.widgets.TextInput(visible=False)
        self.upload_emptied.jscallback(value=EMPTY_THE_UPLOAD_BOX, args={"box": self.upload})
        self.sample_shown = pn.widgets.TextInput(visible=False)  # "N entry": the N-th data set shown, as the list names it
        self.sample_shown.jscallback(value=LIST_NAMES_THE_SHOWN, args={"list": self.sample})
        self.upload_note = pn.pane.Markdown(
            f"CSV, TSV, TXT (gzipped too: .csv.gz), Parquet or NPY, up to {self.settings.max_upload_bytes / 2**20:g} MB. "
            "Every numeric column is a feature until you choose; each is z-scored while Standardize is ticked.",
            css_classes=["dp-status"])  # fmt: skip
        self.dataset_info = pn.pane.Markdown()
        # a list box of fixed height: a data set of 64 columns would fill the sidebar with tags
        self.features = pn.widgets.MultiSelect(name="Features (the columns distances use; Ctrl+click)", size=5,
                                               sizing_mode="stretch_width")  # fmt: skip
        self.standardize = pn.widgets.Checkbox(name="Standardize each feature (z-score)")
        self.use_features = pn.widgets.Button(name="Use these features", disabled=True)
        self.x_axis = pn.widgets.Select.from_param(self.studio.param.x_axis, name="2-D view: x")
        self.y_axis = pn.widgets.Select.from_param(self.studio.param.y_axis, name="2-D view: y")
        # offered where scikit-learn is installed (dpstudio[embed])
        self.embed = pn.widgets.Button(name="t-SNE view of the features", visible=importlib.util.find_spec("sklearn") is not None,
                                       description="A t-SNE embedding of two features or more, computed once per data set")  # fmt: skip
        self.method = pn.widgets.RadioButtonGroup(name="Method", options=METHOD_NAMES, **CHOICE_STYLE)
        self.dbscan = DBSCANControls(self.studio.dbscan, self.dbscan_plots, self._start, self.follow)
        self.hdbscan = HDBSCANControls(self.studio.hdbscan, self.tree_plot, self._start)
        self.sweep = pn.widgets.Button(name=f"Sweep dc ({SWEEP_DCS} values, {SWEEP_PERCENTS[0]:g}% to {SWEEP_PERCENTS[1]:g}% rule)")
        self.sweep_note = pn.pane.Markdown()
        self.colour_by = pn.widgets.RadioButtonGroup(name="Colour points by", options=COLOUR_NAMES, **CHOICE_STYLE)
        self.truth_note = pn.pane.Markdown(css_classes=["dp-status"])
        self.pin = pn.widgets.Button(name="Pin this clustering to compare")
        self.unpin = pn.widgets.Button(name="Unpin", disabled=True)
        self.comparison_note = pn.pane.Markdown()
        self.contingency = pn.widgets.Tabulator(show_index=False, disabled=True, sizing_mode="stretch_width", height=300)
        # 4 significant digits, whatever the data's units (a tiny dc is not shown as 0), and the same in the box:
        # Panel gives the box only the format the slider is made with, and 8 decimals ran into its arrows
        self.dc = pn.widgets.EditableFloatSlider(name="dc (cut-off distance)", format=PrintfTickFormatter(format="%.4g"),
                                                 sizing_mode="stretch_width")  # its box takes the room beside the name: 5.497e-7 ran into the arrows
        # text, so that it can be blank while dc is set directly (a number field shows NaN)
        self.dc_percent = pn.widgets.TextInput(name="dc from the percent rule (% neighbours)",
                                               placeholder="dc set directly: type a percent for the rule")  # fmt: skip
        self.notice = pn.pane.Alert(alert_type="warning", visible=False, sizing_mode="stretch_width")
        self.kernel = pn.widgets.RadioButtonGroup(name="Kernel", options={name: kernel for kernel, name in KERNEL_NAMES.items()}, **CHOICE_STYLE)
        self.halo = pn.widgets.Checkbox(name="Grey out the halo (cluster borders)")
        self.log_axes = pn.widgets.Checkbox(name="Log axes on the decision graph")
        self.forest = pn.widgets.Checkbox(name="Every arrow (the parent forest)")
        self.click_mode = pn.widgets.RadioButtonGroup(name="A click in the 2-D view", options=CLICK_MODES, **CHOICE_STYLE)
        # no bounds, as whole_number_input: the browser put a value out of them back without a word
        self.stream_percent = pn.widgets.FloatInput(name="Start with (% of the points)", value=BASE_PERCENT, width=130)
        self.stream_start = pn.widgets.Button(name="Start a stream", align="end")
        self.batch_size = whole_number_input("Points per batch", value=100, width=130)
        self.stream_next = pn.widgets.Button(name="Next batch", disabled=True, align="end")
        self.stream_play = pn.widgets.Toggle(name="▶ Play", disabled=True)
        self.stream_undo = pn.widgets.Button(name="Take the last batch out", disabled=True)
        self.stream_note = pn.pane.Markdown(css_classes=["dp-status"])
        self.stream_log = pn.widgets.Tabulator(show_index=False, disabled=True, sizing_mode="stretch_width", height=260,
                                               layout="fit_data_stretch")  # the last column, the changes, takes the rest
        self.lasso_mode = pn.widgets.RadioButtonGroup(name="A lasso in the 2-D view", options=LASSO_MODES, **CHOICE_STYLE)
        self.undo_edit = pn.widgets.Button(name="Undo the last edit", disabled=True)
        self.edges = pn.widgets.Checkbox(name="The tree's edges within ε (they join the core points)")
        self.circles = pn.widgets.Checkbox(name="The ε circle of every core point (where the view shows the features)")
        self.edges_size_note = pn.pane.Markdown(css_classes=["dp-status"])
        self.stepping = pn.widgets.Checkbox(name="Step through the algorithm")
        self.player = pn.widgets.Player(start=0, end=1, value=0, interval=1200, loop_policy="once", show_loop_controls=False,
                                        visible_buttons=["first", "previous", "pause", "play", "next", "last"],
                                        width=300, visible=False)  # fmt: skip
        self.teaching_size_note = pn.pane.Markdown(css_classes=["dp-status"])
        self.explained_note = pn.pane.Markdown(css_classes=["dp-status"])
        self.step_note = pn.pane.Markdown(visible=False, sizing_mode="stretch_width")  # wrapped: a long step ran off a narrow window
        self.suggest = pn.widgets.Button(name="Automatic clusters", button_type="primary")
        # no start: a bound makes the browser keep a 0 typed in the box and send nothing, and Pick used the old number
        self.n_clusters = whole_number_input("Number of clusters", width=130)
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
        self.save_session = pn.widgets.FileDownload(callback=self._session_file, filename="session.json",
                                                    label="Save the session (JSON)")  # fmt: skip
        self.load_session = pn.widgets.FileInput(accept=".json", name="Load a saved session", sizing_mode="stretch_width")
        self.command = pn.widgets.TextAreaInput(name="The same result from the command line", height=110,
                                                sizing_mode="stretch_width")  # fmt: skip
        self.copy_command = pn.widgets.Button(name="Copy as command")
        self.copy_command.js_on_click(args={"source": self.command}, code="navigator.clipboard.writeText(source.value)")
        # the browser's address follows the page (``page_query``), so that a reload, a bookmark or a copied link
        # opens what is shown; replaced, not pushed: Back would change the address and not the page
        self.address = pn.widgets.TextInput(visible=False)
        self.address.jscallback(value=ADDRESS_FOLLOWS)
        # sticky: an error answers a control that may be far down the page, and it stays in view while scrolled there
        self.alert = pn.pane.Alert(alert_type="danger", visible=False, sizing_mode="stretch_width",
                                   styles={"position": "sticky", "top": "0", "z-index": "10"})
        self.pointed_note = pn.pane.Markdown(POINT_AT, css_classes=["dp-status"])
        self._last_pointed: tuple[Dataset, int] | None = None  # the point whose facts the note gives
        # "", not None, so that a relabel with nothing lassoed changes nothing: set from None to "" by the relabels of
        # a URL's opening, it left 3 page loads in 4 with "reference … isn't known" (a patch naming a model the
        # browser did not have)
        self.selected_note = pn.pane.Markdown("", css_classes=["dp-status"])
        self.clear_selection = pn.widgets.Button(name="Clear the selection", visible=False)
        self.table = pn.widgets.Tabulator(show_index=False, disabled=True, pagination="remote", page_size=TABLE_PAGE,
                                          sizing_mode="stretch_width")  # fmt: skip
        self._table_decimals: dict[str, int | None] = {}  # the float columns' decimals the table shows
        self.table_note = pn.pane.Markdown(css_classes=["dp-status"], visible=False)
        self.status = pn.pane.Markdown(css_classes=["dp-status"])

    def _bind(self) -> None:
        session, studio = self.session, self.studio
        self.sample.param.watch(self._sample_chosen, "value")
        # widgets that _show_method sets to the state's value: only a user's choice starts an action
        self.method.param.watch(lambda e: e.new != self._method_wanted and self._method_chosen(e.new), "value")
        self.colour_by.param.watch(lambda e: e.new != studio.colour_by and self._start("Recolouring", studio.set_colour_by, e.new), "value")
        self.pin.on_click(lambda e: self._start("Pinning", studio.pin))
        self.unpin.on_click(lambda e: self._start("Unpinning", studio.unpin))
        studio.param.watch(self._pin_dropped, "pinned")
        self.sweep.on_click(lambda e: self._start("Sweeping dc", session.run_sweep, activity=self.sweeping))
        for tap in self.sweep_plot.taps:
            tap.add_subscriber(lambda x, y: self._go_to_dc(self.sweep_plot.clicked_dc(x)))
        self.upload.param.watch(self._file_chosen, "value")
        self.features.param.watch(self._show_feature_choice, "value")
        self.standardize.param.watch(self._show_feature_choice, "value")
        self.embed.on_click(lambda e: self._start("Computing the t-SNE view (a minute or two at 50,000 points)", studio.show_embedding))
        self.use_features.on_click(lambda e: self._start("Loading", self._set_features, list(self.features.value), self.standardize.value))
        self.load_session.param.watch(self._session_chosen, ["value", "filename"])
        self.dc.param.watch(self._dc_moved, ["value", "value_throttled"])
        # Panel's box widens the browser's slider to a dc typed beyond it, and that range reaches the server after
        # the typed dc: where the dc was refused before it came, the page had put the range back already, and the
        # handle stayed at the far left. Panel's composite slider has no public view of its slider's range
        self.dc._slider.param.watch(self._slider_widened, ["start", "end"])
        self.dc_percent.param.watch(self._percent_typed, "value")
        self.kernel.param.watch(partial(self._chosen, "kernel", "Changing kernel", session.set_kernel, redraw=True), "value")
        self.halo.param.watch(partial(self._chosen, "show_halo", "Computing the halo", session.set_halo), "value")
        self.log_axes.param.watch(partial(self._chosen, "log_axes", "Redrawing", session.set_log_axes), "value")
        teaching = self.teaching
        # quiet and coalesced (follow): a click or a step is drawn at once, with no progress bar flashing
        self.plots.view_tap.add_subscriber(self._view_clicked)
        self.forest.param.watch(lambda e: e.new != teaching.forest and self._teach("Drawing the arrows", teaching.show_forest, e.new), "value")
        self.edges.param.watch(lambda e: e.new != teaching.edges and self._teach("Drawing the edges", teaching.show_edges, e.new), "value")
        self.stepping.param.watch(lambda e: e.new != (teaching.step is not None) and self._step(e.new), "value")
        self.player.param.watch(lambda e: teaching.step not in (None, e.new) and self.follow("Stepping", teaching.go_to_step, e.new), "value")
        self.circles.param.watch(lambda e: e.new != teaching.circles and self._teach("Drawing the circles", teaching.show_circles, e.new), "value")
        teaching.param.watch(self._show_teaching, ["point", "forest", "edges", "circles", "step"])
        self.stream_start.on_click(lambda e: self._stream("Starting the stream", self.streaming.start, self.stream_percent.value))
        self.stream_next.on_click(lambda e: self._stream("Streaming a batch in", self.streaming.next_batch, self.batch_size.value, redraw=True))
        self.stream_undo.on_click(lambda e: self._stream("Taking the last batch out", self.streaming.delete_last, redraw=True))
        self.stream_play.param.watch(self._play, "value")
        self.streaming.param.watch(self._show_stream, ["log", "streamed"])
        self.plots.corner_tap.add_subscriber(lambda x, y: x is not None and self._start("Relabelling", session.select_corner, x, y, redraw=True))
        self.gamma_plot.tap.add_subscriber(lambda x, y: self._pick_by_rank(self.gamma_plot.clicked_count(x)))
        for plot, pointer in (("view", self.plots.view_pointer), ("graph", self.plots.graph_pointer)):
            pointer.add_subscriber(lambda x, y, plot=plot: self.follow(f"Pointing at the {plot}", self._point_at, (plot, x, y), keep_alert=True))
        self.plots.view_lasso.add_subscriber(self._view_lassoed)
        self.clear_selection.on_click(lambda e: self._start("Selecting", studio.select_in_view, None, redraw=True))
        studio.param.watch(self._show_pointed, ["pointed", "revision"])  # a relabel or another method: its facts again
        studio.param.watch(self._show_selected, ["selected", "revision"])  # (the clusters they are in: a relabel's)
        studio.param.watch(lambda e: self._show_dataset(), ["dataset"])  # loaded, edited or streamed
        self.suggest.on_click(lambda e: self._start("Relabelling", session.suggest, redraw=True))
        self.pick.on_click(lambda e: self._start("Relabelling", session.pick_count, self.n_clusters.value, redraw=True))
        self.clear.on_click(lambda e: self._start("Relabelling", session.clear, redraw=True))
        self.undo.on_click(lambda e: self._start("Relabelling", session.undo, redraw=True))
        self.undo_edit.on_click(lambda e: self._start("Undoing the last edit", studio.undo_edit, redraw=True))
        studio.param.watch(lambda e: setattr(self.undo_edit, "disabled", not e.new), "can_undo_edit")
        self.accept.on_click(lambda e: self._start("Relabelling", session.confirm, redraw=True))
        self.cancel.on_click(self._cancel_choice)
        self.plots.lasso.add_subscriber(lambda geometry: self._start("Relabelling", session.select_polygon, geometry, redraw=True))
        self.plots.box.add_subscriber(lambda bounds: self._start("Relabelling", session.select_box, bounds, redraw=True))
        session.param.watch(self._show_parameters, ["dc", "dc_percent", "kernel", "show_halo", "log_axes"])
        studio.param.watch(self._show_clusters, ["revision"])
        studio.param.watch(self._show_teaching, ["revision"])
        session.param.watch(self._show_sweep, ["sweep"])
        studio.param.watch(self._show_method, ["method", "dataset", "colour_by", "pinned"])
        session.param.watch(lambda e: setattr(self.undo, "disabled", not e.new), "can_undo")
        session.param.watch(self._show_centers, "centers")
        session.param.watch(self._show_pending, "pending_centers")
        session.param.watch(self._show_notice, "notice")
        self._show_parameters()
        self._show_centers()
        self._show_method()
        self._show_clusters()
        self._show_teaching()

    def _layout(self) -> pn.viewable.Viewable:
        backend = self.studio.dataset.indexed.backend.device_name()
        self.dpc_controls = pn.Column(
            "### Density", self.dc, self.dc_percent, self.notice, self.kernel, self.halo, self.log_axes,
            "### Centers",
            pn.pane.Markdown("Lasso (or box-select) points at the top right of the decision graph: each becomes a "
                             "cluster center and every point is relabelled. Or click the graph: the points right of "
                             "and above the click become the centers (the original paper's rectangle). Or click a rank "
                             "on the γ plot.", css_classes=["dp-status"]),
            self.suggest, pn.Row(self.n_clusters, self.pick), pn.Row(self.clear, self.undo),
            sizing_mode="stretch_width",
        )  # fmt: skip
        teach = pn.Column(
            pn.pane.Markdown("Click a point in the 2-D view: its dc circle, the points its ρ counts, and its arrows "
                             "to the nearest denser point and on to its center.", css_classes=["dp-status"]),
            self.forest, self.stepping, self.teaching_size_note, sizing_mode="stretch_width",
        )  # fmt: skip
        edit = pn.Column(
            pn.pane.Markdown("Add a point with a click, or delete points with a lasso, in the 2-D view: the "
                             "incremental engine updates ρ, δ and the labels at once. The edits are this page's own; "
                             f"Undo takes back the last {EDIT_UNDO_DEPTH}, and choosing the data set again gives it back "
                             "as it was.", css_classes=["dp-status"]),
            self.click_mode, self.lasso_mode, self.undo_edit,
            "#### Stream",
            pn.pane.Markdown("Replay the data set as a stream: a fit on its first points, then batches inserted by "
                             "the incremental engine, at a fixed dc. The log is under the plots.",
                             css_classes=["dp-status"]),
            pn.Row(self.stream_percent, self.stream_start), pn.Row(self.batch_size, self.stream_next),
            pn.Row(self.stream_play, self.stream_undo), self.stream_note, sizing_mode="stretch_width",
        )  # fmt: skip
        # a tab's Bokeh models are made when it is first opened (a page that made them all opened slower), and kept. Not
        # Panel's dynamic tabs: they drop a hidden tab's models from the document while its panes still update them,
        # and Panel 1.9.4 restyles such a detached pane (Markdown, Alert) as if it had no document, with the CDN's
        # stylesheets, rewriting the ones every component on the page shares (loading.css, markdown.css): each
        # stream batch played with the Edit & stream tab left made the browser ask cdn.holoviz.org for them
        self.dpc_tabs = {TEACH_TAB: Deferred(lambda: [teach]), EDIT_TAB: Deferred(lambda: [edit])}
        self.dpc_panel = pn.Tabs(("Clusters", self.dpc_controls), ("Teach", self.dpc_tabs[TEACH_TAB].column),
                                 ("Edit & stream", self.dpc_tabs[EDIT_TAB].column), sizing_mode="stretch_width")  # fmt: skip
        self.dpc_panel.param.watch(self._dpc_tab_opened, "active")
        # the other methods' controls, hidden at first, join the page when first shown (as their plots do)
        self.method_controls = {"dbscan": Deferred(lambda: [self.dbscan.panel]), "hdbscan": Deferred(lambda: [self.hdbscan.panel])}
        sidebar = pn.Column(
            "### Data", self.sample, self.sample_shown, self.upload, self.upload_emptied, self.upload_note, self.dataset_info, self.features, self.standardize,
            self.use_features, self.x_axis, self.y_axis, self.embed,
            "### Method", self.method, self.dpc_panel, self.method_controls["dbscan"].column,
            self.method_controls["hdbscan"].column,
            "### Compare", pn.pane.Markdown("Colour points by", margin=(0, 10)), self.colour_by, self.truth_note,
            pn.Row(self.pin, self.unpin),
            "### Results", self.download_csv, self.download_parquet, self.save_session,
            self.load_session, self.command, self.copy_command, self.address,
            pn.pane.Markdown(f"Engine: **{backend}**", css_classes=["dp-status"]),
            width=330,
        )  # fmt: skip
        # plots hidden at first join the page when first shown: each costs its Bokeh models on the server and a
        # render in the browser, and a page that built them all took seconds to open
        self.dbscan.panel.extend([
            "#### Teaching",
            pn.pane.Markdown("Click a point in the 2-D view: its ε circle, the points within it, and whether that "
                             "makes it a core point, a border point or noise.", css_classes=["dp-status"]),
            self.edges, self.circles, self.edges_size_note,
        ])  # fmt: skip
        # the teaching view's layers join these two when first wanted (_add_teaching_layers)
        self._graph, self._view = self.plots.decision_graph(), self.plots.data_view()
        self.graph_pane = _plot_pane(self._graph, "decision-graph")
        self.view_pane = _plot_pane(self._view, "data-view")
        self.method_plots = {
            "dpc": Deferred(lambda: [self.graph_pane, _plot_pane(self.gamma_plot.plot, "gamma-rank")]),
            "dbscan": Deferred(lambda: [_plot_pane(self.dbscan_plots.k_distance(), "k-distance")]),
            "hdbscan": Deferred(lambda: [_plot_pane(self.tree_plot.plot(), "condensed-tree")]),
        }
        self.sweep_curves = Deferred(lambda: [
            pn.pane.Markdown("Each dc clustered by the largest-γ-drop rule at that dc (the automatic clusters do not "
                             "change with dc); shaded: plateaus (stable choices). Click a point to go to that dc.",
                             css_classes=["dp-status"]),
            *(_plot_pane(plot, "dc-sweep") for plot in self.sweep_plot.curves),
        ])
        self.eps_curves = Deferred(lambda: [_plot_pane(plot, "eps-curves") for plot in self.dbscan_plots.sensitivity()])
        self.sensitivity = {
            "dpc": pn.Column(pn.Row(self.sweep, self.sweeping.busy), self.sweeping.progress, self.sweep_note,
                             self.sweep_curves.column, sizing_mode="stretch_width"),
            "dbscan": self.eps_curves.column,
            "hdbscan": pn.pane.Markdown("The condensed tree above is HDBSCAN's sensitivity view: each cluster's life "
                                        "from its birth to its death as the distance scale shrinks.",
                                        css_classes=["dp-status"]),
        }  # fmt: skip
        self.comparison = Deferred(lambda: ["### Comparison with the pinned clustering", _side_by_side(
            pn.Column(_plot_pane(self.plots.pinned_view(), "pinned-view"), sizing_mode="stretch_width"),
            pn.Column(self.comparison_note, self.contingency, sizing_mode="stretch_width"), basis=380,
        )])  # fmt: skip
        plots = _side_by_side(  # the method's plots and the 2-D view, 420 px each before they wrap
            pn.Column(*(plots.column for plots in self.method_plots.values()), sizing_mode="stretch_width"),
            pn.Column(self.view_pane, sizing_mode="stretch_width"), basis=420,
        )  # fmt: skip
        self.stream_section = Deferred(lambda: [
            pn.pane.Markdown("### Stream log", margin=(0, 10)),
            pn.pane.Markdown("Per batch: the points it put in (or took out), the points and clusters after it, the "
                             "time the session took for it, and what it did to the clusters (as `dpstudio stream` "
                             "says it). A dc or kernel changed between batches has a line of its own.",
                             css_classes=["dp-status"]),
            self.stream_log,
        ])  # fmt: skip
        main = pn.Column(
            self.alert, self.pending, self.work.busy, self.work.progress,
            pn.Row(self.pointed_note, self.selected_note, self.clear_selection, sizing_mode="stretch_width"),
            # the player by the step it shows, out of the Teach tab: that tab's views were made again each time it
            # was opened (Panel's dynamic tabs, as it then was), and Panel's player view never stops its timer when it
            # goes, so a step-through left playing then played twice, past Pause
            # the explanation of a clicked point under the plots: above them, it moved them down under the mouse
            pn.Row(self.player, self.step_note, sizing_mode="stretch_width"), plots, self.explained_note, self.stream_section.column,
            pn.Column("### Sensitivity", *self.sensitivity.values(), sizing_mode="stretch_width"),
            self.comparison.column,
            _side_by_side(pn.Column("### Clusters", self.table_note, self.table, sizing_mode="stretch_width"),
                          pn.Column("### Timings", self.status, width=360, styles={"flex": "0 0 360px"}), basis=360),
            sizing_mode="stretch_width",
        )  # fmt: skip
        header = pn.pane.Markdown("## dpstudio · Density Peaks, DBSCAN and HDBSCAN", margin=(0, 10))
        return pn.Column(header, pn.Row(sidebar, main, sizing_mode="stretch_width"), sizing_mode="stretch_width",
                         stylesheets=[CSS])  # fmt: skip

    # actions ------------------------------------------------------------------------------------------------
    def _start(self, label: str, action: Callable, *args, **kwargs) -> None:
        """Run an action off the event loop (called from widget and stream callbacks on the loop), for the data set
        shown now (``run``'s ``asked_on``; a load passes None)."""
        kwargs.setdefault("asked_on", self.studio.dataset.original)
        pn.state.execute(partial(self.run, label, action, *args, **kwargs))

    def follow(self, label: str, action: Callable, value, keep_alert: bool = False) -> None:
        """Run ``action(value)`` for the latest value of a stream (a dragged slider): while one runs, newer values
        replace each other, so the page keeps up with the mouse instead of replaying every step."""
        running = label in self._wanted
        self._wanted[label] = (action, value, self.studio.dataset.original)
        if not running:
            pn.state.execute(partial(self._follow, label, keep_alert))

    async def _follow(self, label: str, keep_alert: bool) -> None:
        try:
            while (wanted := self._wanted.get(label)) is not None:
                self._wanted[label] = None
                action, value, asked_on = wanted
                await self.run(label, action, value, quiet=True, keep_alert=keep_alert, redraw=True, asked_on=asked_on)
        finally:
            del self._wanted[label]

    async def run(self, label: str, action: Callable, *args, activity: Activity | None = None, quiet: bool = False,
                  keep_alert: bool = False, redraw: bool = False, asked_on: Dataset | None = None, **kwargs) -> bool:  # fmt: skip
        """Run ``action`` in a worker thread with progress shown (not when ``quiet``: a cheap relabel); on failure
        show why and keep the last state. ``keep_alert``: an action that is no answer to an earlier error (the
        mouse moving over a plot) leaves its message on screen. ``redraw``: the action only changes what views
        already on the page show (it builds none), so Bokeh's walk of the models is held (``document.walk_held``),
        and it runs at the page's priority, where loads and builds run behind (``priority.behind_the_page``) and
        wait at each progress report while another session's page opens (``PAGES_OPENING``). ``asked_on``:
        the data set the action was asked for (its ``original``: a stream's batch or an edit keeps it); if another
        was loaded while the action waited for the one before, it is dropped, and the page says so."""
        activity = activity or self.work
        async with activity.lock:
            if self.closed:  # queued behind work of a session that has ended since
                return False
            if asked_on is not None and asked_on is not self.studio.dataset.original:
                if not keep_alert:
                    self._say(f"**{label}** was not done: it was asked for on {asked_on.name}, "
                              "and another data set was loaded before it could run.", "info")  # no failure: a note
                self._show_values_in_use()
                return False
            if not keep_alert:
                self.alert.visible = False
            loop, document = asyncio.get_running_loop(), pn.state.curdoc
            activity.text, activity.fraction = f"**{label}…**", -1.0
            # shown only for work that lasts: on a short one it would only flash, and lay the page out twice
            shown = None if quiet else loop.call_later(BUSY_AFTER, activity.show)
            waits_left = WAITS_LONGEST_S  # for other sessions' pages opening, in all

            def report(phase: str, fraction: float) -> None:
                nonlocal waits_left
                # e.g. a reload during a large upload: its old page's work would hold the CPU for nobody. Not at a
                # phase's last report: work done is not thrown away at its very end
                if self.closed and fraction < 1:
                    raise SessionEnded
                # another visitor's page being made and drawn comes first, unless that page (or anyone) waits for
                # the index this work holds
                if not redraw and waits_left > 0:
                    waits_left -= PAGES_OPENING.wait(own=document, longest=waits_left, unless=index_wanted_elsewhere)
                loop.call_soon_threadsafe(self._show_progress, activity, phase, fraction)

            try:
                if "progress" in _parameters(action):
                    kwargs["progress"] = report
                with walk_held(pn.state.curdoc if redraw else None), self._worker_running():
                    # an answer to a gesture on the views at the page's priority; a load or a build behind it. With
                    # the session's context (Panel's current document), as asyncio.to_thread passes it
                    run = partial(contextvars.copy_context().run, action, *args, **kwargs)
                    await loop.run_in_executor(None if redraw else BUILDS, run)
                return True
            except SessionEnded:  # only its finished parts were cached: every cache keeps only finished results
                log.info("%s stopped: its browser had left", label)
                return False
            except Unchanged as exc:  # a lasso that missed, say: said as a note, and nothing changed
                self._say(str(exc), "info")
                return False
            except Exception as exc:  # any engine or data error: shown, and the session stays as it was
                log.info("%s failed: %s", label, exc, exc_info=not isinstance(exc, (ValueError, TypeError)))
                self._say(f"**{label} failed:** {exc}")
                self._show_values_in_use()
                return False
            finally:
                if shown is not None:
                    shown.cancel()
                activity.busy.visible = activity.progress.visible = False

    def _say(self, text: str, alert_type: str = "danger") -> None:
        """Show ``text`` in the alert at the top of the page: a failure ("danger"), or a note ("info")."""
        self.alert.param.update(object=text, alert_type=alert_type, visible=True)

    @contextmanager
    def _worker_running(self):
        """Counts the actions running in a worker thread: on a closed page, the last one to stop frees its state."""
        self._workers += 1
        try:
            yield
        finally:
            self._workers -= 1
            if self.closed and not self._workers:
                self.studio.close()  # left to it by ``close``

    def _show_values_in_use(self) -> None:
        """Put the widgets back to the values in use (a value typed or chosen was refused, or its action dropped)."""
        self._show_parameters()
        self._show_method()
        self._show_teaching()

    def _method_chosen(self, method: str) -> None:
        # DPC's step-through goes at the click: the worker's own hiding of it reaches the browser after the other
        # method's plots are drawn (seconds, the first time)
        self.player.pause()  # a step played meanwhile would show it again
        self.player.visible = self.step_note.visible = False
        if method != "dpc":
            self._pause_stream(method)
        self._method_wanted = method
        self._switches_queued += 1
        pn.state.execute(partial(self._switch_method, method))

    async def _switch_method(self, method: str) -> None:
        """A method clicked, shown once the work before it is done. A choice of the page, not of a data set's
        points: clicks during a load go to the data set loaded, in order."""
        try:
            await self.run(f"Switching to {method.upper()}", self.studio.set_method, method, asked_on=None)
        finally:
            self._switches_queued -= 1  # (here, on the event loop, where it was counted)
            if not self._switches_queued:
                self._show_method()  # the buttons back to the method shown, where the last switch failed

    def open_query(self, params: dict[str, list[str]]) -> None:
        """The page's URL parameters (``reproduce.query_document``): a sample and its parameters shown once loaded; a
        bad one is said in the alert and the page opens as usual."""
        if not params:
            return
        fallbacks, method = query_fallbacks(params), params.get("method", ["dpc"])[0]
        try:
            document = query_document(params)
        except ValueError as exc:
            if not fallbacks:
                self._say(f"**Opening the URL's parameters failed:** {exc}")
                return
            self._start("Opening the URL's parameters", self._open_url, None, fallbacks, method, str(exc), asked_on=None)
            return
        self._start("Opening the URL's parameters", self._open_url, document, fallbacks, method, asked_on=None)

    def _open_url(self, document: dict | None, fallbacks: list[dict], method: str, refused: str = "", progress=None) -> None:
        """A URL's session document (None: ``refused`` as it was read); where the data set refuses it too (a
        min_samples above its size, a column the sample lacks), the first of ``fallbacks`` it does not refuse, and
        the refusal raised for the page to say, with what it shows (of the data set and the ``method`` asked for).
        Not where the visitor has chosen a data set in the list before it could open: theirs stands."""
        if self._visitor_chose:
            return
        if document is not None:
            try:
                return self._apply_session(document, progress)
            except ValueError as exc:
                refused = str(exc)
        for fallback in fallbacks:
            try:
                self._apply_session(fallback, progress)
            except ValueError:
                continue
            kept = "data set and method" if fallback["method"] == method else "data set"
            raise ValueError(f"{refused}. The page shows the URL's {kept}, with their defaults.")
        raise ValueError(refused)

    def _session_chosen(self, *events) -> None:
        content, chosen = self.load_session.value, any(e.name == "filename" and e.new for e in events)
        if content is None and not chosen:  # forgotten, below
            return
        # forgotten here and in the browser, so that choosing the same file again loads it again
        self.load_session.value = None
        self.load_session.clear()
        # Panel reads an empty file as no value: it is no session file, and says so
        self._start("Loading the session", self._apply_session, content or b"", asked_on=None)

    def _apply_session(self, document: dict | bytes, progress=None) -> None:
        """A session document, or a saved session file's content."""
        if isinstance(document, bytes):
            document = read_session(document)
        apply_session(self.studio, document, self.cache, progress)
        self._show_dataset()

    def _point_at(self, where: tuple[str, float | None, float | None]) -> None:
        plot, x, y = where
        ranges = self.plots.view_ranges if plot == "view" else self.plots.graph_ranges
        self.studio.point_at(plot, x, y, ranges.x_range, ranges.y_range)

    def _view_clicked(self, x: float | None, y: float | None) -> None:
        if self.click_mode.value == "add" and x is not None and y is not None:
            self._start("Adding a point", self.studio.add_point, x, y, redraw=True)
        else:  # quiet and coalesced (follow): drawn at once, with no progress bar flashing
            if x is not None:
                self._add_teaching_layers()
            self.follow("Explaining", self._explain_at, (x, y))

    def _teach(self, label: str, action: Callable, on: bool) -> None:
        if on:
            self._add_teaching_layers()
        self._start(label, action, on, redraw=True)

    def _step(self, on: bool) -> None:
        if on:
            self._add_teaching_layers()
        self.follow("Stepping", self.teaching.go_to_step, 0 if on else None)

    def _add_teaching_layers(self) -> None:
        """The teaching view's layers join the 2-D view and the decision graph when first wanted: the Teach tab opened,
        a click that explains a point, a teaching choice. Until then every redraw (a relabel's, a stream batch's)
        updates four layers fewer, and the page opens with fewer models. Called on the event loop (a widget's or a
        stream's callback), before the action that draws on them. The plots are made again, at the zoom shown (their
        images set their ranges)."""
        if self.view_pane.object is not self._view:  # joined already
            return
        self.view_pane.object = tools_on_markers_only(self._view * self.teaching_plots.view_layers())
        self.graph_pane.object = tools_on_markers_only(self._graph * self.teaching_plots.graph_layer())
        if (doc := pn.state.curdoc) is not None:
            # the new plots join the document now, also while a redraw in flight (the pointer's, say) holds Bokeh's
            # walk (document.walk_held): until they join, their changes are not sent (no walk if none is held)
            doc.models.recompute()

    def _dpc_tab_opened(self, event) -> None:
        # the others hidden: Panel's tabs hide an inactive tab's body but keep its height (the tallest tab's blank
        # space under a short one); hidden, a tab's models stay in the document
        self.dpc_controls.visible = event.new == CLUSTERS_TAB
        for tab, deferred in self.dpc_tabs.items():
            deferred.show(tab == event.new)  # made the first time, then kept
        if event.new == TEACH_TAB:
            self._add_teaching_layers()

    def _view_lassoed(self, geometry) -> None:
        if self.lasso_mode.value == "select":
            self._start("Selecting", self.studio.select_in_view, geometry, redraw=True)
        elif geometry is not None and len(geometry) >= 3:  # fewer vertices: a click, which the click mode handles
            self._start("Deleting points", self.studio.delete_in_view, geometry, redraw=True)

    def _play(self, event) -> None:
        """Play the stream: a batch a second (a slower batch makes the next ones wait, not pile up)."""
        if event.new and self._playing is None:
            self._stream_paused = ""
            self._playing = pn.state.add_periodic_callback(self._play_batch, period=1000)
        elif not event.new and self._playing is not None:
            self._playing.stop()
            self._playing = None

    def _play_batch(self) -> None:
        if self.studio.method != "dpc":  # another method shown by a session file or a URL
            self._pause_stream(self.studio.method)
        elif self.streaming.remaining:
            self.follow("Streaming", self.streaming.next_batch, self.batch_size.value)
        else:
            self.stream_play.value = False

    def _stream(self, label: str, action: Callable, *args, **kwargs) -> None:
        """A stream's button: the stream taken on by hand, so a pause's words go."""
        self._stream_paused = ""
        self._start(label, action, *args, **kwargs)

    def _pause_stream(self, method: str) -> None:
        """Stop a stream playing, and say why beside its Play button (until Play): it plays into DPC's clustering
        only."""
        if self.stream_play.value:
            self._stream_paused = f"Paused: {method.upper()} was chosen, and the stream plays into DPC's clustering; Play goes on."
            self.stream_play.value = False
            self._show_stream()  # (a batch already on its way shows it again)

    def _show_stream(self, *events) -> None:
        streaming, on = self.streaming, self.streaming.streamed is not None
        self.stream_next.disabled = self.stream_play.disabled = not (on and streaming.remaining)
        self.stream_undo.disabled = not streaming.batches
        if not on:
            self.stream_play.value = False
            self._stream_paused = ""
        self.stream_note.object = (f"**{streaming.streamed:,}** points in, **{streaming.remaining:,}** to come" if on else "")
        if on and self._stream_paused:
            self.stream_note.object += f"  \n{self._stream_paused}"
        if on:  # before the section is first shown: its table is made with its rows (rows sent while BokehJS was
            # still building the table's view raised "Cannot read properties of null" in the page)
            _show_rows(self.stream_log, pd.DataFrame(
                [{"batch": row.number, "points in": row.added, "points": row.n_points, "clusters": row.clusters,
                  "ms": round(row.milliseconds, 1), "what changed": row.changes} for row in reversed(streaming.log)]))  # fmt: skip
        self.stream_section.show(on)

    def _explain_at(self, where: tuple[float | None, float | None]) -> None:
        (x, y), ranges = where, self.plots.view_ranges
        self.teaching.explain_at(x, y, ranges.x_range, ranges.y_range)

    def _pick_by_rank(self, n_centers: int | None) -> None:
        if n_centers is not None:
            self._start("Relabelling", self.session.pick_count, n_centers, redraw=True)

    def _go_to_dc(self, dc: float | None) -> None:
        if dc is not None and dc != self.session.dc:
            self._start("Changing dc", self.session.set_dc, dc, redraw=True)

    def _file_chosen(self, event) -> None:
        if event.new:  # {}: emptied, here or by removing the file in the widget
            filename, content = event.new.popitem()
            # forgotten at once, so the widget holds only the next file (also when it is this one again)
            self.upload.value = {}
            self.upload.css_classes = []
            self._start("Loading", self._load_upload, filename, content, asked_on=None)

    def _sample_chosen(self, event) -> None:
        shown = self._choice(self.studio.dataset)
        if event.new == (self._sample_wanted or shown):  # the list following what is shown, or the choice waiting
            return
        self._visitor_chose = True
        self._sample_wanted = None if event.new == shown else event.new  # (the one shown chosen back: none waits)
        if self._sample_wanted is not None:
            self._start("Loading", self._load_sample, event.new, asked_on=None)

    def _load_sample(self, choice: str, progress=None) -> None:
        """A sample by name, or the user's file again; not where a later choice waits behind it (the arrow keys
        through the list asked for every set on the way, and each was loaded)."""
        if choice != self._sample_wanted:
            return
        try:
            self._load(self.cache.sample(choice, progress=progress) if choice in sample_data.SAMPLES else self._your_file, progress)
        finally:
            if self._sample_wanted == choice:  # shown (or refused): no longer waiting
                self._sample_wanted = None

    def _load_upload(self, filename: str, content: bytes | str, progress=None) -> None:
        self._box_lists = Path(filename).name  # as FilePond names it (the server is given a folder dropped with it too)
        try:
            if isinstance(content, str):  # FileDropper decodes text files that are valid UTF-8
                content = content.encode()
            if not content:
                raise DataError(f"{filename} is empty")
            # read as the Standardize box says: so values too large for float32 distances can be loaded at all
            self._your_file = self.cache.upload(filename, content, self.settings.max_upload_bytes, progress, self.standardize.value)
            self._load(self._your_file, progress)
            self.upload.css_classes = []  # (a refused file sent just before it marked this one)
        except Exception:
            self.upload.css_classes = ["dp-refused"]  # the file's box said "Sent" beside the alert that refused it
            raise

    def _set_features(self, columns: list[str], standardize: bool, progress=None) -> None:
        """The shown data set with other feature columns or scaling (its own index, cached like any data set)."""
        dataset = self.cache.features(self.studio.dataset, columns, standardize, progress)
        if self.studio.dataset is self._your_file:
            self._your_file = dataset  # still the user's file, read another way
        self._load(dataset, progress)

    def _load(self, dataset: Dataset, progress=None) -> None:
        self.studio.load(dataset, progress=progress)

    # showing the state --------------------------------------------------------------------------------------
    def _show_progress(self, activity: Activity, phase: str, fraction: float) -> None:
        activity.report(f"**{PHASES.get(phase, phase)}… {100 * fraction:.0f}%**", fraction)

    def _show_dataset(self) -> None:
        dataset = self.studio.dataset
        points = dataset.points
        dropped = f", {counted(points.dropped_rows.size, 'row')} with NaN/inf left out" if points.dropped_rows.size else ""
        scaled = ", standardized" if dataset.standardized else ""
        notes = "".join(f"  \n⚠ {note[0].upper()}{note[1:]}." for note in points.notes)
        self.dataset_info.object = (f"**{dataset.name}**: {counted(dataset.n_points, 'point')} × "
                                    f"{counted(len(points.columns), 'feature')}{scaled}{dropped}{notes}")  # fmt: skip
        self.embed.disabled = len(points.columns) < 2  # the one feature is drawn against its input row already
        from_file = self._your_file is not None and dataset.original is self._your_file
        if self._box_lists is not None and not from_file:  # the file it lists is shown no longer
            self.upload_emptied.value, self._box_lists = _numbered(self.upload_emptied.value, self._box_lists), None
        your_file = [self._choice(self._your_file)] if self._your_file else []
        edited = [dataset.name] if dataset.base is not None else []
        # the list names the data set shown, or the one chosen that waits to be loaded (which the browser shows)
        shown = self._choice(dataset)
        self.sample.param.update(options=[*sample_data.SAMPLES, *your_file, *edited], value=self._sample_wanted or shown)
        if self._sample_wanted in (None, shown):
            self.sample_shown.value = _numbered(self.sample_shown.value, shown)
        self.save_session.filename = saved_name(self.studio)
        self.features.param.update(options=list(dataset.available), value=list(points.columns))
        self.standardize.value = dataset.standardized
        self._show_feature_choice()

    def _show_feature_choice(self, *events) -> None:
        """The button applies a choice that differs from what is shown."""
        dataset = self.studio.dataset
        chosen = (tuple(self.features.value), self.standardize.value)
        self.use_features.disabled = not self.features.value or chosen == (dataset.points.columns, dataset.standardized)

    def _choice(self, dataset: Dataset) -> str:
        """The data-set list's entry for a data set."""
        return YOUR_FILE.format(dataset.name) if dataset is self._your_file else dataset.name

    def _show_parameters(self, *events) -> None:
        session = self.session
        if not session.loaded:  # DPC is shown again once it is chosen
            return
        dc = session.dc
        if session.dataset is not self._slider_dataset or not self.dc.start <= dc <= self.dc.end:
            self.dc.param.update(start=dc / 20, end=dc * 4, step=dc / 100)  # around the rule's dc
            self._slider_dataset = session.dataset
        else:  # the box widens the browser's slider to a dc typed beyond it, refused or not: this range again
            self.dc.param.trigger("start", "end")
        self._dc_shown = dc
        self.dc.value = dc
        self.dc_percent.value = _percent_text(session.dc_percent)  # blank while dc is set directly: any percent typed applies
        self._asked.update(kernel=session.kernel, show_halo=session.show_halo, log_axes=session.log_axes)
        self.kernel.value, self.halo.value, self.log_axes.value = session.kernel, session.show_halo, session.log_axes

    def _show_centers(self, *events) -> None:
        """The count of the centers shown, when it changes: Pick top γ starts from there. A count typed meanwhile
        stays while the count does (a dc change, a stream's batches): Bokeh's box takes a value even while typed in."""
        count = len(self.session.centers) if self.session.loaded else None
        if count is not None and count != self._centers_counted:
            self._centers_counted = self.n_clusters.value = count

    def _cancel_choice(self, event) -> None:
        """The centers stay as they were, and so does the number-of-clusters box (it kept the count refused)."""
        self.session.cancel()
        self._centers_counted = None  # shown again although the count did not change
        self._show_centers()

    def _dc_moved(self, event) -> None:
        """A dc released on the slider or typed in its box; also a typed 0, refused like any dc <= 0: Panel's box
        sends no value_throttled for 0 (its own starts at 0, so the browser's 0 is no change), which left 0 shown
        and the old dc in use without a word. The dc the box shows, sent back, is no change: the box sends it when
        it refuses what was typed ("abc"), which set it directly and dropped the percent rule without a word. (Not
        the dc in use: while a dc asked for waits, the user may go back to the one in use.)"""
        if event.new is None:  # the box emptied: it showed "-NaN"; it shows the dc in use again
            self.dc.value = self.session.dc if self.session.loaded else event.old
        elif event.new != self._dc_shown and (event.name == "value_throttled" or event.new == 0):
            self._dc_shown = event.new
            self._start("Changing dc", self.session.set_dc, event.new, redraw=True)

    def _slider_widened(self, *events) -> None:
        """The slider's own range again, once no dc beyond it waits (a dc typed there and accepted moves the range
        around it when it is in use)."""
        dc = self.dc
        if dc.value is not None and dc.start <= dc.value <= dc.end and (dc._slider.start, dc._slider.end) != (dc.start, dc.end):
            dc.param.trigger("start", "end")

    def _chosen(self, name: str, label: str, action: Callable, event, **options) -> None:
        """The kernel or a view toggle chosen: applied unless it is the value in use, or asked for last. Compared
        with the value in use, a tick and an untick before the first was applied left the toggle on; not compared,
        two kernels clicked in quick succession were each set back in the buttons by the other's answer, and
        asked for again, without end."""
        if event.new != self._asked[name]:
            self._asked[name] = event.new
            self._start(label, action, event.new, **options)

    def _percent_typed(self, event) -> None:
        if event.new.strip() and event.new != _percent_text(self.session.dc_percent):
            self._start("Changing dc", self._set_percent, event.new, redraw=True)

    def _set_percent(self, text: str, progress=None) -> None:
        try:
            percent = float(text)
        except ValueError:
            raise ValueError(f"the percent must be a number, got {text!r}") from None
        if not 0 < percent < 100:  # said in the box's words (the engine's name its parameter, dc_percent)
            raise ValueError(f"the percent must be more than 0 and less than 100, got {text.strip()}")
        self.session.set_dc(dc_percent=percent, progress=progress)

    def _show_pointed(self, *events) -> None:
        """The facts of the point under the mouse; of the last one, after the mouse left it, as long as its data set
        is shown (they said another data set's, or another method's, point)."""
        studio = self.studio
        if studio.pointed is not None:
            self._last_pointed = (studio.dataset, studio.pointed)
        if self._last_pointed is None or self._last_pointed[0] is not studio.dataset:
            self._last_pointed = None
            self.pointed_note.object = POINT_AT
            return
        facts = studio.point_facts(self._last_pointed[1])
        parts = [f"**Row {facts['row']}**", "noise" if facts["label"] < 0 else f"cluster {facts['label']}"]
        if "rho" in facts:
            parent = "the densest point" if facts["parent"] is None else f"parent: row {facts['parent']}"
            parts += [f"ρ {short(facts['rho'])}", f"δ {short(facts['delta'])}", parent]
        if "core" in facts and facts["label"] >= 0:  # (noise is said already)
            parts.append("core point" if facts["core"] else "border point")
        self.pointed_note.object = " · ".join(parts)

    def _pin_dropped(self, event) -> None:
        """Say why the comparison went where its points changed: another data set, an edit, a stream's batch (the
        last two took it without a word)."""
        if event.old is not None and event.new is None and event.old.dataset is not self.studio.dataset:
            self._say(f"The pinned clustering ({event.old.name}) was unpinned: the points it labelled are no longer "
                      "the ones shown.", "info")  # fmt: skip

    def _show_selected(self, *events) -> None:
        """How many points the 2-D view's lasso holds and in which clusters, for every method (under DBSCAN it
        pointed at a decision graph the page did not show); under DPC they are drawn larger on the decision graph."""
        studio, selected = self.studio, self.studio.selected
        self.clear_selection.visible = selected is not None
        if selected is None:
            self.selected_note.object = ""
            return
        labels = studio.active.labels()[selected]  # the method's clusters, also while the points show the truth
        unlabelled = int((labels < 0).sum())
        where = counted(np.unique(labels[labels >= 0]).size, "cluster")
        if unlabelled:
            where += f" and {unlabelled:,} {'halo' if studio.method == 'dpc' else 'noise'}"
        shown = ": drawn larger on the decision graph" if studio.method == "dpc" else ""
        self.selected_note.object = f"**{counted(labels.size, 'point')} lassoed** in the 2-D view, in {where}{shown}"

    def _show_teaching(self, *events) -> None:
        teaching = self.teaching
        small = teaching.available
        self.forest.param.update(value=teaching.forest, disabled=not small)
        self.edges.param.update(value=teaching.edges, disabled=not small)
        self.circles.param.update(value=teaching.circles, disabled=not small)
        self.stepping.param.update(value=teaching.step is not None, disabled=not small)
        too_many = f"drawn for up to {TEACHING_MAX:,} points; a click explains a point at any size."
        self.teaching_size_note.object = "" if small else f"The arrows and the step-through are {too_many}"
        self.edges_size_note.object = "" if small else f"The edges and the circles are {too_many}"
        self.explained_note.object = teaching.describe()
        stepping = teaching.step is not None and self.studio.method == "dpc"
        if stepping:
            steps = teaching.steps()
            self.player.param.update(end=len(steps) - 1, value=teaching.step)
            self.step_note.object = f"Step {teaching.step + 1} of {len(steps)} · {steps[teaching.step].text}"
        self.player.visible = self.step_note.visible = stepping

    def _show_notice(self, *events) -> None:
        self.notice.object, self.notice.visible = self.session.notice, bool(self.session.notice)

    def _show_pending(self, *events) -> None:
        count = self.session.pending_centers
        self.pending_note.object = (f"**{count:,} centers selected.** That many is rarely meant (a lasso across the dense "
                                    "band?). Accept them, or cancel and keep the current centers.")  # fmt: skip
        self.pending.visible = count > 0

    def _show_method(self, *events) -> None:
        """What belongs to the method shown, the colouring, and the comparison with the pinned clustering."""
        studio = self.studio
        if not self._switches_queued:  # (while switches wait, the buttons show the last one clicked)
            self._method_wanted = self.method.value = studio.method
        self.colour_by.param.update(value=studio.colour_by, disabled=studio.dataset.truth is None)
        self.unpin.disabled = studio.pinned is None
        self.dpc_panel.visible = studio.method == "dpc"
        for name, controls in self.method_controls.items():
            controls.show(name == studio.method)
        for name, plots in self.method_plots.items():
            self.sensitivity[name].visible = name == studio.method
            plots.show(name == studio.method)
        self.eps_curves.show(studio.method == "dbscan")
        self.dbscan.show()
        self.hdbscan.show()
        self._show_comparison()

    def _show_comparison(self) -> None:
        studio = self.studio
        truth_ari = studio.truth_ari()
        self.truth_note.object = (no_truth(studio.dataset) if truth_ari is None else
                                  f"ARI of the {studio.active.title} clustering with the ground truth: **{truth_ari:.3f}**")  # fmt: skip
        comparison = studio.comparison()
        if comparison is not None:  # before the strip is first shown, as the stream's log
            ari, table = comparison
            self.comparison_note.object = (f"**Now:** {studio.active.describe()}  \n**Pinned:** {studio.pinned.name}  \n"
                                           f"**ARI: {ari:.3f}** (1: the same partition; about 0: unrelated). Points per "
                                           "pair of clusters, the largest of each:")  # fmt: skip
            _show_rows(self.contingency, table)
        self.comparison.show(comparison is not None)

    def _show_sweep(self, *events) -> None:
        frame = self.session.sweep_frame()
        self.sweep_curves.show(frame is not None)
        if frame is None:
            self.sweep_note.object = ""
            return
        runs = frame[frame["plateau"] >= 0].groupby("plateau")
        plateaus = [f"dc {short(rows['dc'].min(), 3)} to {short(rows['dc'].max(), 3)} ({counted(rows['clusters'].iloc[0], 'cluster')})" for _, rows in runs]
        self.sweep_note.object = (f"**Swept {len(frame)} dc values.** Plateaus (stable choices): "
                                  + ("; ".join(plateaus) if plateaus else "none"))  # fmt: skip

    def _show_clusters(self, *events) -> None:
        table = self.studio.active.cluster_table()
        self.table_note.object = (f"{len(table):,} clusters: the plots mark the first {MAX_MARKERS} (largest γ); "
                                  "the table and the downloads have them all.")  # fmt: skip
        self.table_note.visible = self.studio.method == "dpc" and len(table) > MAX_MARKERS
        self._align_floats(table)
        _show_rows(self.table, table)
        self._show_comparison()
        self._show_status()
        self.command.value = command_line(self.studio)
        # with the revision: a file's address ("") never changed, so a query typed for it stayed through every change
        self.address.value = f"{self.studio.revision} {page_query(self.studio)}"

    def _align_floats(self, table: pd.DataFrame) -> None:
        """Show each float column of ``table`` with one count of decimals (Gaussian ρ wrote 84.6 above 82.28, and
        Tabulator's own format 12,380,000.0 and 0.000012 for 1.238e-5), through the table's formatters: tiny values,
        and columns of many scales, in powers of ten to 4 significant figures (``column_decimals``)."""
        decimals = {name: column_decimals(table[name]) for name in table.columns if table[name].dtype.kind == "f"}
        if decimals != self._table_decimals:  # (Bokeh's formatters compare as objects: set only when they change)
            self._table_decimals = decimals
            self.table.formatters = {name: ScientificFormatter(precision=3) if k is None else
                                     NumberFormatter(format="0,0" + "." * bool(k) + "0" * k) for name, k in decimals.items()}  # fmt: skip

    def _show_status(self) -> None:
        rendered = {plot: seconds for plot, seconds in self.plots.render_seconds.items()
                    if plot != "decision graph" or self.studio.method == "dpc"}  # DPC's own plot: not under the others
        timings = {**self.studio.active.timings, **{f"render {plot}": seconds for plot, seconds in rendered.items()}}
        self.status.object = "\n".join(
            f"- {phase}: " + ("cached" if seconds == 0 and phase in PHASES else f"{1000 * seconds:.1f} ms")
            for phase, seconds in timings.items()
        )

    def _labels_file(self, kind: str) -> io.BytesIO:
        table = self.studio.active.labels_table()
        buffer = io.BytesIO()
        if kind == "csv":
            table.to_csv(buffer, index=False)
        else:
            table.to_parquet(buffer, index=False)
        buffer.seek(0)
        return buffer

    def _session_file(self) -> io.BytesIO:
        return io.BytesIO(session_json(self.studio).encode())

    def close(self) -> None:
        """The browser went away: drop this session's arrays (the shared data set stays in the cache), and let go
        of what keeps the page alive after its session: the plots' streams, and Panel's registry of JS callbacks
        (weakly keyed, but each callback refers back to its widget, like the dc slider's text box). Its work in
        progress stops at its next progress report, and work queued behind it does not start."""
        self.closed = True
        if self._playing is not None:
            self._playing.stop()
        if not self._workers:  # else the last one frees them when it stops: freed under it, it would fail
            self.studio.close()
        for plots in (self.plots, self.dbscan_plots, self.tree_plot, self.sweep_plot, self.gamma_plot, self.teaching_plots):
            plots.close()
        for widget in self.layout.select():
            Callback.registry.pop(widget, None)


class Deferred:
    """Views made and put in the page (``column``) the first time they are shown, and kept: hiding and showing
    again costs nothing. Visibility is the Column's: a plot pane's own cannot change from the worker thread that
    switches the method (Panel syncs it to Bokeh without the document lock)."""

    def __init__(self, make: Callable[[], list[pn.viewable.Viewable]]):
        self.column = pn.Column(sizing_mode="stretch_width", visible=False)
        self._make: Callable[[], list[pn.viewable.Viewable]] | None = make
        self._visible = False  # as last asked: each data set change asks every one again, and most stay as they are
        self._page_thread = threading.get_ident()  # the thread the page is made on: the server's event loop

    def show(self, visible: bool) -> None:
        if visible == self._visible:  # nothing to queue on the event loop (each costs the caller a wait for the GIL)
            return
        self._visible = visible
        make, self._make = (self._make, None) if visible else (None, self._make)
        made = threading.Event()
        # on the event loop, with the document locked: a worker thread (a method switch) building the plots
        # while the loop renders the page corrupts their Bokeh models
        pn.state.execute(partial(self._show, make, visible, made))
        if make is not None and threading.get_ident() != self._page_thread:
            _wait_for_the_loop(made, pn.state.curdoc.session_context if pn.state.curdoc is not None else None)

    def _show(self, make: Callable[[], list[pn.viewable.Viewable]] | None, visible: bool, made: threading.Event) -> None:
        try:
            if make is not None:
                self.column.objects = make()
            self.column.visible = visible
        finally:
            made.set()


def _wait_for_the_loop(done: threading.Event, context, timeout: float = LOOP_WAIT_S) -> None:
    """Wait in a worker thread until the event loop has made the views it was asked to (``done``). The worker's
    next change of state would redraw a plot still being made; HoloViews redraws a plot that has no document yet
    in the thread that changed the state, beside the loop making it (Panel's "unlocked decorator" error in the
    log, and once a page that failed to build). A session that has ended (``context``, Bokeh's session context)
    runs no more callbacks: its worker goes on, as it does, with a warning, after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not done.wait(0.25):
        if context is None or context.destroyed:
            return
        if time.monotonic() > deadline:
            log.warning("the event loop did not make a view within %g s; going on without waiting", timeout)
            return


def _show_rows(table: pn.widgets.Tabulator, rows: pd.DataFrame) -> None:
    """Show ``rows`` in a read-only table, unless it shows them already. Panel (1.9) takes the same rows set again
    for an edit made in the browser (Bokeh reports every set of a data source's data, and Panel expects no report
    for an equal value), and applies that "edit" after a delay: to a table of another length by then, a
    ``ValueError`` in the server's log (a URL or session file switching method sets the table several times)."""
    if table.value is None or not rows.equals(table.value):
        # a sort the browser asked for on a column these rows lack is dropped: Panel sorts the new rows by it first
        # (a KeyError: the clusters table sorted by delta, then DBSCAN chosen, whose table has none)
        if any(sorter.get("field") not in rows.columns for sorter in table.sorters):
            table.sorters = [sorter for sorter in table.sorters if sorter.get("field") in rows.columns]
        table.value = rows


def _side_by_side(*columns: pn.Column, basis: int) -> pn.Row:
    """``columns`` side by side where each gets ``basis`` px (or its own CSS flex), one above the other in a narrower
    window: CSS wrapping of Bokeh's own Row. (Panel's FlexBox wraps too, but it is HTML around its children: its
    plots were drawn with their axes and titles out of place after the page around them changed, as when a dc
    sweep's plots arrived.)"""
    for column in columns:
        # (CSS, not Bokeh's min_width: Bokeh adds its children's up into the page's, which then cannot wrap)
        column.styles = {"flex": f"1 1 {basis}px", "min-width": "300px", **column.styles}
    return pn.Row(*columns, sizing_mode="stretch_width", styles={"flex-wrap": "wrap"})


def _plot_pane(plot, name: str) -> pn.pane.HoloViews:
    return pn.pane.HoloViews(plot, sizing_mode="stretch_width", name=name, linked_axes=False)  # no shared dimensions


def _numbered(previous: str, text: str) -> str:
    """``"N text"``, N one more than ``previous``'s: a hidden widget's value that changes (and reaches the browser's
    callback) even where its text does not."""
    return f"{int(previous.partition(' ')[0] or 0) + 1} {text}"


def _percent_text(percent: float | None) -> str:
    return "" if percent is None else f"{percent:g}"


def _parameters(action: Callable) -> tuple[str, ...]:
    return tuple(inspect.signature(action).parameters)
