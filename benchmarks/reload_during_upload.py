"""A page reloaded during a large upload, against a plain reload, in Debian's Chromium on the CPU backend.

    python benchmarks/reload_during_upload.py [--points 5000000] [--into 0.5,2,6] [--repeats 3] [--playwright]

Each time runs from the reload to the first animation frame that shows a row of the new page's clusters table
(recorded in the page, as ``ui_latency.py`` does). A round reloads once without an upload (the baseline) and once
at each delay into the upload of a CSV of ``--points`` 2-D points, on the same server.

Chromium is driven over the DevTools protocol with its Page, Runtime and DOM domains only. Playwright (``--playwright``,
for comparison) also turns on the Network domain, and Chromium then reports every websocket frame, the upload's
megabytes included, to the driver: on two cores that slows the upload several times over and starves the server.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np
import pandas as pd
from tornado.websocket import websocket_connect

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.ui_latency import FIND_DEEP, FIRST_ROW_FRAME  # noqa: E402
from dpstudio.app.page import PageSettings  # noqa: E402
from tests.ui.conftest import CHROMIUM, CHROMIUM_ARGS, Server, free_port  # noqa: E402

UPLOAD_INPUT = "input.filepond--browser"
TIMEOUT_S = 120


class DevTools:
    """One Chromium tab driven over the DevTools protocol, without its Network domain."""

    def __init__(self, chromium: subprocess.Popen, connection):
        self.chromium, self.connection, self.ids = chromium, connection, itertools.count(1)

    @classmethod
    async def start(cls, profile: Path) -> DevTools:
        port = free_port()
        chromium = subprocess.Popen([CHROMIUM, "--headless", *CHROMIUM_ARGS, "--window-size=1500,1000", f"--user-data-dir={profile}",
                                     f"--remote-debugging-port={port}", "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        deadline = time.monotonic() + 30
        while not (tabs := _tabs(port)):
            if time.monotonic() > deadline:
                raise RuntimeError(f"Chromium showed no tab on port {port} within 30 s")
            await asyncio.sleep(0.2)
        tab = tabs[0]
        tools = cls(chromium, await websocket_connect(tab["webSocketDebuggerUrl"], max_message_size=2**26))
        await tools.call("Page.enable")  # for the script below to run in each new document
        await tools.call("Page.addScriptToEvaluateOnNewDocument", source=FIRST_ROW_FRAME)
        return tools

    async def call(self, method: str, **params):
        number = next(self.ids)
        await self.connection.write_message(json.dumps({"id": number, "method": method, "params": params}))
        while True:  # skipping the Page domain's events
            message = json.loads(await self.connection.read_message())
            if message.get("id") == number:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message["result"]

    async def evaluate(self, expression: str):
        return (await self.call("Runtime.evaluate", expression=expression, returnByValue=True))["result"].get("value")

    async def goto(self, url: str) -> None:
        await self.call("Page.navigate", url=url)

    async def reload(self) -> None:
        await self.call("Page.reload")

    async def upload(self, path: Path) -> None:
        element = await self.call("Runtime.evaluate", expression=f"(() => {{ {FIND_DEEP} return find(document, {UPLOAD_INPUT!r}); }})()")
        await self.call("DOM.setFileInputFiles", files=[str(path)], objectId=element["result"]["objectId"])

    async def close(self) -> None:
        self.connection.close()
        self.chromium.terminate()
        self.chromium.wait(10)  # before its profile's folder goes


class ByPlaywright:
    """The same steps through Playwright's asyncio API (its Network domain on)."""

    @classmethod
    async def start(cls, profile: Path) -> ByPlaywright:
        from playwright.async_api import async_playwright

        tools = cls()
        tools.reloading = None
        tools.playwright = await async_playwright().start()
        tools.browser = await tools.playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        tools.page = await tools.browser.new_page(viewport={"width": 1500, "height": 1000})
        await tools.page.add_init_script(FIRST_ROW_FRAME)
        return tools

    async def evaluate(self, expression: str):
        return await self.page.evaluate(expression)

    async def goto(self, url: str) -> None:
        await self.page.goto(url, wait_until="commit")

    async def reload(self) -> None:
        self.reloading = asyncio.ensure_future(self.page.reload(wait_until="commit"))  # it waits for the new document

    async def upload(self, path: Path) -> None:
        await self.page.locator(UPLOAD_INPUT).set_input_files(path)

    async def close(self) -> None:
        if self.reloading is not None:
            await asyncio.gather(self.reloading, return_exceptions=True)
        await self.browser.close()
        await self.playwright.stop()


