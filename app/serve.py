"""``dpstudio serve``: the Panel server, one StudioPage per browser session over a shared DatasetCache."""

from __future__ import annotations

import contextvars
import gc
import logging
import socket
import weakref
from functools import partial

import numpy as np
import panel as pn
from bokeh.document import Document
from bokeh.server.server import Server
from holoviews.plotting.bokeh import BokehRenderer
from tornado.ioloop import IOLoop
from tornado.websocket import WebSocketClosedError

from dpstudio import sample_data
from dpstudio.engine import DensityPeaks

from .datasets import DatasetCache
from .document import (
    callbacks_from_threads_never_held,
    checkbox_labels_clickable,
    lasso_started_outside_the_frame_ignored,
    tabs_by_keyboard,
    walks_only_when_changed,
)
from .made_ahead import PAGE_MADE_AHEAD, PANELS_OWN_QUERY, SpareSession, hand_out_sessions_made_ahead, initial_dataset
from .page import UPLOAD_CHUNK, PageSettings, StudioPage
from .plot_frame import PLOT_SIZE
from .plots import shade_categories, start_shading_threads
from .priority import PAGES_OPENING, SETTLED_AFTER_S

log = logging.getLogger("dpstudio")
# The control that has the keyboard's focus, in a ring a user can see: Bokeh's own is a 1 px light grey dotted line, lost
# on grey buttons and on the blue pressed one. Panel adds raw CSS to every component's shadow root, where these are.
FOCUS_VISIBLE = """
.bk-btn:focus-visible, .bk-tab:focus-visible, .bk-input:focus-visible, input:focus-visible, select:focus-visible {
  outline: 2px solid #e8590c; outline-offset: 1px;
}
"""
WILDCARD_ADDRESSES = ("0.0.0.0", "::", "")
LOG_RETRY_S = 0.5  # how soon the count of pages alive after a session's end is tried again while a page opens
GC_YOUNG_THRESHOLD = 10_000  # allocations between the collector's young collections (Python's default: 700)
OPEN_PAGES: weakref.WeakSet[StudioPage] = weakref.WeakSet()  # to show in the log that closed sessions are freed


def make_app(spare: SpareSession):
    """The Panel app factory: a session's page, made ahead (``spare``) or, where none was, now; its arrays are
    dropped when the browser goes away."""

    def app():
        document, page = pn.state.curdoc, PAGE_MADE_AHEAD.get()
        made_now = page is None
        if made_now:
            PAGES_OPENING.opening(document)  # until its browser has drawn it: other sessions' loads wait meanwhile
        try:
            callbacks_from_threads_never_held(document)
            walks_only_when_changed(document)
            lasso_started_outside_the_frame_ignored(document)
            checkbox_labels_clickable(document)
            tabs_by_keyboard(document)
            if made_now:
                page = StudioPage(spare.cache, spare.settings, initial_dataset(spare.cache, spare.settings))
        except BaseException:  # no page for it (a served file gone, say): it holds no work back
            PAGES_OPENING.opened(document)
            raise
        if made_now:
            OPEN_PAGES.add(page)
            log.info("session opened; its page made as it asked")
        document.title = "dpstudio"

        def ended(context) -> None:
            PAGES_OPENING.opened(document)  # a browser that left before its page was drawn
            session_ended(page)

        pn.state.on_session_destroyed(ended)
        # once the page is in the browser: a worker thread's changes while Panel is still making the page's models
        # are lost (a URL's DBSCAN shown with DPC's controls and plots); and a session made ahead has its
        # visitor's request (the query) only once handed out
        pn.state.onload(partial(open_query, page))
        pn.state.onload(lambda: IOLoop.current().call_later(SETTLED_AFTER_S, PAGES_OPENING.opened, document))
        return page.layout

    return app


def open_query(page: StudioPage) -> None:
    """Show what the session's address asks for (a sample, a method, its parameters); Panel's own (a theme) are
    Panel's (a dark link said "unknown URL parameter 'theme'" and dropped the link's parameters)."""
    arguments = {name: values for name, values in (pn.state.session_args or {}).items() if name not in PANELS_OWN_QUERY}
    page.open_query({name: [v.decode(errors="replace") for v in values] for name, values in arguments.items()})


def handed_out(document: Document, page: StudioPage) -> None:
    """A session made ahead is a visitor's now."""
    PAGES_OPENING.opening(document)  # until its browser has drawn it: other sessions' loads wait meanwhile
    OPEN_PAGES.add(page)
    log.info("session opened; its page made ahead")


