"""The other views in a real browser: the method switch, DBSCAN's eps slider, k-distance plot and curves, HDBSCAN's
condensed tree, the dc sweep, ground-truth colours and the pinned comparison, and wrong input on each."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from dpstudio.app.plots import VIEW_COUNTS, VIEW_INSTRUCTION

from .test_app import ROWS, TIMEOUT_MS, data_set_info, dc_field, open_app, plot_canvas, type_into

pytestmark = pytest.mark.browser


def choose_method(page: Page, name: str) -> None:
    page.get_by_role("button", name=name, exact=True).click()


def counts(page: Page):
    return page.get_by_text(re.compile(r"clusters?, [\d,]+ noise points?"))


def noise_points(page: Page) -> int:
    return int(re.search(r"([\d,]+) noise points?", counts(page).inner_text()).group(1).replace(",", ""))


def noise_text(count: int) -> re.Pattern:
    """The counts line's noise number, whole: "2 noise points" is also the end of "1,912 noise points"."""
    return re.compile(rf"(?<![\d,]){count:,} noise points?")


def visible_canvas(page: Page, index: int):
    """The index-th plot canvas on screen, top to bottom then left to right (primary layers only)."""
    boxes = [(c, c.bounding_box()) for c in page.locator("canvas").all()]
    shown = sorted({(round(b["y"]), round(b["x"])) for _, b in boxes if b and b["width"] > 200})
    y, x = shown[index]
    return next(c for c, b in boxes if b and (round(b["y"]), round(b["x"])) == (y, x))


def click_at(page: Page, canvas, fx: float, fy: float) -> None:
    canvas.scroll_into_view_if_needed()  # a mouse click lands only inside the viewport
    box = canvas.bounding_box()
    page.mouse.click(box["x"] + fx * box["width"], box["y"] + fy * box["height"])


def switch_to_dbscan(page: Page) -> None:
    choose_method(page, "DBSCAN")
    expect(counts(page)).to_be_visible(timeout=TIMEOUT_MS)
    expect(page.get_by_role("columnheader", name="core")).to_be_visible(timeout=TIMEOUT_MS)
    page.wait_for_timeout(3000)  # the k-distance plot, the curves and the slider's new range arrive


def drag_eps_left(page: Page) -> tuple[int, int]:
    """Drag the ε slider's handle 40 px left (a smaller ε: more noise); the noise count before and while the
    button is still held (polled, as a loaded CI machine answers late)."""
    before = noise_points(page)
    handle = page.locator(".noUi-handle:visible").first
    box = handle.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    page.mouse.move(box["x"] - 40, box["y"] + box["height"] / 2, steps=10)
    expect(counts(page)).not_to_contain_text(noise_text(before), timeout=TIMEOUT_MS)
    during = noise_points(page)
    page.mouse.up()
    return before, during


def test_dragging_the_eps_slider_relabels_while_the_mouse_moves(page: Page, server):
    open_app(page, server.url)
    switch_to_dbscan(page)
    view = plot_canvas(page, "Points by cluster")
    picture = view.screenshot()
    before, during = drag_eps_left(page)
    assert during > before
    expect(page.get_by_text("relabel:")).to_be_visible()
    page.wait_for_timeout(1000)
    assert view.screenshot() != picture, "the 2-D view was not recoloured"


