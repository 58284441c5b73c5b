"""Which paths a commit or a push touches: the git hooks' reading of changed paths.

Every call runs in the hook's environment (``Env.INHERIT``): git's ``GIT_DIR``,
``GIT_INDEX_FILE`` (the temporary index of ``git commit -a``) and friends are honoured.
Part of the hook path: imports neither the command-line framework nor pygit2.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence

from gitlocks.core.record import is_object_id
from gitlocks.core.value import Value
from gitlocks.errors import StoreError
from gitlocks.git import run
from gitlocks.git.objects import cat_file_check
from gitlocks.layout import OWN_REF_PREFIXES

TYPE_CHECKING = False  # typing is for mypy: docs/design.md, section 8
if TYPE_CHECKING:
    from gitlocks.git.run import Process

_DIFF_OPTIONS = ("-z", "--name-status", "-M", "--diff-filter=ACDMRT", "--no-color", "--no-ext-diff")
# Merges: the combined diff names the paths a merge changes against every parent, not
# those it takes from one side (whose own commits are checked); a rename in each parent.
_MERGE_OPTIONS = ("-c", "--combined-all-paths")


def start_git(args: Sequence[str], cwd: str | None = None) -> Process:
    """Start git on the repository the hook runs for, in the same environment."""
    return run.start(args, cwd, env=run.Env.INHERIT, error=StoreError)


def finish_git(proc: Process, feed: bytes = b"", ok: Sequence[int] = (0,)) -> bytes:
    return run.finish(proc, feed, ok=ok, error=StoreError)


def git_output(args: Sequence[str], cwd: str | None = None) -> bytes:
    return finish_git(start_git(args, cwd))


def parse_name_status(raw: bytes) -> list[str]:
    """Paths from ``--name-status -z`` output; renames and copies give both sides, a
    merge's combined entry (``MM``, ``RM``) the path in each parent, then its own."""
    fields = raw.split(b"\0")
    paths: list[str] = []
    i = 0
    while i < len(fields):
        status = fields[i]
        if not status:
            i += 1
            continue
        if len(status) > 1 and status.isalpha():
            width = len(status) + 1
        else:
            width = 2 if status[:1] in (b"R", b"C") else 1
        paths.extend(os.fsdecode(name) for name in fields[i + 1 : i + 1 + width])
        i += 1 + width
    return list(dict.fromkeys(paths))


def staged_paths(cwd: str | None = None) -> list[str]:
    """The paths the next commit changes (both sides of a rename); while it concludes a
    merge, only the committer's own changes (``Staged``)."""
    return Staged(cwd).paths()


_STAGED_ARGS = ("diff", "--cached", *_DIFF_OPTIONS)
# Against a merge head: any difference at all, each side of a rename under its own name.
_AGAINST_ARGS = ("diff", "--cached", "-z", "--name-only", "--no-renames", "--no-ext-diff")


class Staged:
    """The staged-path question, started (its git calls run while the caller goes on).

    While a merge concludes (``MERGE_HEAD``), the paths it brings from the other side are
    other commits' changes, checked when they were made: a path counts only when its
    staged content differs from HEAD and from every merge head (docs/design.md, section 6).
    Cherry-picks and reverts are ordinary commits: every path they change counts.
    """

    def __init__(self, cwd: str | None = None) -> None:
        heads = merge_heads(cwd)  # a file read, no git call, when no merge is in progress
        self.procs = [start_git(_STAGED_ARGS, cwd)]
        self.procs += [start_git([*_AGAINST_ARGS, head, "--"], cwd) for head in heads]

    def paths(self) -> list[str]:
        outs = run.finish_all(self.procs, error=StoreError)
        staged = parse_name_status(outs[0])
        keep = set(staged)
        for raw in outs[1:]:
            keep.intersection_update(os.fsdecode(name) for name in raw.split(b"\0") if name)
        return [path for path in staged if path in keep]


