"""Table tests for the scope engine (docs/design.md, section 2)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import gitlocks
from gitlocks.core.scope import (
    WHOLE_TREE,
    ScopeEntry,
    ScopeIndex,
    entries_overlap,
    entry_covers,
    has_wildcards,
    literal_path,
    make_entry,
    normalize_pattern,
    pattern_covers,
    patterns_overlap,
    validate_pattern,
)
from gitlocks.errors import EXIT_ERROR, InvalidPattern

OVERLAPS = [
    # docs/design.md, section 2.1, rule 5, and the pinned regression: "**" matching zero segments.
    ("src/**/api", "src/api", True),
    ("src/*.py", "src/a*", True),
    ("src/api/**", "src/web/**", False),
    ("src/*.py", "src/a/b.py", False),
    # Subtree semantics (rule 4): all three spellings are the same scope.
    ("src/api", "src/api/x.py", True),
    ("src/api/", "src/api/**", True),
    ("src/api", "src/apix", False),
    ("src/*.py", "src/a.py/x", True),
    ("packages/README.md", "packages/*/package.json", True),
    # Whole tree.
    ("**", "deep/down/file", True),
    (".", "x", True),
    ("**/*.test.ts", "src/a.test.ts", True),
    ("**/*.test.ts", "src/a.ts", True),  # src/a.ts/b.test.ts, imaginary but covered
    ("*.py", "src/a.py", False),  # anchored: top-level only
    ("**/*.py", "src/a.py", True),
    # Segment-level products with wildcards on both sides.
    ("a*b", "*c*", True),
    ("[ab]x", "[!a]x", True),
    ("[a]", "[!a]", False),
    ("[^a]", "a", False),
    ("[a-c]", "[c-e]", True),
    ("[a-c]", "[d-f]", False),
    ("?", "ab", False),
    ("??", "ab", True),
    ("a*", "*b", True),
    ("a?c", "*b*", True),
    ("x*y*z", "*q*", True),
    ("abc*", "abd*", False),
    ("*.py", "*.ts", False),
    ("a**b", "axxb", True),  # "**" inside a segment is "*"
    ("a**b", "a/b", False),
    # "**" spanning segments on both sides.
    ("a/**/b/**/c", "**/c", True),
    ("**/x/**", "**/y/**", True),
    ("a/**/b", "c/**", False),
    ("a/*/b", "*/c/*", True),
    ("a/*/b", "a/c", True),
    ("a/*/b", "a/c/d", False),
    # Escapes.
    ("\\*", "x", False),
    ("\\*", "*", True),
    ("a\\?", "a?", True),
    ("a\\[b]", "a[[]b]", True),
    ("a\\[b]", "ab", False),
    # A segment is never "." or "..": the only common names here are those.
    (".?", "?.", False),
    ("[.]", "**", False),
    ("a/[.][.]/b", "**", False),
    ("...", "*", True),
]


@pytest.mark.parametrize(("a", "b", "expected"), OVERLAPS)
def test_overlap_table(a: str, b: str, expected: bool) -> None:
    assert patterns_overlap(a, b) is expected
    assert patterns_overlap(b, a) is expected


def test_public_api_at_package_top() -> None:
    assert gitlocks.patterns_overlap("src/**/api", "src/api")
    assert gitlocks.pattern_covers("src", "src/a.py")
    assert issubclass(gitlocks.InvalidPattern, ValueError)


COVERS = [
    ("src/api", "src/api", True),
    ("src/api", "src/api/x/y.py", True),
    ("src/api/", "src/api/x", True),
    ("src/api/**", "src/api", True),
    ("src/api", "src/apix", False),
    ("src/api", "src", False),
    ("*.py", "a.py", True),
    ("*.py", "src/a.py", False),
    ("*", ".hidden", True),  # a leading dot is matched too
    ("?", "/", False),
    ("src/**/api", "src/api", True),
    ("src/**/api", "src/x/y/api/z", True),
    ("**/api", "api", True),
    ("**", "anything/at/all", True),
    ("a/[!b]", "a/c", True),
    ("a/[!b]", "a/b", False),
    ("a/[^b]", "a/b", False),
    ("[]a]", "]", True),
    ("[a-]", "-", True),
    ("[!]a]", "b", True),
    ("[!]a]", "]", False),
    ("[\\]]", "]", True),
    ("a\\*", "a*", True),
    ("a\\*", "ab", False),
    ("src/api", "./src//api/", True),  # concrete paths are normalised too
]


@pytest.mark.parametrize(("pattern", "path", "expected"), COVERS)
def test_covers_table(pattern: str, path: str, expected: bool) -> None:
    assert pattern_covers(pattern, path) is expected


def test_ignore_case() -> None:
    assert not patterns_overlap("Src/API", "src/api")
    assert patterns_overlap("Src/API", "src/api", ignore_case=True)
    assert pattern_covers("SRC/*.PY", "src/a.py", ignore_case=True)
    assert not pattern_covers("SRC/*.PY", "src/a.py")
    # Classes are closed under folding, and negation is applied after folding.
    assert patterns_overlap("[A-Z]", "q", ignore_case=True)
    assert not patterns_overlap("[A-Z]", "[!a-z]", ignore_case=True)
    assert patterns_overlap("[A-Z]", "[!a-z]")
    assert not pattern_covers("[!a]", "A", ignore_case=True)
    assert pattern_covers("Ä*", "äx", ignore_case=True)
    assert patterns_overlap("[Σ]", "ς", ignore_case=True)  # final sigma folds to sigma


INVALID = [
    ("", "empty"),
    ("!src", "negation"),
    ("src/[ab", "unterminated"),
    ("[!]", "unterminated"),
    ("[z-a]", "reversed range"),
    ("src\\", "trailing lone"),
    ("a\x00b", "control"),
    ("a\nb", "control"),
    ("a\x7fb", "control"),
    ("a\x85b", "control"),
    ("../x", "outside the repository"),
    ("a/../../x", "outside the repository"),
    ("*/../x", "after a wildcard"),
    ("src/**/..", "after a wildcard"),
    ("[[:alpha:]]", "POSIX"),
    ("/abs/path", "absolute"),
]


@pytest.mark.parametrize(("pattern", "reason"), INVALID)
def test_invalid_patterns(pattern: str, reason: str) -> None:
    for check in (
        validate_pattern,
        lambda p: pattern_covers(p, "x"),
        lambda p: patterns_overlap(p, "x"),
        lambda p: patterns_overlap("x", p),
    ):
        with pytest.raises(InvalidPattern) as info:
            check(pattern)
        assert reason in info.value.reason
        assert info.value.pattern == pattern
        assert info.value.exit_code == EXIT_ERROR
        assert repr(pattern) in str(info.value)


@pytest.mark.parametrize(
    "pattern", ["a/b/../c", "./a", "a//b/", "[[]", "[[:]", "a]b", "\\!x", "x/!y", "src/**"]
)
def test_valid_odd_spellings(pattern: str) -> None:
    validate_pattern(pattern)


NORMALISE = [
    # (typed, cwd, stored)
    ("src/api", "", "src/api"),
    ("./a", "", "a"),
    ("a//b", "", "a/b"),
    ("src/api/", "", "src/api"),
    ("src/api/**", "", "src/api/**"),  # kept as typed; same scope as "src/api"
    ("a/**/**/b", "", "a/**/b"),
    (".", "", WHOLE_TREE),
    ("./", "", WHOLE_TREE),
    ("**", "", WHOLE_TREE),
    (":/", "sub", WHOLE_TREE),
    (":/x/y", "sub/dir", "x/y"),
    ("a/b/../c", "", "a/c"),
    ("a.py", "src", "src/a.py"),
    ("*.py", "src", "src/*.py"),
    (".", "src", "src"),
    ("**", "src", "src/**"),
    ("..", "src", WHOLE_TREE),
    ("../docs/x.md", "src/api", "src/docs/x.md"),
    ("../../x", "src/api", "x"),
    ("x", "we[ir]d/*dir", "we\\[ir]d/\\*dir/x"),  # the cwd is a literal path
    ("x", "!bang", "\\!bang/x"),
    ("\\*lit", "", "\\*lit"),
    (":x", "", ":x"),
]


@pytest.mark.parametrize(("typed", "cwd", "stored"), NORMALISE)
def test_normalize_pattern(typed: str, cwd: str, stored: str) -> None:
    assert normalize_pattern(typed, cwd=cwd) == stored


@pytest.mark.parametrize(
    ("typed", "cwd", "reason"),
    [
        ("..", "", "outside the repository"),
        ("../../x", "src", "outside the repository"),
        ("src/*/../x", "", "after a wildcard"),
        ("!x", "src", "negation"),
        (":!x", "", "negation"),
        (":^x", "", "negation"),
        (":(glob)x", "", "magic"),
        ("/tmp/x", "", "root is not known"),
        ("", "src", "empty"),
        ("a\tb", "", "control"),
    ],
)
def test_normalize_refuses(typed: str, cwd: str, reason: str) -> None:
    with pytest.raises(InvalidPattern) as info:
        normalize_pattern(typed, cwd=cwd)
    assert reason in info.value.reason
    assert info.value.pattern == typed  # the message names what the user typed


def test_absolute_paths(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    outside = tmp_path / "other"
    outside.mkdir()
    assert normalize_pattern(f"{root}/src/*.py", root=str(root)) == "src/*.py"
    assert normalize_pattern(str(root), root=str(root)) == WHOLE_TREE
    assert normalize_pattern(f"{root}/", root=f"{root}/") == WHOLE_TREE
    assert normalize_pattern(f"{root}/new/file.txt", root=str(root)) == "new/file.txt"
    assert normalize_pattern(f"{root}/src/../x", root=str(root)) == "x"
    for bad in (str(outside), f"{root}/../other/x", f"{tmp_path}/*/src", f"{root}x/a"):
        with pytest.raises(InvalidPattern, match="outside the repository"):
            normalize_pattern(bad, root=str(root))


def test_absolute_paths_through_symlinks(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(root)
    assert normalize_pattern(f"{link}/src/a.py", root=str(root)) == "src/a.py"
    assert normalize_pattern(f"{root}/src/**", root=str(link)) == "src/**"
    escape = root / "escape"
    escape.symlink_to(tmp_path)
    with pytest.raises(InvalidPattern, match="outside the repository"):
        normalize_pattern(f"{tmp_path}/elsewhere", root=str(root))


@pytest.mark.parametrize("odd", ["x[1]", "a*b", "q?", "br[a-z]", "back\\slash", "!bang"])
def test_absolute_paths_under_a_root_with_wildcard_characters(tmp_path: Path, odd: str) -> None:
    """The root's own part of an absolute path is literal, never a pattern."""
    root = tmp_path / odd / "r"
    (root / "src").mkdir(parents=True)
    assert normalize_pattern(f"{root}/src", root=str(root)) == "src"
    assert normalize_pattern(f"{root}/src/*.py", root=str(root)) == "src/*.py"
    assert normalize_pattern(f"{root}", root=f"{root}/") == WHOLE_TREE
    assert normalize_pattern(f"{root}//./src/a?", root=str(root)) == "src/a?"
    assert normalize_pattern(f"{root}/!x", root=str(root)) == "\\!x"
    link = tmp_path / "link"
    link.symlink_to(root)
    assert normalize_pattern(f"{link}/src/*.py", root=str(root)) == "src/*.py"
    assert normalize_pattern(f"{root}/src/[ab]", root=str(link)) == "src/[ab]"
    for bad in (f"{root}/../x", f"{root}x/a", f"{tmp_path}/*/r/a"):
        with pytest.raises(InvalidPattern, match="outside the repository"):
            normalize_pattern(bad, root=str(root))


