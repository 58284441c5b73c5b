"""The verbs that change claims: acquire, release, renew, note, break and resume."""

from __future__ import annotations

import os
import sys

from gitlocks.cli.common import AS_OPTION, JSON_OPTION, TTL_OPTION, reply
from gitlocks.cli.context import context, entries, require, warn_problems
from gitlocks.cli.declare import Argument, Exit, InTool, Option, Verbs
from gitlocks.core.record import is_lock_id, parse_duration
from gitlocks.core.scope import ScopeEntry, literal_part
from gitlocks.core.text import MAX_NOTE_CHARS, MAX_REASON_CHARS, printable, user_text
from gitlocks.errors import EXIT_OK, EXIT_REFUSED, GitlocksError, UsageError
from gitlocks.git.files import in_working_tree
from gitlocks.layout import IGNORE_FILE
from gitlocks.render import locks as render
from gitlocks.service import lifecycle, locks

TYPE_CHECKING = False  # typing is for mypy: docs/design.md, section 8
if TYPE_CHECKING:
    from typing import Any

    from gitlocks.git.run import Process
    from gitlocks.service.context import Context
    from gitlocks.service.results import AcquireResult

app = Verbs()
MAIN_LINE = "\0main-line"  # --until-merged without a branch: no branch is spelt so
WAIT_DEFAULT = ""  # --wait without a duration: alock.waitDefault, else 5m
# Options whose value may be left out.
OPTIONAL_VALUES = {"--until-merged": MAIN_LINE, "--wait": WAIT_DEFAULT}


def _own_patterns(text: str) -> Any:
    """``[PATTERN...]``: patterns of your own locks (none: all of them), described by ``text``."""
    return Argument(
        default=None, metavar="[PATTERN...]", help=text, tool=InTool("paths"), complete="yours"
    )


