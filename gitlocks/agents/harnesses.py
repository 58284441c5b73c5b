"""The coding-agent harnesses the guard speaks: each one's hook event, read into the guard's
``Event``, and its answers, written in its own format.

One core decides (``gitlocks.agents.guard``); each harness only differs in the words. Every
format here is the harness's documented one, or its own source's (docs/agents.md names
the source of each): Claude Code, Gemini CLI, Codex CLI and GitHub Copilot CLI. Cursor is
not here: its documentation does not say where its editing tools name their file before
an edit. Nothing here touches git or the disk; a malformed event raises ``Pass``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

EXIT_ALLOW, EXIT_PASS, EXIT_DENY = 0, 1, 2


class Pass(Exception):
    """Let the call through, saying why on stderr (exit 1): never in the way by accident."""


class Event(NamedTuple):
    """One harness event, as the guard needs it."""

    kind: str  # "edit", "start", "end", "stop", "other" or "ignore" (not ours: say nothing)
    session_id: str
    cwd: str
    tool: str = ""
    paths: tuple[str, ...] = ()  # the files an edit writes, as the event names them


class Answer(NamedTuple):
    """What the harness gets back."""

    code: int = EXIT_ALLOW
    stdout: str = ""
    stderr: str = ""


# An editing tool -> the files one call of it writes, from its input (None: it names none).
Paths = Callable[[Any], "tuple[str, ...] | None"]


class Fields(NamedTuple):
    """Where a harness's event says what: its keys, and which events and tools matter."""

    event: str  # the key naming the event ("": the hook's command line names it)
    session: str
    tool: str
    tool_input: str
    edit_event: str  # the event before a tool runs
    kinds: Mapping[str, str]  # the other events the guard answers -> start, end or stop
    tools: Mapping[str, Paths]  # editing tool -> its files
    others: str = "other"  # another tool: "other" (let through, said) or "ignore" (silent)
    # Tools that edit only sometimes (a shell applying a patch): a call naming no file is
    # no edit, answered with silence.
    quiet: frozenset[str] = frozenset()


class Harness(NamedTuple):
    """One harness: how its events read, and how each answer is written on stdout."""

    name: str
    title: str
    fields: Fields
    deny: Callable[[str], str]
    warn: Callable[[str], str | None]  # None: no way to tell the agent; stderr only
    context: Callable[[str], str]  # the session-start text


def _key(name: str) -> Paths:
    def paths(tool_input: Any) -> tuple[str, ...] | None:
        found = tool_input.get(name) if isinstance(tool_input, dict) else None
        return (found,) if isinstance(found, str) and found else None

    return paths


def _json_args(name: str) -> Paths:
    """Copilot CLI's ``toolArgs``: documented as a JSON string, read as an object too."""
    inner = _key(name)

    def paths(tool_args: Any) -> tuple[str, ...] | None:
        if isinstance(tool_args, str):
            try:
                tool_args = json.loads(tool_args)
            except (ValueError, RecursionError):
                return None
        return inner(tool_args)

    return paths


# Codex's apply_patch envelope (openai/codex, codex-rs/apply-patch/src/parser.rs): a hunk
# starts with one of these; an Update hunk may move the file (both names are written).
BEGIN, END = "*** Begin Patch", "*** End Patch"
ADD, DELETE, UPDATE, MOVE = (
    "*** Add File: ",
    "*** Delete File: ",
    "*** Update File: ",
    "*** Move to: ",
)
EOF_MARK = "*** End of File"
HEREDOCS = ("<<EOF", "<<'EOF'", '<<"EOF"')
# What Rust's str::trim strips (char::is_whitespace, Unicode White_Space). Python's
# str.strip also strips U+001C..U+001F, which Codex keeps in a file name.
RUST_SPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680"
    + "".join(map(chr, range(0x2000, 0x200B)))
    + "\u2028\u2029\u202f\u205f\u3000"
)


def _trim(text: str) -> str:
    return text.strip(RUST_SPACE)


def _lines(text: str) -> list[str]:
    """``text`` split as Rust's ``str::lines`` splits it: at line feeds only, a carriage
    return before one dropped. Python's ``splitlines`` also breaks at a form feed, U+2028
    and more, which a patch's text may hold: a line Codex reads whole was read as two."""
    parts = text.split("\n")
    last = parts.pop()
    lines = [part[:-1] if part.endswith("\r") else part for part in parts]
    return [*lines, last] if last else lines


