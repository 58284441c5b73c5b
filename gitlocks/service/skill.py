"""The agent skill: instructions teaching a coding agent the lock protocol.

The text ships as ``gitlocks/data/SKILL.md``; each tool gets it where it looks (``destination``):
a Claude project skill, a Cursor rule, or a marked section of ``AGENTS.md`` (Codex and
others), the rest of that file left alone. A different existing copy is replaced only with
``force``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from gitlocks.errors import UsageError

if TYPE_CHECKING:
    from pathlib import Path

TOOLS = ("claude", "codex", "cursor", "agents")
BEGIN = "<!-- gitlocks:begin (written by git alock skill install; edits are replaced) -->"
END = "<!-- gitlocks:end -->"


def skill_text() -> str:
    """The shipped SKILL.md, front matter included."""
    from importlib import resources  # brings in tempfile: only when a skill is read

    return (resources.files("gitlocks") / "data" / "SKILL.md").read_text(encoding="utf-8")


def _split() -> tuple[str, str]:
    """(description, body) of the shipped text."""
    _, front, body = skill_text().split("---\n", 2)
    found = [line for line in front.splitlines() if line.startswith("description:")]
    return (found[-1].partition(":")[2].strip() if found else ""), body.lstrip("\n")


def text_for(tool: str) -> str:
    """What ``skill install --for TOOL`` writes (for AGENTS.md: the marked section)."""
    if tool not in TOOLS:
        raise UsageError(f"unknown --for {tool!r}: use one of {', '.join(TOOLS)}")
    if tool == "claude":
        return skill_text()
    description, body = _split()
    if tool == "cursor":
        return f"---\ndescription: {description}\nalwaysApply: true\n---\n\n{body}"
    return f"{BEGIN}\n{body.rstrip()}\n{END}\n"


DESTINATIONS = {
    "claude": ".claude/skills/gitlocks/SKILL.md",
    "cursor": ".cursor/rules/gitlocks.mdc",
}


def destination(tool: str, base: Path) -> Path:
    return base.joinpath(*DESTINATIONS.get(tool, "AGENTS.md").split("/"))


@dataclass
class Installed:
    """Where ``skill install`` wrote the instructions, and how."""

    status: Literal["installed", "updated", "unchanged", "refused"]
    path: Path
    tool: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"status": self.status, "path": str(self.path), "for": self.tool}


def install(tool: str, base: Path, *, force: bool = False) -> Installed:
    """Write the skill for ``tool`` under ``base``; refuse to replace a different copy."""
    wanted = text_for(tool)
    path = destination(tool, base)
    try:
        current = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        current = None
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from exc
    if tool in ("codex", "agents"):
        new = _with_section(current or "", wanted)
        if current is not None and new == current:
            return Installed("unchanged", path, tool)
        if current is not None and BEGIN in current and not force:
            return Installed("refused", path, tool)
    else:
        new = wanted
        if current == wanted:
            return Installed("unchanged", path, tool)
        if current is not None and not force:
            return Installed("refused", path, tool)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(new, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror}") from exc
    return Installed("installed" if current is None else "updated", path, tool)


def _with_section(document: str, section: str) -> str:
    """``document`` with its gitlocks section replaced, or the section appended."""
    start = document.find(BEGIN)
    end = document.find(END, start)
    if start >= 0 and end >= 0:
        return document[:start] + section.rstrip("\n") + document[end + len(END) :]
    if not document:
        return section
    return document.rstrip("\n") + "\n\n" + section
