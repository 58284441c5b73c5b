"""The git command line as remote mode uses it: bounded runs and plain-language failures.

Remote mode never pushes with libgit2 (no ``atomic`` capability, docs/design.md section
9): everything that talks to the remote runs ``gitlocks.git.run.bounded`` under
``Env.REMOTE``, our repository named by ``--git-dir``, within a time limit.
"""

from __future__ import annotations

import re

from gitlocks.core.value import Value
from gitlocks.errors import RemoteError, RemoteTimeout
from gitlocks.git import run
from gitlocks.git.run import GitRun as GitRun  # remote mode names it here

# Keep our ref writes out of reflogs (gc complains about blob reflogs, section 5), and keep
# a push or fetch from starting background maintenance.
_SETTINGS = (
    "core.logAllRefUpdates=false",
    "gc.auto=0",
    "maintenance.auto=false",
    "fetch.recurseSubmodules=false",
    "push.recurseSubmodules=no",
)
_CONFIG = tuple(arg for setting in _SETTINGS for arg in ("-c", setting))

_AUTH = re.compile(
    r"(?i)authentication failed|permission denied|access denied|could not read (username|password)"
    r"|terminal prompts disabled|\b401\b|\b403\b|invalid credentials|unauthorized"
    r"|publickey|not authorized"
)
_NO_ATOMIC = "does not support --atomic"
_REASON = re.compile(r"\(([^)]*)\)\s*$")  # git's words in parentheses, ending the line


def run_git(
    git_dir: str,
    args: list[str],
    *,
    remote: str,
    what: str,
    timeout: float,
    setting: str = "alock.remoteTimeout",
    cwd: str | None = None,
) -> GitRun:
    """Run ``git --git-dir=GIT_DIR ARGS`` in ``cwd`` (where a relative remote path starts);
    a timeout kills it and raises ``RemoteTimeout`` naming ``setting``."""
    return run.bounded(
        [f"--git-dir={git_dir}", *_CONFIG, *args],
        env=run.Env.REMOTE,
        timeout=timeout,
        timed_out=timed_out(what, remote, timeout, setting),
        error=RemoteTimeout,
        cwd=cwd,
    )


def timed_out(what: str, remote: str, timeout: float, setting: str) -> str:
    """What a run against the remote that ran out of time says."""
    bound = f"{round(timeout, 1):g}s"
    said = f"{what} {remote!r} timed out after {bound} ({setting}); nothing changed locally"
    if what.startswith("push"):
        said += ". The remote may still have applied the push: git alock sync shows its state"
    return said


def failure(run: GitRun, remote: str, what: str, *, sent: bool | None = None) -> RemoteError:
    """Turn a failed git run into one plain sentence, keeping git's own words.
    ``sent=False``: a push git never sent, which the sentence says changed nothing."""
    text = run.err
    summary = summarise(text)
    if _NO_ATOMIC in text:
        return no_atomic(remote)
    tail = "" if sent is not False else ". Nothing was sent and nothing changed"
    if _AUTH.search(text):
        return RemoteError(
            f"authentication to the lock remote {remote!r} was refused: {summary}{tail}"
        )
    return RemoteError(f"cannot reach the lock remote {remote!r} ({what}): {summary}{tail}")


def no_atomic(remote: str) -> RemoteError:
    return RemoteError(
        f"the lock remote {remote!r} does not support atomic pushes (git push --atomic), "
        "which remote mode needs so that two overlapping claims can never both win. Use a "
        "dedicated bare repository (over ssh or git://) as the lock remote, or local mode: "
        "git alock remote --off"
    )


SSH_REASONS = ("Permission denied", "Host key verification failed", "kex_exchange_identification")


def summarise(stderr: str) -> str:
    """git's most telling lines, joined: ``fatal:``/``error:`` first, hints and noise dropped."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    lines = [ln for ln in lines if not ln.startswith(("hint:", "To ", "Done"))]
    noise = ("the remote end hung up", "failed to push some refs", "please make sure")
    telling = [ln for ln in lines if not any(n in ln.lower() for n in noise)]
    # git's errno line follows "unable to connect" on a line of its own: keep it. The
    # transport's own reason comes before git's "Could not read from remote repository":
    # ssh's lines (its "ssh:" prefix, a refused key, an unknown host key) are kept too.
    picked = [
        ln
        for ln in telling
        if ln.startswith(("fatal:", "error:", "ERROR:", "remote:", "ssh:"))
        or "errno=" in ln
        or ln.startswith(SSH_REASONS)
    ]
    chosen = (picked or telling or lines)[:3]
    return " / ".join(chosen) if chosen else "git gave no reason"


class PushLine(Value):
    """One ref's line of ``git push --porcelain``: flag, destination ref and summary."""

    __slots__ = ("flag", "ref", "summary")

    def __init__(self, flag: str, ref: str, summary: str) -> None:
        self.flag = flag
        self.ref = ref
        self.summary = summary

    @property
    def reason(self) -> str:
        match = _REASON.search(self.summary)
        return match.group(1) if match else self.summary


