"""The page's own logic without a browser: where an action runs and how it shows that it runs."""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import os
import re
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from types import SimpleNamespace

import holoviews as hv
import numpy as np
import pandas as pd
import panel as pn
import param
import pytest
from bokeh.document import Document

from dpstudio import sample_data
from dpstudio.app import page as page_module
from dpstudio.app import priority
from dpstudio.app.datasets import DatasetCache
from dpstudio.app.page import PageSettings, StudioPage
from dpstudio.app.reproduce import session_json
from dpstudio.engine import DensityPeaks

from .threads import in_a_thread


@pytest.fixture
def page(cache):
    """A new session's page on blobs, closed after the test."""
    pn.extension(notifications=False)  # as the server does
    page = StudioPage(cache, PageSettings(), cache.sample("blobs"))
    yield page
    page.close()


@pytest.fixture
def queued(monkeypatch) -> list:
    """The page's actions, queued where the server would run them (``pn.state.execute``), for ``run_queued``."""
    actions = []
    monkeypatch.setattr(pn.state, "execute", actions.append)
    return actions


def busy_while(page: StudioPage, seconds: float, report=None) -> tuple[bool, str]:
    """Run an action of ``seconds`` (reporting ``report`` = (phase, fraction) first, if given) on the page;
    whether its busy line was shown, and what it said, at the action's end."""
    seen = []

    def action(progress=None):
        if report is not None:
            progress(*report)
        time.sleep(seconds)
        seen.append((page.work.busy.visible and page.work.progress.visible, page.work.busy.object))

    assert in_a_thread(asyncio.run, page.run("Waiting", action))
    return seen[0]


def test_a_quick_action_shows_no_progress_and_a_long_one_shows_its_last_report(page, monkeypatch):
    monkeypatch.setattr(page_module, "BUSY_AFTER", 0.2)
    assert busy_while(page, 0.0)[0] is False  # a quick action: its result is the feedback, no busy line flashes
    assert busy_while(page, 0.6) == (True, "**Waiting…**")
    shown, text = busy_while(page, 0.6, report=("rho", 0.4))  # a report before the line is shown is what it says
    assert shown and text == "**Computing ρ… 40%**" and page.work.progress.value == 40
    assert not page.work.busy.visible and not page.work.progress.visible  # hidden again when the action is over


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a thread's own priority is Linux's")
def test_builds_run_behind_the_page_and_redraws_beside_it_with_the_sessions_context(page):
    """A load or a build runs at a lower priority than the thread that serves pages (so another session's page
    opens while it computes); an action that only redraws (a relabel, a dc) at the page's own. Both see the
    session's context (Panel's current document)."""
    own = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    if own + priority.BUILD_NICENESS > 19:
        pytest.skip("the tests already run at a priority too low to lower further")
    marker = contextvars.ContextVar("marker")
    marker.set("this session")
    seen = []

    def action():
        seen.append((os.getpriority(os.PRIO_PROCESS, threading.get_native_id()), marker.get(None)))

    assert in_a_thread(asyncio.run, page.run("Loading", action))
    assert in_a_thread(asyncio.run, page.run("Relabelling", action, redraw=True))
    assert seen == [(min(own + priority.BUILD_NICENESS, 19), "this session"), (own, "this session")]


def test_a_load_waits_at_its_progress_reports_while_another_sessions_page_opens(page):
    """Another visitor's page being made comes before this session's load: the load waits at its next progress
    report until that page has opened, and goes on at once after. A redraw (an answer to a gesture) never waits."""
    other_page = object()  # another session's document
    reported = threading.Event()

    def action(progress=None):
        progress("rho", 0.5)  # the page opening now holds it here
        reported.set()

    def run(redraw: bool) -> float:
        reported.clear()
        priority.PAGES_OPENING.opening(other_page)
        started = time.monotonic()
        threading.Timer(0.5, priority.PAGES_OPENING.opened, (other_page,)).start()
        assert in_a_thread(asyncio.run, page.run("Loading", action, redraw=redraw))
        assert reported.is_set()
        return time.monotonic() - started

    try:
        assert run(redraw=False) >= 0.5
        assert run(redraw=True) < 0.4
    finally:
        priority.PAGES_OPENING.opened(other_page)  # the timer's: nothing waits for it now


def test_a_load_waits_for_another_page_only_so_long_and_never_for_its_own_nor_holding_a_wanted_index(page, monkeypatch):
    """A session's page opening never holds back the session's own work; one action waits for other pages
    ``WAITS_LONGEST_S`` in all, however many reports it makes; and a load holding an index that another thread
    (a page being made on the event loop, say) waits for goes on at once instead of waiting with it."""
    own_document, other_page = Document(), object()
    indexed = page.studio.dataset.indexed

    def reports(progress=None):
        for fraction in (0.25, 0.5, 0.75):
            progress("rho", fraction)

    def holding_the_index(progress=None):
        with indexed._lock:  # as a computation on the shared index does
            waiter = threading.Thread(target=indexed.fields, args=("cutoff", 0.123))  # wants the same index
            waiter.start()
            progress("rho", 0.5)
        waiter.join(10)

    def seconds(action, document=None) -> float:
        def in_session():
            pn.state.curdoc = document
            started = time.monotonic()
            assert in_a_thread(asyncio.run, page.run("Loading", action))
            return time.monotonic() - started
        return contextvars.copy_context().run(in_session)

    monkeypatch.setattr(priority, "OPENING_LONGEST_S", 10.0)
    monkeypatch.setattr(page_module, "WAITS_LONGEST_S", 0.4)
    priority.PAGES_OPENING.opening(own_document)
    try:
        assert seconds(reports, own_document) < 0.3
        priority.PAGES_OPENING.opening(other_page)
        assert 0.35 <= seconds(reports) < 1.0  # not 3 x 0.4 s
        monkeypatch.setattr(page_module, "WAITS_LONGEST_S", 5.0)
        assert seconds(holding_the_index) < 2.0
    finally:
        priority.PAGES_OPENING.opened(own_document)
        priority.PAGES_OPENING.opened(other_page)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a thread's own priority is Linux's")
