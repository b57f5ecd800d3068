"""Pages being opened come first: loads and builds wait for them at their progress reports, within bounds."""

from __future__ import annotations

import threading
import time

import pytest

from dpstudio.app import priority
from dpstudio.app.priority import PagesOpening


def waited(pages: PagesOpening, own: object = None) -> float:
    """Seconds ``pages.wait(own)`` took in a worker thread."""
    started, done = time.monotonic(), []
    worker = threading.Thread(target=lambda: (pages.wait(own), done.append(time.monotonic() - started)))
    worker.start()
    worker.join(10)
    assert done, "the wait did not end"
    return done[0]


def test_work_waits_until_every_opening_page_has_opened():
    pages, first, second = PagesOpening(), object(), object()
    assert waited(pages) < 0.1  # nothing opening: no wait
    pages.opening(first)
    pages.opening(second)
    threading.Timer(0.3, pages.opened, (first,)).start()
    threading.Timer(0.6, pages.opened, (second,)).start()
    assert 0.55 <= waited(pages) < 2.0
    assert waited(pages) < 0.1


def test_a_sessions_own_page_never_holds_its_own_work():
    pages, own = PagesOpening(), object()
    pages.opening(own)
    assert waited(pages, own=own) < 0.1
    pages.opened(own)


def test_a_page_that_never_opens_holds_work_back_until_its_deadline(monkeypatch):
    """A client that fetched only the page's HTML (no browser draws it, and its session may live on) stops holding
    other sessions' work once its deadline passes; it is forgotten at the next page's opening."""
    monkeypatch.setattr(priority, "OPENING_LONGEST_S", 0.4)
    pages, never = PagesOpening(), object()
    pages.opening(never)
    assert 0.35 <= waited(pages) < 2.0
    assert waited(pages) < 0.1
    pages.opening(object())
    assert never not in pages._deadlines


@pytest.mark.parametrize("twice", [False, True])
def test_opened_for_a_page_not_opening_changes_nothing(twice):
    """A session ended before its browser said it was ready: its page is marked opened twice."""
    pages, page = PagesOpening(), object()
    pages.opening(page)
    pages.opened(page)
    if twice:
        pages.opened(page)
    assert waited(pages) < 0.1


def test_one_action_waits_no_longer_than_its_bound_in_all():
    """Visitors arriving without end (or clients that fetch only the HTML) delay a load by a bounded time."""
    pages = PagesOpening()
    pages.opening(object())
    started = time.monotonic()
    assert 0.25 <= pages.wait(longest=0.3) < 1.0
    assert time.monotonic() - started < 1.0
    assert pages.any()
    assert pages.wait(longest=0) < 0.01


def test_a_wait_ends_when_asked_to_go_on_and_a_page_past_its_deadline_is_no_page_opening(monkeypatch):
    """``unless`` is asked as the wait goes (another thread came to wait for what the waiting work holds); a page
    whose deadline has passed counts as opening for nothing, ``any`` included."""
    monkeypatch.setattr(priority, "OPENING_LONGEST_S", 0.3)
    pages, go_on = PagesOpening(), threading.Event()
    pages.opening(object())
    threading.Timer(0.1, go_on.set).start()
    assert 0.05 <= pages.wait(unless=go_on.is_set) < 0.25
    time.sleep(0.3)
    assert not pages.any() and waited(pages) < 0.1
