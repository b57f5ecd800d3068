"""A session's Bokeh document, made safe and cheap to update from the page's worker threads: their change events
are handed to the event loop, and Bokeh's walk of the page's models is held through a redraw and skipped when
no update could have changed which models the page holds."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

from bokeh.document import Document
from tornado.ioloop import IOLoop


def changes_from_threads_on_the_loop(doc: Document) -> None:
    """Hand ``doc``'s change events raised in other threads to the event loop (this thread), in order.

    Bokeh's way to change a page from another thread is ``add_next_tick_callback``, and Panel and HoloViews use it
    for every change made in the page's worker threads. But it records the callback through a change event, and
    while the loop holds the document (Panel holds it through each update it sends) an event from another thread
    is put in the held list, which the loop swaps out unlocked: one that lands between the copy and the swap is
    lost, and its callback never runs (a method's controls left on screen, a comparison never hidden). On the
    loop, the held list has one thread."""
    loop, loop_thread = IOLoop.current(), threading.get_ident()
    trigger = doc.callbacks.trigger_on_change

    def trigger_on_the_loop(event) -> None:
        if threading.get_ident() == loop_thread:
            trigger(event)
        else:
            loop.add_callback(trigger, event)

    doc.callbacks.trigger_on_change = trigger_on_the_loop


def walks_only_when_changed(doc: Document) -> None:
    """Bokeh walks all of ``doc``'s models (``recompute``: 40-100 ms for this page) to find which are in it, at
    the end of every ``freeze`` (HoloViews freezes through each plot update) and after each update that sets a
    model-valued property. Only those updates, and roots added or removed, can change which models are in it: the
    walk now runs only after one of them, so a relabel that sends new pixels and colours walks none."""
    models = doc.models
    recompute, invalidate = models.recompute, models.invalidate
    changed, walked_roots = False, tuple(doc.roots)  # Bokeh has walked them so far

    def recompute_if_changed() -> None:
        nonlocal changed, walked_roots
        if changed or walked_roots != tuple(doc.roots):
            changed, walked_roots = False, tuple(doc.roots)
            recompute()

    def invalidate_noted() -> None:
        nonlocal changed
        changed = True
        invalidate()  # walks now unless frozen (then at the end of the freeze)

    models.recompute, models.invalidate = recompute_if_changed, invalidate_noted


@contextlib.contextmanager
def walk_held(doc: Document | None) -> Iterator[None]:
    """Bokeh's walk held (its ``freeze``, which counts nested holds) through the body and until the updates it
    queued on the event loop have run: one relabel updates several plots and widgets, and walks once. A model made
    while the walk is held joins the document only at the walk, so its own changes before then are not sent: hold
    it only for updates of views already on the page."""
    if doc is None:
        yield
        return
    frozen = doc.models.freeze()
    frozen.__enter__()
    try:
        yield
    finally:  # a callback queued now runs after those the body queued
        doc.add_next_tick_callback(lambda: frozen.__exit__(None, None, None))
