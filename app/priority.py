"""Who gets the cores first: a page being opened, then answers to gestures, then loads and builds behind them."""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

log = logging.getLogger("dpstudio")
BUILD_NICENESS = 10  # loads and builds yield the cores to the pages': other sessions open and answer meanwhile
OPENING_LONGEST_S = 3.0  # a page whose browser never says it is ready (a client fetching only the HTML) holds none longer
WAIT_POLL_S = 0.05  # how often a waiting action asks whether it should go on (another thread waits for its index)
WAITS_LONGEST_S = 10.0  # the most one action waits in all for pages opening: visitors arriving without end delay it no more
SETTLED_AFTER_S = 0.3  # after the browser's "ready": its table's rows and the plots shaded at their real size


def behind_the_page() -> None:
    """Lower this thread's scheduling priority (Linux: per thread; the threads of Numba's OpenMP layer that it starts
    inherit it), so that a long build takes the cores only when no session's page, and no redraw, needs them."""
    if sys.platform == "linux":  # elsewhere a process's priority is the process's, and the page's threads would share it
        thread = threading.get_native_id()
        try:
            os.setpriority(os.PRIO_PROCESS, thread, min(os.getpriority(os.PRIO_PROCESS, thread) + BUILD_NICENESS, 19))
        except OSError as exc:  # a sandbox that forbids it: builds then run beside the page, as they did before
            log.info("builds run at the page's priority: %s", exc)


BUILDS = ThreadPoolExecutor(thread_name_prefix="dpstudio-build", initializer=behind_the_page)


class PagesOpening:
    """The sessions whose page is being made and drawn: loads and builds of other sessions wait at their next
    progress report until none is. A lower priority is not enough: on two cores, a 1M-point upload indexed at
    nice +10 slowed another visitor's page load from 2.0 to 2.7 s (the cores' shared caches and memory, or
    hyperthreads of one core, which no priority divides)."""

    def __init__(self):
        self._deadlines: dict[object, float] = {}  # a session's document -> when it stops holding work back
        self._changed = threading.Condition()

    def opening(self, page: object) -> None:
        with self._changed:
            now = time.monotonic()
            self._deadlines = {other: deadline for other, deadline in self._deadlines.items() if deadline > now}
            self._deadlines[page] = now + OPENING_LONGEST_S

    def opened(self, page: object) -> None:
        with self._changed:
            if self._deadlines.pop(page, None) is not None:
                self._changed.notify_all()

    def wait(self, own: object = None, longest: float = WAITS_LONGEST_S, unless: Callable[[], bool] | None = None) -> float:
        """Wait (in a worker thread) while a page other than ``own`` is opening, until its deadline, for ``longest``
        seconds at most, or until ``unless()`` (asked every ``WAIT_POLL_S``) is true; the seconds waited."""
        started = time.monotonic()
        with self._changed:
            while True:
                now = time.monotonic()
                left = self._left(now, own)
                if not left or now - started >= longest or (unless is not None and unless()):
                    return now - started
                self._changed.wait(min(left, longest - (now - started), WAIT_POLL_S if unless else float("inf")))

    def any(self) -> bool:
        """Whether a page is opening now."""
        with self._changed:
            return self._left(time.monotonic()) > 0

    def _left(self, now: float, own: object = object()) -> float:  # (by default every page counts)
        """Seconds until the last page other than ``own`` stops holding work back (0: none does); under the lock."""
        deadlines = (deadline for page, deadline in self._deadlines.items() if page is not own)
        return max((deadline - now for deadline in deadlines if deadline > now), default=0.0)


PAGES_OPENING = PagesOpening()
