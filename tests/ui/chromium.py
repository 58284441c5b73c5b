"""A headless Chromium driven over the DevTools protocol: one tab, asked to evaluate script,
to take a window's width, and to photograph itself. Shared by the page's tests and
``tests/ui/screenshots.py``; its one dependency is the test extra's ``websocket-client``."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


class PageError(AssertionError):
    """The page did not do what was asked of it in time."""


class Page:
    """One browser tab, spoken to over its DevTools websocket."""

    def __init__(self, url: str) -> None:
        import websocket  # the test extra's DevTools client

        self.ws = websocket.create_connection(url, timeout=30, suppress_origin=True)
        self.calls = 0

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.calls += 1
        self.ws.send(json.dumps({"id": self.calls, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv())
            if message.get("id") == self.calls:
                assert "error" not in message, message
                result: dict[str, Any] = message.get("result", {})
                return result

    def eval(self, expression: str) -> Any:
        got = self.call(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        assert "exceptionDetails" not in got, got
        return got["result"].get("value")

    def goto(self, url: str) -> None:
        """Open ``url`` and wait until the new document has loaded."""
        self.eval("window.leaving = true")
        self.call("Page.navigate", url=url)
        self.wait_for("!window.leaving && document.readyState === 'complete'", f"{url} loaded")

    def wait_for(self, expression: str, what: str, timeout: float = 20) -> Any:
        """Poll ``expression`` in the page until it is truthy (a bound, not a timing)."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.eval(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                text = self.eval("document.body ? document.body.innerText : ''")
                raise PageError(f"the page never showed {what}; it shows:\n{text}")
            time.sleep(0.05)

    def window(self, width: int, height: int) -> None:
        """Lay the page out as in a window of ``width`` x ``height`` CSS pixels."""
        self.call(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )
        # Laid out anew before anything is measured: two frames later, resize handled.
        self.eval("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")

    def screenshot(self, path: Path) -> None:
        """The window as it shows now, as a PNG at ``path``."""
        got = self.call("Page.captureScreenshot", format="png")
        path.write_bytes(base64.b64decode(got["data"]))


@contextlib.contextmanager
def chromium() -> Iterator[Page]:
    """A headless Chromium of its own (a fresh profile), and its one tab; gone afterwards."""
    assert CHROMIUM is not None, "chromium is not installed"
    profile = tempfile.mkdtemp(prefix="gitlocks-ui-chromium-")
    proc = subprocess.Popen(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--remote-debugging-address=127.0.0.1",
            "--remote-debugging-port=0",
            "--remote-allow-origins=*",
            f"--user-data-dir={profile}",
            "about:blank",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        port_file = Path(profile) / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not port_file.exists() or not port_file.read_text().strip():
            assert proc.poll() is None, "chromium exited at start"
            assert time.monotonic() < deadline, "chromium never opened its DevTools port"
            time.sleep(0.05)
        port = port_file.read_text().split()[0]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as res:
            tabs = [t for t in json.load(res) if t.get("type") == "page"]
        page = Page(tabs[0]["webSocketDebuggerUrl"])
        try:
            yield page
        finally:
            page.ws.close()
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        shutil.rmtree(profile, ignore_errors=True)