def test_a_sandbox_that_forbids_priorities_leaves_builds_beside_the_page(monkeypatch, caplog):
    """Where setting a thread's priority is refused, a build pool still runs its work (a pool whose initializer
    fails runs nothing) and the log says why."""

    def refuse(*args):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(priority.os, "setpriority", refuse)
    with caplog.at_level("INFO", logger="dpstudio"), ThreadPoolExecutor(1, initializer=priority.behind_the_page) as builds:
        assert builds.submit(lambda: "built").result() == "built"
    assert "builds run at the page's priority" in caplog.text


def test_a_view_shown_or_hidden_again_queues_nothing(monkeypatch):
    """A data set change asks every hidden-or-shown view again; only a change of visibility goes to the event loop
    (each queued callback costs the worker thread a wait for the GIL), and the views are made once, when first shown."""
    queued, made = [], []
    monkeypatch.setattr(pn.state, "execute", lambda callback: (queued.append(callback), callback()))
    view = page_module.Deferred(lambda: made.append(1) or [pn.pane.Markdown("made")])
    for visible in (False, True, True, False, False, True):
        view.show(visible)
    assert len(queued) == 3 and made == [1]
    assert view.column.visible and len(view.column.objects) == 1


def test_the_other_methods_controls_join_the_page_when_first_shown(cache, monkeypatch):
    """A page opens without DBSCAN's and HDBSCAN's controls (hidden: about twenty of its Bokeh models); each
    joins the sidebar when its method is first shown, in place of DPC's, and stays while another is shown. The
    timings list the decision graph's drawing only while DPC shows it (it stood under DBSCAN's timings)."""
    monkeypatch.setattr(pn.state, "execute", lambda callback: callback())  # on the event loop in the server
    pn.extension(notifications=False)  # as the server does
    page = StudioPage(cache, PageSettings(), cache.sample("blobs"))
    dbscan, hdbscan = page.method_controls["dbscan"].column, page.method_controls["hdbscan"].column
    assert not dbscan.objects and not hdbscan.objects and page.dpc_panel.visible
    page.plots.render_seconds.update({"decision graph": 0.01, "2-D view": 0.02})  # as the browser's first draws leave it
    page.studio.set_method("dbscan")
    assert dbscan.objects == [page.dbscan.panel] and dbscan.visible
    assert not page.dpc_panel.visible and not hdbscan.objects and not hdbscan.visible
    assert "render 2-D view" in page.status.object and "decision graph" not in page.status.object  # DPC's plot
    page.studio.set_method("dpc")
    assert page.dpc_panel.visible and not dbscan.visible and dbscan.objects == [page.dbscan.panel]
    assert "render decision graph" in page.status.object
    page.close()


def test_a_tiny_eps_typed_is_shown_in_its_box_and_typed_back_gives_the_usual_range(page, monkeypatch):
    """An eps of 1e-30 asked the box for arrows of 1e-31, under the smallest step Bokeh takes: its check failed in
    the server's log, and the box's update was lost. An eps typed back from there gives the slider and the curves
    their usual range again: they stayed thirty decades wide, the usual eps a sliver at the slider's end."""
    document = Document()
    document.add_root(page.layout.get_root(document))  # Bokeh's models, whose checks failed
    monkeypatch.setattr(pn.state, "execute", lambda callback: callback())
    page.studio.set_method("dbscan")
    state, usual = page.studio.dbscan, page.studio.dbscan.eps_view
    queued = []
    monkeypatch.setattr(pn.state, "execute", queued.append)
    page.dbscan.eps_typed.value = 1e-30
    run_queued(asyncio.new_event_loop(), queued)  # the relabel, as the server runs it
    assert page.dbscan.eps_typed.value == 1e-30 and page.dbscan.eps_typed.step == 1e-16
    assert state.eps_view[0] < 1e-30 and page.dbscan.eps.start < -30
    queued.clear()
    page.dbscan.eps_typed.value = 0.3
    run_queued(asyncio.new_event_loop(), queued)  # the relabel, as the server runs it
    assert state.eps == 0.3 and state.eps_view == usual


@pytest.mark.parametrize("gesture", ["teach tab", "explaining click", "forest"])
def test_the_teaching_layers_join_the_plots_when_first_wanted(cache, gesture, monkeypatch):
    """A page opens without the teaching view's layers (each would be updated at every redraw); the Teach tab, a click
    that explains a point or a teaching choice adds them to both plots, once. Adding a point by a click does not."""
    monkeypatch.setattr(StudioPage, "_start", lambda *args, **kwargs: None)  # the actions themselves are not at issue
    monkeypatch.setattr(StudioPage, "follow", lambda *args, **kwargs: None)
    pn.extension(notifications=False)  # as the server does
    page = StudioPage(cache, PageSettings(), cache.sample("blobs"))
    view, graph = page.view_pane.object, page.graph_pane.object
    page.click_mode.value = "add"
    page._view_clicked(1.0, 1.0)
    assert page.view_pane.object is view and page.graph_pane.object is graph
    {"teach tab": lambda: setattr(page.dpc_panel, "active", page_module.TEACH_TAB),
     "explaining click": lambda: (setattr(page.click_mode, "value", "explain"), page._view_clicked(1.0, 1.0)),
     "forest": lambda: setattr(page.forest, "value", True)}[gesture]()  # fmt: skip
    with_layers = page.view_pane.object, page.graph_pane.object
    assert with_layers[0] is not view and with_layers[1] is not graph
    page._add_teaching_layers()
    assert (page.view_pane.object, page.graph_pane.object) == with_layers  # once
    page.close()


