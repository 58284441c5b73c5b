"""``.alockignore``: paths nobody needs to claim (lockfiles, generated code, changelogs
that everyone appends to), in gitignore syntax, committed at the top of the working tree.

The agent guard never claims or denies them, and the hooks and ``status`` do not report
them (docs/design.md, section 6.4). Pure: callers read the file; pathspec matches.
"""

from __future__ import annotations

from pathlib import Path

IGNORE_FILE = ".alockignore"
MAX_IGNORE_BYTES = 64 * 1024  # a committed list of a few patterns; more is not read


class IgnoreList:
    """The patterns of one ``.alockignore``; an empty list ignores nothing."""

    def __init__(self, text: str = "") -> None:
        lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
        self._spec = None
        if lines:
            # Imported here: pathspec is only needed where a repository has the file.
            import pathspec

            kept = []
            for line in lines:  # a line pathspec cannot read is skipped, never fatal
                try:
                    pathspec.GitIgnoreSpec.from_lines([line])
                except Exception:  # pathspec's errors vary by version
                    continue
                kept.append(line)
            self._spec = pathspec.GitIgnoreSpec.from_lines(kept) if kept else None

    def __bool__(self) -> bool:
        return self._spec is not None

    def ignored(self, path: str) -> bool:
        """Whether the root-relative ``path`` is one nobody needs to claim."""
        return self._spec is not None and bool(self._spec.match_file(path))

    @classmethod
    def of_tree(cls, root: str | Path) -> IgnoreList:
        """The list at the top of the working tree ``root``; empty when it has none (or it
        cannot be read, or is too big to be a list of patterns)."""
        path = Path(root) / IGNORE_FILE
        try:
            if not path.is_file():  # a fifo or a device would block or never end
                return cls()
            with open(path, "rb") as f:
                raw = f.read(MAX_IGNORE_BYTES + 1)
        except OSError:
            return cls()
        if len(raw) > MAX_IGNORE_BYTES:
            return cls()
        return cls(raw.decode("utf-8", "replace"))