def session_ended(page: StudioPage) -> None:
    """Drop the page's arrays now, and, for a visitor's page, say in the log how many pages are still alive once
    Bokeh has let go (a session made ahead and dropped was nobody's)."""
    page.close()
    if page in OPEN_PAGES:
        IOLoop.current().call_later(1.0, log_open_pages)


def log_open_pages() -> None:
    if PAGES_OPENING.any():  # a full collection holds the event loop for 0.1-0.3 s: not while a page opens
        IOLoop.current().call_later(LOG_RETRY_S, log_open_pages)
        return
    gc.collect()  # pages sit in reference cycles (widgets and their watchers)
    log.info("session ended; %d page(s) alive", len(OPEN_PAGES))


def warm_up(cache: DatasetCache, settings: PageSettings) -> None:
    """Load the first data set with its index and first dc, and compile datashader's kernels, before the first visitor."""
    dataset = initial_dataset(cache, settings)
    DensityPeaks(dc_percent=settings.dc_percent).fit(dataset.indexed)
    # the incremental engine's kernels (a click's edit, a stream's batch), on a few points of their own: on a fresh
    # install a visitor's first edit waited 15-20 s for them to compile
    edited = DensityPeaks(dc_percent=settings.dc_percent, backend=dataset.indexed.backend.name)
    edited.fit(np.random.default_rng(0).normal(size=(500, 2)).astype(np.float32)).assign(centers=[0, 1])
    edited.partial_fit(np.zeros((1, 2), np.float32))
    edited.delete([0])
    for large in (None, np.array([True, False])):  # both ways of spreading (DBSCAN's core points drawn larger)
        shade_categories(np.zeros(2), np.ones(2), np.arange(2), None, None, *PLOT_SIZE, ("x", "y"), large=large)
    # one page made as a session's, shown with each method, and dropped: a server's first page took its visitor about
    # 1 s longer to make than later ones, and its first DBSCAN 3-5 s (code paths of the plotting libraries run for
    # the first time)
    page = StudioPage(cache, settings, dataset)
    page.layout.get_root(Document())
    for method in ("dbscan", "hdbscan"):
        page.studio.set_method(method)
    page.close()


def websocket_origins(address: str, port: int, extra: list[str]) -> list[str]:
    """Host:port values a browser's page may open its websocket from: the names this server is reached by on the
    bound address and port, plus ``extra`` (``--allow-websocket-origin``: a proxy's or DNS alias's name)."""
    hosts = {"localhost", "127.0.0.1", address}
    if address in WILDCARD_ADDRESSES:  # every interface: this machine's names and addresses
        name = socket.gethostname()
        try:
            addresses = socket.gethostbyname_ex(name)[2]
        except OSError:
            addresses = []
        hosts = (hosts | {name, socket.getfqdn(), *addresses}) - set(WILDCARD_ADDRESSES)
    # Bokeh reads 'host:port' split at one colon, so IPv6 literals are left to --allow-websocket-origin
    return [f"{host}:{port}" for host in sorted(hosts) if ":" not in host] + list(extra)


class _BrowserLeft(logging.Filter):
    """Bokeh's own warning for a message to a browser that has left, said as the line for the same case below."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.getMessage() == "Failed sending message as connection was closed":
            log.info("an update was not sent: its browser had left")
            return False
        return True


_BROWSER_LEFT = _BrowserLeft()


def browsers_leaving_logged_quietly(loop) -> None:
    """A message that failed because its browser had left is logged in one line, not as asyncio's traceback, nor as
    Bokeh's warning (a reload during an update wrote "WARNING:bokeh.server.views.ws:Failed sending message as
    connection was closed" for each message on its way).

    Panel 1.9.4 cancels a session's pending writes when the session ends, but a write that has already failed
    cannot be cancelled, and its error is never retrieved: asyncio then logged "Task exception was never retrieved"
    with two tracebacks of ``WebSocketClosedError`` each time a browser left while an update was on its way to it.
    Every other error still goes to the loop's handler as before."""
    logging.getLogger("bokeh.server.views.ws").addFilter(_BROWSER_LEFT)  # (a filter added twice is there once)
    previous = loop.get_exception_handler()

    def handle(loop, context: dict) -> None:
        if isinstance(context.get("exception"), WebSocketClosedError):
            log.info("an update was not sent: its browser had left")
        elif previous is not None:
            previous(loop, context)
        else:
            loop.default_exception_handler(context)

    loop.set_exception_handler(handle)