def test_absolute_paths_with_the_root_escaped(tmp_path: Path) -> None:
    root = tmp_path / "x[1]" / "r"
    (root / "src").mkdir(parents=True)
    escaped = str(root).replace("[", "\\[")
    assert normalize_pattern(f"{escaped}/src/*.py", root=str(root)) == "src/*.py"


def test_normalized_patterns_are_fixed_points() -> None:
    for typed, cwd, stored in NORMALISE:
        assert normalize_pattern(stored) == stored, (typed, cwd)


def test_has_wildcards_and_literal_path() -> None:
    assert has_wildcards("src/*.py")
    assert has_wildcards("a?")
    assert has_wildcards("[ab]")
    assert has_wildcards("**")
    assert not has_wildcards("src/a.py")
    assert not has_wildcards("a\\*b\\?\\[c]")
    assert literal_path("a\\*b\\?\\[c]") == "a*b?[c]"


def test_make_entry_exactness() -> None:
    files = {"src/a.py", "docs/x*y.md"}
    asked: list[str] = []

    def is_file(path: str) -> bool:
        asked.append(path)
        return path in files

    assert make_entry("a.py", cwd="src", is_file=is_file) == ScopeEntry("src/a.py", exact=True)
    assert make_entry("src/b.py", is_file=is_file) == ScopeEntry("src/b.py")
    assert make_entry("docs/x\\*y.md", is_file=is_file).exact
    assert asked == ["src/a.py", "src/b.py", "docs/x*y.md"]  # literal paths, unescaped
    assert make_entry("src/*.py", is_file=is_file) == ScopeEntry("src/*.py")
    assert make_entry(".", is_file=lambda _: True) == ScopeEntry(WHOLE_TREE)
    assert make_entry("src/a.py") == ScopeEntry("src/a.py")  # no repository at hand


