"""What a ``git prune`` running beside a write takes, kept and put back (docs/design.md, 4.6).

A prune that read the refs a moment before a write moved them may delete the write's
objects. So a write, once its refs moved, writes again what is gone and links every object
it stored a second time under ``agent-locks-written/<second>/<id>`` (``keep_written``);
``put_back`` links them into place again. A granted claim whose record is lost all the
same stops every reader (``stop_if_lost``).
"""

from __future__ import annotations

import os
import time

from gitlocks.core.journal import shard_of
from gitlocks.core.judging import ReadAgain
from gitlocks.core.record import is_object_id
from gitlocks.errors import StoreError
from gitlocks.git.run import Env, finish, start
from gitlocks.layout import LOCK_PREFIX

TYPE_CHECKING = False  # typing is for mypy: docs/design.md, section 8
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from gitlocks.git.objects import Objects

KEPT_DIR = "agent-locks-written"
KEEP_SECONDS = 600  # how long a write's objects are kept
RECHECK_SECONDS = 10  # how far back each write looks for objects a prune took
WRITE_AGAIN_TIMES = 50  # a write whose objects a prune took, before it gives up


def kept_dir(objects_dir: str) -> str:
    """Where the objects of recent writes are kept (beside ``objects``, in the common git
    directory)."""
    return os.path.join(os.path.dirname(objects_dir), KEPT_DIR)


def _loose(objects_dir: str, oid: str) -> str:
    return f"{objects_dir}/{oid[:2]}/{oid[2:]}"


def keep_written(objects: Objects, written: Mapping[str, tuple[str, bytes]]) -> None:
    """After a write's refs moved, under the mutex: every object it stored (``written``:
    id -> type and contents) is there, written again if a prune took it, and kept under a
    second name for ``put_back`` (best effort: the write stands either way)."""
    now = int(time.time())
    top = kept_dir(objects.directory)
    here = os.path.join(top, str(now))
    made = False
    try:
        os.makedirs(here)
        made = True
    except FileExistsError:
        pass
    except OSError:
        here = ""
    for oid, (kind, data) in written.items():
        for _ in range(3):
            if not os.path.exists(_loose(objects.directory, oid)):
                objects.write(kind, data, fresh=True)
            try:
                if here:
                    os.link(_loose(objects.directory, oid), os.path.join(here, oid))
            except FileNotFoundError:
                continue  # taken again between the two: written again
            except OSError:
                pass  # kept already (FileExistsError), or no hard links here
            break
    if made:  # a new second: the seconds past keeping go (at most once a second)
        _drop_old(top, now - KEEP_SECONDS)


def taken(objects: Objects) -> bool:
    """Whether a prune took one of the objects the write under way stored (git refuses to
    point a ref at a missing object: the write is decided and written again)."""
    return any(not os.path.exists(_loose(objects.directory, o)) for o in objects.written or ())


def _drop_old(top: str, before: int) -> None:
    for name in _seconds(top):
        if int(name) < before:
            where = os.path.join(top, name)
            try:
                for entry in os.listdir(where):
                    os.unlink(os.path.join(where, entry))
                os.rmdir(where)
            except OSError:
                pass


def _seconds(top: str) -> list[str]:
    try:
        names = (n for n in os.listdir(top) if n.isascii() and n.isdigit())  # int() reads them
        return sorted(names, key=int, reverse=True)
    except OSError:
        return []


def put_back(
    objects_dir: str, oids: Iterable[str] | None = None, within: int = KEEP_SECONDS
) -> set[str]:
    """Link into place again each kept object a prune took: of the writes of the last
    ``within`` seconds, those named ``oids`` (every one when None). The ids put back."""
    top = kept_dir(objects_dir)
    wanted = None if oids is None else set(oids)
    since = int(time.time()) - within
    done: set[str] = set()
    for name in _seconds(top):
        if int(name) < since or wanted == set():
            break
        where = f"{top}/{name}"
        try:
            names = os.listdir(where) if wanted is None else list(wanted)
        except OSError:
            continue
        for oid in names:
            path = _loose(objects_dir, oid)
            if os.path.exists(path) or not is_object_id(oid):
                continue
            try:
                os.makedirs(os.path.dirname(path), exist_ok=True)  # pruned when empty
            except OSError:
                continue
            try:
                os.link(f"{where}/{oid}", path)
            except FileExistsError:
                pass  # written meanwhile
            except OSError:
                continue  # not kept in this second, or no hard links here
            done.add(oid)
            if wanted is not None:
                wanted.discard(oid)
    return done


def stop_if_lost(
    absent: Sequence[tuple[str, str]],
    journal: str,
    objects: str | None,
    git: Sequence[str] = (),
    cwd: str | None = None,
    env: Env = Env.CLEAN,
) -> None:
    """Of ``absent`` (lock ref, blob id: refs whose blob could not be read), the granted
    claims whose records the object store lost: ``ReadAgain`` when some were kept and are
    put back (read again), else an error naming the first whose blob the journal commit (or
    ref) ``journal`` names for that lock, found with one ``git ls-tree`` (``git`` before it:
    ``--git-dir DIR``). A blob with something at its loose path in ``objects`` (a FIFO, say)
    is unreadable, not lost. Returns when none is a granted claim."""
    if objects is not None and put_back(objects, {oid for _, oid in absent}):
        raise ReadAgain("records a prune took were put back")  # kept: ours, whatever names them
    if objects is not None:
        put_back(objects)  # the journal's own objects, when a prune took them too
    asked = {
        f"locks/{shard_of(ref[len(LOCK_PREFIX) :])}/{ref[len(LOCK_PREFIX) :]}": (ref, oid)
        for ref, oid in absent
        if objects is None or not os.path.lexists(_loose(objects, oid))
    }
    if not asked:
        return
    args = [*git, "ls-tree", "-z", "--full-tree", journal, "--", *asked]
    proc = start(args, cwd, env=env, error=StoreError)
    out = finish(proc, ok=(0, 128), error=StoreError)
    if proc.returncode == 128:  # no journal (none was granted), or one that cannot be read
        verify = start(
            [*git, "rev-parse", "-q", "--verify", journal], cwd, env=env, error=StoreError
        )
        finish(verify, ok=(0, 1), error=StoreError)
        lost = list(asked.values()) if verify.returncode == 0 else []
    else:
        lost = []
        for line in out.decode("utf-8", "replace").split("\0"):
            info, _, path = line.partition("\t")
            named = info.split(" ")[-1]
            if path in asked and asked[path][1] == named:
                lost.append(asked[path])
    if not lost:
        return
    ref, oid = lost[0]
    more = f" (and {len(lost) - 1} more)" if len(lost) > 1 else ""
    lock_id = ref[len(LOCK_PREFIX) :]
    raise StoreError(
        f"{ref}{more} is a granted claim whose record {oid} is missing from the object "
        "store (did git gc --prune=now run beside a write?); who holds what cannot be told, "
        f"so nothing is decided. git alock log names its holder; git alock break {lock_id} "
        "removes it, for its holder to claim again"
    )