async def first_row_at(tools) -> float:
    """Wall-clock seconds of the first frame that showed a clusters-table row (set by FIRST_ROW_FRAME)."""
    deadline = time.monotonic() + TIMEOUT_S
    while (at := await _in_the_page(tools, "window.firstRowAt ?? null")) is None:
        if time.monotonic() > deadline:
            raise TimeoutError("the clusters table did not show")
        await asyncio.sleep(0.05)
    return at / 1000


async def _in_the_page(tools, expression: str):
    try:
        return await tools.evaluate(expression)
    except Exception:  # the page between two documents
        return None


async def reload_seconds(tools, url: str, csv: Path | None, into: float) -> float:
    """Open the page, upload ``csv`` (if given), reload ``into`` seconds later: seconds to the new page's first row."""
    await tools.goto(url)
    await first_row_at(tools)
    await asyncio.sleep(2)  # its first images
    if csv is not None:
        await tools.upload(csv)
    await asyncio.sleep(into)
    await tools.evaluate("window.firstRowAt = null")  # the old document's, read until the new one comes
    reloaded = time.time()  # the page's Date.now() reads the same clock
    await tools.reload()
    return await first_row_at(tools) - reloaded


async def measure(args, csv: Path, profile: Path) -> list[dict]:
    server = Server("--backend", "cpu")
    tools = await (ByPlaywright if args.playwright else DevTools).start(profile)
    driver = "Playwright" if args.playwright else "DevTools protocol"
    times: dict[float | None, list[float]] = {None: [], **{into: [] for into in args.into}}
    try:
        for _ in range(args.repeats):
            for into in times:
                times[into].append(await reload_seconds(tools, server.url, None if into is None else csv, into or 0.0))
                await asyncio.sleep(args.settle)  # the old session's work, if any, stops when Bokeh ends it
    finally:
        await tools.close()
        server.close()
    baseline = statistics.median(times[None])
    return [{"driver": driver, "upload": "none" if into is None else f"{csv.stat().st_size / 2**20:.0f} MB, reload {into:g} s in",
             "runs": " / ".join(f"{t:.2f}" for t in runs), "median": statistics.median(runs),
             "ratio": statistics.median(runs) / baseline} for into, runs in times.items()]  # fmt: skip


def _tabs(port: int) -> list[dict]:
    try:
        return [t for t in json.load(urllib.request.urlopen(f"http://localhost:{port}/json/list")) if t["type"] == "page"]
    except OSError:  # not listening yet
        return []


def table(rows: list[dict]) -> str:
    lines = ["| driver | upload | reload -> clusters table, runs s | median s | median / no upload |", "|---|---|---|---:|---:|"]
    lines += [f"| {r['driver']} | {r['upload']} | {r['runs']} | {r['median']:.2f} | {r['ratio']:.2f} |" for r in rows]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=5_000_000, help="2-D points in the uploaded CSV (5M: about 180 MB)")
    parser.add_argument("--into", default="0.5,2,6", help="seconds into the upload at which the page reloads")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--settle", type=float, default=35, help="seconds between runs (Bokeh ends a left session in 15-32 s)")
    parser.add_argument("--playwright", action="store_true", help="drive Chromium through Playwright instead")
    args = parser.parse_args()
    args.into = [float(v) for v in args.into.split(",")]
    with tempfile.TemporaryDirectory() as folder:
        csv = Path(folder) / "upload.csv"
        rng = np.random.default_rng(0)
        points = rng.normal(size=(args.points, 2)) + rng.integers(0, 5, size=(args.points, 1)) * 4
        pd.DataFrame(points, columns=["x", "y"]).to_csv(csv, index=False)
        limit = PageSettings.max_upload_bytes  # dpstudio serve's default
        if csv.stat().st_size > limit:  # the page would refuse it, and time no upload at all
            sys.exit(f"{args.points:,} points make {csv.stat().st_size / 2**20:.0f} MB, over the {limit / 2**20:g} MB upload limit")
        print(table(asyncio.run(measure(args, csv, Path(folder) / "profile"))))


if __name__ == "__main__":
    main()
