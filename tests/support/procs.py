"""The git processes still at work on a repository, as ``/proc`` shows them (Linux)."""

from __future__ import annotations

import os
from pathlib import Path


def git_at_work(command: bytes, repo: Path) -> list[int]:
    """The pids of live (not zombie) processes running git ``command`` (``update-ref``,
    ``receive-pack``) on ``repo``: named in their arguments, or run in it (as git daemon
    runs a service)."""
    where = os.path.realpath(repo)
    found = []
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if not entry.isdigit():
            continue
        try:
            argv = b" ".join(Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0"))
            if command not in argv:
                continue
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
            cwd = os.path.realpath(os.readlink(f"/proc/{entry}/cwd"))
        except (OSError, ValueError, IndexError):
            continue
        named = os.fsencode(where) in argv or os.fsencode(repo) in argv
        if state != "Z" and (cwd == where or named):
            found.append(int(entry))
    return found
