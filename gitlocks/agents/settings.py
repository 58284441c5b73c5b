"""Registering the guard in a harness's project settings, and taking it out again.

Install merges one entry of ours per event into the harness's hook file (``HOOK_FILES``),
touching no other hook or setting, idempotently. Uninstall removes exactly those entries
and gives back the settings it found (docs/design.md, section 6.5): install remembers the
file as it was, in the worktree's git directory, so that what it created goes and what the
user had stays; when nothing else changed, the original bytes come back. Writes go through
a symbolic link and keep the file's mode, byte order mark, indentation and line ends.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import re
import shlex
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitlocks.agents.commands import (
    GIT_PREFIX,
    HOOK_FILES,
    SCRIPT_FILES,
    HookFile,
    ScriptFile,
    hook_files_for,
)
from gitlocks.agents.harnesses import HARNESSES
from gitlocks.errors import UsageError
from gitlocks.git.changes import git_output
from gitlocks.git.files import write_atomic


def _install_script(root: Path, spec: ScriptFile) -> SettingsChange:
    path = root / spec.path
    _inside(path, root)
    raw = _read_raw(path)
    if raw is not None:
        if raw == spec.text.encode():
            return SettingsChange(path, "already_installed")
        raise UsageError(f"{path} exists and is not the one install writes; nothing was changed")
    made = _missing_dirs(path, root)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        write_atomic(path, spec.text.encode(), spec.mode)
    except OSError as exc:
        _remove_dirs(root, path, {"made": made})
        raise UsageError(f"cannot write {path}: {exc.strerror}") from None
    return SettingsChange(path, "installed")


def _uninstall_script(root: Path, spec: ScriptFile) -> SettingsChange:
    path = root / spec.path
    _inside(path, root)
    if _read_raw(path) != spec.text.encode():
        return SettingsChange(path, "not_installed")  # none, or the user's own now
    path.unlink()
    here = path.parent
    while here != root:  # the directories left empty: .clinerules/hooks, .opencode/plugins
        try:
            here.rmdir()
        except OSError:
            break
        here = here.parent
    return SettingsChange(path, "uninstalled")


MAX_SETTINGS_BYTES = 4 * 1024 * 1024
# In the worktree's git directory: each settings file as install found it.
MEMORY_FILE = "agent-locks-settings.json"
BOM = b"\xef\xbb\xbf"


@dataclass
class SettingsChange:
    """What install or uninstall did to one settings file."""

    path: Path
    status: str  # "installed", "already_installed", "uninstalled", "not_installed"

    def to_dict(self) -> dict[str, Any]:
        return {"path": os.fspath(self.path), "status": self.status}


def hook_file(harness: str) -> HookFile:
    found = HOOK_FILES.get(harness)
    if found is None:
        known = ", ".join([*HOOK_FILES, *SCRIPT_FILES])
        raise UsageError(f"unknown harness {harness!r}: install-agent-hooks knows {known}")
    return found


def _legacy(harness: str) -> list[HookFile]:
    """Our entries as older installs wrote them: uninstall takes them out, install replaces."""
    prefixes = (GIT_PREFIX, f"{shlex.quote(sys.executable)} -m gitlocks")
    return [old for p in prefixes if (old := hook_files_for(p).get(harness)) is not None]


def _inside(path: Path, root: Path) -> None:
    """Refuse a settings file under a committed symbolic link leading out of the working
    tree: a cloned repository must not make install write wherever its author chose."""
    top = os.path.realpath(root)
    if os.path.commonpath([os.path.realpath(path), top]) == top:
        return
    here = root
    for part in path.relative_to(root).parts:
        here = here / part
        if not here.is_symlink():
            continue
        target = os.path.realpath(here)
        if os.path.commonpath([target, top]) == top:
            continue
        rel = here.relative_to(root).as_posix()
        if git_output(["ls-files", "-z", "--", rel], os.fspath(root)).strip(b"\0"):
            raise UsageError(
                f"{rel} is a committed symbolic link out of the repository (to {target}); "
                "nothing was changed"
            )


def settings_path(root: Path, *, local: bool, harness: str = "claude") -> Path:
    spec = hook_file(harness)
    if local and spec.local is None:
        title = HARNESSES[harness].title
        raise UsageError(f"--local: {title} has no personal project settings file")
    return root / (spec.local if local and spec.local else spec.path)


def _memory_key(harness: str, path: Path, root: Path) -> str:
    """The name install remembers a file under: Claude Code's by its bare name, as since
    the first version; the others by their path (Gemini's is a settings.json too)."""
    return path.name if harness == "claude" else path.relative_to(root).as_posix()


def _missing_dirs(path: Path, root: Path) -> list[str]:
    """The directories above ``path`` (up to ``root``) that do not exist yet, deepest first."""
    missing = []
    here = path.parent
    while here != root and not here.exists():
        missing.append(here.relative_to(root).as_posix())
        here = here.parent
    return missing


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


def _commented_json(text: str) -> bool:
    """Whether ``text`` holds ``//`` or ``/* */`` comments, and is a JSON object without
    them (strings left whole): Gemini CLI reads its settings so (strip-json-comments)."""
    out, i, cut = [], 0, False
    while i < len(text):
        c = text[i]
        if c == '"':
            end = i + 1
            while end < len(text) and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            out.append(text[i : end + 1])
            i = end + 1
        elif text.startswith("//", i):
            i = text.find("\n", i)
            i, cut = (len(text) if i < 0 else i), True
        elif text.startswith("/*", i):
            i = text.find("*/", i + 2)
            i, cut = (len(text) if i < 0 else i + 2), True
            out.append(" ")
        else:
            out.append(c)
            i += 1
    try:
        return cut and isinstance(json.loads("".join(out)), dict)
    except (ValueError, RecursionError):
        return False


def _parse(raw: bytes, path: Path) -> dict[str, Any]:
    try:
        text = raw.removeprefix(BOM).decode("utf-8")
    except ValueError:
        raise UsageError(f"{path} is not valid JSON; fix it first (nothing was changed)") from None
    try:
        data = json.loads(text) if text.strip() else {}
    except (ValueError, RecursionError):
        if _commented_json(text):
            raise UsageError(
                f"{path} holds comments, which install cannot keep; nothing was changed "
                "(take them out, or add the hooks by hand)"
            ) from None
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
    """Replace the file (a link's target) with ``raw`` atomically, keeping its mode."""
    target = Path(os.path.realpath(path))
    if target.exists() and not os.stat(target).st_mode & 0o222:
        # os.replace needs only the directory: a file its owner made read-only stays so.
        raise UsageError(f"cannot write {path}: it is read-only; nothing was changed")
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = os.stat(target).st_mode & 0o7777
    except OSError:
        mode = None
    try:
        write_atomic(target, raw, mode)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror}") from None


