"""A repository as a supervisor of several agents sees it, for the live page's layout tests
and its screenshots (``tests/ui/screenshots.py``): five agent sessions on one repository
and two linked worktrees, one of them idle (holding nothing), one STALE, one whose work was
interrupted, a sub-agent, shared and ``--until-merged`` claims, edits in and out of claims
(one inside a claim held from another worktree: the page's red warning), and a refusal.

Everything is made as agents make it: harness sessions (stand-in processes named as the
harness) that ran the guard's SessionStart hook and run ``git alock`` through their shell;
one of them ends with its work noted. Only the STALE claim is aged by hand (its
record rewritten as plain git would), since waiting ten minutes is no test."""

from __future__ import annotations

import json
import shlex
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from support.cli import alock
from support.guard import event
from support.harness import StandIn
from support.records import plant

FILES = (
    ".github/workflows/ci.yml",
    "README.md",
    "docs/api.md",
    "docs/deploy.md",
    "docs/guide.md",
    "scripts/release.sh",
    "src/api/__init__.py",
    "src/api/auth.py",
    "src/api/routes.py",
    "src/api/tokens.py",
    "src/api/users.py",
    "src/db/migrations/0001_init.sql",
    "src/db/migrations/0002_orders.sql",
    "src/db/models.py",
    "src/db/session.py",
    "src/ui/components/Button.tsx",
    "src/ui/components/Cart.tsx",
    "src/ui/components/Nav.tsx",
    "src/ui/styles/nav.css",
    "src/ui/styles/theme.css",
    "tests/test_auth.py",
    "tests/test_orders.py",
)


def git(cwd: Path, *args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True)
    return proc.stdout


def ok(cwd: Path, *args: str, **env: str) -> None:
    got = alock(cwd, *args, **env)
    assert got.code == 0, (args, got)


class Agent:
    """A coding agent: a harness session (a stand-in process named as the harness) that
    ran the guard's SessionStart hook in ``cwd``, and runs ``git alock`` through its shell."""

    def __init__(self, base: Path, harness: str, cwd: Path, **env: str) -> None:
        self.session = StandIn(base / f"harness-{env['AGENT_ID']}", harness, cwd, (), **env)
        self.cwd = cwd
        started = self.session.guard(event(cwd, "SessionStart"))
        assert started.code == 0, started

    def run(self, *args: str, code: int = 0) -> None:
        got = self.session.shell(shlex.join(["git", "alock", *args]))
        assert got.code == code, (args, got)

    def close(self) -> None:
        self.session.close()


def age(repo: Path, holder: str, minutes: int) -> None:
    """Make ``holder``'s claims look as if last renewed ``minutes`` ago."""
    then = datetime.now(timezone.utc) - timedelta(minutes=minutes)
    stamp = then.strftime("%Y-%m-%dT%H:%M:%SZ")
    for record in json.loads(alock(repo, "list", "--json").out):
        if record["holder"] == holder:
            record.update(created_at=stamp, renewed_at=stamp)
            plant(repo, record["id"], record)


@contextmanager
def team(base: Path) -> Iterator[dict[str, Any]]:
    """Build the demo under ``base`` (``base/shop`` and its worktrees ``shop-api`` and
    ``shop-ui``); yield its parts while its agents run; end them afterwards."""
    repo = base / "shop"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    for name in FILES:
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(f"{name}\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "shop")
    api, ui = base / "shop-api", base / "shop-ui"
    git(repo, "worktree", "add", "-q", "-b", "api-oauth", str(api))
    git(repo, "worktree", "add", "-q", "-b", "ui-nav", str(ui))
    agents: list[Agent] = []
    try:
        # A database agent whose session ended in the middle of its work: INTERRUPTED.
        db = Agent(base, "codex", repo, AGENT_ID="codex-db")
        db.run("acquire", "src/db/migrations/**", "-m", "orders table migration")
        db.run("note", "src/db/migrations/**", "0002 written, 0003 next")
        db.close()
        # The API agent in its worktree, with a sub-agent writing the docs.
        claude = Agent(base, "claude", api, AGENT_ID="claude-api")
        agents.append(claude)
        claude.run("acquire", "src/api/**", "-m", "move login to OAuth2", "--until-merged", "main")
        claude.run("acquire", "tests/test_auth.py", "-m", "tests for the OAuth2 flow")
        docs = Agent(base, "gemini", repo, AGENT_ID="gemini-docs", AGENT_PARENT_ID="claude-api")
        agents.append(docs)
        docs.run("acquire", "docs/**", "--shared", "-m", "document the new login")
        claude.run("acquire", "docs/api.md", "--shared", "-m", "API reference for OAuth2")
        # The UI agent, quiet for a while (STALE), and refused where the API agent works.
        codex = Agent(base, "codex", ui, AGENT_ID="codex-ui")
        agents.append(codex)
        codex.run("acquire", "src/ui/components/Nav.tsx", "src/ui/styles/**", "-m",
                  "new navigation bar")  # fmt: skip
        age(repo, "codex-ui", 14)
        codex.run("acquire", "src/api/routes.py", code=1)
        # Uncommitted edits: in their claims, unclaimed, one in another worktree's claim.
        (repo / "docs/guide.md").write_text("the new login\n")
        (repo / "docs/oauth.md").write_text("OAuth2\n")
        (api / "src/api/auth.py").write_text("oauth\n")
        (api / "src/api/tokens.py").write_text("tokens\n")
        (ui / "src/ui/components/Nav.tsx").write_text("nav\n")
        (ui / "src/ui/styles/nav.css").write_text("nav\n")
        (ui / "src/api/routes.py").write_text("a route for the new bar\n")
        (ui / "README.md").write_text("hello\n")
        # A review agent just started: it holds nothing yet, and runs.
        agents.append(Agent(base, "claude", repo, AGENT_ID="claude-review"))
        yield {"repo": repo, "worktrees": [api, ui], "agents": agents}
    finally:
        for agent in agents:
            agent.close()
