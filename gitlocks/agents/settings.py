"""Registering the guard in a harness's project settings, and taking it out again.

Claude Code reads hooks from ``.claude/settings.json`` (shared, committed) or
``.claude/settings.local.json`` (``--local``, personal): ``{"hooks": {EVENT: [{"matcher":
..., "hooks": [{"type": "command", "command": ...}]}]}}``. Installing adds one group of
ours per event, merged into what is there, never touching another hook or setting, and
is idempotent. Uninstalling removes exactly those groups (equal to what install adds: a
user's own group that runs the same command differently is the user's), and gives back
the settings it found (docs/design.md, section 6.5): install remembers the file as it
was, in the worktree's git directory, so that the containers it created go with it and
those the user had stay, even empty; when nothing else changed meanwhile, the original
bytes come back. Writes go through a symbolic link to its target and keep the file's
mode, byte order mark, indentation and line ends.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitlocks.errors import UsageError

GUARD_COMMAND = "git alock guard --for claude"
EDIT_MATCHER = "Edit|Write|MultiEdit|NotebookEdit"
# event -> the matcher our entry uses (None: the event takes none).
CLAUDE_EVENTS: dict[str, str | None] = {
    "PreToolUse": EDIT_MATCHER,
    "SessionStart": None,
    "SessionEnd": None,
    "Stop": None,
}
MAX_SETTINGS_BYTES = 4 * 1024 * 1024
# In the worktree's git directory: each settings file as install found it.
MEMORY_FILE = "agent-locks-settings.json"
BOM = b"\xef\xbb\xbf"


@dataclass
class SettingsChange:
    path: Path
    status: str  # "installed", "already_installed", "uninstalled", "not_installed"

    def to_dict(self) -> dict[str, Any]:
        return {"path": os.fspath(self.path), "status": self.status}


def settings_path(root: Path, *, local: bool) -> Path:
    return root / ".claude" / ("settings.local.json" if local else "settings.json")


def our_group(event: str) -> dict[str, Any]:
    """The one group install adds for ``event``; only a group equal to it is ours."""
    group: dict[str, Any] = {"hooks": [{"type": "command", "command": GUARD_COMMAND}]}
    matcher = CLAUDE_EVENTS[event]
    return group if matcher is None else {"matcher": matcher, **group}


def _read_raw(path: Path) -> bytes | None:
    """The file's bytes (through a symbolic link), or None when there is none."""
    try:
        if path.exists() and not path.is_file():
            raise UsageError(f"{path} is not a regular file; nothing was changed")
        with open(path, "rb") as f:
            raw = f.read(MAX_SETTINGS_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    if len(raw) > MAX_SETTINGS_BYTES:
        raise UsageError(f"{path} is larger than a settings file should be; left alone")
    return raw


def _parse(raw: bytes, path: Path) -> dict[str, Any]:
    try:
        text = raw.removeprefix(BOM).decode("utf-8")
        data = json.loads(text) if text.strip() else {}
    except (ValueError, RecursionError):
        raise UsageError(f"{path} is not valid JSON; fix it first (nothing was changed)") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path} does not hold a JSON object; nothing was changed")
    return data


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON documents (key order aside; ``true`` is not ``1``)."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _render(data: dict[str, Any], like: bytes | None) -> bytes:
    """``data`` as JSON, in the style of ``like`` (the file it replaces): its byte order
    mark, indentation and line ends."""
    like = like or b""
    found = re.search(rb"^\{\s*?\r?\n([ \t]+)\S", like.removeprefix(BOM))
    indent = found.group(1).decode() if found else "  "
    text = json.dumps(data, indent=indent, ensure_ascii=False) + "\n"
    if b"\r\n" in like:
        text = text.replace("\n", "\r\n")
    return (BOM if like.startswith(BOM) else b"") + text.encode("utf-8")


def _write(path: Path, raw: bytes) -> None:
    """Replace the file with ``raw`` atomically: the target of a symbolic link, not the
    link; the file's mode kept."""
    target = Path(os.path.realpath(path))
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        mode = os.stat(target).st_mode & 0o7777
    except OSError:
        mode = None
    try:
        with open(tmp, "wb") as f:
            f.write(raw)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, target)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise UsageError(f"cannot write {path}: {exc.strerror}") from None


