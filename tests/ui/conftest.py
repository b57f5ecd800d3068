"""Real-browser tests: ``dpstudio serve`` in a subprocess, driven by Playwright in Debian's Chromium."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlparse

import pytest
from playwright.sync_api import Page

CHROMIUM = "/usr/bin/chromium"
# As root, in a sandbox without internet: no sandboxing, no GPU, no background calls to Google.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"]  # fmt: skip


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    if not Path(CHROMIUM).exists():
        pytest.fail(f"browser tests need Debian's Chromium at {CHROMIUM}: apt-get install chromium")
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": CHROMIUM_ARGS}


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):
    return {**browser_context_args, "viewport": {"width": 1500, "height": 1000}, "accept_downloads": True}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("localhost", 0))
        return probe.getsockname()[1]


class Server:
    """``dpstudio serve`` running in a subprocess until closed."""

    def __init__(self, *args: str, startup_seconds: float = 180):
        self.port = free_port()
        self.url = f"http://localhost:{self.port}"
        self.log = Path(os.environ.get("TMPDIR", "/tmp")) / f"dpstudio-serve-{self.port}.log"
        command = [sys.executable, "-m", "dpstudio.app.cli", "serve", "--no-show", "--port", str(self.port), *args]
        self.process = subprocess.Popen(command, stdout=self.log.open("w"), stderr=subprocess.STDOUT)
        deadline = time.monotonic() + startup_seconds
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"dpstudio serve exited with {self.process.returncode}:\n{self.log.read_text()}")
            try:
                urllib.request.urlopen(self.url, timeout=5)
                return
            except OSError:
                time.sleep(0.5)
        self.close()
        raise RuntimeError(f"dpstudio serve did not answer within {startup_seconds} s:\n{self.log.read_text()}")

    def close(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()


@pytest.fixture(scope="module")
def server():
    running = Server("--backend", "cpu")
    yield running
    running.close()


def requests_elsewhere(page: Page) -> list[str]:
    """The URLs the page asks of any host but this machine's and the one it was opened at, as it goes on: every
    resource comes from the app's server (a CDN's fails offline, with an error in the console)."""
    hosts, elsewhere = {"localhost", "127.0.0.1"}, []

    def seen(request) -> None:
        url = urlparse(request.url)
        if url.scheme not in ("http", "https"):
            return
        if request.is_navigation_request() and request.frame == page.main_frame:
            hosts.add(url.hostname)  # the app's server, whatever name the test gave it
        elif url.hostname not in hosts:
            elsewhere.append(request.url)

    page.on("request", seen)
    return elsewhere


@pytest.fixture(autouse=True)
def _fail_on_page_errors(request):
    """Every browser test fails on a JavaScript error in its page, and on a request to another host."""
    if "page" not in request.fixturenames:
        yield
        return
    page: Page = request.getfixturevalue("page")
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    elsewhere = requests_elsewhere(page)
    yield
    assert not errors, f"JavaScript errors on the page: {errors}"
    assert not elsewhere, f"requests to hosts other than the app's server: {sorted(set(elsewhere))}"
