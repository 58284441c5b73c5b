"""The repository that tracks a file decides for it, not the nearest ``.git``: a ``.git``
made inside a claimed directory takes nothing out of the claim; a real submodule and a
worktree of the same repository still decide for their own files."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import git
from support.cli import alock
from support.guard import OTHER, denial, edit, guard


@pytest.fixture
def api(repo: Path) -> Path:
    """``repo`` with a tracked src/api/auth.py, and another agent's claim on src/api/**."""
    (repo / "src" / "api").mkdir()
    (repo / "src" / "api" / "auth.py").write_text("a\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "api")
    assert alock(repo, "acquire", "src/api/**", "-m", "auth", **OTHER).code == 0
    return repo


def _claims(repo: Path) -> list[str]:
    return [p for r in alock(repo, "list", "--json").json() for p in r["paths"]]


def test_a_repository_made_inside_a_claim_takes_nothing_out_of_it(api: Path) -> None:
    git(api / "src" / "api", "init", "-q")
    assert "src/api/auth.py is inside another agent's claim" in denial(
        guard(api, edit(api, "src/api/auth.py"))
    )
    # A new file there too: the outer repository tracks that directory.
    assert "src/api/new.py is inside" in denial(guard(api, edit(api, "src/api/new.py")))
    assert _claims(api) == ["src/api/**"]
    assert not (api / "src" / "api" / ".git" / "refs" / "agent-locks").exists()


@pytest.mark.parametrize("target", ["nowhere", "elsewhere"])
def test_a_gitdir_file_inside_a_claim_takes_nothing_out_of_it(
    api: Path, tmp_path: Path, target: str
) -> None:
    other = tmp_path / target
    if target == "elsewhere":
        git(tmp_path, "init", "-q", target)
    (api / "src" / "api" / ".git").write_text(f"gitdir: {other / '.git'}\n")
    said = denial(guard(api, edit(api, "src/api/auth.py")))
    assert "src/api/auth.py is inside another agent's claim" in said


def test_a_real_submodule_decides_for_its_files(repo: Path, tmp_path: Path) -> None:
    lib = tmp_path / "lib"
    git(tmp_path, "init", "-q", "lib")
    (lib / "x.py").write_text("x\n")
    git(lib, "add", "-A")
    git(lib, "commit", "-q", "-m", "lib")
    git(repo, "submodule", "add", "-q", str(lib), "vendor/lib")
    git(repo, "commit", "-q", "-m", "submodule")
    sub = repo / "vendor" / "lib"
    assert alock(sub, "acquire", "x.py", **OTHER).code == 0
    assert "x.py is inside another agent's claim" in denial(
        guard(repo, edit(repo, "vendor/lib/x.py"))
    )
    assert alock(sub, "release", "--all", **OTHER).code == 0
    assert alock(repo, "acquire", "vendor/lib/**", **OTHER).code == 0
    got = guard(repo, edit(repo, "vendor/lib/x.py"))  # judged in the submodule: free there
    assert got.code == 0 and got.out == "", got
    assert _claims(sub) == ["x.py"]


def test_a_worktree_inside_the_tree_decides_with_its_own_paths(repo: Path) -> None:
    git(repo, "worktree", "add", "-q", "-b", "side", str(repo / "wt"))
    assert alock(repo, "acquire", "src/**", **OTHER).code == 0
    said = denial(guard(repo, edit(repo, "wt/src/app.py")))
    assert "src/app.py is inside another agent's claim" in said and "wt/src" not in said


def test_a_repository_in_an_untracked_directory_decides_for_itself(repo: Path) -> None:
    """A clone kept in a directory the outer repository tracks nothing in (a home
    directory kept in git holds projects it does not track) is its own."""
    git(repo, "init", "-q", "tools/helper")
    assert alock(repo, "acquire", "tools/**", **OTHER).code == 0
    got = guard(repo, edit(repo, "tools/helper/run.py"))
    assert got.code == 0 and got.out == "", got
    assert _claims(repo / "tools" / "helper") == ["run.py"]