def test_exact_entries() -> None:
    readme = ScopeEntry("packages/README.md", exact=True)
    manifests = ScopeEntry("packages/*/package.json")
    assert not entries_overlap(readme, manifests)
    assert entries_overlap(ScopeEntry("packages/README.md"), manifests)
    assert entries_overlap(readme, ScopeEntry("packages/*.md"))
    assert entries_overlap(readme, ScopeEntry("packages"))
    assert entries_overlap(readme, ScopeEntry("packages/README.md", exact=True))
    assert not entries_overlap(readme, ScopeEntry("packages/README.mdx", exact=True))
    assert entries_overlap(readme, ScopeEntry("**/*.md"))
    assert not entries_overlap(ScopeEntry("a.test.ts", exact=True), ScopeEntry("**/*.test.js"))
    assert entry_covers(readme, "packages/README.md")
    assert not entry_covers(readme, "packages/README.md/x")
    assert entry_covers(ScopeEntry("packages/README.md"), "packages/README.md/x")
    upper = ScopeEntry("Packages/ReadMe.md", exact=True)
    assert entries_overlap(readme, upper, ignore_case=True)
    assert not entries_overlap(readme, upper)
    assert entry_covers(upper, "packages/readme.md", ignore_case=True)


def test_scope_entry_validates() -> None:
    with pytest.raises(InvalidPattern):
        ScopeEntry("[oops")
    with pytest.raises(InvalidPattern, match="exact"):
        ScopeEntry("src/*.py", exact=True)
    for pattern in (WHOLE_TREE, "src/**", "src/a.py/**"):
        with pytest.raises(InvalidPattern, match="exact"):
            ScopeEntry(pattern, exact=True)


