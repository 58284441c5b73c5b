"""The manual page that `git alock --help` opens (git turns it into `git help alock`)."""

from __future__ import annotations

import re
import sys
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


def test_the_page_is_installed_where_man_looks_beside_the_command() -> None:
    """Either install the README names (``pip install .``, or the editable one its tests
    run from) puts the page in the environment's ``share/man/man1``, which ``man`` finds
    from the ``bin`` directory on PATH: an editable install once left it out."""
    installed = Path(sys.prefix) / "share" / "man" / "man1" / "git-alock.1"
    assert installed.is_file(), f"{installed} is missing: reinstall gitlocks"
    assert installed.read_text().splitlines()[0] == MANPAGE.read_text().splitlines()[0]


def test_the_version_is_written_once_and_the_page_agrees() -> None:
    """``gitlocks.__version__`` is the version; packaging reads it, the page names it."""
    from importlib.metadata import version

    from gitlocks import __version__

    assert version("gitlocks") == __version__
    pyproject = (MANPAGE.parent.parent / "pyproject.toml").read_text()
    assert re.search(r"^version\s*=\s*\"", pyproject, flags=re.MULTILINE) is None
    assert f'"gitlocks {__version__}"' in MANPAGE.read_text().splitlines()[0]
