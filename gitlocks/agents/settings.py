"""Registering the guard in a harness's project settings, and taking it out again.

Claude Code reads hooks from ``.claude/settings.json`` (shared, committed) or
``.claude/settings.local.json`` (``--local``, personal): ``{"hooks": {EVENT: [{"matcher":
..., "hooks": [{"type": "command", "command": ...}]}]}}``. Installing merges our entries
into what is there, never touching another hook or setting, and is idempotent;
uninstalling removes exactly our entries and the containers that held only them, so the
settings read back as they were (docs/design.md, section 6.5).
"""

from __future__ import annotations

import contextlib
import json
import os
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


@dataclass
class SettingsChange:
    path: Path
    status: str  # "installed", "already_installed", "uninstalled", "not_installed"

    def to_dict(self) -> dict[str, Any]:
        return {"path": os.fspath(self.path), "status": self.status}


def settings_path(root: Path, *, local: bool) -> Path:
    return root / ".claude" / ("settings.local.json" if local else "settings.json")


def _read(path: Path) -> dict[str, Any] | None:
    """The settings document, or None when there is no file."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    if len(raw) > MAX_SETTINGS_BYTES:
        raise UsageError(f"{path} is larger than a settings file should be; left alone")
    try:
        data = json.loads(raw) if raw.strip() else {}
    except (ValueError, RecursionError):
        raise UsageError(f"{path} is not valid JSON; fix it first (nothing was changed)") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path} does not hold a JSON object; nothing was changed")
    return data


def _write(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise UsageError(f"cannot write {path}: {exc.strerror}") from None


def _is_ours(hook: Any) -> bool:
    return isinstance(hook, dict) and hook.get("command") == GUARD_COMMAND


def _holds_ours(group: Any) -> bool:
    inner = group.get("hooks") if isinstance(group, dict) else None
    return isinstance(inner, list) and any(map(_is_ours, inner))


def _groups(data: dict[str, Any], path: Path) -> dict[str, Any]:
    hooks = data.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise UsageError(f'{path}: "hooks" is not an object; nothing was changed')
    return hooks


def install(root: Path, *, local: bool = False) -> SettingsChange:
    """Merge the guard's hooks into the settings; idempotent."""
    path = settings_path(root, local=local)
    data = _read(path)
    data = {} if data is None else data
    before = json.dumps(data, sort_keys=True)
    hooks = _groups(data, path)
    for event, matcher in CLAUDE_EVENTS.items():
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise UsageError(f"{path}: hooks.{event} is not a list; nothing was changed")
        if any(
            isinstance(g, dict)
            and isinstance(g.get("hooks"), list)
            and any(map(_is_ours, g["hooks"]))
            for g in groups
        ):
            continue
        group: dict[str, Any] = {"hooks": [{"type": "command", "command": GUARD_COMMAND}]}
        if matcher is not None:
            group = {"matcher": matcher, **group}
        groups.append(group)
    if json.dumps(data, sort_keys=True) == before:
        return SettingsChange(path, "already_installed")
    _write(path, data)
    return SettingsChange(path, "installed")


def uninstall(root: Path, *, local: bool = False) -> SettingsChange:
    """Remove the guard's hooks, and every list or object left empty by that alone."""
    path = settings_path(root, local=local)
    data = _read(path)
    if data is None or not isinstance(data.get("hooks"), dict):
        return SettingsChange(path, "not_installed")
    hooks = data["hooks"]
    removed = False
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept_groups = []
        for group in groups:
            inner = group.get("hooks") if isinstance(group, dict) else None
            if isinstance(inner, list) and any(map(_is_ours, inner)):
                removed = True
                rest = [h for h in inner if not _is_ours(h)]
                if not rest:
                    continue  # a group that held only our hook: it goes with it
                group = {**group, "hooks": rest}
            kept_groups.append(group)
        if kept_groups:
            hooks[event] = kept_groups
        else:
            del hooks[event]
    if not removed:
        return SettingsChange(path, "not_installed")
    if not hooks:
        del data["hooks"]
    if data:
        _write(path, data)
    else:
        path.unlink()  # it held nothing but our hooks
        with contextlib.suppress(OSError):  # and .claude/ with it, if that left it empty
            path.parent.rmdir()
    return SettingsChange(path, "uninstalled")
