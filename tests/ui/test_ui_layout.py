"""The live page at the widths a supervisor gives it, measured in a real headless Chromium:
800 px (a third of a screen), 1000 px (half a screen beside a terminal) and 1400 px. At
each, in the page itself: no two panels intersect, nor two rows of a list; the document
never scrolls sideways; no text is cut or runs out of its row; every panel, down to its
last row, can be brought into view and is then on top; and the edits panel with its red
warning (an edit inside a claim held from another worktree) is in view as the page opens.
Before the page had a layout for these widths, its panels overlapped below 1100 px and the
edits could not be seen at 1000."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from chromium import Page
from demo import ok, team
from test_ui import browser, needs_chromium, serve

__all__ = ["browser", "serve"]  # the fixtures, imported so pytest finds them

WIDTHS = (800, 1000, 1400)
HEIGHT = 900
PANELS = ("tree-panel", "edits-panel", "holders-panel", "journal-panel")
LONG_HOLDER = "a" * 20 + "-review-agent-with-a-very-long-name-" + "z" * 8
LONG_DIR = "generated/" + "a-directory-whose-name-goes-on-and-on-" * 3 + "end"

MEASURES = (Path(__file__).parent / "layout.js").read_text()


def _open(browser: Page, url: str, width: int, cards: int = 5) -> None:
    browser.window(width, HEIGHT)
    browser.goto(url)
    browser.eval(MEASURES)
    browser.wait_for("document.body.dataset.firstRender", "the first render")
    browser.wait_for(
        f"document.querySelectorAll('#holders .card').length >= {cards}", "every holder's card"
    )
    browser.window(width, HEIGHT)


@needs_chromium
def test_the_page_reads_well_from_800_px_to_a_wide_screen(
    browser: Page, tmp_path: Path, serve: Any
) -> None:
    with team(tmp_path / "src") as demo:
        repo, ui = demo["repo"], demo["worktrees"][1]
        # Names and paths as long as they may be: they wrap, they never widen the page.
        (repo / LONG_DIR).mkdir(parents=True)
        (repo / LONG_DIR / "schema-definitions-for-everything.json").write_text("{}\n")
        ok(repo, "acquire", f"{LONG_DIR}/**", "-m", "regenerate " * 30, AGENT_ID=LONG_HOLDER)
        (ui / LONG_DIR).mkdir(parents=True)
        (ui / LONG_DIR / "another-file-with-a-name-that-keeps-going.json").write_text("{}\n")
        server = serve(repo)
        try:
            for width in WIDTHS:
                _open(browser, server.url, width, cards=6)
                problems = browser.eval("layout.problems()")
                assert problems == [], f"at {width} px: " + json.dumps(problems, indent=1)
                for panel in PANELS:
                    got = browser.eval(f"layout.reach({json.dumps(panel)})")
                    assert got["whole"] and got["onTop"], (width, panel, got)
                    assert got["width"] >= 300, (width, panel, got)
                warning = browser.eval("layout.warning()")
                for part in ("heading", "row"):
                    assert warning[part]["whole"] and warning[part]["onTop"], (width, warning)
                assert "inside another worktree's claim" in warning["row"]["text"], warning
        finally:
            server.stop()


@needs_chromium
def test_a_session_that_holds_nothing_is_on_the_page_as_running(
    browser: Page, tmp_path: Path, serve: Any
) -> None:
    with team(tmp_path / "src") as demo:
        server = serve(demo["repo"])
        try:
            _open(browser, server.url, 1000)
            card = browser.eval(
                "[...document.querySelectorAll('#holders .card')]"
                ".filter(c => c.dataset.holder === 'claude-review').map(c => c.innerText)[0]"
            )
            assert card is not None
            assert "RUNNING" in card and "holds nothing" in card, card
            assert str(demo["repo"]) in card, card  # where it runs
        finally:
            server.stop()


@needs_chromium
def test_waiting_claims_show_on_their_holders_cards(
    browser: Page, tmp_path: Path, serve: Any
) -> None:
    """The store may keep a queue of claims waiting their turn (``acquire --wait``): the
    page draws the view's ``waiters`` on their holders' cards, a card of its own for one
    that holds nothing, and the layout still holds."""
    with team(tmp_path / "src") as demo:
        server = serve(demo["repo"])
        try:
            _open(browser, server.url, 800)
            waiters = [
                {"holder": "codex-ui", "paths": ["src/api/routes.py"], "place": 1,
                 "since": "2030-01-01T10:00:00Z", "blocked_by": ["claude-api"]},
                {"holder": "newcomer", "paths": ["docs/**", LONG_DIR], "since": None,
                 "blocked_by": ["gemini-docs", "claude-api"]},
            ]  # fmt: skip
            browser.eval(f"S.state.waiters = {json.dumps(waiters)}; render(); true")
            cards = browser.eval(
                "Object.fromEntries([...document.querySelectorAll('#holders .card')]"
                ".map(c => [c.dataset.holder, c.innerText]))"
            )
            assert "WAITING #1" in cards["codex-ui"] and "src/api/routes.py" in cards["codex-ui"]
            assert "claude-api" in cards["codex-ui"].split("WAITING", 1)[1]
            assert "WAITING" in cards["newcomer"] and "gemini-docs" in cards["newcomer"]
            assert "2 waiting" in browser.eval("document.getElementById('counts').innerText")
            assert browser.eval("layout.problems()") == []
        finally:
            server.stop()