def parse_patch(text: str) -> tuple[str, ...] | None:
    """Every file an apply_patch patch writes, read as Codex's own (lenient) parser reads
    it; None when Codex would refuse the patch (so it writes nothing)."""
    lines = _lines(_trim(text))
    if len(lines) >= 4 and lines[0] in HEREDOCS and lines[-1].endswith("EOF"):
        lines = lines[1:-1]  # the heredoc a model sometimes wraps it in
    if len(lines) < 2 or _trim(lines[0]) != BEGIN or _trim(lines[-1]) != END:
        return None
    body, found, i = lines[1:-1], [], 0
    while i < len(body):
        head = _trim(body[i])
        i += 1
        if head.startswith(ADD):
            found.append(head[len(ADD) :])
            while i < len(body) and body[i].startswith("+"):
                i += 1
        elif head.startswith(DELETE):
            found.append(head[len(DELETE) :])
        elif head.startswith(UPDATE):
            found.append(head[len(UPDATE) :])
            if i < len(body) and body[i].startswith(MOVE):
                # Untrimmed, and possibly empty: Codex then fails on this hunk, but only
                # after writing the hunks before it.
                found.append(body[i][len(MOVE) :])
                i += 1
            # Its chunks run to the next line starting with "*" (bar the end-of-file mark).
            while i < len(body) and (not body[i].startswith("*") or _trim(body[i]) == EOF_MARK):
                i += 1
        else:
            return None  # no hunk header: Codex refuses the patch itself
    return tuple(found) if found else None


def patch_paths(tool_input: Any) -> tuple[str, ...] | None:
    """Every file an apply_patch call writes (``tool_input``: ``{"command": <patch>}``)."""
    text = tool_input.get("command") if isinstance(tool_input, dict) else None
    return parse_patch(text) if isinstance(text, str) else None


# Codex also runs apply_patch given to its shell tool (hook tool name "Bash"), as
# `apply_patch <<'EOF' ...` or `cd DIR && apply_patch <<'EOF' ...`
# (codex-rs/apply-patch/src/invocation.rs), and puts an apply_patch command on the shell's
# PATH besides.
_APPLY = re.compile(r"(?<![\w./-])(?:apply_patch|applypatch)(?![\w.-])")
_CD_FIRST = re.compile(
    r"\s*cd\s+('[^']*'|\"[^\"]*\"|[^\s;&|'\"]+)\s*&&\s*(?:apply_patch|applypatch)(?![\w.-])"
)


def shell_patch_paths(tool_input: Any) -> tuple[str, ...] | None:
    """Every file a shell command applying a patch writes; None when it applies none.

    The patch is read from its first "*** Begin Patch" line to its last "*** End Patch"
    line, as Codex reads a heredoc's body; should that not parse (several patches, or
    quoting), every hunk header between them counts: a file too many rather than too few.
    A leading `cd DIR &&` makes the names DIR's; the shell tool's own `workdir` is not in
    the hook's input, so the event's cwd stands for it.
    """
    command = tool_input.get("command") if isinstance(tool_input, dict) else None
    if isinstance(command, list) and all(isinstance(word, str) for word in command):
        command = "\n".join(command)  # an argv: ["apply_patch", PATCH], [SHELL, "-lc", SCRIPT]
    if not isinstance(command, str) or BEGIN not in command or not _APPLY.search(command):
        return None
    lines = _lines(command)
    starts = [n for n, line in enumerate(lines) if BEGIN in line]
    ends = [n for n, line in enumerate(lines) if END in line and n > starts[0]]
    if not ends:
        return None
    span = lines[starts[0] : ends[-1] + 1]
    span[0] = span[0][span[0].index(BEGIN) :]
    span[-1] = span[-1][: span[-1].rindex(END) + len(END)]
    found = parse_patch("\n".join(span))
    if found is None:
        heads = [_trim(line) for line in span]
        found = tuple(
            [head[len(m) :] for head in heads for m in (ADD, DELETE, UPDATE) if head.startswith(m)]
            + [line[len(MOVE) :] for line in span if line.startswith(MOVE)]
        )
    cd = _CD_FIRST.match(command)
    if cd is None or not found:
        return found or None
    word = cd.group(1)
    directory = word[1:-1] if word[0] in "'\"" else word
    return tuple(os.path.join(directory, name) for name in found)


def _load(raw: bytes) -> dict[str, Any]:
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise Pass(f"the hook event is not JSON ({exc.__class__.__name__})") from None
    if not isinstance(data, dict):
        raise Pass("the hook event is not a JSON object")
    return data


def malformed(text: str) -> bool:
    """A NUL or a lone surrogate: JSON can carry them, no file name holds them."""
    return "\0" in text or any("\ud800" <= c <= "\udfff" for c in text)


