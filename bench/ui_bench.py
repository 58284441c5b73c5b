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
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import make_repo, seed_locks

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "ui"))
from chromium import CHROMIUM, Page, chromium


def first_render(page: Page, url: str) -> float:
    """Milliseconds from navigation to the page's first complete drawing."""
    page.call("Page.navigate", url="about:blank")
    page.call("Page.navigate", url=url)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        got = page.eval("document.body && document.body.dataset.firstRender")
        if got:
            return float(got)
        time.sleep(0.02)
    raise SystemExit(f"the page at {url} never rendered")


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
    if CHROMIUM is None:
        raise SystemExit("needs chromium (apt-get install chromium)")
    script = os.path.join(os.path.dirname(sys.executable), "git-alock")
    with tempfile.TemporaryDirectory() as base, chromium() as page:
        page.window(1500, 900)
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
                renders = [first_render(page, url) for _ in range(args.runs)]
            finally:
                ui.send_signal(signal.SIGINT)
                ui.wait()
            print(
                f"{size:>7}  {built * 1000:>9.0f} ms  {nbytes / 1024:>7.0f} KB  "
                f"{statistics.median(renders):>9.0f} ms"
            )


if __name__ == "__main__":
    main()
