"""Reproducing a result in a real browser: a URL with parameters, copy as command, save and load a session."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import Page, expect

from dpstudio import sample_data

from .conftest import Server
from .test_app import ROWS, TIMEOUT_MS, data_set_info, open_app, plot_canvas, table_rows
from .test_views import drag_eps_left

pytestmark = pytest.mark.browser


def command_box(page: Page):
    return page.get_by_label("The same result from the command line")


def test_a_url_opens_a_sample_with_its_parameters_and_a_bad_one_says_why(page: Page, server):
    open_app(page, f"{server.url}/?sample=moons&method=dbscan&eps=0.15&min_samples=6")
    expect(data_set_info(page)).to_contain_text("moons", timeout=TIMEOUT_MS)
    moons = sample_data.path("moons")
    expect(command_box(page)).to_have_value(f"dpstudio cluster {moons} --method dbscan --eps 0.15 --min-samples 6 --out labels.csv",
                                            timeout=TIMEOUT_MS)  # fmt: skip
    # DBSCAN's views, made while the URL's session loaded, follow a drag of ε (once the slider shows the URL's ε:
    # a drag before would be undone by the value arriving late on a loaded machine)
    handle = page.locator(".noUi-handle:visible").first
    expect(handle).to_have_attribute("aria-valuenow", re.compile(r"^-0\.8"), timeout=TIMEOUT_MS)  # log10(0.15)
    page.wait_for_timeout(1000)
    view = plot_canvas(page, "Points by cluster")
    picture = view.screenshot()
    before, during = drag_eps_left(page)
    assert during > before
    expect(command_box(page)).not_to_have_value(re.compile("--eps 0.15 "), timeout=TIMEOUT_MS)
    page.wait_for_timeout(1000)
    assert view.screenshot() != picture, "the 2-D view was not recoloured"
    open_app(page, f"{server.url}/?dc=abc")
    expect(page.get_by_text("Opening the URL's parameters failed: dc must be a number, got 'abc'")).to_be_visible()
    open_app(page, f"{server.url}/?sample=moons&method=dbscan&eps=1e9")  # the slider's label wrote 1000000000
    expect(page.locator(".bk-slider-title", has_text="log scale")).to_have_text("ε (log scale: drag, the points follow): 1e9",
                                                                               timeout=TIMEOUT_MS)  # fmt: skip
    open_app(page, f"{server.url}/?sample=nested&theme=dark")  # Panel's theme: "unknown URL parameter 'theme'"
    expect(data_set_info(page)).to_contain_text("nested", timeout=TIMEOUT_MS)
    expect(page.get_by_text("Opening the URL's parameters failed")).to_have_count(0)


def test_a_link_opened_on_the_session_made_ahead_for_it_shows_the_links_state(page: Page, server):
    """The server makes the next visitor's session (its page and Bokeh models) before the visitor asks, and hands it
    to the next page request as it is: the link's query, which the session gets only then, is shown all the same."""
    open_app(page, server.url)  # (blobs read again, had earlier tests' data sets pushed it out of the cache)
    page.wait_for_timeout(5000)  # more than the server takes to make it once no browser has sent anything for 1 s
    open_app(page, f"{server.url}/?sample=moons&method=dbscan&eps=0.15&min_samples=6")
    moons = sample_data.path("moons")
    expect(command_box(page)).to_have_value(f"dpstudio cluster {moons} --method dbscan --eps 0.15 --min-samples 6 --out labels.csv",
                                            timeout=TIMEOUT_MS)  # fmt: skip
    expect(data_set_info(page)).to_contain_text("moons: 1,400 points")
    opened = [line for line in server.log.read_text().splitlines() if "session opened" in line]
    assert opened[-1].endswith("session opened; its page made ahead"), opened


def test_a_data_set_chosen_as_a_link_opens_is_the_one_the_list_names(page: Page, server):
    """Chosen as the link's data set was being shown, the list went on naming the link's (nested) beside the chosen
    one's clusters (moons) in 5 of 12 tries: the link's data set crossed the choice on its way to the browser."""
    for _ in range(3):
        page.goto(f"{server.url}/?sample=nested&method=dpc&dc=0.3&centers=488,2359,1271")
        page.wait_for_selector("canvas", timeout=TIMEOUT_MS)
        choice = page.get_by_label("Data set")
        choice.select_option("moons")
        page.wait_for_timeout(3000)
        shown = data_set_info(page).inner_text().split(":")[0]
        assert choice.input_value() == shown, (choice.input_value(), shown)


def pick_top_three(page: Page) -> None:
    """3 clusters by the largest γ (the box shows the rule's 5 at first)."""
    field = page.get_by_label("Number of clusters")
    field.fill("3")
    field.press("Enter")
    page.get_by_role("button", name="Pick top γ").click()
    expect(page.locator(ROWS)).to_have_count(3, timeout=TIMEOUT_MS)


