"""Running gitlocks as the tests run it: in process (``alock``) or as its own process, and
planting records by hand."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from dataclasses import dataclass
from io import StringIO
from pathlib import Path
from typing import Any

from gitlocks.main import main as run


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)

    @property
    def word(self) -> str:
        return self.out.split("\n", 1)[0]


@contextmanager
def _env(env: dict[str, str | None]):  # type: ignore[no-untyped-def]
    saved = {k: os.environ.get(k) for k in env}
    for key, value in env.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def alock(cwd: Path, *args: str, **env: str | None) -> Result:
    """Run ``git alock ARGS`` in-process in ``cwd``."""
    out, err = StringIO(), StringIO()
    old = os.getcwd()
    os.chdir(cwd)
    mask = os.umask(0o022)  # a shared repository sets the process's umask: put it back
    os.umask(mask)
    try:
        with _env(env), redirect_stdout(out), redirect_stderr(err):
            code = run(list(args))
    finally:
        os.chdir(old)
        os.umask(mask)
    return Result(code, out.getvalue(), err.getvalue())


def alock_process(cwd: Path, *args: str, env: dict[str, str] | None = None) -> Result:
    """Run ``git alock ARGS`` as a real process, through git's subcommand lookup."""
    full_env = dict(os.environ)
    full_env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + full_env.get("PATH", "")
    full_env.update(env or {})
    proc = subprocess.run(
        ["git", "alock", *args], cwd=cwd, env=full_env, capture_output=True, text=True
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


def run_git(cwd: Path, *args: str, env: dict[str, str] | None = None) -> Result:
    """git as a user runs it: gitlocks on PATH (its hooks run as real processes) and, maybe,
    an agent id."""
    full = dict(os.environ)
    full["PATH"] = os.path.dirname(sys.executable) + os.pathsep + full.get("PATH", "")
    full.update(env or {})
    proc = subprocess.run(["git", *args], cwd=cwd, env=full, capture_output=True, text=True)
    return Result(proc.returncode, proc.stdout, proc.stderr)


def alock_cli(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """Start the installed ``git-alock`` as its own process (racing tests)."""
    full = dict(os.environ)
    full["PATH"] = os.path.dirname(sys.executable) + os.pathsep + full.get("PATH", "")
    full.update(env or {})
    return subprocess.Popen(
        ["git", "alock", *args],
        cwd=cwd,
        env=full,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(proc: subprocess.Popen[str], timeout: float = 60) -> Result:
    out, err = proc.communicate(timeout=timeout)
    return Result(proc.returncode, out, err)


def cli_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """Our environment, with the installed ``git-alock`` on PATH (as ``alock_process``)."""
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env.update(extra or {})
    return env