def test_a_file_chosen_while_standardize_is_ticked_is_read_standardized(cache, rng):
    pn.extension(notifications=False)
    page = StudioPage(cache, PageSettings(), cache.sample("blobs"))
    content = b"a,b\n" + b"".join(f"{x * 1e30:.17g},{y:.17g}\n".encode() for x, y in rng.normal(size=(80, 2)))

    def load() -> bool:
        return in_a_thread(asyncio.run, page.run("Loading", page._load_upload, "huge.csv", content))

    assert not load()  # refused, with the advice
    assert "tick Standardize and load it again" in page.alert.object
    page.standardize.value = True
    assert load()
    assert page.studio.dataset.name == "huge.csv" and page.studio.dataset.standardized
    assert page.standardize.value  # the box shows how the data set shown was read
    assert "80 points × 2 features, standardized" in page.dataset_info.object and not page.embed.disabled
    assert in_a_thread(asyncio.run, page.run("Loading", page._load_upload, "one.csv", b"t\n" + b"\n".join(b"%d" % i for i in range(30))))
    assert "30 points × 1 feature, standardized" in page.dataset_info.object
    assert page.embed.disabled  # a t-SNE of one feature: it is drawn against its input row already


def run_queued(loop: asyncio.AbstractEventLoop, queued: list) -> list:
    """Run the page's queued actions on the session's event loop, in the order they were asked for (each waits for
    the one before, as in the server), in a thread of its own; what each returned."""

    async def all_of_them():
        actions = [callback() for callback in queued]  # a view shown or hidden is done at once
        return await asyncio.gather(*(action for action in actions if action is not None))

    return in_a_thread(loop.run_until_complete, all_of_them())


def test_the_dc_box_sent_back_unchanged_or_emptied_keeps_the_dc_and_its_percent_rule(page, queued):
    """Junk typed in the dc box ("abc") is refused by the browser, which sends back the dc it shows: no change, so
    the percent rule stays (it was dropped for that dc set directly, without a word). An emptied box shows the dc
    in use again (it showed "-NaN"). A new dc still goes."""
    dc = page.session.dc
    with param.edit_constant(page.dc):  # as the browser sets them
        page.dc.value_throttled = dc
        page.dc.value, page.dc.value_throttled = None, None
    assert queued == [] and page.dc.value == dc and page.session.dc_percent == 2.0
    with param.edit_constant(page.dc):  # a new dc, and back to the one in use before the first is done: both go
        page.dc.value_throttled = dc * 1.5
        page.dc.value_throttled = dc
    assert run_queued(asyncio.new_event_loop(), queued) == [True, True] and page.session.dc == dc


def test_a_percent_out_of_range_is_refused_in_the_boxs_words(page, queued):
    """The page said "dc_percent must be in (0, 100), got 200.0": the engine's parameter, not the box's words."""
    dc, loop = page.session.dc, asyncio.new_event_loop()
    for typed in ("200", "0", " nan"):
        page.dc_percent.value = typed
        assert run_queued(loop, queued) == [False] and page.session.dc == dc
        assert f"the percent must be more than 0 and less than 100, got {typed.strip()}" in page.alert.object
        queued.clear()


def test_the_sliders_range_widened_for_a_refused_dc_goes_back_when_it_comes_late(page, queued):
    """Panel's box widens the browser's slider to a dc typed beyond it, and that range reaches the server after the
    dc: where the refusal came first, the slider kept the range to 1e30 and its handle stayed at the far left (a
    browser test failed so in CI). A dc typed beyond the slider that waits to be used keeps the widened range."""
    dc, start, end = page.session.dc, page.dc.start, page.dc.end
    inner = page.dc._slider  # the range the browser's slider shows
    with param.edit_constant(page.dc):
        page.dc.value_throttled = page.dc.value = 1e30  # as the browser sends them
    assert run_queued(asyncio.new_event_loop(), queued) == [False]  # refused: "outside"
    assert (page.session.dc, page.dc.value) == (dc, dc)
    inner.end = 1e30  # the browser's widened range, late
    assert (inner.start, inner.end) == (start, end)
    queued.clear()
    with param.edit_constant(page.dc):  # a dc beyond the slider, waiting: its range stays until the dc is in use
        page.dc.value_throttled = page.dc.value = end * 2
    inner.end = end * 2
    assert inner.end == end * 2
    assert run_queued(asyncio.new_event_loop(), queued) == [True]
    assert page.session.dc == end * 2 and page.dc.start < end * 2 < page.dc.end and inner.end == page.dc.end


def test_a_view_toggle_ticked_and_unticked_before_it_is_applied_ends_as_the_box_shows(page, queued):
    """The untick was compared with the value in use, not the one asked for last: it asked for nothing, and the
    tick, applied after it, left the halo (or the log axes) on beside an unticked box."""
    loop = asyncio.new_event_loop()
    for box, name in ((page.halo, "show_halo"), (page.log_axes, "log_axes")):
        box.value = True
        box.value = False
        run_queued(loop, queued)
        queued.clear()
        assert (getattr(page.session, name), box.value) == (False, False)
        box.value = True
        run_queued(loop, queued)
        queued.clear()
        assert (getattr(page.session, name), box.value) == (True, True)
        box.value = True  # the value in use: nothing asked for
        assert queued == []


