"""Moving refs with git's own transaction: ``git update-ref --stdin``.

``start``, one ``update``/``delete`` per ref with the value it must still have, then
``prepare``: git locks every ref and compares each old value, or refuses the whole
transaction. Until ``commit`` nothing has moved; ``abort`` (or git going away) lets every
lock go. It works with every ref backend git has (files, reftable).
"""

from __future__ import annotations

from subprocess import TimeoutExpired

from gitlocks.errors import StoreError
from gitlocks.git.run import Env, close_pipes, start


class RefsRefused(StoreError):
    """git refused a transaction: a lock held, or a ref not at the value expected."""


class Transaction:
    """One ``git update-ref --stdin`` transaction in the repository at ``git_dir``."""

    def __init__(self, git_dir: str, message: str) -> None:
        self.names: tuple[str, ...] = ()  # what it moves, as its owner says
        self.committed = False
        self.proc = start(
            ["--git-dir", git_dir, "update-ref", "-m", message, "--stdin"],
            env=Env.CLEAN,
            error=StoreError,
        )
        # "start" is sent now and its answer read with the next verb's: a writer starting
        # two transactions does not wait for the first git to be up before starting the
        # second. Nothing is locked before "prepare" anyway.
        self._unanswered = ["start"]
        self._write("start")

    def queue(self, name: str, new: str | None, old: str | None, hexlen: int) -> None:
        """Move ``name`` to ``new`` (None: delete it) if it still holds ``old`` (None:
        absent, or symbolic), compared by git under the ref's lock. A symbolic ref is
        never followed (``no-deref``): one pointing nowhere is replaced, one pointing at a
        ref refuses the transaction."""
        zero = "0" * hexlen
        self._write("option no-deref")  # holds for the next verb
        if new is None and old is None:
            self._write(f"delete {name}")  # deleting what is not there moves nothing
        elif new is None:
            self._write(f"delete {name} {old}")
        else:
            self._write(f"update {name} {new} {old or zero}")

    def ask(self, verb: str) -> None:
        """Send ``verb`` without waiting: its answer is read by ``answer``. ``prepare``
        locks every ref queued and compares its value."""
        self._write(verb)
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.flush()
        except OSError as exc:
            raise self._refused() from exc
        self._unanswered.append(verb)

    def answer(self) -> None:
        """Wait for git's ``<verb>: ok`` to everything asked; ``RefsRefused`` otherwise."""
        assert self.proc.stdout is not None
        for asked in self._unanswered:
            reply = self.proc.stdout.readline()
            if reply.strip() != f"{asked}: ok".encode():
                raise self._refused()
        self._unanswered = []

    def commit(self) -> None:
        """Move every ref queued, all at once as far as readers of one ref can tell.

        Once git answers ``commit: ok`` the refs have moved (it answers after its
        transaction is done), so git is left to end on its own and reaped later: waiting
        for it to exit would add its exit to every write.
        """
        self.ask("commit")
        self.answer()
        self.committed = True
        close_pipes(self.proc)

    def abort(self) -> None:
        """Move nothing and let every lock go (safe to call at any point, more than once;
        after ``commit``, nothing is left to let go)."""
        if self.committed:
            return
        if self.proc.returncode is None and self.proc.stdin is not None:
            try:
                self.proc.stdin.write(b"abort\n")
            except OSError:
                pass
        self._close()

    def _write(self, line: str) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(line.encode() + b"\n")
        except OSError as exc:
            raise self._refused() from exc

    def _refused(self) -> RefsRefused:
        self._close(keep_err=True)  # git's reason is read once it has ended
        err = b""
        if self.proc.stderr is not None and not self.proc.stderr.closed:
            err = self.proc.stderr.read()
            self.proc.stderr.close()
        lines = err.decode("utf-8", "replace").strip().splitlines()
        detail = lines[-1].removeprefix("fatal: ") if lines else f"exit {self.proc.returncode}"
        return RefsRefused(detail)

    def _close(self, keep_err: bool = False) -> None:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
        try:
            self.proc.wait(timeout=60)
        except TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        if not keep_err and self.proc.stderr is not None and not self.proc.stderr.closed:
            self.proc.stderr.close()
