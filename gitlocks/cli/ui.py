"""The verb that serves the live page: ui."""

from __future__ import annotations

import os
import sys

from gitlocks.cli.common import finish, out, verbs
from gitlocks.cli.context import context
from gitlocks.cli.declare import Option
from gitlocks.errors import EXIT_INTERRUPTED, UsageError
from gitlocks.ui import server as ui_server

app = verbs()


@app.command()
def ui(
    port: int = Option("--port", default=0, help="Port on 127.0.0.1 (default: any free port)."),
    no_browser: bool = Option(
        "--no-browser", default=False, help="Print the URL only; open no browser."
    ),
) -> None:
    """Serve a live, read-only page of claims, holders, edits and the journal, until Ctrl-C.

    The page listens on 127.0.0.1 only and its URL, printed first, carries a random token:
    anyone without the URL gets nothing.

    Example: git alock ui --no-browser --port 8765
    """
    if not 0 <= port <= 65535:
        raise UsageError(f"invalid --port {port}: from 1 to 65535 (0: any free port)")
    ctx = context(None)
    server, board = ui_server.start(ctx, port)
    try:
        out(server.url)
        sys.stderr.write("serving the live page; Ctrl-C stops it\n")
        if not no_browser:
            _open(server.url)
        server.serve_forever(poll_interval=0.5)
    except KeyboardInterrupt:
        finish(EXIT_INTERRUPTED)
    finally:
        board.stop()
        server.server_close()


def _open(url: str) -> None:
    """Open the page in the user's browser, if there is one to open it in. Without a
    display (an ssh session), Python's ``webbrowser`` would start a text browser in this
    very terminal: only ``$BROWSER`` is used then."""
    graphical = sys.platform in ("darwin", "win32") or any(
        os.environ.get(name) for name in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER")
    )
    opened = False
    if graphical:
        # Imported here: only a run that opens a browser needs it.
        import webbrowser

        try:
            opened = webbrowser.open(url)
        except webbrowser.Error:
            opened = False
    if not opened:
        sys.stderr.write("note: no browser opened; open the URL above\n")