def porcelain(stdout: str) -> list[PushLine]:
    found = []
    for line in stdout.splitlines():
        parts = line.split("\t")
        if len(parts) >= 3 and len(parts[0]) == 1:
            found.append(PushLine(parts[0], parts[1].rpartition(":")[2], parts[2]))
    return found


# Reasons a ref is rejected when another writer got there first (with --atomic, every
# other ref then reports an "atomic push fail..." reason too).
RACE_REASONS = ("stale info", "failed to update ref", "failed to lock", "atomic push fail")


def lost_race(lines: list[PushLine]) -> bool:
    rejected = [ln for ln in lines if ln.flag == "!"]
    return bool(rejected) and all(
        any(r in ln.reason for r in RACE_REASONS) or "atomic" in ln.reason for ln in rejected
    )


# git's reason for a ref the remote's report named no verdict for: sent, so it may have
# been applied, like a push whose answer never came.
UNREPORTED = "remote failed to report status"


def unreported(lines: list[PushLine]) -> bool:
    return any(ln.flag == "!" and ln.reason == UNREPORTED for ln in lines)


# What a remote says when it failed on its own side (a full or read-only disk, a crash, a
# repository being repacked), as opposed to a host that refuses refs like ours.
REMOTE_SIDE = (
    "unpacker error",
    "unpack failed",
    "missing necessary objects",
    "unable to create temporary object directory",
    "unable to migrate objects",
    "failed to write",
    "no space left",
    "read-only file system",
    "unable to write",
    "index-pack abnormal exit",
    "unpack-objects abnormal exit",
    "disk quota",
)

# git's words for a push that never reached the remote's receive-pack, so nothing can
# have changed; read from git's own lines only (``remote:`` lines came after it did).
NOT_SENT = (
    "unable to connect",
    "unable to look up",
    "could not resolve host",
    "connection refused",
    "connection timed out",
    "could not read from remote repository",
    "hung up upon initial contact",
    "does not appear to be a git repository",
    "repository not found",
    "' not found",  # http: repository 'URL' not found
    "failed to connect",
    "no route to host",
    "network is unreachable",
    "unable to access",
    "unable to find remote helper",
    "is not a git command",  # git: 'remote-htps' is not a git command
    "is not supported",
    "not allowed",
    "not a valid",
    "host key verification failed",
    "cannot run git",  # ours: git itself could not be started
)
# git's words for a connection that broke once open: the commands may have gone out.
_CUT_OFF = ("hung up unexpectedly", "unexpected disconnect", "rpc failed", "early eof")


def not_sent(run: GitRun, lines: list[PushLine], remote: str) -> RemoteError | None:
    """The error for a push git never sent (the remote cannot do atomic pushes, or the
    connection, transport or credentials were refused before a command went out), else
    None: then it was answered, or it may have landed and only the remote can tell."""
    if _NO_ATOMIC in run.err:
        return no_atomic(remote)
    if lines or not never_sent(run.err):
        return None
    return failure(run, remote, "push", sent=False)


def remote_side(lines: list[PushLine], stderr: str) -> str | None:
    """git's own reason when a push failed on the remote's side, else None."""
    said = [ln.reason for ln in lines if ln.flag == "!"]
    for text in stderr.splitlines():
        text = text.strip()
        if text.startswith("error: remote unpack failed:"):
            return text.removeprefix("error: remote unpack failed:").strip()
    for reason in said:
        if any(r in reason.lower() for r in REMOTE_SIDE):
            return reason
    return None


def never_sent(stderr: str) -> bool:
    """Whether git's own lines on stderr say the push never reached the remote (refused,
    unreachable, unknown, not allowed), and none says an open connection broke."""
    own = [ln.lower() for ln in stderr.splitlines() if not ln.startswith("remote:")]
    if any(word in ln for ln in own for word in _CUT_OFF):
        return False
    return any(_AUTH.search(ln) for ln in own) or any(w in ln for ln in own for w in NOT_SENT)
