"""A claim on nothing that exists is still a claim, with a note naming the closest path."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import git
from hypothesis import given, settings
from hypothesis import strategies as st
from support.cli import alock

from gitlocks.core.scope import make_entry
from gitlocks.service import typos

A = {"AGENT_ID": "agent-a"}


@pytest.fixture
def tree(repo: Path) -> Path:
    for path in ("src/auth/login.py", "src/api/routes.py", "docs/guide.md"):
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text("x\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "tree")
    return repo


@pytest.mark.parametrize(
    ("pattern", "closest"),
    [
        ("srcc/**", "src"),
        ("SRC/auth", "src/auth"),
        ("src/atuh/*.py", "src/auth"),
        ("dcos/guide.md", "docs/guide.md"),
    ],
)
def test_a_typo_is_claimed_with_a_note_naming_the_closest_path(
    tree: Path, pattern: str, closest: str
) -> None:
    got = alock(tree, "acquire", pattern, **A)
    assert got.code == 0 and got.word.startswith(f"ACQUIRED {pattern}"), got
    assert f"note: {pattern} covers nothing that exists yet" in got.err
    assert f"the closest existing path is {closest}" in got.err
    doc = alock(tree, "acquire", pattern, "--json", **A).json()  # already yours: no note
    assert doc["status"] == "already_yours" and "covers_nothing" not in doc


def test_the_json_answer_names_the_closest_path(tree: Path) -> None:
    doc = alock(tree, "acquire", "srcc/**", "docs/**", "--json", **A).json()
    assert doc["status"] == "acquired"
    assert doc["covers_nothing"] == [{"pattern": "srcc/**", "closest": "src"}]


@pytest.mark.parametrize(
    "pattern", ["src/**", "src/auth", "src/*.py", "*.md", "**", "src/auth/login.py"]
)
def test_a_pattern_over_existing_paths_gets_no_note(tree: Path, pattern: str) -> None:
    got = alock(tree, "acquire", pattern, "--json", **A)
    assert got.code == 0 and got.json()["covers_nothing"] == [], got
    assert "note:" not in got.err


def test_a_new_file_is_claimed_with_a_plain_note(tree: Path) -> None:
    got = alock(tree, "acquire", "brand-new-module/**", **A)
    assert got.code == 0 and got.word.startswith("ACQUIRED brand-new-module/**")
    assert "note: brand-new-module/** covers nothing that exists yet\n" in got.err


def test_untracked_and_deleted_paths_count_as_existing(tree: Path) -> None:
    (tree / "scratch").mkdir()
    (tree / "scratch" / "n.txt").write_text("untracked\n")
    (tree / "docs" / "guide.md").unlink()  # deleted, still in the index
    for pattern in ("scratch/**", "docs/guide.md"):
        got = alock(tree, "acquire", pattern, **A)
        assert got.code == 0 and "note:" not in got.err, got


def test_case_insensitive_repositories_need_no_note_for_case(tree: Path) -> None:
    git(tree, "config", "core.ignoreCase", "true")
    (tree / "docs" / "guide.md").unlink()  # only the index has it, in its own case
    got = alock(tree, "acquire", "DOCS/Guide.md", **A)
    assert got.code == 0 and "note:" not in got.err, got


def test_the_index_is_listed_only_when_a_literal_part_is_missing(tree: Path) -> None:
    def never() -> list[str]:
        raise AssertionError("listed the index")

    claim = [make_entry(p, cwd="", root=str(tree)) for p in ("src/**", "src/*/x.py", "**")]
    assert typos.uncovered(str(tree), claim, list_files=never) == []
    listed: list[int] = []

    def once() -> list[str]:
        listed.append(1)
        return typos.tracked_files(str(tree))

    claim = [make_entry(p, cwd="", root=str(tree)) for p in ("srcc/**", "dcos/**")]
    found = typos.uncovered(str(tree), claim, list_files=once)
    assert [(u.pattern, u.closest) for u in found] == [("srcc/**", "src"), ("dcos/**", "docs")]
    assert listed == [1]


def test_many_names_stay_bounded(tree: Path) -> None:
    files = [f"pkg{i}/mod.py" for i in range(20000)] + ["src/auth/login.py", "sr/x"]
    claim = [make_entry("srcc/**", cwd="", root=str(tree))]
    [found] = typos.uncovered(str(tree), claim, list_files=lambda: files)
    assert found.closest == "src"


@settings(max_examples=300, deadline=None)
@given(
    name=st.text(alphabet="abcdeSRC._-7", min_size=1, max_size=8),
    names=st.lists(st.text(alphabet="abcdeSRC._-7", min_size=1, max_size=8), max_size=12),
)
def test_the_closest_name_is_difflibs_own_answer(name: str, names: list[str]) -> None:
    """The names dropped before difflib is asked could never have reached its cutoff."""
    import difflib

    from gitlocks.service.typos import CUTOFF, _close_name

    folded: dict[str, str] = {}
    for candidate in names:
        folded.setdefault(candidate.casefold(), candidate)
    if name.casefold() in folded:
        expected: str | None = folded[name.casefold()]
    else:
        close = difflib.get_close_matches(name.casefold(), list(folded), n=1, cutoff=CUTOFF)
        expected = folded[close[0]] if close else None
    assert _close_name(name, names) == expected


_SEGMENT = st.text(alphabet="ab.-/0Z\u00e9", min_size=1, max_size=3).filter(
    lambda s: "/" not in s and s not in (".", "..")
)


@settings(max_examples=300, deadline=None)
@given(
    paths=st.lists(st.lists(_SEGMENT, min_size=1, max_size=4).map("/".join), max_size=30),
    parent=st.lists(_SEGMENT, max_size=3),
    fold=st.booleans(),
)
def test_the_index_answers_as_every_path_listed_would(
    tmp_path_factory: pytest.TempPathFactory, paths: list[str], parent: list[str], fold: bool
) -> None:
    """The sorted index searched by halves answers each question as a walk over every path
    and every directory above one does (the oracle: what it replaced)."""
    from gitlocks.service.typos import _Index

    root = str(tmp_path_factory.mktemp("empty"))  # nothing on disk: the index alone
    folding = str.casefold if fold else str
    children: dict[str, set[str]] = {}
    held: set[str] = set()
    for path in paths:
        parts = path.split("/")
        for depth in range(len(parts)):
            children.setdefault("/".join(parts[:depth]), set()).add(parts[depth])
            held.add(folding("/".join(parts[: depth + 1])))
    index = _Index(paths, root)
    assert index.names_under(parent) == sorted(children.get("/".join(parent), set()))
    for literal in {*held, *("/".join(parent[:d]) for d in range(1, len(parent) + 1))}:
        assert index.holds(folding(literal), folding) == (folding(literal) in held)


def test_a_large_index_is_listed_below_the_missing_part_only(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """git lists only the directory a missing part is under: the notes, the suggestions
    and the paths deleted from the tree but still tracked read as from the whole
    listing."""
    (tree / "src" / "api" / "routes.py").unlink()  # deleted, still in the index
    for pattern, closest in [
        ("src/atuh/*.py", "src/auth"),
        ("src/api/routes.py", None),  # tracked: it covers that
        ("src/auth/new.py", ""),  # a new file: a plain note
        ("srcc/**", "src"),
        ("dcos/guide.md", "docs/guide.md"),
    ]:
        claim = [make_entry(pattern, cwd="", root=str(tree))]
        proc = typos.start_listing(str(tree), claim)
        listed = typos.finish_listing(proc)
        if pattern.startswith("src/"):
            assert listed and all(p.startswith("src/") for p in listed), listed
        found = typos.uncovered(str(tree), claim, list_files=listed.copy)
        if closest is None:
            assert found == []
        else:
            assert [(u.pattern, u.closest or "") for u in found] == [(pattern, closest)]


@pytest.mark.parametrize(
    "pathspec_env",
    [
        {"GIT_LITERAL_PATHSPECS": "1"},
        {"GIT_LITERAL_PATHSPECS": "1", "GIT_GLOB_PATHSPECS": "1"},
        {"GIT_NOGLOB_PATHSPECS": "1"},
        {"GIT_ICASE_PATHSPECS": "1"},
    ],
)
def test_pathspec_settings_of_the_environment_change_no_note(
    tree: Path, monkeypatch: pytest.MonkeyPatch, pathspec_env: dict[str, str]
) -> None:
    """git's global pathspec settings belong to the caller's environment: with them, the
    listing of one directory of a large index still holds what is tracked there (taken
    literally, ``:(literal)src/`` named no path; with glob too, git refused it)."""
    (tree / "src" / "api" / "routes.py").unlink()  # deleted, still in the index
    got = alock(tree, "acquire", "src/api/routes.py", "src/atuh/*.py", **pathspec_env, **A)
    assert got.code == 0, got
    assert "src/api/routes.py covers nothing" not in got.err, got
    assert "src/atuh/*.py covers nothing that exists yet; the closest existing path is " in got.err


_NAME = st.sampled_from(
    ["a", "l", "a.b", "a-b", "a0", "b", "-x", ":y", "s p", "\u00e9", "A", "a b"]
)


@settings(max_examples=40, deadline=None)
@given(
    paths=st.lists(st.lists(_NAME, min_size=1, max_size=3).map("/".join), max_size=12),
    deleted=st.sets(st.integers(0, 11)),
    link=st.booleans(),
    patterns=st.lists(
        st.tuples(st.lists(_NAME, min_size=1, max_size=4).map("/".join), st.booleans()),
        min_size=1,
        max_size=3,
    ),
)
def test_listing_one_directory_answers_as_listing_the_index(
    tmp_path_factory: pytest.TempPathFactory,
    paths: list[str],
    deleted: set[int],
    link: bool,
    patterns: list[tuple[str, bool]],
) -> None:
    """In a real tree, some files tracked but deleted from it, a link to a directory, the
    notes and suggestions read from ``git ls-files`` of the deepest existing directory are
    those read from the whole index (the oracle)."""
    import os
    import subprocess

    from gitlocks.errors import InvalidPattern

    root = tmp_path_factory.mktemp("tree")
    git(root, "init", "-q")
    made: list[Path] = []
    for path in paths:
        target = root / path
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("x\n")
            made.append(target)
        except OSError:
            continue  # a file where a directory is wanted, or the other way round
    if link and (root / "a").is_dir() and not (root / "l").exists():
        (root / "l").symlink_to("a")  # a link to a directory, tracked: no directory to list
    git(root, "add", "-A")
    for i, target in enumerate(made):
        if i in deleted and target.is_file():
            target.unlink()
    claim = []
    for literal, glob in patterns:
        try:
            claim.append(make_entry(literal + ("/**" if glob else ""), cwd="", root=str(root)))
        except InvalidPattern:
            continue
    whole = subprocess.run(
        ["git", "ls-files", "-z", "--cached"], cwd=root, capture_output=True, check=True
    ).stdout
    everything = [os.fsdecode(p) for p in whole.split(b"\0") if p]
    listed = typos.finish_listing(typos.start_listing(str(root), claim))
    expected = typos.uncovered(str(root), claim, list_files=everything.copy)
    assert typos.uncovered(str(root), claim, list_files=listed.copy) == expected
