"""First render of the live page (``git alock ui``) against the size of the lock table. A
plain script: prints figures.

For each size (default 10, 1,000 and 10,000 live locks, seeded as bench/scale_bench.py
seeds them), it times the server's first view (the status of every claim and worktree,
as JSON) in-process, then starts ``git alock ui --no-browser`` and opens the page in a
headless Chromium over the DevTools protocol: "first render" is the page's own
``performance.now()`` once the tree, the holders, the edits and the journal are drawn,
counted from the start of navigation (the HTML, script and state documents included).
Medians over runs.

Needs Debian's ``chromium`` and ``websocket-client`` (the test extra).

Usage: python bench/ui_bench.py [--runs N] [--sizes 10,1000,10000]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from benchlib import make_repo, seed_locks


class Tab:
    """A headless Chromium tab, spoken to over its DevTools websocket."""

    def __init__(self, chromium: str, profile: str) -> None:
        import websocket  # the test extra's DevTools client

        self.proc = subprocess.Popen(
            [
                chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
                "--remote-allow-origins=*",
                "--window-size=1500,900",
                f"--user-data-dir={profile}",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        port_file = Path(profile) / "DevToolsActivePort"
        while not port_file.exists() or not port_file.read_text().strip():
            time.sleep(0.05)
        port = port_file.read_text().split()[0]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as res:
            url = next(t for t in json.load(res) if t["type"] == "page")["webSocketDebuggerUrl"]
        self.ws = websocket.create_connection(url, timeout=60, suppress_origin=True)
        self.calls = 0

    def call(self, method: str, **params: Any) -> Any:
        self.calls += 1
        self.ws.send(json.dumps({"id": self.calls, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv())
            if message.get("id") == self.calls:
                return message.get("result", {})

    def eval(self, expression: str) -> Any:
        got = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return got.get("result", {}).get("value")

    def first_render(self, url: str) -> float:
        """Milliseconds from navigation to the page's first complete drawing."""
        self.call("Page.navigate", url="about:blank")
        self.call("Page.navigate", url=url)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            got = self.eval("document.body && document.body.dataset.firstRender")
            if got:
                return float(got)
            time.sleep(0.02)
        raise SystemExit(f"the page at {url} never rendered")

    def close(self) -> None:
        self.ws.close()
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()


def snapshot_seconds(repo: Path) -> tuple[float, int]:
    """The server's first view: seconds to build it, and its size as JSON."""
    from gitlocks.identity import resolve_identity
    from gitlocks.service.context import open_context
    from gitlocks.ui import view

    ctx = open_context(repo, resolve_identity)
    started = time.perf_counter()
    snap = view.snapshot(ctx)
    snap["events"] = view.recent_events(ctx)
    size = len(json.dumps(snap, separators=(",", ":")))
    return time.perf_counter() - started, size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--sizes", default="10,1000,10000")
    args = parser.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("needs chromium (apt-get install chromium)")
    script = os.path.join(os.path.dirname(sys.executable), "git-alock")
    with tempfile.TemporaryDirectory() as base:
        tab = Tab(chromium, os.path.join(base, "profile"))
        try:
            print(f"{'locks':>7}  {'server view':>12}  {'state JSON':>10}  {'first render':>12}")
            for size in (int(s) for s in args.sizes.split(",")):
                repo = make_repo(Path(base), f"repo{size}")
                seed_locks(repo, size)
                built, nbytes = snapshot_seconds(repo)
                ui = subprocess.Popen(
                    [script, "ui", "--no-browser"],
                    cwd=repo,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    text=True,
                )
                try:
                    assert ui.stdout is not None
                    url = ui.stdout.readline().strip()
                    renders = [tab.first_render(url) for _ in range(args.runs)]
                finally:
                    ui.send_signal(signal.SIGINT)
                    ui.wait()
                print(
                    f"{size:>7}  {built * 1000:>9.0f} ms  {nbytes / 1024:>7.0f} KB  "
                    f"{statistics.median(renders):>9.0f} ms"
                )
        finally:
            tab.close()


if __name__ == "__main__":
    main()
