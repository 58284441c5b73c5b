"""``git alock verify`` and the pre-receive hook as text: for people, and for GitHub Actions.

Pure, and free of pygit2 and typer: the pre-receive hook imports it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from gitlocks.core.record import LockRecord
from gitlocks.core.text import printable
from gitlocks.render.hooks import PREFIX
from gitlocks.render.locks import expires

TYPE_CHECKING = False  # typing is for mypy: docs/design.md, section 8
if TYPE_CHECKING:
    from gitlocks.hooks.commits import Finding
    from gitlocks.hooks.verify import Verification

SUBJECT_WIDTH = 60  # a subject is shown whole in JSON; on one line of text, cut here
TITLE = "gitlocks"


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def _subject(text: str) -> str:
    short = text if len(text) <= SUBJECT_WIDTH else text[: SUBJECT_WIDTH - 3] + "..."
    return f'"{short}"'


def _claim(record: LockRecord, now: datetime) -> str:
    """``(<patterns>, "<reason>", expires in 29m) [lock <id>]``"""
    reason = f', "{record.reason}"' if record.reason else ""
    kind = "shared, " if record.shared else ""
    return f"({kind}{' '.join(record.paths)}{reason}, {expires(record, now)}) [lock {record.id}]"


def crossed_by(finding: Finding) -> str:
    """The agents a commit belongs to (its trailers), or ``(no agent)``: who crossed the
    claim, never to be read as who holds it."""
    return " and ".join(finding.commit.judged_as)


def held_line(finding: Finding, record: LockRecord, now: datetime) -> str:
    """``HELD <path> in <commit> "<subject>" changed by <agents>, claimed by <holder>
    (<patterns>, "<reason>", expires in ...) [lock <id>]``"""
    commit = finding.commit
    return (
        f"HELD {finding.path} in {commit.short} {_subject(commit.subject)} "
        f"changed by {crossed_by(finding)}, claimed by {record.holder} {_claim(record, now)}"
    )


def _held_lines(result: Verification) -> list[str]:
    return [held_line(f, r, result.now) for f in result.findings for r in f.locks]


def report(result: Verification) -> str:
    """The human reply: ``CLEAN <n> commits checked``, or ``HELD`` lines and a summary."""
    checked = _count(len(result.commits), "commit")
    if not result.findings:
        return f"CLEAN {checked} checked"
    commits = len({f.commit.oid for f in result.findings})
    summary = (
        f"{_count(len(result.findings), 'path')} in {commits} of {checked} checked "
        "inside other holders' live claims"
    )
    return "\n".join(printable(line) for line in [*_held_lines(result), summary])


def warnings(result: Verification) -> str:
    """Warnings for stderr, one ``warning: ...`` line each (empty when there are none)."""
    return "".join(f"warning: {printable(line)}\n" for line in result.warning_lines())


# --- GitHub Actions ---------------------------------------------------------------------------


def escape_data(text: str) -> str:
    """A workflow command's message, escaped as the Actions runner reads it back."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A workflow command's property value: ``:`` and ``,`` would end it, so they go too."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github(result: Verification) -> str:
    """``::error file=<path>,title=gitlocks::<message>`` per path and claim: GitHub Actions
    shows each as an annotation on the file; ``::warning`` for warnings."""
    lines = [
        f"::warning title={TITLE}::{escape_data(printable(w))}" for w in result.warning_lines()
    ]
    for finding in result.findings:
        for record in finding.locks:
            commit = finding.commit
            message = (
                f"{finding.path} is inside a live claim of {record.holder} "
                f"{_claim(record, result.now)}; changed by {crossed_by(finding)} in "
                f"{commit.short} {_subject(commit.subject)}"
            )
            lines.append(
                f"::error file={escape_property(finding.path)},title={TITLE}::"
                f"{escape_data(printable(message))}"
            )
    if not result.findings:
        lines.append(report(result))
    return "\n".join(lines)


# --- the pre-receive hook -------------------------------------------------------------------


def receive_report(result: Verification, mode: str) -> str:
    """The hook's lines for the pusher (git shows each as ``remote: alock: ...``)."""
    lines = result.warning_lines() if result.commits else []
    lines = [f"warning: {line}" for line in lines]
    if result.findings:
        lines += _held_lines(result)
        lines.append(receive_advice(mode, result.findings))
    return "".join(f"{PREFIX}{printable(line)}\n" for line in lines)


def receive_advice(mode: str, findings: Sequence[Finding]) -> str:
    commits = len({f.commit.oid for f in findings})
    what = (
        f"{_count(len(findings), 'path')} in {_count(commits, 'commit')} "
        "inside another holder's live claim"
    )
    if mode == "block":
        return (
            f"REFUSED push: {what}. Ask the holder to release it (git alock list shows every "
            "claim), wait until it expires, or push without those commits; the holder's own "
            "commits carry its Agent-Id trailer and pass"
        )
    return f"WARNING: {what}; the push was accepted (alock.hookMode is warn here)"
