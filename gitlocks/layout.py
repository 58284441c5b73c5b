"""Where gitlocks keeps things, and its defaults: ref names, file names, durations.
Import-free, so every layer names the same refs and files (docs/design.md, section 4)."""

from __future__ import annotations

# --- refs (shared by every worktree of a repository) -----------------------------------------

LOCK_PREFIX = "refs/agent-locks/"  # one blob per live lock: refs/agent-locks/<id>
META_PREFIX = "refs/agent-locks-meta/"
JOURNAL_REF = META_PREFIX + "journal"  # the serialisation ref; its history is the journal
LOCAL_JOURNAL_REF = META_PREFIX + "local-journal"  # local history kept on entering remote mode
FORMAT_REF = META_PREFIX + "format"  # a sharded lock remote: a blob "shards S"
SHARD_PREFIX = META_PREFIX + "shards/"  # shard k's journal: refs/agent-locks-meta/shards/<k>
MAX_SHARDS = 256
# The shard journals a new lock remote is laid out with (docs/design.md 5.10, docs/remote.md
# "At team scale" has the measurements behind the count).
DEFAULT_SHARDS = 64
OWN_REF_PREFIXES = (LOCK_PREFIX, META_PREFIX)
STAGING_PREFIX = "refs/agent-locks-remote/"  # remote mode: the remote's refs as last seen
PROBE_PREFIXES = (LOCK_PREFIX + "probe/", META_PREFIX + "probe/")

# --- files in the common git directory ------------------------------------------------------

MUTEX_NAME = "agent-locks.mutex"
SYNC_FILE = "agent-locks-remote.json"
REFUSALS_FILE = "agent-locks-refusals.jsonl"
CACHE_FILE = "agent-locks-cache"  # verdicts by blob id, a table tree's shards (git/cache.py)

# --- files in the working tree ---------------------------------------------------------------

IGNORE_FILE = ".alockignore"  # paths nobody needs to claim (gitlocks.core.ignore)

# --- defaults ---------------------------------------------------------------------------------

DEFAULT_TTL_SECONDS = 30 * 60
DEFAULT_STALE_SECONDS = 10 * 60
DEFAULT_INTERRUPTED_KEEP_SECONDS = 7 * 86400
DEFAULT_SKEW_SECONDS = 30
DEFAULT_REMOTE_TIMEOUT_SECONDS = 30
DEFAULT_GUARD_REMOTE_TIMEOUT_SECONDS = 3  # the agent guard's wait on the lock remote
DEFAULT_WAIT_SECONDS = 5 * 60  # ``acquire --wait`` without a duration (alock.waitDefault)
MUTEX_TIMEOUT_SECONDS = 15.0
LOCKFILE_WAIT_SECONDS = 5.0
