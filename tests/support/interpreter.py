"""An interpreter under another name (``claude``, ``codex``, ``node``...) that still runs
inside the test's own Python environment.

The kernel names a process after the file it executed, so a stand-in harness is Python
started through a link named like the harness. A bare link to the interpreter outside a
virtual environment's ``bin/`` finds no ``pyvenv.cfg`` beside it: Python then starts as the
base interpreter, with the base's ``site-packages`` (and the user's) first on its path,
and imports whatever versions the machine's base Python happens to carry.

So the link is put in a twin of the environment: ``<where>/bin/<name>`` beside the
environment's own ``pyvenv.cfg``, with ``lib/pythonX.Y/site-packages`` linked to the
environment's. Python reads the twin exactly as it reads the environment: the same
packages, the user's site left out, nothing of the base's before them.
"""

from __future__ import annotations

import os
import sys
import sysconfig
from pathlib import Path


def in_virtual_environment() -> bool:
    return sys.prefix != sys.base_prefix


def named_python(where: Path, name: str) -> Path:
    """An interpreter named ``name`` that imports what this test process imports; made
    once in ``where`` (a directory of the test's)."""
    exe = where / "bin" / name
    if exe.exists():
        return exe
    exe.parent.mkdir(parents=True, exist_ok=True)
    if in_virtual_environment():
        prefix = Path(sys.prefix)
        (where / "pyvenv.cfg").write_bytes((prefix / "pyvenv.cfg").read_bytes())
        for key in ("purelib", "platlib"):
            inside = Path(sysconfig.get_paths()[key]).relative_to(prefix)
            twin = where / inside
            if not twin.exists():
                twin.parent.mkdir(parents=True, exist_ok=True)
                twin.symlink_to(prefix / inside, target_is_directory=True)
    # Not in a virtual environment: the interpreter itself, under the new name, is already
    # the environment the tests run in.
    exe.symlink_to(sys.executable)
    return exe


def python_env(env: dict[str, str]) -> dict[str, str]:
    """``env`` with nothing in it that would move such an interpreter off the test's
    environment: no ``PYTHONHOME``, and ``PATH`` finding this environment's commands first."""
    full = {k: v for k, v in env.items() if k != "PYTHONHOME"}
    full["PATH"] = os.path.dirname(sys.executable) + os.pathsep + full.get("PATH", "")
    return full
