"""The live page's screenshots in docs/images (live-800.png, live-1000.png, live-1400.png):
the demo team of tests/ui/demo.py, served by ``git alock ui``, photographed in a headless
Chromium at each width. Anyone can re-run it after changing the page:

    python tests/ui/screenshots.py [--out docs/images] [--widths 800,1000,1400] [--height 900]

Needs Debian's ``chromium`` and the test extra (``pip install -e '.[test]'``). Runs in a
home directory of its own, removed afterwards: nothing of the user's is read or shown.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROJECT = HERE.parents[1]
sys.path[:0] = [str(HERE), str(HERE.parent)]  # this folder's modules, and tests/support

from chromium import CHROMIUM, chromium  # noqa: E402
from demo import team  # noqa: E402

WIDTHS = (800, 1000, 1400)


def hermetic(home: Path) -> None:
    """A home of its own, as the tests' hermetic fixture gives each test."""
    for name in list(os.environ):
        if name.startswith(("GIT_", "AGENT_", "GITLOCKS_", "XDG_")) or name == "CLAUDE_ENV_FILE":
            del os.environ[name]
    home.mkdir(parents=True)
    os.environ.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_AUTHOR_NAME="Ada",
        GIT_AUTHOR_EMAIL="ada@example.invalid",
        GIT_COMMITTER_NAME="Ada",
        GIT_COMMITTER_EMAIL="ada@example.invalid",
    )
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Ada\n\temail = ada@example.invalid\n[init]\n\tdefaultBranch = main\n"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=PROJECT / "docs" / "images")
    parser.add_argument("--widths", default=",".join(map(str, WIDTHS)))
    parser.add_argument("--height", type=int, default=900)
    args = parser.parse_args()
    if CHROMIUM is None:
        print("error: chromium is not installed", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="gitlocks-shots-") as tmp:
        hermetic(Path(tmp) / "home" / "ada")
        base = Path(tmp) / "home" / "ada" / "src"
        with team(base) as demo:
            script = os.path.join(os.path.dirname(sys.executable), "git-alock")
            ui = subprocess.Popen(
                [script, "ui", "--no-browser"],
                cwd=demo["repo"],
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
            try:
                assert ui.stdout is not None
                url = ui.stdout.readline().strip()
                with chromium() as page:
                    for width in (int(w) for w in args.widths.split(",")):
                        page.window(width, args.height)
                        page.goto(url)
                        page.wait_for("document.body.dataset.firstRender", "the first render")
                        page.wait_for("!!document.querySelector('.link.up')", "the live link")
                        page.window(width, args.height)
                        shot = args.out / f"live-{width}.png"
                        page.screenshot(shot)
                        print(shot.relative_to(PROJECT) if shot.is_relative_to(PROJECT) else shot)
            finally:
                ui.terminate()
                ui.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
