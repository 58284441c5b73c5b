"""Questions about a project's history, asked only by claims that end when their work
lands (``--until-merged``, docs/design.md, section 6.8), so only they load this module.
"""

from __future__ import annotations

from gitlocks.core.record import is_object_id
from gitlocks.errors import StoreError
from gitlocks.git.run import Env, start

TYPE_CHECKING = False  # typing is for mypy: docs/design.md, section 8
if TYPE_CHECKING:
    import pygit2

    from gitlocks.git.objects import Objects


def commit_of(objects: Objects, oid: str | None) -> str | None:
    """The commit ``oid`` names (tags peeled), or None: no such object, or no commit."""
    for _ in range(10):  # a tag of a tag ...: a few levels, never a loop
        found = objects.read(oid) if oid else None
        if found is None or found[0] not in ("commit", "tag"):
            return None
        if found[0] == "commit":
            return oid
        head = found[1].split(b"\n", 1)[0]
        oid = head[len(b"object ") :].decode() if head.startswith(b"object ") else None
    return None


def contains(git_dir: str, tip: str, commit: str) -> bool:
    """Whether ``commit`` is ``tip`` or one of its ancestors (False when unknown)."""
    if tip == commit:
        return True
    if not (is_object_id(tip) and is_object_id(commit)):
        return False
    proc = start(["--git-dir", git_dir, "merge-base", "--is-ancestor", commit, tip],
                 env=Env.CLEAN, error=StoreError)  # fmt: skip
    proc.communicate()
    return proc.returncode == 0


def paths_changed_since(
    repo: pygit2.Repository, head: str, base: str, limit: int
) -> set[str] | None:
    """The paths changed (both sides, against the first parent) by the commits of ``head``
    that ``base`` lacks; None when there are more than ``limit`` of them or they cannot be
    read."""
    import pygit2  # history's diffs: libgit2 reads them faster than git's processes

    changed: set[str] = set()
    try:
        walker = repo.walk(head, pygit2.enums.SortMode.NONE)
        walker.hide(base)
        for count, commit in enumerate(walker):
            if count >= limit:
                return None
            if commit.parents:
                diff = commit.parents[0].tree.diff_to_tree(commit.tree)
            else:
                diff = commit.tree.diff_to_tree(swap=True)
            for delta in diff.deltas:
                for side in (delta.old_file, delta.new_file):
                    changed.add(side.raw_path.decode("utf-8", "surrogateescape"))
    except (pygit2.GitError, KeyError, ValueError):
        return None
    return changed