def test_the_address_follows_the_page_so_that_a_reload_shows_it_again(page: Page, server):
    open_app(page, server.url)
    assert "?" not in page.url  # nothing changed yet: the address is as typed
    entries = page.evaluate("history.length")
    pick_top_three(page)
    expect(page).to_have_url(re.compile(r"/\?sample=blobs&method=dpc&dc_percent=2&centers=\d+,\d+,\d+$"), timeout=TIMEOUT_MS)
    assert page.evaluate("history.length") == entries  # replaced, not pushed: Back would change the address alone
    halo = page.locator("div.bk-Checkbox", has_text="Grey out the halo").locator("input")
    halo.check()
    expect(page).to_have_url(re.compile(r"&halo=1&centers=\d+,\d+,\d+$"), timeout=TIMEOUT_MS)
    page.reload()  # the view toggles too: halo points in grey, the box ticked, the table's halo column
    expect(halo).to_be_checked(timeout=TIMEOUT_MS)
    expect(page.locator(".tabulator-col-title", has_text="halo")).to_have_count(1, timeout=TIMEOUT_MS)
    expect(page.locator(ROWS)).to_have_count(3, timeout=TIMEOUT_MS)
    line = command_box(page).input_value()
    page.go_back()
    assert "sample=blobs" not in page.url
    page.go_forward()
    expect(page.locator(ROWS)).to_have_count(3, timeout=TIMEOUT_MS)
    expect(command_box(page)).to_have_value(line, timeout=TIMEOUT_MS)
    page.get_by_role("button", name="DBSCAN", exact=True).click()
    expect(page).to_have_url(re.compile(r"method=dbscan&eps=[0-9.e-]+&min_samples=5$"), timeout=TIMEOUT_MS)
    page.reload()
    expect(command_box(page)).to_have_value(re.compile("--method dbscan --eps "), timeout=TIMEOUT_MS)


def test_copy_as_command_puts_the_line_on_the_clipboard(page: Page, server):
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    open_app(page, server.url)
    pick_top_three(page)
    line = command_box(page).input_value()
    assert "--centers " in line and line.endswith("--out labels.csv"), line
    page.get_by_role("button", name="Copy as command").click()
    assert page.evaluate("navigator.clipboard.readText()") == line


def test_a_saved_session_loads_back_in_a_fresh_page(page: Page, server, tmp_path):
    open_app(page, server.url)
    pick_top_three(page)
    with page.expect_download(timeout=TIMEOUT_MS) as download:
        page.get_by_text("Save the session (JSON)").click()
    saved = tmp_path / download.value.suggested_filename
    download.value.save_as(saved)
    assert saved.name == "blobs-session.json" and json.loads(saved.read_text())["dpc"]["centers"]
    open_app(page, server.url)
    assert table_rows(page) == 5  # a fresh page: the automatic clusters
    page.locator("input[type=file][accept='.json']").set_input_files(saved)
    expect(page.locator(ROWS)).to_have_count(3, timeout=TIMEOUT_MS)
    (tmp_path / "broken.json").write_text('{"dpstudio_session": 1, "dataset": {}, "method": "kmeans"}')
    page.locator("input[type=file][accept='.json']").set_input_files(tmp_path / "broken.json")
    expect(page.get_by_text("Loading the session failed: method must be one of")).to_be_visible(timeout=TIMEOUT_MS)
    assert table_rows(page) == 3


def test_features_and_scaling_are_chosen_on_the_page(page: Page, server):
    open_app(page, f"{server.url}/?sample=blobs3d&features=x,y")
    expect(data_set_info(page)).to_contain_text("blobs3d: 1,500 points × 2 features", timeout=TIMEOUT_MS)
    use = page.get_by_role("button", name="Use these features")
    expect(use).to_be_disabled()
    page.locator("div.bk-Checkbox", has_text="Standardize each feature").locator("input").check()
    expect(use).to_be_enabled()
    use.click()
    expect(data_set_info(page)).to_contain_text("2 features, standardized", timeout=TIMEOUT_MS)
    expect(command_box(page)).to_have_value(re.compile(r"--columns=x,y --standardize "), timeout=TIMEOUT_MS)
    expect(use).to_be_disabled()


def test_the_address_of_a_served_file_follows_the_page_too(browser):
    """A file has no URL: its address was "" from the start, never changed, and a query typed for it stayed through
    every change (a reload then opened what the query said, not what was shown)."""
    running = Server(str(sample_data.path("moons")), "--backend", "cpu")
    try:
        page = browser.new_page()
        open_app(page, f"{running.url}/?method=dbscan")
        expect(command_box(page)).to_have_value(re.compile("--method dbscan "), timeout=TIMEOUT_MS)
        page.get_by_role("button", name="DPC", exact=True).click()
        expect(page).to_have_url(f"{running.url}/", timeout=TIMEOUT_MS)
    finally:
        running.close()