def test_the_sweep_says_its_plateaus(page):
    page.session.run_sweep()
    assert re.match(r"\*\*Swept 32 dc values\.\*\* Plateaus \(stable choices\): dc .* \(\d+ clusters?\)", page.sweep_note.object)


def test_two_kernels_clicked_in_quick_succession_end_on_the_second(page, queued):
    """Each kernel's answer set the buttons back to it, which asked for it again, and the page (and the server,
    after the browser had gone) went on flipping between the two without end (a tester saw 10 minutes of it)."""
    loop = asyncio.new_event_loop()
    page.kernel.value = "gaussian"
    page.kernel.value = "cutoff"  # before the first is applied
    for _ in range(3):  # the actions each round of answers asks for: none after the first round
        actions, queued[:] = list(queued), []
        run_queued(loop, actions)
    assert queued == [] and (page.session.kernel, page.kernel.value) == ("cutoff", "cutoff")


def test_a_number_of_clusters_out_of_range_or_emptied_is_refused_by_name(page, queued):
    """0 typed as the number of clusters was kept in the browser (the box had a bound) and Pick took the old 3."""
    loop = asyncio.new_event_loop()
    # 1e23 typed reached the server as a float, which the box (an IntInput) refused in a traceback
    for typed, shown in ((0, "0"), (2301, "2301"), (None, "nothing"), (2.5, "2.5"), (1e23, "1e+23")):
        page.n_clusters.value = typed
        page.pick.clicks += 1
        assert run_queued(loop, queued) == [False]
        assert f"from 1 to 2,300, got {shown}" in page.alert.object and not page.session.centers_picked
        queued.clear()
    page.n_clusters.value = 2
    page.pick.clicks += 1
    assert run_queued(loop, queued) == [True] and len(page.session.centers) == 2


def test_the_number_of_clusters_box_shows_how_many_centers_there_are(page):
    """It said 3 beside the rule's 5 clusters, so that Pick top γ went down to 3 from a count nobody had seen."""
    assert page.n_clusters.value == len(page.session.centers) == 5
    page.session.pick_count(2)
    assert page.n_clusters.value == 2
    page.session.clear()  # the densest point's one cluster
    assert page.n_clusters.value == len(page.session.centers) == 1
    page.n_clusters.value = 2300  # typed, then Pick top γ asks first, and the choice is cancelled: the box kept 2300
    page.session.pick_count(2300)
    assert page.session.pending_centers == 2300
    page.cancel.clicks += 1
    assert page.session.pending_centers == 0 and page.n_clusters.value == len(page.session.centers) == 1


def test_a_lasso_that_misses_is_said_as_a_note_and_a_failure_after_it_as_an_error(page, queued):
    """An empty lasso said "Relabelling failed: no points selected" in red, as if something had broken."""
    loop = asyncio.new_event_loop()
    centers = page.session.centers.copy()
    page.plots.lasso.event(geometry=np.array([(-10, -10), (-9, -10), (-9, -9)]))  # far from every point of the graph
    assert run_queued(loop, queued) == [False]
    assert page.alert.visible and page.alert.alert_type == "info"
    assert page.alert.object.startswith("Nothing selected: the lasso holds no point") and "failed" not in page.alert.object
    assert (page.session.centers == centers).all()
    queued.clear()
    page.n_clusters.value = 0
    page.pick.clicks += 1
    assert run_queued(loop, queued) == [False]
    assert page.alert.alert_type == "danger" and page.alert.object.startswith("**Relabelling failed:**")


def test_the_data_sets_line_warns_of_features_that_take_no_part_in_the_distances(cache, page, tmp_path):
    """Choosing a constant feature gave one cluster with no word of why."""
    assert "⚠" not in page.dataset_info.object
    pd.read_csv(sample_data.path("moons")).assign(batch=3).to_csv(tmp_path / "batched.csv", index=False)
    page.studio.load(cache.file(tmp_path / "batched.csv"))
    assert page.dataset_info.object.endswith("\n⚠ Feature 'batch' holds one value on every row: it takes no part in the distances.")
    page.studio.load(cache.features(page.studio.dataset, ["batch"], standardize=False))
    assert page.dataset_info.object.endswith("\n⚠ No feature varies: every point is the same.")
    assert len(page.studio.active.cluster_table()) == 1
    # a timestamp beside the features: said, and the file loads (the feature choice can leave it out)
    moons = pd.read_csv(sample_data.path("moons"))
    moons.assign(timestamp=1.7e9 + np.arange(len(moons))).to_csv(tmp_path / "stamped.csv", index=False)
    page.studio.load(cache.file(tmp_path / "stamped.csv"))
    assert "\n⚠ Feature 'timestamp' varies by 404 (its standard deviation) around values of 1.7e9, and float32" in page.dataset_info.object
    page.studio.load(cache.features(page.studio.dataset, ["x", "y"], standardize=False))
    assert "⚠" not in page.dataset_info.object


def test_the_clusters_table_formats_each_float_column_by_its_own_scale(cache, page, tmp_path):
    """Tabulator's own float format showed 12,380,000.0 for large deltas and 0.000012 for 1.238e-5."""
    formats = lambda: {name: (type(f).__name__, getattr(f, "format", None)) for name, f in page.table.formatters.items()}  # noqa: E731
    assert formats() == {"rho": ("NumberFormatter", "0,0"), "delta": ("NumberFormatter", "0,0.00")}  # counts; delta up to 14.7
    blobs = pd.read_csv(sample_data.path("blobs"))[["x", "y"]]
    for scale, delta in ((1e-6, ("ScientificFormatter", None)), (1e6, ("NumberFormatter", "0,0"))):
        (blobs * scale).to_csv(tmp_path / "scaled.csv", index=False)
        page.studio.load(cache.file(tmp_path / "scaled.csv"))
        assert formats() == {"rho": ("NumberFormatter", "0,0"), "delta": delta}