@app.command(
    tool="Claim paths (glob patterns) before editing them, all or none. A refusal "
    "names each holder, its pattern, reason and expiry: do not edit those paths. "
    "shared=true: a claim other shared claims may overlap (readers, appenders). "
    'until_merged: a branch ("" for the main line); the claim ends once your commits '
    "in it land there. "
    'wait: a duration ("90", "5m"; "" for the default, 5m) to wait for your turn '
    "instead of being refused, first come first served; DEADLOCK (with the cycle) when "
    "waiters wait on each other: release something and try again."
)
def acquire(
    patterns: list[str] = Argument(
        metavar="PATTERN...",
        help="Glob patterns to claim.",
        tool=InTool("paths"),
        complete="paths",
    ),
    reason: str = Option("-m", "--reason", default="", help="Why you claim it."),
    ttl: str | None = TTL_OPTION,
    shared: bool = Option(
        "--shared", default=False, help="A shared claim: others may hold shared claims over it too."
    ),
    until_merged: str | None = Option(
        "--until-merged",
        default=None,
        metavar="[BRANCH]",
        help="Release the claim once your commits in it land in BRANCH (default: the main line).",
    ),
    wait: str | None = Option(
        "--wait",
        default=None,
        metavar="[D]",
        help="Wait up to D (default alock.waitDefault, 5m) until every pattern can be "
        "granted, first come first served among waiters; DEADLOCK when waiters wait on "
        "each other. Put it last, or write --wait=D.",
    ),
    as_id: str | None = AS_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Claim PATTERN..., all or none.

    Example: git alock acquire 'src/api/**' docs/api.md -m "rewrite auth" --ttl 1h

    With --wait, WAITING lines go to stderr while the claim waits its
    turn; stdout holds one answer: ACQUIRED, REFUSED or DEADLOCK.
    """
    # Only a claim lists the tree (its "covers nothing" note) and judges its session's age:
    # release, renew and note load neither (docs/design.md §9.14).
    from gitlocks.render.identity import SHORT_LIVED, short_lived
    from gitlocks.service import typos

    ctx = context(as_id, writes=True)
    root = str(ctx.store.root)
    claim, listing = _claim(ctx, patterns, root)
    life = ctx.ttl(ttl)
    waits = None if wait is None else _wait_seconds(ctx, wait)
    branch = None
    if until_merged is not None:
        from gitlocks.service import landing  # only for a claim that waits on a merge

        wanted = landing.main_line(ctx.store) if until_merged == MAIN_LINE else until_merged
        branch = landing.check_branch(ctx.store, wanted)
    try:
        asked = dict(
            reason=user_text(reason, "reason", MAX_REASON_CHARS),
            ttl=life,
            shared=shared,
            until_merged=branch,
        )
        if waits is None:
            result = locks.acquire(ctx, claim, **asked)  # type: ignore[arg-type]
        else:
            from gitlocks.service import waiting  # only a claim that may wait

            def told(now_waiting: AcquireResult) -> None:
                sys.stderr.write(render.waiting(now_waiting, ctx.now()) + "\n")  # line-buffered

            def noted(said: str) -> None:
                sys.stderr.write(f"note: {printable(said)}\n")

            result = waiting.acquire(
                ctx, claim, wait=waits, on_waiting=told, interruptible=True, on_note=noted, **asked
            )
    finally:
        listed = typos.finish_listing(listing)
    warn_problems(ctx)
    if result.status == "acquired" and short_lived(ctx.identity):
        sys.stderr.write(SHORT_LIVED + "\n")
    if os.path.isfile(os.path.join(root, IGNORE_FILE)):
        from gitlocks.core.ignore import IgnoreList  # only this note reads .alockignore

        ignore = IgnoreList.of_tree(root)
        for entry in claim:
            if ignore.ignored(entry.pattern):
                sys.stderr.write(
                    f"note: {printable(entry.pattern)} is listed in .alockignore: nobody "
                    "needs to claim it (the guard and the hooks leave it alone)\n"
                )
    doc = result.to_dict()
    missing: list[typos.Uncovered] = []
    if result.status == "acquired":
        missing = typos.uncovered(
            root, claim, ignore_case=ctx.store.ignore_case, list_files=lambda: listed
        )
        doc["covers_nothing"] = [m.to_dict() for m in missing]
    reply(doc, render.acquire(result, ctx.now()), as_json)
    # After the answer, so that output read with 2>&1 still starts with its word.
    for m in missing:
        closest = f"; the closest existing path is {m.closest}" if m.closest else ""
        literal = "/".join(literal_part(m.pattern))
        if m.closest and _nfc(m.closest) == _nfc(literal):
            # Printed alike, so say how they differ: é as one code point or as e + accent.
            spelled = m.closest.encode("ascii", "backslashreplace").decode()
            closest += (
                f", the same name in another Unicode form ({spelled}): "
                "claim it as the tree spells it"
            )
        sys.stderr.write(
            printable(f"note: {m.pattern} covers nothing that exists yet{closest}") + "\n"
        )
    if branch is not None and result.status == "acquired" and not _commits_recorded(root):
        sys.stderr.write(
            "note: no gitlocks post-commit hook here: your commits are not recorded in the "
            "claim, so it will not end when they land (git alock install-hooks)\n"
        )
    raise Exit(EXIT_OK if result.status in ("acquired", "already_yours") else EXIT_REFUSED)


def _wait_seconds(ctx: object, typed: str) -> int:
    """``--wait``'s duration; a bad one says that the option took the word after it."""
    from gitlocks.service import waiting  # only a claim that may wait

    try:
        return waiting.wait_seconds(ctx, typed)  # type: ignore[arg-type]
    except UsageError as exc:
        if not typed:
            raise  # a bare --wait took no word: alock.waitDefault is at fault
        raise UsageError(
            f"{exc} (--wait takes the word after it as its duration: put it last, or "
            "write --wait=D)"
        ) from None


def _commits_recorded(root: str) -> bool:
    """Whether our post-commit hook runs here: without it an --until-merged claim never lands."""
    from gitlocks.hooks.install import hooks_dir, is_ours  # only for an --until-merged claim

    try:
        return is_ours(hooks_dir(root) / "post-commit")
    except (GitlocksError, OSError):
        return True  # cannot tell: say nothing


def _claim(
    ctx: Context, patterns: list[str], root: str
) -> tuple[list[ScopeEntry], Process | list[str] | None]:
    """The claim's entries, and the index's listing for its note (``typos``), read while
    the claim is written; waited for only when a plain path is no file in the working tree
    (is it one in the index? then the pattern is exact)."""
    from gitlocks.service import typos  # only a claim lists the index (as acquire says)

    asked: list[str] = []

    def in_tree(path: str) -> bool:
        found = in_working_tree(root, path)
        if not found:
            asked.append(path)
        return found

    claim = entries(ctx, patterns, is_file=in_tree)
    listing = typos.start_listing(root, claim, ignore_case=ctx.store.ignore_case, paths=asked)
    if asked and listing is None:  # git could not be started: ask as the store asks
        return entries(ctx, patterns), None
    if asked:
        listing = typos.finish_listing(listing)
        indexed = set(listing)
        claim = entries(ctx, patterns, is_file=lambda p: in_working_tree(root, p) or p in indexed)
    return claim, listing


def _nfc(text: str) -> str:
    import unicodedata  # only a note that names a look-alike needs it

    return unicodedata.normalize("NFC", text)


@app.command(tool="Give back paths of your locks, or all=true for all of yours.")
def release(
    patterns: list[str] | None = _own_patterns("Patterns to give back."),
    all_: bool = Option("--all", default=False, help="Release all yours and your sub-agents'."),
    as_id: str | None = AS_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Give back PATTERN... of your locks, or --all of them.

    Example: git alock release 'src/api/**'
    """
    if all_ and patterns:
        raise UsageError("give patterns or --all, not both")
    ctx = context(as_id, writes=True)
    # Patterns of one's own locks, matched as written: whether one names a file decides
    # nothing here, so git is not asked (docs/design.md, section 4.5).
    typed = None if all_ else require(patterns, "pattern (or --all)")
    wanted = None if typed is None else entries(ctx, typed, exact=False)
    result = locks.release(ctx, wanted)
    reply(result.to_dict(), render.release(result, ctx.identity.holder), as_json)
    raise Exit(EXIT_REFUSED if result.held_by_others else EXIT_OK)


@app.command(tool="Extend your locks' expiry from now (all of yours without paths).")
def renew(
    patterns: list[str] | None = _own_patterns("Patterns to renew."),
    ttl: str | None = TTL_OPTION,
    as_id: str | None = AS_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Extend your locks' expiry from now (all of yours without PATTERN).

    Example: git alock renew --ttl 1h
    """
    ctx = context(as_id, writes=True)
    wanted = entries(ctx, patterns) if patterns else None
    asked = parse_duration(ttl, what="--ttl") if ttl is not None else None
    result = locks.renew(ctx, wanted, ttl=asked, default_ttl=ctx.ttl(None))
    reply(result.to_dict(), render.renew(result, ctx.now()), as_json)
    raise Exit(EXIT_OK if result.complete() else EXIT_REFUSED)  # a claim lost: not yours


@app.command(tool="Append a progress note to your lock on a path.")
def note(
    pattern: str = Argument(
        metavar="PATTERN",
        help="A pattern of your lock.",
        tool=InTool("path", pattern=True),
        complete="yours",
    ),
    text: str = Argument(metavar="TEXT", help="The progress note.", complete="text"),
    as_id: str | None = AS_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Append a progress note to your lock on PATTERN (also shows you are alive).

    Example: git alock note 'src/api/**' "auth done, tests next"
    """
    if not text.strip():
        raise UsageError("the note is empty")
    ctx = context(as_id, writes=True)
    [entry] = entries(ctx, [pattern])
    result = locks.note(ctx, entry, user_text(text, "note", MAX_NOTE_CHARS))
    reply(result.to_dict(), render.note(result), as_json)
    raise Exit(EXIT_OK if result.lock else EXIT_REFUSED)


@app.command(
    "break",
    tool="Forcibly release other holders' locks, by lock id or every lock crossing a "
    "pattern; journaled with who broke them. Only for a lock nobody will come back to "
    "(take interrupted work over with resume instead).",
)
def break_(
    targets: list[str] = Argument(
        metavar="ID|PATTERN...",
        help="Lock ids or patterns.",
        complete="locks",
        tool=InTool("targets"),
    ),
    as_id: str | None = AS_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Forcibly release locks by ID, or every lock crossing PATTERN; journaled.

    Example: git alock break 0193a7c2b1f-4a2b9c1d
    """
    ctx = context(as_id, writes=True)
    result = locks.break_locks(ctx, [(t, entries(ctx, [t])[0]) for t in targets])
    reply(result.to_dict(), render.broken(result, targets, ctx.now()), as_json)
    raise Exit(EXIT_OK if result else EXIT_REFUSED)


@app.command(
    tool="Take over INTERRUPTED WORK (a lock whose holder's session ended with notes left) "
    "with its notes, as your own claim: the answer a refusal or a denial of that work "
    "points to."
)
def resume(
    pattern: str = Argument(
        metavar="PATTERN",
        help="A pattern (or lock id) of the work.",
        complete="locks",
        tool=InTool("path", pattern=True),
    ),
    ttl: str | None = Option(
        "--ttl", default=None, help="Lifetime: 90, 90s, 15m, 2h, 1d (default: alock.ttl)."
    ),
    as_id: str | None = AS_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Take over INTERRUPTED WORK (a dead holder's lock) with its notes.

    Example: git alock resume 'src/api/**'
    """
    ctx = context(as_id, writes=True)
    target: str | ScopeEntry
    if is_lock_id(pattern) and ctx.store.read_table().get(pattern) is not None:
        target = pattern
    else:
        [target] = entries(ctx, [pattern])
    result = lifecycle.resume(ctx, target, ttl=ctx.ttl(ttl))
    reply(result.to_dict(), render.resume(result, ctx.now()), as_json)
    raise Exit(EXIT_OK if result.status == "resumed" else EXIT_REFUSED)