def parse(harness: Harness, raw: bytes, named: str = "") -> Event:
    """``raw`` (one hook event) as an ``Event``; ``named``: the event, when the hook's own
    command line names it (Copilot CLI's events do not say which they are)."""
    f = harness.fields
    data = _load(raw)
    name = data.get(f.event) if f.event else named
    session = data.get(f.session)
    cwd = data.get("cwd")
    if not isinstance(name, str) or not name or not isinstance(session, str) or not session:
        what = f.event or "--event on the hook's command line"
        raise Pass(f"the hook event has no {what} or {f.session}")
    if not isinstance(cwd, str) or not cwd:
        cwd = os.getcwd()
    elif malformed(cwd):
        raise Pass("malformed input: cwd holds a NUL or an unpaired surrogate")
    if name != f.edit_event:
        return Event(f.kinds.get(name, "other"), session, cwd)
    tool = data.get(f.tool)
    paths_of = f.tools.get(tool) if isinstance(tool, str) else None
    if paths_of is None:
        return Event(f.others, session, cwd, tool=str(tool))
    paths = paths_of(data.get(f.tool_input))
    if not paths and tool in f.quiet:
        return Event("ignore", session, cwd, tool=str(tool))
    if not paths:
        raise Pass(f"{tool} names no file in its {f.tool_input}")
    if any(malformed(p) for p in paths):
        raise Pass(f"malformed input: a file named by {tool} holds a NUL or an unpaired surrogate")
    return Event("edit", session, cwd, tool=str(tool), paths=paths)


# --- answers ---------------------------------------------------------------------------


def _specific(event: str, **fields: str) -> str:
    """Claude Code's (and Codex's) ``hookSpecificOutput`` answer."""
    return json.dumps({"hookSpecificOutput": {"hookEventName": event, **fields}})


def _claude_deny(reason: str) -> str:
    return _specific("PreToolUse", permissionDecision="deny", permissionDecisionReason=reason)


def _claude_warn(reason: str) -> str:
    return _specific("PreToolUse", additionalContext=reason)


def _start_context(text: str) -> str:
    return _specific("SessionStart", additionalContext=text)


def _fields(edit_event: str, kinds: Mapping[str, str], tools: Mapping[str, Paths],
            quiet: frozenset[str] = frozenset()) -> Fields:  # fmt: skip
    """The fields of a harness whose events are Claude Code's shape."""
    return Fields("hook_event_name", "session_id", "tool_name", "tool_input", edit_event,
                  kinds, tools, quiet=quiet)  # fmt: skip


# Claude Code: code.claude.com/docs/en/hooks. Its editing tools, and where each names its file.
CLAUDE = Harness(
    name="claude",
    title="Claude Code",
    fields=_fields(
        "PreToolUse",
        {"SessionStart": "start", "SessionEnd": "end", "Stop": "stop"},
        {
            "Edit": _key("file_path"),
            "Write": _key("file_path"),
            "MultiEdit": _key("file_path"),
            "NotebookEdit": _key("notebook_path"),
        },
    ),
    deny=_claude_deny,
    warn=_claude_warn,
    context=_start_context,
)

# Gemini CLI: google-gemini/gemini-cli docs/hooks/reference.md and docs/tools/file-system.md.
# BeforeTool has no documented channel to the agent short of a denial: a warning goes to
# the user (systemMessage).
GEMINI = Harness(
    name="gemini",
    title="Gemini CLI",
    fields=_fields(
        "BeforeTool",
        {"SessionStart": "start", "SessionEnd": "end", "AfterAgent": "stop"},
        {"write_file": _key("file_path"), "replace": _key("file_path")},
    ),
    deny=lambda reason: json.dumps({"decision": "deny", "reason": reason}),
    warn=lambda reason: json.dumps({"systemMessage": reason}),
    context=_start_context,
)

# Codex CLI: openai/codex codex-rs/hooks (schema/generated/*.json, src/events/pre_tool_use.rs);
# edits go through apply_patch, its tool_input {"command": <patch>}, or through its shell
# tool ("Bash", {"command": <script>}) running apply_patch. Codex has no SessionEnd.
CODEX = Harness(
    name="codex",
    title="Codex CLI",
    fields=_fields(
        "PreToolUse",
        {"SessionStart": "start", "Stop": "stop"},
        {"apply_patch": patch_paths, "Bash": shell_patch_paths},
        quiet=frozenset({"Bash"}),
    ),
    deny=_claude_deny,
    warn=_claude_warn,
    context=_start_context,
)

# GitHub Copilot CLI: github/docs content/copilot/reference/copilot-cli-reference/
# cli-hooks-reference.md and content/copilot/reference/hooks-configuration.md. Its camelCase
# events carry no name (the hook's command line gives it), its preToolUse takes no matcher
# (every tool arrives; the others are answered with silence), its sessionStart output is
# ignored, and its preToolUse has no channel to the agent short of a denial.
COPILOT = Harness(
    name="copilot",
    title="GitHub Copilot CLI",
    fields=Fields(
        event="",
        session="sessionId",
        tool="toolName",
        tool_input="toolArgs",
        edit_event="preToolUse",
        kinds={"sessionStart": "start", "sessionEnd": "end", "agentStop": "stop"},
        tools={"edit": _json_args("path")},
        others="ignore",
    ),
    deny=lambda reason: json.dumps(
        {"permissionDecision": "deny", "permissionDecisionReason": reason}
    ),
    warn=lambda reason: None,
    context=lambda text: "",
)

HARNESSES: dict[str, Harness] = {h.name: h for h in (CLAUDE, GEMINI, CODEX, COPILOT)}