def test_a_sort_on_a_column_the_next_table_lacks_is_dropped(page):
    """The clusters table sorted by delta, then DBSCAN chosen: "Switching to DBSCAN failed: 'delta'" (Panel sorted the
    new rows by a column they lack), and the copied command stayed DPC's."""
    page.table.sorters = [{"field": "delta", "dir": "desc"}, {"field": "size", "dir": "asc"}]  # as the browser sets them
    page.studio.set_method("dbscan")
    assert list(page.table.value.columns) == ["cluster", "size", "core"] and "--method dbscan" in page.command.value
    assert page.table.sorters == [{"field": "size", "dir": "asc"}]
    assert page.table.current_view["size"].is_monotonic_increasing  # the sort kept still applies


def test_an_edited_samples_truth_note_says_where_the_truth_went(cache, page):
    """After a stream the colouring by ground truth was greyed out beside "No ground truth for this data set (the
    samples have one)", while the data set shown was a sample's."""
    assert page.truth_note.object.startswith("ARI of the DPC clustering with the ground truth")
    page.streaming.start(10)
    assert page.studio.dataset.name == "blobs (edited)" and page.colour_by.disabled
    assert page.truth_note.object == "No ground truth for the edited points: choose blobs again for its own."
    page.studio.load(cache.file(sample_data.path("moons")))  # a file, not the sample set
    assert page.truth_note.object == "No ground truth for this data set (the samples have one)."


def test_what_was_asked_for_on_a_data_set_is_dropped_when_another_loads_first(cache, page, queued):
    """A click on "Pick top γ" and a typed dc queued behind the load of another sample were done on the new
    sample; they are dropped, the page says why, and the widgets show the values in use. A stream's batches,
    which change the data set but not its source, all go in."""
    loop = asyncio.new_event_loop()
    page.sample.value = "nested"
    page.n_clusters.value = 3
    page.pick.clicks += 1
    with param.edit_constant(page.dc):  # as the browser sets it
        page.dc.value_throttled = 0.123
    assert len(queued) == 3
    assert run_queued(loop, queued) == [True, False, False]
    nested = cache.sample("nested")
    assert page.studio.dataset is nested and not page.session.centers_picked
    assert page.session.dc == DensityPeaks().fit(nested.indexed).dc_ and page.dc.value == page.session.dc
    assert "**Changing dc** was not done: it was asked for on blobs" in page.alert.object and page.alert.visible
    assert page.alert.alert_type == "info"  # a note, not a failure

    queued.clear()
    assert run_queued(loop, [partial(page.run, "Starting the stream", page.streaming.start, 50)]) == [True]
    queued.clear()
    page.batch_size.value = 10
    page.stream_next.clicks += 1
    page.stream_next.clicks += 1
    assert run_queued(loop, queued) == [True, True]
    assert page.streaming.streamed == nested.n_points // 2 + 20
    loop.close()


def test_a_data_set_chosen_while_a_link_opens_is_the_one_shown_and_named(cache, page, queued):
    """A link's data set shown while the visitor's choice waited set the list back to the link's: Panel took the
    choice's own value, sent next, for its echo and dropped it, and the list named nested beside moons' clusters (5
    of 12 tries in a browser). The list names the choice waiting; the choice stands over a link not yet opened."""
    loop = asyncio.new_event_loop()
    page.sample.value = "moons"  # chosen while the link's data set was loading
    page.studio.load(cache.sample("nested"))  # the link's, shown
    assert page.sample.value == "moons" and "nested" in page.dataset_info.object
    run_queued(loop, queued)
    assert page.studio.dataset is cache.sample("moons") and page.sample.value == "moons"
    for chosen_first in (True, False):  # on a new page, the link's parameters queued after the choice, or before it
        queued.clear()
        fresh = StudioPage(cache, PageSettings(), cache.sample("blobs"))
        if chosen_first:
            fresh.sample.value = "moons"
        fresh.open_query({"sample": ["nested"], "method": ["dbscan"]})
        if not chosen_first:
            fresh.sample.value = "moons"
        assert run_queued(loop, queued) == [True, True]
        assert fresh.studio.dataset is cache.sample("moons") and fresh.sample.value == "moons" and fresh.studio.method == "dpc"
        fresh.close()
    queued.clear()
    page.sample.value = "nested"
    page.sample.value = "moons"  # chosen back before nested loads: nothing to load
    assert run_queued(loop, queued) == [True]
    assert page.studio.dataset is cache.sample("moons") and page.sample.value == "moons"
    page.sample.value = "nested"  # and the list follows what is shown as before
    run_queued(loop, queued[1:])
    assert page.studio.dataset is cache.sample("nested") and page.sample.value == "nested"
    loop.close()


def test_method_clicks_during_a_load_end_on_the_last_one_clicked_on_the_new_data_set(cache, page, queued):
    """Clicks on DBSCAN, HDBSCAN and DPC queued behind a load were dropped as asked for on the old data set, and the
    page ended on a method clicked before the last one, with a red message; a click back to DPC, the method shown
    while the others waited, was not queued at all."""
    loop = asyncio.new_event_loop()
    page.sample.value = "nested"
    for method in ("dbscan", "hdbscan", "dbscan", "dpc"):
        page.method.value = method
    assert len(run_until_idle(loop, queued)) == 5  # a load and four switches, and nothing more (two clicks once
    # queued a switch at every refresh of the buttons, for ever)
    assert page.studio.dataset is cache.sample("nested") and page.studio.method == page.method.value == "dpc"
    assert not page.alert.visible
    page.sample.value = "moons"
    page.method.value = "hdbscan"
    assert len(run_until_idle(loop, queued)) == 2 and page.studio.method == page.method.value == "hdbscan"
    assert page.studio.labels().shape == (cache.sample("moons").n_points,)
    page.method.value = "dbscan"
    page.method.value = "dpc"
    assert len(run_until_idle(loop, queued)) == 2 and page.studio.method == page.method.value == "dpc"
    loop.close()


