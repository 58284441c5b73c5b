"""A listing that clears dead holders' locks (a write, in local mode) at the same instant
as claims on the scope it clears: exactly one claim wins, none is lost, and the listings
answer. No test here asserts how long anything took."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.cli import alock

ALOCK = os.path.join(os.path.dirname(sys.executable), "git-alock")
ROUNDS = int(os.environ.get("ALOCK_LISTING_ROUNDS", "3"))  # more for a stress run

_AT = r"""
import os, sys, time
time.sleep(max(0.0, float(sys.argv[1]) - time.time()))
os.execv(sys.argv[2], sys.argv[2:])
"""


def at_once(at: float, repo: Path, agent: str, *args: str) -> subprocess.Popen[str]:
    """``git-alock ARGS`` as ``agent``, started at the time ``at``."""
    return subprocess.Popen(
        [sys.executable, "-c", _AT, repr(at), ALOCK, *args],
        cwd=repo,
        env={**os.environ, "AGENT_ID": agent},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.slow
def test_listings_clearing_a_dead_lock_race_claims_on_it(repo: Path) -> None:
    for round_no in range(ROUNDS):
        sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        dead = {"AGENT_ID": f"dead{round_no}", "AGENT_SESSION_PID": str(sleeper.pid)}
        assert alock(repo, "acquire", "race/**", **dead).code == 0
        sleeper.kill()
        sleeper.wait()
        at = time.time() + 0.5
        listings = [at_once(at, repo, f"lister{i}", "list") for i in range(2)]
        listings.append(at_once(at, repo, "lister2", "status", "--json"))
        scopes = ["race/a", "race/**", "race/a/b"]
        claims = [
            at_once(at, repo, f"c{round_no}-{i}", "acquire", scope, "--json")
            for i, scope in enumerate(scopes)
        ]
        for listing in listings:
            out, err = listing.communicate(timeout=120)
            assert listing.returncode == 0 and "Traceback" not in err, err
        won = []
        for i, claim in enumerate(claims):
            out, err = claim.communicate(timeout=120)
            assert claim.returncode in (0, 1) and "Traceback" not in err, err
            if json.loads(out)["status"] == "acquired":
                won.append(f"c{round_no}-{i}")
        assert len(won) == 1, f"round {round_no}: {won} won"
        listed = alock(repo, "list", "--json").json()
        assert [r["holder"] for r in listed] == won, listed  # the dead one cleared, once
        assert alock(repo, "release", "--all", AGENT_ID=won[0]).code == 0
