"""The next visitor's session made ahead, whole: its page, and its Bokeh document with the page's models.

A page load waited for the server to make the session (the page's Python objects 0.2 s, its Bokeh models 0.5 s, of
which the three plots half) before the page's HTML left, and the browser fetched and ran its scripts only after
that. A session made ahead is handed to the next visitor's first request as it is: its HTML leaves at once, and
the browser pulls the document already made."""

from __future__ import annotations

import asyncio
import contextvars
import logging
import time
import weakref
from collections.abc import Callable
from typing import ClassVar

import bokeh.server.contexts
from bokeh.document import Document
from bokeh.server.contexts import ApplicationContext
from bokeh.server.session import ServerSession, current_time
from bokeh.server.tornado import BokehTornado
from bokeh.server.urls import per_app_patterns
from bokeh.util.token import generate_jwt_token, generate_session_id
from panel.io.server import DocHandler, WSHandler
from tornado.httputil import HTTPServerRequest, RequestStartLine
from tornado.ioloop import IOLoop

from dpstudio import sample_data
from dpstudio.engine import DataError

from .datasets import Dataset, DatasetCache
from .page import PageSettings, StudioPage
from .priority import PAGES_OPENING

log = logging.getLogger("dpstudio")
SPARE_CHECK_S = 0.5  # how often the next visitor's session is looked after: made when it may be, checked once made
# its making holds the event loop for 0.5-1 s, and a gesture meanwhile waits for it: made only once no browser has
# sent anything (a gesture, the mouse over a plot, a page's sizes) for this long
QUIET_FOR_S = 1.0
# what Panel itself reads from a page's query, as it makes a session's models (not the app's)
PANELS_OWN_QUERY = frozenset({"theme"})
# the page of the session being made ahead, for the app's factory: set in the making's own task (no visitor's)
PAGE_MADE_AHEAD: contextvars.ContextVar[StudioPage | None] = contextvars.ContextVar("page_made_ahead", default=None)


def initial_dataset(cache: DatasetCache, settings: PageSettings, cached_only: bool = False) -> Dataset | None:
    """The data a new session opens on: the file given on the command line, else the default sample (None where
    ``cached_only`` and the cache does not hold it)."""
    if settings.initial_path:
        return cache.file(settings.initial_path, cached_only=cached_only)
    return cache.sample(sample_data.DEFAULT, cached_only=cached_only)


class SpareSession:
    """The next visitor's session, made on the event loop on the initial data set while the cache holds it, while
    no page is opening, no browser has spoken for QUIET_FOR_S and no work holds that data set's index (the loop
    never waits for either); dropped once
    the cache no longer holds its data set (so it never keeps one the cache let go), or where a visitor's initial
    data set is another one (a served file rewritten or gone since). ``start`` it with the server;
    ``handed_out(document, page)`` is called as a visitor is given one."""

    def __init__(self, cache: DatasetCache, settings: PageSettings, handed_out: Callable[[Document, StudioPage], None]):
        self.cache, self.settings, self.handed_out = cache, settings, handed_out
        self._server: BokehTornado | None = None
        self._session: ServerSession | None = None
        self._page: StudioPage | None = None  # the session's
        self._next = None  # the event loop's handle of the next try to make a session or check the one made
        self._making: asyncio.Future | None = None

    def start(self, server: BokehTornado) -> None:
        """Make sessions ahead for the app at ``server``'s root, the first one soon, and hand them out there."""
        self._server = server
        MadeAheadDocHandler.spares[server.applications["/"]] = self
        self.later()

    def take(self) -> tuple[ServerSession, StudioPage] | None:
        """The session made ahead and its page, for a new visitor (on the event loop), or None where there is
        none to give; another is made ahead for the next visitor."""
        self.later()
        session, page = self._session, self._page
        self._session = self._page = None
        if session is not None and page.studio.dataset is not self._initial_cached():
            _drop(session, page)
            return None
        return None if session is None else (session, page)

    def later(self) -> None:
        """Make a session (or check the one made) in SPARE_CHECK_S, unless that is planned already."""
        if self._next is None and self._server is not None:
            # in a context of its own: not a session's (its document, Panel's current one), nor the last making's
            self._next = IOLoop.current().call_later(SPARE_CHECK_S, contextvars.Context().run, self._tend)

    def _initial_cached(self) -> Dataset | None:
        """The initial data set where the cache holds it, else None (a served file rewritten or gone: read, and
        said, as a visitor asks)."""
        try:
            return initial_dataset(self.cache, self.settings, cached_only=True)
        except (DataError, OSError):
            return None

    def _tend(self) -> None:
        self._next = None
        if self._making is not None:  # awaiting Bokeh's hooks: checked after it
            return
        if self._session is not None:
            if self.cache.holds(self._page.studio.dataset):
                self.later()
                return
            _drop(self._session, self._page)
            self._session = self._page = None
        dataset = self._initial_cached()
        if dataset is None:  # the next visitor reads it, and a session is made ahead after that
            return
        if PAGES_OPENING.any() or time.monotonic() - BrowsersHeard.last_heard < QUIET_FOR_S:  # it would hold them up
            self.later()
            return
        with dataset.indexed.unless_busy() as free:
            if free:
                page = StudioPage(self.cache, self.settings, dataset)
        if not free:
            self.later()  # once the work on the index is done
            return
        self._making = asyncio.ensure_future(self._make(page))

    async def _make(self, page: StudioPage) -> None:
        PAGE_MADE_AHEAD.set(page)  # (this task's own context)
        session_id = generate_session_id(secret_key=self._server.secret_key, signed=self._server.sign_sessions)
        # a request for the page's address with no arguments, until a visitor's is handed the session: Panel reads
        # one as it makes a session's models (the theme a query may ask for)
        request = HTTPServerRequest(start_line=RequestStartLine("GET", "/", "HTTP/1.0"))
        try:
            session = await self._server.applications["/"].create_session_if_needed(session_id, request)
        except Exception:  # tried again after the next visitor, whose session is made as it asks and says what fails
            log.exception("the next visitor's session could not be made ahead")
            page.close()
            return
        finally:
            self._making = None
        session.block_expiration()  # no browser has joined it: Bokeh would end it 15 s after its making
        self._session, self._page = session, page
        self.later()