def test_typed_eps_and_wrong_values(page: Page, server):
    open_app(page, server.url)
    switch_to_dbscan(page)
    field = page.get_by_label("ε (type a value)")
    type_into(field, "3")
    expect(counts(page)).to_contain_text(noise_text(0), timeout=TIMEOUT_MS)
    expect(counts(page)).to_contain_text("1 cluster,")
    type_into(field, "-1")
    expect(page.get_by_text("eps must be a finite number > 0")).to_be_visible(timeout=TIMEOUT_MS)
    expect(counts(page)).to_contain_text("1 cluster,")  # the last good clustering stays
    expect(field).to_have_value("3", timeout=TIMEOUT_MS)
    type_into(field, "0.00003830")  # shown to six significant digits, whatever the data's units (not 4 decimals: "0")
    expect(counts(page)).to_contain_text("0 clusters", timeout=TIMEOUT_MS)
    field.blur()  # the box shows the value in its format once left
    expect(field).to_have_value("0.0000383")
    type_into(field, "")  # emptied: the eps in use again, not "NaN"
    field.blur()
    expect(field).to_have_value("0.0000383", timeout=TIMEOUT_MS)
    min_samples = page.get_by_label("min_samples (the point counted)")
    type_into(min_samples, "20")
    # built: the timings show the MST's time ("mst: cached" before). Without this wait the wrong values below were
    # typed a few milliseconds after 20, and the browser sent the server the last of them only (20 never arrived)
    expect(page.get_by_text(re.compile(r"mst: [\d.]+ ms"))).to_be_visible(timeout=TIMEOUT_MS)
    expect(min_samples).to_have_value("20")
    # refused with a message, and the box shows the value in use again (a number past 2**53 came as a float, which
    # the box, an IntInput, refused in a traceback, and then showed beside the value in use)
    for wrong in ("-3", "100000", "2.5", "99999999999999999999999"):
        type_into(min_samples, wrong)
        expect(page.locator(".alert", has_text="min_samples must be a whole number from 1")).to_be_visible(timeout=TIMEOUT_MS)
        expect(min_samples).to_have_value("20", timeout=TIMEOUT_MS)


def test_dbscans_controls_join_each_of_two_open_pages(page: Page, server):
    """DBSCAN's controls join a page when DBSCAN is first shown, and every session's are its own: a Bokeh model the
    sessions shared (the ε slider's formatter) could join only one session's page, and left the other's hidden."""
    other = page.context.new_page()
    open_app(other, server.url)
    open_app(page, server.url)
    expect(page.get_by_label("ε (type a value)")).to_have_count(0)  # not made before it is shown
    switch_to_dbscan(other)
    switch_to_dbscan(page)
    type_into(page.get_by_label("ε (type a value)"), "3")
    expect(counts(page)).to_contain_text("1 cluster,", timeout=TIMEOUT_MS)
    expect(counts(other)).not_to_contain_text("1 cluster,")
    other.close()


def test_a_click_on_the_k_distance_plot_or_the_curves_sets_eps(page: Page, server):
    open_app(page, server.url)
    switch_to_dbscan(page)
    before = noise_points(page)
    click_at(page, visible_canvas(page, 0), 0.5, 0.25)  # high on the k-distance plot (log scale): a large eps
    expect(counts(page)).not_to_contain_text(noise_text(before), timeout=TIMEOUT_MS)
    assert noise_points(page) < before
    large = noise_points(page)
    click_at(page, visible_canvas(page, 2), 0.3, 0.5)  # the clusters curve, left: a small eps
    expect(counts(page)).not_to_contain_text(noise_text(large), timeout=TIMEOUT_MS)
    assert noise_points(page) > large


def wait_for_title(page: Page, text: str, shown: bool = True) -> None:
    """Wait until a plot's title or instruction line ``text`` is shown (or hidden, or gone); titles are drawn on the
    canvas: read from Bokeh's models."""
    titles = "Bokeh.documents.flatMap(d => [...d._all_models.values()]).filter(m => m.type === 'Title' && m.visible)"
    page.wait_for_function(f"([text, shown]) => {titles}.some(m => m.text === text) === shown", arg=[text, shown], timeout=TIMEOUT_MS)


def test_switching_method_and_back_keeps_the_data_and_the_dpc_clustering(page: Page, server):
    open_app(page, server.url)
    assert page.locator(ROWS).count() == 5
    switch_to_dbscan(page)
    wait_for_title(page, "Points by cluster")
    wait_for_title(page, VIEW_INSTRUCTION, shown=False)  # its lasso shows points on DPC's decision graph alone
    wait_for_title(page, VIEW_COUNTS)  # a line of its own, so that the view sits as high as the plot beside it
    choose_method(page, "HDBSCAN")
    expect(page.get_by_text("chosen by the rule")).to_be_visible(timeout=TIMEOUT_MS)
    expect(page.get_by_role("columnheader", name="core")).to_be_hidden()
    choose_method(page, "DPC")
    expect(page.get_by_role("columnheader", name="rho")).to_be_visible(timeout=TIMEOUT_MS)
    assert page.locator(ROWS).count() == 5
    expect(page.get_by_text("blobs: 2,300 points")).to_be_visible()
    expect(page.get_by_text("Lasso (or box-select) points")).to_be_visible()  # DPC's controls are back
    wait_for_title(page, VIEW_INSTRUCTION)