def merge_heads(cwd: str | None = None) -> list[str]:
    """The commits a merge in progress brings in: the lines of ``MERGE_HEAD``, or none.

    ``MERGE_HEAD`` is always a file in the worktree's git dir (reftable too), and names
    every head of an octopus. Inside a hook that dir is known without git (``GIT_DIR``, or
    the ``.git`` where hooks run); elsewhere a git call finds it.
    """
    git_dir = _git_dir_hint(cwd)
    if git_dir is not None:
        path = os.path.join(git_dir, "MERGE_HEAD")
    else:
        out = git_output(["rev-parse", "--git-path", "MERGE_HEAD"], cwd)
        path = os.path.join(cwd or os.curdir, os.fsdecode(out.rstrip(b"\n")))
    try:
        with open(path, "rb") as f:
            lines = f.read().decode("ascii", "replace").split()
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror}") from exc
    return list(dict.fromkeys(line.lower() for line in lines if is_object_id(line.lower())))


def _git_dir_hint(cwd: str | None) -> str | None:
    """The git dir, when the environment or a ``.git`` in ``cwd`` says so without git."""
    base = cwd or os.curdir
    env = os.environ.get("GIT_DIR")
    if env:
        return os.path.join(base, env)
    dot_git = os.path.join(base, ".git")
    if os.path.isdir(dot_git):
        return dot_git
    try:  # a linked worktree's or a submodule's ".git" file: "gitdir: <path>"
        with open(dot_git, "rb") as f:
            first = os.fsdecode(f.readline().rstrip(b"\r\n"))
    except OSError:
        return None
    if first.startswith("gitdir: "):
        return os.path.join(base, first[len("gitdir: ") :])
    return None


class RefUpdate(Value):
    """One line of pre-push's standard input."""

    __slots__ = ("local_ref", "local_sha", "remote_ref", "remote_sha")

    def __init__(
        self,
        local_ref: str,
        local_sha: str,
        remote_ref: str,
        remote_sha: str,
    ) -> None:
        self.local_ref = local_ref
        self.local_sha = local_sha
        self.remote_ref = remote_ref
        self.remote_sha = remote_sha

    @classmethod
    def parse(cls, line: str) -> RefUpdate | None:
        parts = line.split()
        return cls(*parts) if len(parts) == 4 else None


def commits_among(shas: Iterable[str], cwd: str | None = None) -> set[str]:
    """Those of ``shas`` that name a commit (or a tag of one) we have."""
    wanted = list(dict.fromkeys(shas))
    if not wanted:
        return set()
    found = cat_file_check([f"{sha}^{{commit}}" for sha in wanted], cwd, env=run.Env.INHERIT)
    return {sha for sha, got in zip(wanted, found, strict=True) if got and got[1] == "commit"}


def pushed_paths(updates: Iterable[RefUpdate], cwd: str | None = None) -> list[str]:
    """Paths changed by the commits a push sends: reachable from a pushed tip, from no
    remote-tracking ref nor from the remote's value of the ref when we have it. Deletions
    and our own lock refs (blobs, pushed by remote mode) carry no commits."""
    wanted = [
        u
        for u in updates
        if u.local_sha.strip("0") and not u.remote_ref.startswith(OWN_REF_PREFIXES)
    ]
    known = commits_among([u.local_sha for u in wanted] + [u.remote_sha for u in wanted], cwd)
    tips = [u.local_sha for u in wanted if u.local_sha in known]
    bases = [u.remote_sha for u in wanted if u.remote_sha in known]
    if not tips:
        return []
    args = ["log", "--format=", "--no-show-signature", *_DIFF_OPTIONS, *_MERGE_OPTIONS]
    return parse_name_status(git_output([*args, *tips, "--not", "--remotes", *bases], cwd))


def push_updates(env: Mapping[str, str], stdin: Iterable[str]) -> list[RefUpdate]:
    """pre-push's stdin, or the pre-commit framework's ``PRE_COMMIT_*_REF`` variables."""
    if env.get("PRE_COMMIT_TO_REF"):
        remote = env.get("PRE_COMMIT_REMOTE_BRANCH", "")
        source = env.get("PRE_COMMIT_FROM_REF") or "0" * 40
        return [RefUpdate("", env["PRE_COMMIT_TO_REF"], remote, source)]
    return [u for u in map(RefUpdate.parse, stdin) if u is not None]