def _drop(session: ServerSession, page: StudioPage) -> None:
    """Let Bokeh end a session made ahead at its next check of the sessions; its page's arrays go now."""
    page.close()
    session.unblock_expiration()
    session.request_expiration()


class MadeAheadDocHandler(DocHandler):
    """Panel's handler of a page's first request, which hands a new visitor the session made ahead for its app where
    there is one (``spares``), and has one made the way Bokeh does where there is none, or where the request asks
    for more."""

    spares: ClassVar[weakref.WeakKeyDictionary[ApplicationContext, SpareSession]] = weakref.WeakKeyDictionary()

    async def get_session(self) -> ServerSession:
        # a link may name a session (its id or token), or ask Panel for what a session's models are made with
        arguments, headers = self.request.arguments, self.request.headers
        asks = {"bokeh-token", "bokeh-session-id", *PANELS_OWN_QUERY} & set(arguments) or "Bokeh-Session-Id" in headers
        spare = None if asks else self.spares.get(self.application_context)
        taken = None if spare is None else spare.take()
        if taken is None:
            return await super().get_session()
        session, page = taken
        self._hand_over(session)
        spare.handed_out(session.document, page)
        return session

    def _hand_over(self, session: ServerSession) -> None:
        """Give the session this request's token, cookies, headers and arguments, and Bokeh's 15 s for a browser to
        join it from now: what Bokeh's ``ApplicationContext.create_session_if_needed`` and ``ServerSession`` set as
        they make a session for a request (Panel's ``generate_session`` sets the same private attributes)."""
        app = self.application
        payload = self._generate_token_payload()  # Panel's: the request's headers, cookies and arguments
        token = generate_jwt_token(session.id, secret_key=app.secret_key, signed=app.sign_sessions,
                                   expiration=app.session_token_expiration, extra_payload=payload)  # fmt: skip
        headers = dict(payload["headers"])
        if payload["cookies"] and "Cookie" not in headers:  # (Bokeh puts the header back from the cookies)
            headers["Cookie"] = "; ".join(f"{name}={value}" for name, value in payload["cookies"].items())
        context = session.document.session_context
        context._request = bokeh.server.contexts._RequestProxy(
            self.request, arguments=payload["arguments"], cookies=payload["cookies"], headers=headers
        )
        context._token = session._token = token
        session._last_unsubscribe_time = current_time()
        session.unblock_expiration()


class BrowsersHeard(WSHandler):
    """Panel's websocket handler, which notes when a browser last sent something (``last_heard``, monotonic)."""

    last_heard: ClassVar[float] = float("-inf")

    async def on_message(self, fragment: str | bytes) -> None:
        BrowsersHeard.last_heard = time.monotonic()
        await super().on_message(fragment)


def hand_out_sessions_made_ahead() -> None:
    """Serve a page's first request with ``MadeAheadDocHandler``, and its websocket with ``BrowsersHeard`` (before
    the server is made): Panel puts its own handlers in Bokeh's routes the same way."""
    ours = {DocHandler: MadeAheadDocHandler, WSHandler: BrowsersHeard}
    per_app_patterns[:] = [(route, ours.get(handler, handler)) for route, handler in per_app_patterns]