def test_a_click_on_a_branch_of_the_condensed_tree_selects_it(page: Page, server):
    open_app(page, server.url)
    choose_method(page, "HDBSCAN")
    expect(page.get_by_text(re.compile(r"5 clusters, chosen by the rule \(\d+ noise points?\)"))).to_be_visible(timeout=TIMEOUT_MS)
    page.wait_for_timeout(1500)
    tree = visible_canvas(page, 0)
    click_at(page, tree, 0.3, 0.35)  # the widest selected box (blobs' largest cluster): deselect it
    expect(page.get_by_text("4 clusters, chosen by your clicks")).to_be_visible(timeout=TIMEOUT_MS)
    chosen = page.get_by_text(re.compile(r"\d+ clusters, chosen by your clicks")).inner_text()
    click_at(page, tree, 0.45, 0.85)  # under the second largest cluster's box: no box, and said so
    expect(page.get_by_text("No branch there, nothing changed")).to_be_visible(timeout=TIMEOUT_MS)
    expect(page.get_by_text(chosen)).to_be_visible()
    page.get_by_role("button", name="Back to the rule's selection").click()
    expect(page.get_by_text("5 clusters, chosen by the rule")).to_be_visible(timeout=TIMEOUT_MS)


def test_the_dc_sweep_curve_takes_you_to_a_dc(page: Page, server):
    open_app(page, server.url)
    dc = dc_field(page)
    rule_dc = dc.input_value()
    page.get_by_role("button", name=re.compile("Sweep dc")).click()
    expect(page.get_by_text("Swept 32 dc values")).to_be_visible(timeout=TIMEOUT_MS)
    page.wait_for_timeout(2000)
    curve = visible_canvas(page, 3)  # under the decision graph, the 2-D view and the gamma-rank plot
    click_at(page, curve, 0.1, 0.5)  # the small dc values, left
    expect(dc).not_to_have_value(rule_dc, timeout=TIMEOUT_MS)
    assert float(dc.input_value()) < float(rule_dc)
    expect(page.locator(ROWS).first).to_be_visible()


def plots_with_axes_out_of_place(page: Page) -> list[str]:
    """The titles of the shown plots that BokehJS laid out with an axis in an empty box: it drew that axis, and the
    title, somewhere else (over the plot's top edge)."""
    return page.evaluate("""() => [...Bokeh.index.all_views()]
        .filter(view => view.model.type === "Figure" && view.el.getBoundingClientRect().width > 0)
        .filter(view => [...view.renderer_views.values()].some(axis => axis.model.type.endsWith("Axis") && axis.model.visible
                                                                      && (axis.bbox.width === 0 || axis.bbox.height === 0)))
        .map(view => view.model.title.text)""")


def plots_with_cut_toolbars(page: Page) -> int:
    """How many shown plots have more tools than their toolbar's length holds: Bokeh ends it in a "..." menu."""
    return page.evaluate("""() => [...Bokeh.index.all_views()]
        .filter(view => view.model.type === "Toolbar" && view.el.getBoundingClientRect().height > 0)
        .filter(view => view.shadow_el.contains(view._overflow_el)).length""")


def plots_zoomed_by_the_wheel(page: Page) -> list[str]:
    """The titles of the shown short plots (SMALL_HEIGHT, across the page) whose wheel zoom is on without its button."""
    return page.evaluate("""() => [...Bokeh.index.all_views()]
        .filter(view => view.model.type === "Figure" && view.el.getBoundingClientRect().height > 0
                        && view.el.getBoundingClientRect().height < 300 && view.model.toolbar.active_scroll != null)
        .map(view => view.model.title.text)""")


