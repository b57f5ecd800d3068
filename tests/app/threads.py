"""Event loops of the headless app tests' own, each in a thread of its own."""

import contextvars
from concurrent.futures import ThreadPoolExecutor


def in_a_thread(function, *args):
    """``function(*args)`` in a thread of its own, for an event loop of its own (``asyncio.run``, say): in the
    whole suite a browser test's Playwright may still run an event loop in this one. It runs in a copy of the
    caller's context, as ``asyncio.run`` in the caller's thread would (a session's context variables included)."""
    with ThreadPoolExecutor(1) as thread:
        return thread.submit(contextvars.copy_context().run, function, *args).result()