def run_until_idle(loop: asyncio.AbstractEventLoop, queued: list, rounds: int = 10) -> list:
    """``run_queued`` again for what the actions queue in turn, until nothing more is queued; what each returned."""
    done = []
    for _ in range(rounds):
        if not queued:
            return done
        batch = list(queued)
        queued.clear()
        done += run_queued(loop, batch)
    raise AssertionError(f"the actions still queued more after {rounds} rounds: {queued}")


def test_a_paused_streams_note_stays_through_a_batch_already_on_its_way(page, monkeypatch):
    """The pause's words were added to the note, which the next batch's log wrote afresh: a batch in flight when
    DBSCAN was chosen wiped them."""
    monkeypatch.setattr(pn.state, "add_periodic_callback", lambda callback, period: SimpleNamespace(stop=lambda: None))  # no loop
    page.streaming.start(10)
    page.stream_play.value = True
    monkeypatch.setattr(pn.state, "execute", lambda callback: None)  # the switch itself queued behind the batch
    page._method_chosen("dbscan")  # as the click does
    paused = "Paused: DBSCAN was chosen, and the stream plays into DPC's clustering; Play goes on."
    assert not page.stream_play.value and page.stream_note.object.endswith(paused)
    page.streaming.next_batch(50)  # the batch that was on its way
    assert page.stream_note.object.startswith("**280** points in") and page.stream_note.object.endswith(paused)
    page.stream_play.value = True  # Play: said no more
    page.streaming.next_batch(50)
    assert paused not in page.stream_note.object
    for button in (page.stream_next, page.stream_undo, page.stream_start):  # nor after a stream's button
        page.stream_play.value = True
        page._method_chosen("hdbscan")
        assert page.stream_note.object.endswith(paused.replace("DBSCAN", "HDBSCAN"))
        button.clicks += 1
        page.streaming.next_batch(10)  # (the button's action itself is queued here)
        assert "Paused" not in page.stream_note.object


def test_the_pointed_points_facts_follow_a_relabel_and_go_with_their_data_set(cache, page):
    """The facts of the last point pointed at stay after the mouse left it, but said another data set's point after
    a load, and the old cluster after a relabel or a method switch."""
    studio = page.studio
    with param.edit_constant(studio):
        studio.pointed = 7
        studio.pointed = None  # the mouse left it
    label = studio.labels()[7]
    assert label != 0  # so that the relabel below changes what the note says
    assert page.pointed_note.object.startswith(f"**Row {studio.dataset.points.rows[7]}**")
    assert f"cluster {label}" in page.pointed_note.object
    studio.dpc.clear()  # one cluster
    assert "cluster 0" in page.pointed_note.object
    studio.set_method("dbscan")
    assert f"cluster {studio.labels()[7]}" in page.pointed_note.object or "noise" in page.pointed_note.object
    studio.load(cache.sample("moons"))
    assert page.pointed_note.object == page_module.POINT_AT


def test_a_session_file_chosen_again_or_empty_is_read(page, queued, monkeypatch):
    """The same session file chosen again was not loaded again (the browser kept it, so it sent no change), and an
    empty one, which Panel reads as no value, was ignored without a word."""
    loop, cleared = asyncio.new_event_loop(), []
    monkeypatch.setattr(page.load_session, "clear", lambda: cleared.append(True))
    saved = session_json(page.studio).encode()
    for _ in range(2):
        page.load_session.param.update(value=saved, filename="blobs-session.json")
        assert page.load_session.value is None and cleared  # forgotten, here and in the browser
        assert run_queued(loop, queued) == [True]
        queued.clear()
    page.load_session.param.update(value=None, filename="empty.json")
    assert run_queued(loop, queued) == [False]
    assert "the file is empty: not a dpstudio session file" in page.alert.object
    loop.close()


def points_csv(rng, n: int = 20_000) -> bytes:
    return b"a,b\n" + b"".join(f"{x:.17g},{y:.17g}\n".encode() for x, y in rng.normal(size=(n, 2)))


def left_at(page: StudioPage, leaving_phase: str, progress, phases: list):
    """``progress`` as work sees it whose browser leaves (its page closes) at its first report of ``leaving_phase``;
    each report's phase is added to ``phases``."""

    def report(phase, fraction):
        phases.append(phase)
        if phase == leaving_phase:
            page.close()
        progress(phase, fraction)

    return report


def test_a_closed_pages_work_stops_at_its_next_report_and_its_queued_work_never_starts(rng, caplog):
    """A reload during a large upload left the old page's work running (reading, indexing and clustering a file
    nobody waits for), beside the new page's build on the same cores. Once the page closes, the work stops at its
    next progress report, every cache is left as before (each keeps only finished results), and what was queued
    behind it does not start."""
    pn.extension(notifications=False)
    cache = DatasetCache(max_datasets=2, backend="cpu")
    page = StudioPage(cache, PageSettings(), cache.sample("blobs"))
    phases, queued_ran = [], []

    def upload_left_while_indexed(progress):
        page._load_upload("mine.csv", points_csv(rng), progress=left_at(page, "index", progress, phases))

    async def upload_then_more():
        return await asyncio.gather(page.run("Loading", upload_left_while_indexed),
                                    page.run("Relabelling", lambda: queued_ran.append(True)))

    caplog.set_level(logging.INFO, logger="dpstudio")
    assert in_a_thread(asyncio.run, upload_then_more()) == [False, False]
    assert phases == ["read", "index"]  # stopped at the report during which the page closed: no rho, no delta
    assert len(cache) == 1 and page.studio.dataset.name == "blobs"  # the upload was not cached
    assert not queued_ran
    assert "Loading stopped: its browser had left" in caplog.text


