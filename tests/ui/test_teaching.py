"""The teaching view in a real browser: a click explains a point (circle, rings, arrows, the same point ringed on
the decision graph; DBSCAN's core, border or noise and its tree's edges), the parent forest, the
step-through with its buttons, points added by a click and deleted by a lasso, and a stream played in batches;
wrong clicks on the way."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from dpstudio.app.plot_frame import TITLE_SIZE

from .conftest import requests_elsewhere
from .test_app import TIMEOUT_MS, dc_field, lasso, open_app, plot_canvas, type_into
from .test_views import choose_method, click_at, switch_to_dbscan

pytestmark = pytest.mark.browser


def checkbox(page: Page, label: str):
    return page.locator("div.bk-Checkbox", has_text=label).locator("input")


def blobs_info(page: Page):
    """The line that names the blobs data set (edited or not) and its number of points."""
    return page.get_by_text(re.compile(r"blobs.*: [\d,]+ points"))


def points_shown(info) -> int:
    """The number of points ``blobs_info`` shows."""
    return int(re.search(r"([\d,]+) points", info.inner_text()).group(1).replace(",", ""))


def open_tab(page: Page, name: str) -> None:
    """DPC's sidebar tabs (Clusters, Teach, Edit & stream) make their widgets when first opened."""
    page.locator(".bk-tab", has_text=name).click()


def choose_mode(page: Page, name: str) -> None:
    """A mode button pressed, and shown pressed before the plot is touched (an add-mode click once added no point in
    CI; the guess: the button's click was lost while the freshly opened tab was laid out)."""
    button = page.get_by_role("button", name=name)
    button.click()
    expect(button).to_have_class(re.compile(r"\bbk-active\b"), timeout=TIMEOUT_MS)