def busy_cleanup_outside_sessions(loop) -> None:
    """Start Panel's timer that clears its stale busy events (a task for the server's life) once ``loop`` runs,
    before any session, in an empty context (call before the loop starts). Panel starts it at a session's first
    event, and its task then keeps that session's context, with the session's document and so its page, for as
    long as the server runs (one page found alive after every session had ended). Panel's own method, private:
    if a later Panel drops it, there is nothing to start."""
    start = getattr(pn.state, "_schedule_busy_cleanup", None)
    if start is not None:
        loop.call_soon(start, context=contextvars.Context())


def free_port(address: str) -> int:
    """A port free on ``address`` now, so that the origins and the printed URL name the port served (--port 0)."""
    with socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET) as probe:
        probe.bind((address, 0))
        return probe.getsockname()[1]


def app_server(cache: DatasetCache, settings: PageSettings, *, port: int, address: str = "localhost", show: bool = False,
               num_procs: int = 1, allow_websocket_origin: list[str] | None = None) -> tuple[Server, SpareSession]:  # fmt: skip
    """The app's Panel server, not started, and the next visitor's session it makes ahead (the first soon after its
    loop starts, in each process of ``num_procs``)."""
    spare = SpareSession(cache, settings, handed_out)
    hand_out_sessions_made_ahead()
    server = pn.serve(
        {"/": make_app(spare)}, port=port, address=address, show=show, title="dpstudio", start=False, verbose=False,
        num_procs=num_procs, websocket_max_message_size=2 * UPLOAD_CHUNK + 2**20,  # a chunk in base64
        allow_websocket_origin=allow_websocket_origin,
    )  # fmt: skip
    server.io_loop.add_callback(spare.start, server._tornado)  # (Panel reads Bokeh's server likewise)
    return server, spare


def serve(
    path: str | None = None, *, port: int = 5006, address: str = "localhost", show: bool = True,
    max_upload_mb: float = 200, cache_size: int = 4, backend: str = "auto", num_procs: int = 1, dc_percent: float = 2.0,
    allow_websocket_origin: tuple[str, ...] = (),
) -> None:  # fmt: skip
    """Start the server and block. ``num_procs`` > 1 forks workers: the engine (and CUDA) starts in each lazily."""
    # dpstudio's own messages (a failed upload, say) on stderr; other libraries only when something is wrong
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    log.setLevel(logging.INFO)
    settings = PageSettings(max_upload_bytes=int(max_upload_mb * 2**20), initial_path=path, dc_percent=dc_percent)
    cache = DatasetCache(cache_size, backend)
    pn.extension(notifications=False, raw_css=[FOCUS_VISIBLE])
    # The plots draw an image and at most a few thousand glyphs, where WebGL gains nothing; and in a browser
    # without a GPU (software GL) every repaint of a WebGL plot copies its whole GL canvas: 50 ms a plot
    BokehRenderer.webgl = False
    if num_procs == 1:
        print(f"dpstudio: loading {path or sample_data.DEFAULT} and the engine's kernels (the first start on a machine "
              "compiles them: about a minute)", flush=True)  # fmt: skip
        warm_up(cache, settings)  # also fails early, with a clear message, on a bad PATH
    port = port or free_port(address)
    host = "localhost" if address in WILDCARD_ADDRESSES else address
    # what is alive now (libraries, compiled kernels and, in one process, the warm data set) lives as long as the
    # server: out of the garbage collector's sight, a full collection (0.1-0.4 s, several per page load) traverses
    # only the sessions' objects; before pn.serve, which forks the --num-procs workers, as Python's docs advise
    gc.collect()
    gc.freeze()
    # a page load makes some 50k objects that live as long as its session: at Python's default threshold (700) the
    # collector ran about 70 young and 6 middle collections per load, and a full one every other load (up to 0.17 s
    # with nine sessions open, on the page's critical path); pages freed at a session's end are collected there
    gc.set_threshold(GC_YOUNG_THRESHOLD)
    server, _ = app_server(cache, settings, port=port, address=address, show=show, num_procs=num_procs,
                           allow_websocket_origin=websocket_origins(address, port, list(allow_websocket_origin)))  # fmt: skip
    start_shading_threads()  # in each process, at the main thread's priority
    browsers_leaving_logged_quietly(server.io_loop.asyncio_loop)  # each process's own loop
    busy_cleanup_outside_sessions(server.io_loop.asyncio_loop)
    print(f"dpstudio: serving http://{host}:{port}/ (Ctrl+C stops)", flush=True)
    server.start()
    server.io_loop.start()