def test_index_basics() -> None:
    index = ScopeIndex()
    index.add(("a", "0"), ScopeEntry("src/api/**"))
    index.add(("a", "1"), ScopeEntry("docs/x.md", exact=True))
    index.add(("b", "0"), ScopeEntry("**/*.test.ts"))
    index.add(("c", "0"), ScopeEntry("src/web"))
    assert len(index) == 4
    assert ("a", "1") in index
    assert sorted(index.overlapping(ScopeEntry("src/api/v1"))) == [("a", "0"), ("b", "0")]
    assert sorted(index.overlapping(ScopeEntry("src/**/api"))) == [
        ("a", "0"),
        ("b", "0"),
        ("c", "0"),
    ]
    assert sorted(index.overlapping(ScopeEntry("src/web/x.test.ts", exact=True))) == [
        ("b", "0"),
        ("c", "0"),
    ]
    assert sorted(index.overlapping(ScopeEntry("src"))) == [("a", "0"), ("b", "0"), ("c", "0")]
    assert sorted(index.overlapping(ScopeEntry("docs/*.md"))) == [("a", "1"), ("b", "0")]
    assert sorted(index.overlapping(ScopeEntry("docs/x.md/y"))) == [("b", "0")]
    assert sorted(index.covering("src/api/v1/a.py")) == [("a", "0")]
    assert sorted(index.covering("src/web/a.test.ts")) == [("b", "0"), ("c", "0")]
    assert sorted(index.covering("docs/x.md")) == [("a", "1")]
    index.remove(("a", "0"))
    index.remove(("a", "0"))  # absent: no error
    index.remove(("zzz", "9"))
    assert len(index) == 3
    assert sorted(index.overlapping(ScopeEntry("src/api/v1"))) == [("b", "0")]
    index.add(("c", "0"), ScopeEntry("elsewhere"))  # same key: replaced
    assert len(index) == 3
    assert sorted(index.overlapping(ScopeEntry("src/web"))) == [("b", "0")]