def _recall(git_dir: Path | None) -> dict[str, Any]:
    """What install remembered, per settings file name; nothing when unreadable."""
    try:
        data = json.loads((git_dir / MEMORY_FILE).read_bytes()) if git_dir is not None else {}
    except (OSError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def _remember(git_dir: Path | None, name: str, entry: dict[str, Any] | None) -> None:
    """Keep (or, ``None``, forget) what install found for the settings file ``name``;
    under a lock, so installs for several harnesses at once lose none of it."""
    if git_dir is None:
        return
    memory = git_dir / MEMORY_FILE
    # A lost memory only makes uninstall guess: an error here is no reason to fail.
    lock_path = memory.with_name(memory.name + ".lock")
    with contextlib.suppress(OSError, UsageError), open(lock_path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        known = _recall(git_dir)
        if entry is None:
            known.pop(name, None)
        else:
            known[name] = entry
        if known:
            _write(memory, json.dumps(known).encode())
        else:
            memory.unlink(missing_ok=True)


def install(
    root: Path, harness: str = "claude", *, local: bool = False, git_dir: Path | None = None
) -> SettingsChange:
    """Merge the guard's hooks into the harness's settings, replacing an older install's;
    idempotent. ``git_dir`` (the worktree's) keeps the settings as found, for uninstall."""
    if harness in SCRIPT_FILES:
        if local:
            raise UsageError(f"--local: {HARNESSES[harness].title} has no personal hook file")
        return _install_script(root, SCRIPT_FILES[harness])
    spec = hook_file(harness)
    legacy = _legacy(harness)
    path = settings_path(root, local=local, harness=harness)
    _inside(path, root)
    raw = _read_raw(path)
    data = {} if raw is None else _parse(raw, path)
    before = json.loads(json.dumps(data))
    for key, value in spec.skeleton.items():
        data.setdefault(key, value)
    hooks = data.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise UsageError(f'{path}: "hooks" is not an object; nothing was changed')
    for event, ours in spec.entries.items():
        entries = hooks.setdefault(event, [])
        if not isinstance(entries, list):
            raise UsageError(f"{path}: hooks.{event} is not a list; nothing was changed")
        old = [one.entries[event] for one in legacy if event in one.entries]
        entries[:] = [e for e in entries if e not in old]
        if ours not in entries:
            entries.append(json.loads(json.dumps(ours)))
    if _same(data, before):
        return SettingsChange(path, "already_installed")
    found = {
        "before": None if raw is None else base64.b64encode(raw).decode(),
        "directory": path.parent.is_dir(),
        "made": _missing_dirs(path, root),
    }
    _write(path, _render(data, raw))
    key = _memory_key(harness, path, root)
    kept = _recall(git_dir).get(key)
    # An older memory is the truer original, unless the file it describes is gone (or
    # came back) since: deleted by hand after an install, the file is new again.
    if not isinstance(kept, dict) or (kept.get("before") is None) != (raw is None):
        _remember(git_dir, key, found)
    return SettingsChange(path, "installed")


def uninstall(
    root: Path, harness: str = "claude", *, local: bool = False, git_dir: Path | None = None
) -> SettingsChange:
    """Remove the guard's entries, and the containers install created that are left
    empty; the settings as found before install when nothing else changed since."""
    if harness in SCRIPT_FILES:
        return _uninstall_script(root, SCRIPT_FILES[harness])
    spec = hook_file(harness)
    # Our entries as this version writes them, and as older ones did.
    specs = [spec, *_legacy(harness)]
    path = settings_path(root, local=local, harness=harness)
    _inside(path, root)
    raw = _read_raw(path)
    data = None if raw is None else _parse(raw, path)
    hooks = data.get("hooks") if data is not None else None
    if data is None or not isinstance(hooks, dict):
        return SettingsChange(path, "not_installed")
    key = _memory_key(harness, path, root)
    found = _recall(git_dir).get(key)
    found = found if isinstance(found, dict) else {}
    original = _original(found, path)
    had = original.get("hooks") if original is not None else None
    emptied = []
    removed = False
    for event in spec.entries:
        entries = hooks.get(event)
        if not isinstance(entries, list):
            continue
        ours = [one.entries[event] for one in specs if event in one.entries]
        # Entries equal to ours that the file already held before install (a teammate's,
        # committed) stay: install appended its own after them. An older version's it
        # replaced: those go.
        before = had.get(event) if isinstance(had, dict) else None
        current = spec.entries[event]
        kept = sum(e == current for e in before) if isinstance(before, list) else 0
        drop = []
        for i, e in enumerate(entries):
            if e == current and kept:
                kept -= 1
            elif e in ours:
                drop.append(i)
        if not drop:
            continue
        removed = True
        hooks[event] = [e for i, e in enumerate(entries) if i not in drop]
        emptied += [] if hooks[event] else [event]
    if not removed:
        return SettingsChange(path, "not_installed")
    for event in emptied:  # a list left empty is install's, unless the user had it
        if not (isinstance(had, dict) and event in had):
            del hooks[event]
    if not hooks and not (original is not None and "hooks" in original):
        del data["hooks"]
    # What install started a file with ("version") goes only with the rest of its work:
    # in a file that holds anything else now, it is what that needs.
    bare = {k: v for k, v in data.items() if not _added(spec, original, k, v)}
    if found and found.get("before") is None and not bare:
        path.unlink()  # install made the file, and it holds nothing else
        _remove_dirs(root, path, found)
    elif original is not None and _same(bare, original):
        _write(path, base64.b64decode(found["before"]))  # the very bytes it found
    else:
        _write(path, _render(data, raw))
    _remember(git_dir, key, None)
    return SettingsChange(path, "uninstalled")


def _added(spec: HookFile, original: dict[str, Any] | None, name: str, value: Any) -> bool:
    """Whether install put ``name`` there: a skeleton key the original file lacked."""
    missing = original is None or name not in original
    return missing and name in spec.skeleton and _same(value, spec.skeleton[name])


def _remove_dirs(root: Path, path: Path, found: Mapping[str, Any]) -> None:
    """The directories install made for the file, when nothing else came into them."""
    made = found.get("made")
    if not isinstance(made, list):  # remembered by a version that knew one level only
        made = [] if found.get("directory") else [path.parent.relative_to(root).as_posix()]
    for name in made:
        if isinstance(name, str) and name and ".." not in Path(name).parts:
            with contextlib.suppress(OSError):  # not empty: someone else's now
                (root / name).rmdir()


def _original(found: Any, path: Path) -> dict[str, Any] | None:
    """The settings document install found (None: there was no file, or no memory)."""
    if not isinstance(found, dict) or not isinstance(found.get("before"), str):
        return None
    try:
        return _parse(base64.b64decode(found["before"], validate=True), path)
    except (ValueError, UsageError):
        return None
