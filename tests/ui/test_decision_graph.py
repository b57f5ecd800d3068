"""The decision graph's other ways to choose centers, in a real browser: the paper's rectangle (a click), the
γ-rank plot (a click at rank K) and log axes."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest
from playwright.sync_api import Page, expect

from .test_app import ROWS, TIMEOUT_MS, lasso, open_app, plot_canvas
from .test_views import click_at

pytestmark = pytest.mark.browser
SHOTS = os.environ.get("DPSTUDIO_SHOTS")  # a folder to save screenshots in, for looking at the page


def shot(page: Page, name: str) -> None:
    if SHOTS:
        page.screenshot(path=f"{SHOTS}/{name}.png", full_page=True)


def gamma_canvas(page: Page):
    """The γ-rank plot's canvas: below the decision graph, in the same column."""
    graph = plot_canvas(page, "Decision graph").bounding_box()
    boxes = [(c, c.bounding_box()) for c in page.locator("canvas").all()]
    below = [(c, b) for c, b in boxes if b and b["width"] > 200 and abs(b["x"] - graph["x"]) < 5 and b["y"] > graph["y"] + graph["height"]]
    return min(below, key=lambda cb: cb[1]["y"])[0]


def test_a_click_on_the_decision_graph_or_the_gamma_ranks_chooses_centers(page: Page, server):
    open_app(page, server.url)
    expect(page.locator(ROWS)).to_have_count(5)
    click_at(page, plot_canvas(page, "Decision graph"), 0.12, 0.25)  # low rho, large delta (under the titles): the top peaks
    expect(page.locator(ROWS)).not_to_have_count(5, timeout=TIMEOUT_MS)
    page.wait_for_timeout(1500)
    shot(page, "rectangle")
    gamma = gamma_canvas(page)
    field, chosen = page.get_by_label("Number of clusters"), str(page.locator(ROWS).count())
    expect(field).to_have_value(chosen)  # the box says how many clusters there are
    click_at(page, gamma, 0.2, 0.5)  # a few ranks in, left of the flat tail
    expect(field).not_to_have_value(chosen, timeout=TIMEOUT_MS)
    clusters = int(field.input_value())
    assert 2 <= clusters <= 15
    expect(page.locator(ROWS)).to_have_count(clusters, timeout=TIMEOUT_MS)
    shot(page, "gamma-rank")


def test_log_axes_redraw_the_graph_and_a_click_there_still_chooses(page: Page, server):
    open_app(page, server.url)
    graph = plot_canvas(page, "Decision graph")
    before = graph.screenshot()
    page.locator("div.bk-Checkbox", has_text="Log axes on the decision graph").locator("input").check()
    page.wait_for_timeout(2500)
    assert graph.screenshot() != before
    click_at(page, graph, 0.85, 0.3)  # rho above about 80, delta above about 2: the two or three densest peaks
    expect(page.locator(ROWS)).not_to_have_count(5, timeout=TIMEOUT_MS)
    expect(page.locator(".alert-danger:visible")).to_have_count(0)
    shot(page, "log-axes")


def test_pointing_shows_a_points_facts_and_a_lasso_in_the_view_shows_on_the_graph(page: Page, server):
    open_app(page, server.url)
    view, graph = plot_canvas(page, "Points by cluster"), plot_canvas(page, "Decision graph")
    box = view.bounding_box()
    for fx in np.linspace(0.3, 0.7, 9):  # across the middle of the blobs until the mouse is on a point
        page.mouse.move(box["x"] + fx * box["width"], box["y"] + 0.55 * box["height"], steps=3)
        page.wait_for_timeout(400)
        if page.get_by_text(re.compile(r"Row \d+ · cluster \d+ · ρ")).count():
            break
    expect(page.get_by_text(re.compile(r"Row \d+ · cluster \d+ · ρ [\d.]+ · δ [\d.e-]+ · parent: row \d+"))).to_be_visible(timeout=TIMEOUT_MS)
    shot(page, "pointing")
    before = graph.screenshot()
    lasso(page, view, [(0.35, 0.35), (0.65, 0.35), (0.65, 0.75), (0.35, 0.75)])
    expect(page.get_by_text(re.compile(r"[\d,]+ points lassoed in the 2-D view"))).to_be_visible(timeout=TIMEOUT_MS)
    page.wait_for_timeout(1500)
    assert graph.screenshot() != before
    shot(page, "linked-selection")
    page.get_by_role("button", name="Clear the selection").click()
    expect(page.get_by_text("points lassoed")).to_have_count(0, timeout=TIMEOUT_MS)