def test_index_caches_follow_adds_and_removes() -> None:
    index = ScopeIndex()
    k1, k2, k3 = ("1", ""), ("2", ""), ("3", "")  # (lock id, pattern)
    index.add(k1, ScopeEntry("*.md"))
    assert index.overlapping(ScopeEntry("a/x")) == []  # remembers: no glob matches "a"
    index.add(k2, ScopeEntry("a*/x"))  # a new glob at the root that does match "a"
    assert index.overlapping(ScopeEntry("a/x")) == [k2]
    assert index.covering("a/x/y") == [k2]
    index.add(k3, ScopeEntry("[ab]/x"))
    assert sorted(index.overlapping(ScopeEntry("a/x"))) == [k2, k3]
    index.remove(k2)
    index.remove(k3)
    assert index.overlapping(ScopeEntry("a/x")) == []
    index.add(k3, ScopeEntry("?/x"))
    assert index.overlapping(ScopeEntry("a/x")) == [k3]
    assert len(index) == 2


def test_index_ignore_case() -> None:
    index = ScopeIndex(ignore_case=True)
    index.add(("upper", ""), ScopeEntry("SRC/Api"))
    index.add(("exact", ""), ScopeEntry("Docs/X.md", exact=True))
    assert sorted(index.overlapping(ScopeEntry("src/api/**"))) == [("upper", "")]
    assert sorted(index.overlapping(ScopeEntry("docs/x.MD", exact=True))) == [("exact", "")]
    assert sorted(index.covering("src/API/z")) == [("upper", "")]
    assert ScopeIndex().overlapping(ScopeEntry("src")) == []


def test_import_is_pure() -> None:
    code = textwrap.dedent(
        """
        import sys
        import gitlocks.core.scope
        heavy = sorted({"pygit2", "typer", "pathspec"} & {m.split(".")[0] for m in sys.modules})
        print(",".join(heavy))
        """
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    assert out.stdout.strip() == ""
