"""A session's Bokeh document, made safe and cheap to update from the page's worker threads: the callbacks they
add always reach the session, and Bokeh's walk of the page's models is held through a redraw and skipped when
no update could have changed which models the page holds; and, in the browser, a lasso started outside a plot's
frame is ignored without an error, and a click on a checkbox's words ticks it."""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Iterator

from bokeh.document import Document
from bokeh.document.callbacks import invoke_with_curdoc
from bokeh.document.events import SessionCallbackAdded, SessionCallbackRemoved
from bokeh.models import CustomJS


def callbacks_from_threads_never_held(doc: Document) -> None:
    """Next-tick callbacks that other threads add to ``doc`` reach its session at once, even while the document is
    held.

    Bokeh's way to change a page from another thread is ``add_next_tick_callback``, and Panel and HoloViews take it
    for the changes made in the page's worker threads. It records the callback through a change event, and while
    the event loop holds the document (Panel holds it through each update it sends) an event from another thread
    is put in the held list, which the loop copies and then replaces without a lock: one that lands between the
    two is lost, and its callback never runs (a method's controls left on screen, a comparison never hidden).
    Other threads' callback events now skip the hold and go to the session, as Bokeh sends them when the document
    is not held (the session queues them on the loop, thread-safely), which is what Panel's own hold from a worker
    thread expects; every other event is handled as before."""
    callbacks, document, loop_thread = doc.callbacks, weakref.ref(doc), threading.get_ident()  # on the server's loop
    trigger = callbacks.trigger_on_change

    def trigger_unless_held_elsewhere(event) -> None:
        if threading.get_ident() == loop_thread or not isinstance(event, (SessionCallbackAdded, SessionCallbackRemoved)):
            trigger(event)
        elif (doc := document()) is not None:  # what Bokeh does with an event on a document not held
            invoke_with_curdoc(doc, lambda: [receive(event) for receive in callbacks.change_callbacks()])

    callbacks.trigger_on_change = trigger_unless_held_elsewhere


# BokehJS (3.9) ignores a lasso started outside the plot's frame (on the title or an axis), and then asserts at every
# move and at the release that one was started: a page error per mouse move (bokeh/bokeh#11054 is the box select's).
# Patched only where the drag's method reads the flag this relies on, so another BokehJS keeps its own behaviour.
LASSO_STARTED_OUTSIDE_THE_FRAME_IGNORED = """
const view = Bokeh.Models.get("LassoSelectTool")?.prototype.default_view
if (view != null && !view.prototype._dpstudio_patched && view.prototype._pan.toString().includes("_is_selecting")) {
  for (const name of ["_pan", "_pan_end"]) {
    const drag = view.prototype[name]
    view.prototype[name] = function (ev) { if (this._is_selecting) drag.call(this, ev) }
  }
  view.prototype._dpstudio_patched = true
}
"""


def lasso_started_outside_the_frame_ignored(doc: Document) -> None:
    """A lasso dragged from outside a plot's frame does nothing, without BokehJS's assertion errors."""
    doc.js_on_event("document_ready", CustomJS(code=LASSO_STARTED_OUTSIDE_THE_FRAME_IGNORED))


# BokehJS (3.9) writes a checkbox's label as a <div class="bk-label"> beside the box, in the view's shadow root, so a
# click on the words did nothing (holoviz/panel#7106). One listener on the page, for the views drawn now and later,
# clicks the box of a label clicked, as an HTML <label> would; a label with no checkbox before it is left alone.
CHECKBOX_LABELS_CLICKABLE = """
if (!window._dpstudio_labels_clickable) {
  const box_of = (event) => {
    const label = event.composedPath()[0]  // a real <label> toggles its box itself: left alone, or it would toggle twice
    const bare = label instanceof HTMLElement && label.classList.contains("bk-label") && label.closest("label") == null
    const box = bare ? label.previousElementSibling : null
    return box instanceof HTMLInputElement && box.type === "checkbox" ? [label, box] : null
  }
  document.addEventListener("click", (event) => { const found = box_of(event); if (found && !found[1].disabled) found[1].click() })
  document.addEventListener("mouseover", (event) => { const found = box_of(event); if (found) found[0].style.cursor = "pointer" })
  window._dpstudio_labels_clickable = true
}
"""


def checkbox_labels_clickable(doc: Document) -> None:
    """A click on a checkbox's words ticks or unticks it."""
    doc.js_on_event("document_ready", CustomJS(code=CHECKBOX_LABELS_CLICKABLE))


# BokehJS (3.9) makes a tab's header focusable but opens it on a click only: from the keyboard, Enter, Space and the
# arrow keys did nothing. One listener on the page opens the focused header (Enter, Space), or the next or previous
# one (left and right arrows, the focus moving with it), as the WAI-ARIA tabs pattern asks of a row of tabs.
TABS_BY_KEYBOARD = """
if (!window._dpstudio_tabs_by_keyboard) {
  document.addEventListener("keydown", (event) => {
    const tab = event.composedPath()[0]
    if (!(tab instanceof HTMLElement) || !tab.classList.contains("bk-tab") || event.altKey || event.ctrlKey || event.metaKey)
      return
    const tabs = [...tab.parentElement.children].filter((other) => other.classList.contains("bk-tab"))
    const step = {ArrowRight: 1, ArrowLeft: -1}[event.key]  // (up and down scroll the page, as beside a row of tabs)
    const target = step ? tabs[(tabs.indexOf(tab) + step + tabs.length) % tabs.length] : tab
    if (!step && event.key !== "Enter" && event.key !== " ")
      return
    event.preventDefault()  // (Space would scroll the page)
    target.click()
    target.focus()
  })
  window._dpstudio_tabs_by_keyboard = true
}
"""


def tabs_by_keyboard(doc: Document) -> None:
    """A focused tab's header opens with Enter or Space; the left and right arrows open the previous or next one."""
    doc.js_on_event("document_ready", CustomJS(code=TABS_BY_KEYBOARD))


def walks_only_when_changed(doc: Document) -> None:
    """Bokeh walks all of ``doc``'s models (``recompute``: about 100 ms for this page) to find which are in it, at
    the end of every ``freeze`` (HoloViews freezes through each plot update) and after each update that sets a
    model-valued property (``invalidate``). Only those updates and roots added or removed can change which models
    are in it (Bokeh's hinted data-source changes, ``stream`` and ``patch``, skip ``invalidate``: this page puts
    no models in a data source): the walk now runs only after one of them, so a relabel that sends new pixels and
    colours walks none."""
    models, document = doc.models, weakref.ref(doc)  # weakly: these live on the document
    recompute, invalidate = models.recompute, models.invalidate
    changed, walked_roots = True, None

    def recompute_if_changed() -> None:
        nonlocal changed, walked_roots
        if (doc := document()) is None:
            return
        roots = tuple(root.id for root in doc.roots)
        if changed or roots != walked_roots:
            changed, walked_roots = False, roots
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