def _memory(git_dir: Path | None) -> Path | None:
    return None if git_dir is None else git_dir / MEMORY_FILE


def _recall(git_dir: Path | None) -> dict[str, Any]:
    """What install remembered, per settings file name; nothing when unreadable."""
    memory = _memory(git_dir)
    try:
        data = json.loads(memory.read_bytes()) if memory is not None else {}
    except (OSError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def _remember(git_dir: Path | None, name: str, entry: dict[str, Any] | None) -> None:
    memory = _memory(git_dir)
    if memory is None:
        return
    known = _recall(git_dir)
    if entry is None:
        known.pop(name, None)
    else:
        known[name] = entry
    with contextlib.suppress(OSError):  # a lost memory only makes uninstall guess
        if known:
            _write(memory, json.dumps(known).encode())
        else:
            memory.unlink(missing_ok=True)


def _hooks(data: dict[str, Any], path: Path) -> dict[str, Any]:
    hooks = data.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise UsageError(f'{path}: "hooks" is not an object; nothing was changed')
    return hooks


def install(root: Path, *, local: bool = False, git_dir: Path | None = None) -> SettingsChange:
    """Merge the guard's hooks into the settings; idempotent. ``git_dir`` (the worktree's)
    keeps the settings as found, for uninstall."""
    path = settings_path(root, local=local)
    raw = _read_raw(path)
    data = {} if raw is None else _parse(raw, path)
    before = json.loads(json.dumps(data))
    hooks = _hooks(data, path)
    for event in CLAUDE_EVENTS:
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise UsageError(f"{path}: hooks.{event} is not a list; nothing was changed")
        if our_group(event) not in groups:
            groups.append(our_group(event))
    if _same(data, before):
        return SettingsChange(path, "already_installed")
    found = {
        "before": None if raw is None else base64.b64encode(raw).decode(),
        "directory": path.parent.is_dir(),
    }
    _write(path, _render(data, raw))
    if path.name not in _recall(git_dir):  # an older memory is the truer original
        _remember(git_dir, path.name, found)
    return SettingsChange(path, "installed")


def uninstall(root: Path, *, local: bool = False, git_dir: Path | None = None) -> SettingsChange:
    """Remove the guard's groups, and the containers install created that are left empty;
    the settings as found before install when nothing else changed since."""
    path = settings_path(root, local=local)
    raw = _read_raw(path)
    data = None if raw is None else _parse(raw, path)
    hooks = data.get("hooks") if data is not None else None
    if data is None or not isinstance(hooks, dict):
        return SettingsChange(path, "not_installed")
    emptied = []
    removed = False
    for event in CLAUDE_EVENTS:
        groups = hooks.get(event)
        if isinstance(groups, list) and our_group(event) in groups:
            removed = True
            hooks[event] = [g for g in groups if g != our_group(event)]
            emptied += [] if hooks[event] else [event]
    if not removed:
        return SettingsChange(path, "not_installed")
    found = _recall(git_dir).get(path.name)
    found = found if isinstance(found, dict) else {}
    original = _original(found, path)
    had = original.get("hooks") if original is not None else None
    for event in emptied:  # a list left empty is install's, unless the user had it
        if not (isinstance(had, dict) and event in had):
            del hooks[event]
    if not hooks and not (original is not None and "hooks" in original):
        del data["hooks"]
    if found and found.get("before") is None and not data:
        path.unlink()  # install made the file, and it holds nothing else
        if not found.get("directory"):
            with contextlib.suppress(OSError):  # nor .claude/, if install made that too
                path.parent.rmdir()
    elif original is not None and _same(data, original):
        _write(path, base64.b64decode(found["before"]))  # the very bytes it found
    else:
        _write(path, _render(data, raw))
    _remember(git_dir, path.name, None)
    return SettingsChange(path, "uninstalled")


def _original(found: Any, path: Path) -> dict[str, Any] | None:
    """The settings document install found (None: there was no file, or no memory)."""
    if not isinstance(found, dict) or not isinstance(found.get("before"), str):
        return None
    try:
        return _parse(base64.b64decode(found["before"], validate=True), path)
    except (ValueError, UsageError):
        return None