def test_a_closed_pages_session_file_stops_without_rolling_back_and_keeps_its_finished_phases(rng, caplog):
    """A session file stopped part way is not put back as it was (a refused one is, by more work) once its page has
    closed; a phase that had finished (its last report) stays cached, and the index's lock is free."""
    pn.extension(notifications=False)
    cache = DatasetCache(max_datasets=2, backend="cpu")
    mine = cache.upload("mine.csv", points_csv(rng), max_bytes=2**30)
    page = StudioPage(cache, PageSettings(), mine)
    document = json.loads(session_json(page.studio))
    document["method"] = "hdbscan"
    document["dpc"].update(dc=None, dc_percent=5.0)
    document["hdbscan"] = {"min_cluster_size": 15, "selection": "eom", "min_samples": 15, "clusters": None}
    fields_before, phases = set(mine.indexed._fields), []

    # below 65,536 points delta reports once, at its end: DPC at 5% has finished when the page closes
    def applied_and_left_once_dpc_is_done(progress):
        page._apply_session(json.dumps(document).encode(), progress=left_at(page, "delta", progress, phases))

    caplog.set_level(logging.INFO, logger="dpstudio")
    assert not in_a_thread(asyncio.run, page.run("Loading the session", applied_and_left_once_dpc_is_done))
    assert phases[-1] not in ("rho", "delta")  # stopped in HDBSCAN's phases
    assert page.session.dc_percent == 5.0  # not put back to 2% (close leaves the parameters as they are)
    assert not any(state.loaded for state in page.studio.states.values())  # freed once the work had stopped
    assert len(set(mine.indexed._fields) - fields_before) == 1  # DPC at 5% had finished: kept
    assert mine.indexed._lock.acquire(blocking=False)
    mine.indexed._lock.release()
    assert "Loading the session stopped: its browser had left" in caplog.text


def test_rows_a_table_shows_already_are_not_sent_again():
    """Panel (1.9) takes a table's rows set again for an edit made in the browser, and applies that "edit" later,
    by then perhaps to rows of another length (a ValueError in the server's log after a URL switched method)."""
    from bokeh.document import Document

    table = pn.widgets.Tabulator(show_index=False, disabled=True, pagination="remote", page_size=20)
    page_module._show_rows(table, pd.DataFrame({"cluster": [0, 1], "size": [5, 7]}))
    document = Document()
    document.add_root(table.get_root(document))
    changes = []
    document.on_change(changes.append)
    page_module._show_rows(table, pd.DataFrame({"cluster": [0, 1], "size": [5, 7]}))  # equal rows: nothing sent
    assert changes == []
    page_module._show_rows(table, pd.DataFrame({"cluster": [0, 1, 2], "size": [5, 7, 1]}))
    assert changes and list(table.value["size"]) == [5, 7, 1]


def test_a_closed_pages_plots_no_longer_follow_its_states(cache, monkeypatch):
    """An action still running for a session that has ended changes its states: their plots must not redraw (HoloViews
    redraws a plot whose document is gone in the action's thread, beside the event loop building other pages)."""
    monkeypatch.setattr(pn.state, "execute", lambda callback: callback())  # on the event loop in the server
    pn.extension(notifications=False)
    page = StudioPage(cache, PageSettings(), cache.sample("blobs"))
    for method in ("dbscan", "hdbscan", "dpc"):  # every method's plots made
        page.studio.set_method(method)
    triggered = []
    monkeypatch.setattr(hv.streams.Stream, "trigger", classmethod(lambda cls, streams: triggered.extend(streams)))

    def change_every_state():
        page.studio.dbscan.set_min_samples(7)
        page.studio.hdbscan.set_parameters(min_cluster_size=20)
        page.studio.set_method("dpc")
        page.studio.dpc.pick_count(3)

    change_every_state()
    assert triggered  # the plots follow the open page's states
    page.close()
    triggered.clear()
    change_every_state()
    assert triggered == []


def test_a_worker_that_first_shows_a_methods_plots_waits_for_the_loop_to_make_them(cache, monkeypatch):
    """The event loop makes the plots; the worker thread that switched the method goes on only once they are made,
    so that its next change of state is redrawn on the loop, not in the worker beside the loop making the plot."""
    loop_queue = []
    monkeypatch.setattr(pn.state, "execute", loop_queue.append)
    pn.extension(notifications=False)
    page = StudioPage(cache, PageSettings(), cache.sample("blobs"))
    column = page.method_plots["hdbscan"].column
    worker = threading.Thread(target=page.studio.set_method, args=("hdbscan",))
    # no session here that could end: wait as long as the test allows
    monkeypatch.setattr(page_module, "_wait_for_the_loop", lambda done, context: done.wait(30))
    worker.start()
    deadline = time.monotonic() + 30
    while not loop_queue and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.3)
    assert worker.is_alive() and not column.objects  # waiting for the loop
    while worker.is_alive() and time.monotonic() < deadline:  # the loop runs what the worker queues (controls, plots)
        if loop_queue:
            loop_queue.pop(0)()
        else:
            time.sleep(0.01)
    assert not worker.is_alive() and column.objects and column.visible
    page.close()


class EndingSession:
    """Bokeh's session context as far as the wait reads it: ended after ``seconds``."""

    def __init__(self, seconds: float):
        self.ends = time.monotonic() + seconds

    @property
    def destroyed(self) -> bool:
        return time.monotonic() > self.ends