def test_the_plots_keep_their_layout_when_the_page_changes_around_them(page: Page, server):
    """In Panel's FlexBox (HTML around its children), the decision graph, the γ plot and the 2-D view were drawn with
    their axes and titles out of place once a dc sweep's plots arrived below them, or DBSCAN's plots beside them.
    Every toolbar shows all its buttons (the short plots' ended in a "..." menu, reset in it)."""
    open_app(page, server.url)
    assert plots_with_axes_out_of_place(page) == [] and plots_with_cut_toolbars(page) == 0
    page.get_by_role("button", name=re.compile("Sweep dc")).click()
    expect(page.get_by_text("Swept 32 dc values")).to_be_visible(timeout=TIMEOUT_MS)
    page.wait_for_timeout(2000)
    assert plots_with_axes_out_of_place(page) == [] and plots_with_cut_toolbars(page) == 0
    # the wheel over the short plots scrolls the page: their wheel zoom was on in the browser (HoloViews turned it
    # on after the hook that turned it off)
    assert plots_zoomed_by_the_wheel(page) == []
    box = visible_canvas(page, 3).bounding_box()  # the first dc-sweep plot, under the top row
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    scrolled = page.evaluate("window.scrollY")
    page.mouse.wheel(0, 300)
    page.wait_for_timeout(500)
    assert page.evaluate("window.scrollY") > scrolled
    switch_to_dbscan(page)
    assert plots_with_axes_out_of_place(page) == [] and plots_with_cut_toolbars(page) == 0
    assert plots_zoomed_by_the_wheel(page) == []


def test_ground_truth_colours_and_the_pinned_comparison(page: Page, server):
    open_app(page, server.url)
    view = plot_canvas(page, "Points by cluster")
    expect(page.get_by_text("with the ground truth")).to_contain_text("1.000")
    picture = view.screenshot()
    page.get_by_role("button", name="ground truth").click()
    page.wait_for_timeout(2000)
    assert view.screenshot() != picture
    page.get_by_role("button", name="clusters", exact=True).click()
    heading = page.get_by_text("Comparison with the pinned clustering")
    expect(heading).to_be_hidden()  # it stood over nothing
    page.get_by_role("button", name="Pin this clustering to compare").click()
    expect(page.get_by_text("ARI: 1.000")).to_be_visible(timeout=TIMEOUT_MS)
    expect(heading).to_be_visible()
    switch_to_dbscan(page)
    expect(page.get_by_text(re.compile(r"Pinned: DPC dc="))).to_be_visible(timeout=TIMEOUT_MS)
    expect(page.get_by_text(re.compile(r"ARI: 0\.\d{3}"))).to_be_visible(timeout=TIMEOUT_MS)
    page.get_by_role("button", name="Unpin").click()
    expect(page.get_by_text("Pinned: DPC dc=")).to_be_hidden(timeout=TIMEOUT_MS)
    expect(heading).to_be_hidden()


def test_other_axes_a_lone_center_and_a_one_column_file_draw_without_warnings(page: Page, server, tmp_path):
    """BokehJS warned of missing fields at every draw while a layer's columns changed names with the axes (40 on
    opening a one-column file) and while the markers' colour went from a column to one value (27 after Clear). A
    one-column file is drawn against its input row, where it was drawn against a second component of zeros."""
    warnings = []
    page.on("console", lambda message: warnings.append(message.text) if "nonexistent field" in message.text else None)
    open_app(page, server.url)
    for x, y in (("PC1", "PC2"), ("x", "y")):
        page.get_by_label("2-D view: x").select_option(x)
        page.get_by_label("2-D view: y").select_option(y)
        page.wait_for_timeout(1500)
    page.get_by_role("button", name="Clear").click()
    expect(page.locator(ROWS)).to_have_count(1, timeout=TIMEOUT_MS)
    page.evaluate("window.scrollTo(0, 0)")  # the button low in the sidebar scrolled the page
    (tmp_path / "one.csv").write_text("t\n" + "\n".join(f"{v:g}" for v in [*range(40), *range(100, 140)]) + "\n")
    page.locator("input.filepond--browser").set_input_files(tmp_path / "one.csv")
    expect(data_set_info(page)).to_contain_text("one.csv: 80 points × 1 feature", timeout=TIMEOUT_MS)
    expect(page.get_by_label("2-D view: y")).to_have_value("input row")
    page.wait_for_timeout(2000)  # the redraws' warnings arrive
    assert not warnings, warnings[:3]
