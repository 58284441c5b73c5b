"""The manual page that `git alock --help` opens (git turns it into `git help alock`)."""

from __future__ import annotations

import re
from pathlib import Path

from gitlocks.cli.app import VERBS

MANPAGE = Path(__file__).resolve().parent.parent / "man" / "git-alock.1"


def test_manpage_names_every_verb_and_setting() -> None:
    text = MANPAGE.read_text()
    verbs = set(VERBS)
    headings = set(re.findall(r"^\.(?:B|BI|BR) \"?([a-z-]+)", text, flags=re.MULTILINE))
    missing = sorted(v for v in verbs if v not in headings and v != "ls")
    assert not missing, f"verbs missing from the manual page: {missing}"
    readme = (MANPAGE.parent.parent / "README.md").read_text()
    for key in re.findall(r"`(alock\.[A-Za-z]+)`", readme):
        assert key in text, key


def test_manpage_is_packaged() -> None:
    pyproject = (MANPAGE.parent.parent / "pyproject.toml").read_text()
    assert '"share/man/man1" = ["man/git-alock.1"]' in pyproject


def test_the_version_is_written_once_and_the_page_agrees() -> None:
    """``gitlocks.__version__`` is the version; packaging reads it, the page names it."""
    from importlib.metadata import version

    from gitlocks import __version__

    assert version("gitlocks") == __version__
    pyproject = (MANPAGE.parent.parent / "pyproject.toml").read_text()
    assert re.search(r"^version\s*=\s*\"", pyproject, flags=re.MULTILINE) is None
    assert f'"gitlocks {__version__}"' in MANPAGE.read_text().splitlines()[0]