def test_a_worker_stops_waiting_for_the_loop_when_its_session_ends_or_after_a_while(caplog):
    """An ended session runs no more callbacks, and a lost callback would hold a worker (and its session's
    actions) for good: the worker goes on."""
    started = time.monotonic()
    page_module._wait_for_the_loop(threading.Event(), EndingSession(0.5))
    assert time.monotonic() - started < 5
    started = time.monotonic()
    page_module._wait_for_the_loop(threading.Event(), EndingSession(60), timeout=0.5)
    assert time.monotonic() - started < 5 and "did not make a view within 0.5 s" in caplog.text
    done = threading.Event()
    threading.Timer(0.3, done.set).start()
    started = time.monotonic()
    page_module._wait_for_the_loop(done, EndingSession(60))  # made: no later than the loop made it
    assert time.monotonic() - started < 5


def test_dpcs_step_through_goes_at_the_click_on_another_method(page, queued):
    """Hidden by the switch itself, the step's words stayed on screen under DBSCAN until its first plots were drawn
    (about 3 s); a switch that is refused brings them back."""
    page.teaching.go_to_step(0)
    assert page.step_note.visible and page.player.visible
    page.method.value = "dbscan"
    assert len(queued) == 1 and not page.step_note.visible and not page.player.visible  # the switch, queued
    page._show_values_in_use()  # the switch refused: DPC is still shown
    assert page.step_note.visible and page.player.visible


@pytest.mark.parametrize(("query", "refused"), [
    ({"sample": ["moons"], "method": ["dbscan"], "eps": ["-1"]}, "eps must be a finite positive number, got -1.0. The page"),  # in the URL
    ({"sample": ["moons"], "method": ["hdbscan"], "min_cluster_size": ["5000"]}, "min_cluster_size"),  # by the data set
    # a column the sample lacks, refused by the data set: the first fallback holds it too (blobs was shown, under DPC)
    ({"sample": ["moons"], "features": ["a,b"], "method": ["dbscan"], "eps": ["0.1"]}, "no numeric column named 'a'"),
])  # fmt: skip
def test_a_urls_refused_value_leaves_its_data_set_and_method_shown(cache, page, queued, query, refused):
    """A refused eps opened the page on DPC: the method the URL asked for was lost with it."""
    page.open_query(query)
    assert run_queued(asyncio.new_event_loop(), queued) in ([True], [False])
    method = query["method"][0]
    assert page.studio.dataset is cache.sample("moons") and page.studio.method == method and page.method.value == method
    assert page.alert.visible and refused in page.alert.object
    assert page.alert.object.endswith(". The page shows the URL's data set and method, with their defaults.")


def test_a_lasso_in_the_2d_view_says_which_clusters_it_holds_under_every_method(page):
    """Under DBSCAN the note pointed at a decision graph the page did not show."""
    x, y = page.studio.plot_coordinates("view")
    square = [(x.min() - 1, y.min() - 1), (x.max() + 1, y.min() - 1), (x.max() + 1, y.max() + 1), (x.min() - 1, y.max() + 1)]
    page.studio.select_in_view(square)  # every point
    assert page.selected_note.object == "**2,300 points lassoed** in the 2-D view, in 5 clusters: drawn larger on the decision graph"
    page.studio.set_method("dbscan")
    noise = int((page.studio.labels() < 0).sum())
    clusters = int(page.studio.labels().max()) + 1
    assert noise and page.selected_note.object == f"**2,300 points lassoed** in the 2-D view, in {clusters} clusters and {noise:,} noise"


def test_a_pin_dropped_by_an_edit_says_so_and_one_unpinned_does_not(page):
    page.studio.pin()
    page.studio.unpin()
    assert not page.alert.visible
    page.studio.pin()
    page.studio.add_point(0.0, 0.0)
    assert page.studio.pinned is None and page.alert.visible and page.alert.alert_type == "info"
    assert page.alert.object.startswith("The pinned clustering (DPC dc=") and "no longer the ones shown" in page.alert.object


def test_arrowing_through_the_data_sets_loads_only_the_last(cache, page, queued, monkeypatch):
    loaded = []
    sample = cache.sample
    monkeypatch.setattr(cache, "sample", lambda name, progress=None: loaded.append(name) or sample(name, progress))
    for name in ("moons", "nested", "noisy"):  # the arrow keys through the list: a change at each
        page.sample.value = name
    assert len(queued) == 3
    assert run_queued(asyncio.new_event_loop(), queued) == [True, True, True]
    assert loaded == ["noisy"] and page.studio.dataset.name == "noisy" and page.sample.value == "noisy"


def test_a_lasso_note_names_the_methods_clusters_while_the_points_show_the_truth(page):
    x, y = page.studio.plot_coordinates("view")
    page.studio.select_in_view([(x.min() - 1, y.min() - 1), (x.max() + 1, y.min() - 1), (x.max() + 1, y.max() + 1)])
    clusters = page.selected_note.object
    page.studio.set_colour_by("truth")  # blobs' truth has background noise, which DPC's 5 clusters do not
    assert page.selected_note.object == clusters and "noise" not in clusters


def test_a_good_file_sent_right_after_a_refused_one_is_not_marked_refused(page, queued, tmp_path):
    page.upload.value = {"bad.csv": b"a,b\n1,2\n3,oops\n"}
    page.upload.value = {"good.csv": "".join(f"{i % 7},{i % 5}\n" for i in range(40)).encode()}
    run_queued(asyncio.new_event_loop(), queued)
    assert page.studio.dataset.name == "good.csv" and page.upload.css_classes == []
