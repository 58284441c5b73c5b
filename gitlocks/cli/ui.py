"""The verb that serves the live page: ui."""

from __future__ import annotations

import gc
import os
import sys

from gitlocks.cli.common import out
from gitlocks.cli.context import context
from gitlocks.cli.declare import Exit, Option, Verbs
from gitlocks.errors import EXIT_INTERRUPTED, UsageError
from gitlocks.ui import server as ui_server

app = Verbs()


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
    gc.enable()  # a long-lived process: the command's script left the collector off
    ctx = context(None)
    server, board = ui_server.start(ctx, port)
    opened = ""  # the directory of the file that sent a browser on
    try:
        out(server.url)
        sys.stderr.write("serving the live page; Ctrl-C stops it\n")
        if not no_browser:
            opened = _open(server.url)
        server.serve_forever(poll_interval=0.5)
    except KeyboardInterrupt:
        raise Exit(EXIT_INTERRUPTED) from None
    finally:
        _remove(opened)
        board.stop()
        server.server_close()


def _open(url: str) -> str:
    """Open the page in a browser, if any (no display: ``$BROWSER``'s only, not a text one
    in this terminal); answers the directory to remove. The browser gets a file of the user's alone
    that sends it on: a command line is open to all (``ps``), and the token is the key."""
    display = sys.platform in ("darwin", "win32") or any(
        os.environ.get(name) for name in ("DISPLAY", "WAYLAND_DISPLAY")
    )
    chosen = [b for b in os.environ.get("BROWSER", "").split(os.pathsep) if b]
    opened = False
    here = ""
    if display or chosen:
        # Imported here: only a run that opens a browser needs them.
        import tempfile
        import webbrowser
        from html import escape
        from pathlib import Path

        try:
            here = tempfile.mkdtemp(prefix="git-alock-ui-")
            page = os.path.join(here, "open.html")
            target = escape(url, quote=True)
            fd = os.open(page, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(
                    '<!doctype html><meta charset="utf-8">'
                    f'<meta http-equiv="refresh" content="0;url={target}">'
                    f'<title>git alock ui</title><a href="{target}">Open the live page</a>\n'
                )
            # A URL: the path quoted (a temporary directory may hold "#", "%" or "?").
            uri = Path(page).as_uri()
            if display:
                opened = webbrowser.open(uri)
            else:  # $BROWSER's alone: webbrowser would go on to the text browsers
                for name in chosen:
                    try:
                        opened = webbrowser.get(name).open(uri)
                    except webbrowser.Error:  # none by that name to run
                        continue
                    if opened:
                        break
        except (OSError, webbrowser.Error):  # no file to hand over, or no browser
            opened = False
        except BaseException:  # Ctrl-C while a browser that waits for its page still runs
            _remove(here)
            raise
    if not opened:
        sys.stderr.write("note: no browser opened; open the URL above\n")
    else:  # a browser kept from /tmp (a snap's private one) finds no such file
        sys.stderr.write("opened in your browser; if it shows no page, open the URL above\n")
    return here


def _remove(here: str) -> None:
    """Remove the file that sent the browser on, with its directory."""
    if here:
        import shutil  # only when a browser was opened

        shutil.rmtree(here, ignore_errors=True)