def assert_redrawn(page: Page, canvas, before: bytes, what: str) -> None:
    """The canvas's picture changes from ``before`` within the timeout (polled: a loaded machine draws late)."""
    for _ in range(TIMEOUT_MS // 250):
        if canvas.screenshot() != before:
            return
        page.wait_for_timeout(250)
    raise AssertionError(what)


def explained(page: Page):
    return page.get_by_text(re.compile(r"Row \d+ · ρ = "))


def test_a_click_explains_a_point_and_a_click_on_nothing_clears_it(page: Page, server):
    open_app(page, server.url)
    warnings = []
    page.on("console", lambda message: "nonexistent field" in message.text and warnings.append(message.text))
    view, graph = plot_canvas(page, "Points by cluster"), plot_canvas(page, "Decision graph")
    view_before, graph_before = view.screenshot(), graph.screenshot()
    top = view.bounding_box()["y"]
    click_at(page, view, 0.45, 0.5)
    expect(explained(page)).to_contain_text("nearest denser point", timeout=TIMEOUT_MS)
    expect(explained(page)).to_contain_text("(ringed)")
    assert view.bounding_box()["y"] == top  # the explanation, above the plots, moved them down under the mouse
    # the plots, made again with the teaching layers, kept their titles' size (they fell to Bokeh's 13px)
    assert set(page.evaluate("""() => [...Bokeh.index.all_views()].filter(v => v.model.type === "Figure")
        .map(v => v.model.title.text_font_size)""")) == {TITLE_SIZE}
    assert_redrawn(page, view, view_before, "no circle, rings or arrows drawn")
    assert_redrawn(page, graph, graph_before, "the point is not ringed on the decision graph")
    # the layers' glyphs never read a column their data lacks (BokehJS warned at each draw: 146 for this click)
    assert warnings == [], warnings[:3]
    click_at(page, view, 0.15, 0.16)  # the top left corner of the frame (under the titles): no point there
    expect(explained(page)).to_have_count(0, timeout=TIMEOUT_MS)
    # DBSCAN explains the same click in its own terms, and draws its tree's edges
    switch_to_dbscan(page)
    view = plot_canvas(page, "Points by cluster")
    click_at(page, view, 0.45, 0.5)
    dbscan_explained = page.get_by_text(re.compile(r"Row \d+ · (a core point|a border point|noise)"))
    expect(dbscan_explained).to_contain_text("within ε", timeout=TIMEOUT_MS)
    page.wait_for_timeout(1000)
    before = view.screenshot()
    checkbox(page, "edges within ε").check()
    assert_redrawn(page, view, before, "the tree's edges were not drawn")
    page.wait_for_timeout(1000)
    before = view.screenshot()
    checkbox(page, "ε circle of every core point").check()
    assert_redrawn(page, view, before, "the core points' circles were not drawn")
    choose_method(page, "DPC")  # back: DPC's words for the same point
    expect(explained(page)).to_be_visible(timeout=TIMEOUT_MS)
    assert warnings == [], warnings[:3]  # nor DBSCAN's edges and circles


def test_the_forest_and_the_step_through(page: Page, server):
    open_app(page, server.url)
    page.get_by_role("button", name="Pick top γ").click()  # DPC's own centers
    open_tab(page, "Teach")  # the teaching layers join the plots: both are made again
    page.wait_for_timeout(2500)
    view = plot_canvas(page, "Points by cluster")
    before = view.screenshot()
    checkbox(page, "parent forest").check()
    assert_redrawn(page, view, before, "the forest was not drawn")
    checkbox(page, "parent forest").uncheck()
    checkbox(page, "Step through").check()
    step = page.get_by_text(re.compile(r"Step \d+ of \d+ ·"))
    expect(step).to_contain_text("Step 1 of", timeout=TIMEOUT_MS)
    expect(step).to_contain_text("ρ")
    page.locator("button.next").click()
    expect(step).to_contain_text("Step 2 of", timeout=TIMEOUT_MS)
    expect(step).to_contain_text("δ")
    page.wait_for_timeout(1000)
    linking = view.screenshot()
    page.locator("button.last").click()
    expect(step).to_contain_text("Halo", timeout=TIMEOUT_MS)
    assert_redrawn(page, view, linking, "the step-through's picture did not change")
    page.locator("button.previous").click()
    expect(step).to_contain_text("Labels", timeout=TIMEOUT_MS)
    # played, the Teach tab left and opened again, paused: one step a tick, and Pause stops it (the player's view was
    # made again with the tab, and the old one's timer played on: two steps a tick, past Pause)
    page.locator("button.first").click()
    expect(step).to_contain_text("Step 1 of", timeout=TIMEOUT_MS)
    page.locator("button.play").click()
    expect(step).to_contain_text("Step 2 of", timeout=TIMEOUT_MS)
    open_tab(page, "Clusters")
    open_tab(page, "Teach")
    page.wait_for_timeout(1500)
    page.locator("button.pause").click()
    page.wait_for_timeout(2000)  # the last step asked for is drawn
    paused = step.inner_text()
    page.wait_for_timeout(3000)  # two and a half ticks
    assert step.inner_text() == paused
    checkbox(page, "Step through").uncheck()
    expect(step).to_be_hidden(timeout=TIMEOUT_MS)


def test_a_click_adds_a_point_and_a_lasso_deletes_points(page: Page, server):
    open_app(page, server.url)
    info = blobs_info(page)
    expect(info).to_contain_text("2,300 points", timeout=TIMEOUT_MS)
    open_tab(page, "Edit & stream")
    choose_mode(page, "Click adds a point")
    view = plot_canvas(page, "Points by cluster")
    click_at(page, view, 0.15, 0.16)  # where there was no point
    expect(info).to_contain_text("blobs (edited): 2,301 points", timeout=TIMEOUT_MS)
    choose_mode(page, "Lasso deletes")
    view.scroll_into_view_if_needed()  # the mode's button is lower down the sidebar: the drag must land on the plot
    lasso(page, view, [(0.4, 0.4), (0.6, 0.4), (0.6, 0.6), (0.4, 0.6)])
    expect(info).not_to_contain_text("2,301 points", timeout=TIMEOUT_MS)
    assert points_shown(info) < 2301
    # a lasso in the frame's empty top right corner holds no point: said, and nothing changes (the bottom corner
    # sat on the x axis's labels in some layouts, where a drag starts no lasso)
    left = points_shown(info)
    page.wait_for_timeout(1000)  # the first one's redraw (its points are gone): a drag during it may be lost
    lasso(page, view, [(0.8, 0.16), (0.88, 0.16), (0.88, 0.24), (0.8, 0.24)])
    expect(page.get_by_text("Nothing deleted: the lasso holds no point")).to_be_visible(timeout=TIMEOUT_MS)
    assert points_shown(info) == left
    # Undo takes the delete back, then the added point, and is disabled when nothing is left to take back
    undo = page.get_by_role("button", name="Undo the last edit")
    undo.click()
    expect(info).to_contain_text("blobs (edited): 2,301 points", timeout=TIMEOUT_MS)
    undo.click()
    expect(info).to_contain_text("blobs: 2,300 points", timeout=TIMEOUT_MS)
    expect(undo).to_be_disabled(timeout=TIMEOUT_MS)
    click_at(page, view, 0.15, 0.16)  # (the click mode is still "adds a point")
    expect(info).to_contain_text("blobs (edited): 2,301 points", timeout=TIMEOUT_MS)
    # choosing the data set again gives it back as it was
    page.locator("select").first.select_option("blobs")
    expect(info).to_contain_text("blobs: 2,300 points", timeout=TIMEOUT_MS)


def test_three_stream_batches_the_log_and_taking_the_last_out(page: Page, server):
    open_app(page, server.url)
    info = blobs_info(page)
    open_tab(page, "Edit & stream")
    start_with = page.get_by_label("Start with (% of the points)")
    type_into(start_with, "100")  # the box put a value out of its bounds back without a word
    page.get_by_role("button", name="Start a stream").click()
    expect(page.locator(".alert", has_text="between 0 and 100, got 100")).to_be_visible(timeout=TIMEOUT_MS)
    type_into(start_with, "10")
    page.get_by_role("button", name="Start a stream").click()
    expect(info).to_contain_text("blobs (edited): 230 points", timeout=TIMEOUT_MS)
    note = page.get_by_text(re.compile(r"points in, [\d,]+ to come"))
    expect(note).to_contain_text("230 points in, 2,070 to come")
    for k in range(1, 4):
        page.get_by_role("button", name="Next batch").click()
        expect(info).to_contain_text(f"{230 + 100 * k:,} points", timeout=TIMEOUT_MS)
    log = page.locator(".tabulator-row").filter(has_text=re.compile(r"points? moved"))
    expect(log).to_have_count(3, timeout=TIMEOUT_MS)  # batch 0 is the first fit
    page.get_by_role("button", name="Take the last batch out").click()
    expect(info).to_contain_text("430 points", timeout=TIMEOUT_MS)
    expect(page.locator(".tabulator-row").filter(has_text="batch 3 taken out")).to_have_count(1, timeout=TIMEOUT_MS)
    open_tab(page, "Clusters")  # a dc mid-stream: said in the log, as the clusters change with it
    type_into(dc_field(page), "0.7")
    expect(page.locator(".tabulator-row").filter(has_text="dc set to 0.7")).to_have_count(1, timeout=TIMEOUT_MS)
    open_tab(page, "Edit & stream")
    page.get_by_role("button", name="▶ Play").click()
    expect(info).not_to_contain_text("430 points", timeout=TIMEOUT_MS)  # batches go in by themselves
    page.get_by_role("button", name="▶ Play").click()  # and stop
    page.wait_for_timeout(2500)
    paused = info.inner_text()
    page.wait_for_timeout(2500)
    assert info.inner_text() == paused


def play_a_stream(page: Page, url: str):
    """The blobs page opened, a stream started on its first 230 points and played; ``blobs_info``."""
    open_app(page, url)
    info = blobs_info(page)
    open_tab(page, "Edit & stream")
    page.get_by_role("button", name="Start a stream").click()
    expect(info).to_contain_text("blobs (edited): 230 points", timeout=TIMEOUT_MS)
    page.get_by_role("button", name="▶ Play").click()
    return info


def test_a_stream_played_behind_another_tab_asks_only_the_app_server(page: Page, server):
    """Each batch updates the stream's note in the Edit & stream tab; with that tab left, Panel's dynamic tabs had
    dropped the note's model from the document, and Panel restyled it with the CDN's stylesheets, rewriting the ones
    every component shares: the browser asked cdn.holoviz.org for loading.css and markdown.css at every batch
    (failed offline, an error in the console each)."""
    elsewhere = requests_elsewhere(page)
    info = play_a_stream(page, server.url)

    def batches_in(tab: str, batches: int) -> None:
        open_tab(page, tab)
        start = points_shown(info)
        for _ in range(TIMEOUT_MS // 250):
            if points_shown(info) >= start + 100 * batches:
                return
            page.wait_for_timeout(250)
        raise AssertionError(f"the stream did not play on with the {tab} tab open")

    batches_in("Clusters", 2)  # with the tab left
    batches_in("Teach", 1)
    open_tab(page, "Edit & stream")
    page.get_by_role("button", name="▶ Play").click()  # stop
    expect(page.get_by_text(re.compile(r"points in, [\d,]+ to come"))).to_be_visible()
    assert not elsewhere, f"requests to other hosts than the app's server: {sorted(set(elsewhere))}"


def test_a_stream_playing_when_another_method_is_chosen_pauses_and_says_so(page: Page, server):
    """The stream plays into DPC's clustering: choosing DBSCAN stopped it, and back on DPC the Play button was up
    again with no word of why."""
    info = play_a_stream(page, server.url)
    expect(info).not_to_contain_text("230 points", timeout=TIMEOUT_MS)  # a batch went in
    page.get_by_role("button", name="DBSCAN", exact=True).click()
    expect(page.get_by_text("ε (type a value)")).to_be_visible(timeout=TIMEOUT_MS)  # DBSCAN's controls shown
    page.wait_for_timeout(1500)  # more than a batch's period
    paused = points_shown(info)
    page.wait_for_timeout(2500)
    assert points_shown(info) == paused  # no batch went in on DBSCAN's page
    page.get_by_role("button", name="DPC", exact=True).click()
    open_tab(page, "Edit & stream")
    expect(page.get_by_text("Paused: DBSCAN was chosen, and the stream plays into DPC's clustering")).to_be_visible(timeout=TIMEOUT_MS)
    page.wait_for_timeout(2500)
    assert points_shown(info) == paused  # and it stays paused until Play
    page.get_by_role("button", name="▶ Play").click()
    expect(info).not_to_contain_text(f"{paused:,} points", timeout=TIMEOUT_MS)
    page.get_by_role("button", name="▶ Play").click()  # stop


def test_the_sidebar_tabs_are_as_tall_as_the_open_one(page: Page, server):
    """Panel's tabs keep a hidden tab's body in place, invisible: with every opened tab kept, the short Teach tab
    showed the Clusters tab's height of blank space under it, and the rest of the sidebar moved down."""
    open_app(page, server.url)
    below = page.get_by_text("Colour points by")  # the first control under the tabs
    top = lambda: below.bounding_box()["y"]  # noqa: E731
    with_clusters = top()
    open_tab(page, "Edit & stream")
    page.wait_for_timeout(1000)
    open_tab(page, "Teach")
    page.wait_for_timeout(1000)
    with_teach = top()
    open_tab(page, "Clusters")
    page.wait_for_timeout(1000)
    assert with_teach < with_clusters - 100 and top() == with_clusters


def test_no_legend_box_over_the_2d_view_with_the_teaching_layers(page: Page, server):
    """The 2-D view's image was labelled with the method (for its instruction line): once the Teach tab's layers
    joined the view, that label made a legend box reading "dpc" over its top right corner."""
    legends = """() => [...Bokeh.documents[0].all_models].filter(m => m.type === "Legend" && m.visible && m.items.length > 0).length"""
    open_app(page, server.url)
    assert page.evaluate(legends) == 0
    open_tab(page, "Teach")
    page.wait_for_timeout(2000)  # the plots are made again with the teaching layers
    assert page.evaluate(legends) == 0
