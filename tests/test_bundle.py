"""The bundle of compiled modules: a command reads gitlocks' code from one file, and never
code other than what Python would have imported.

Each case runs a copy of the package (its own ``__pycache__``), in fresh processes started
with ``-S`` so that nothing but the copy can be imported as ``gitlocks``.
"""

from __future__ import annotations

import compileall
import importlib.util
import json
import marshal
import os
import py_compile
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import gitlocks

PACKAGE = Path(gitlocks.__file__).parent

# A command's imports as the installed script does them, then what the finder saw.
PROBE = """
import json, sys
from gitlocks import bundle
finder = bundle.install()
import gitlocks.main, gitlocks.layout, gitlocks.store.local
from gitlocks import layout
print(json.dumps({
    "index": len(finder.index), "served": finder.served, "missed": finder.missed,
    "edited": getattr(layout, "EDITED", None), "prefix": layout.LOCK_PREFIX,
    "file": gitlocks.store.local.__file__, "cached": gitlocks.store.local.__cached__,
    "package": gitlocks.store.__path__, "docs": gitlocks.main._leave.__doc__ is not None,
    "code": gitlocks.main._leave.__code__.co_filename,
}))
bundle.refresh()
"""


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    """A copy of the package with a ``.pyc`` for each module (as pip installs it)."""
    root = tmp_path / "site"
    shutil.copytree(PACKAGE, root / "gitlocks", ignore=shutil.ignore_patterns("__pycache__"))
    assert compileall.compile_dir(
        root / "gitlocks",
        quiet=1,
        invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP,
    )
    return root


def environment(root: Path) -> dict[str, str]:
    """The copy at ``root`` first on the path, and a cache directory of its own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    return {**env, "PYTHONPATH": str(root), "XDG_CACHE_HOME": str(root.parent / "cache")}


def probe(root: Path, *flags: str, before: str = "") -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-S", *flags, "-c", before + PROBE],
        env=environment(root),
        cwd=root,  # not the project's directory, whose package "-c" would import
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def bundle_of(root: Path) -> Path:
    """The bundle of the copy at ``root``: in the cache directory, named after the package."""
    name = str(root / "gitlocks").replace("%", "%25").replace("/", "%2F")
    tag = sys.implementation.cache_tag
    return root.parent / "cache" / "gitlocks" / f"bundle-{name}.{tag}.bin"


def test_the_first_command_writes_the_bundle_and_the_next_reads_every_module_from_it(
    copy: Path,
) -> None:
    first = probe(copy)
    assert first["index"] == 0 and first["served"] == []
    assert bundle_of(copy).is_file()
    second = probe(copy)
    assert second["missed"] == []
    assert {"gitlocks.main", "gitlocks.layout", "gitlocks.store.local"} <= set(second["served"])
    # Modules read from the bundle are the package's files, as Python would have them.
    assert second["file"] == str(copy / "gitlocks" / "store" / "local.py")
    assert second["cached"] == first["cached"]
    assert second["package"] == [str(copy / "gitlocks" / "store")]


@pytest.mark.parametrize("same_size", [False, True])
def test_a_module_edited_since_is_imported_from_its_source(copy: Path, same_size: bool) -> None:
    probe(copy)
    layout = copy / "gitlocks" / "layout.py"
    text = layout.read_text()
    if same_size:  # one character changed: only the modification time tells
        edited = text.replace('"refs/agent-locks/"', '"refs/agent-lockz/"', 1)
        assert len(edited) == len(text) and edited != text
        st = os.stat(layout)
        layout.write_text(edited)
        os.utime(layout, ns=(st.st_atime_ns, st.st_mtime_ns + 5 * 10**9))
        changed: tuple[str, object] = ("prefix", "refs/agent-lockz/")
    else:
        layout.write_text(text + "\nEDITED = True\n")
        changed = ("edited", True)
    key, value = changed
    edited_run = probe(copy, "-B")  # no .pyc written: the bundle cannot learn it
    assert edited_run[key] == value
    assert "gitlocks.layout" in edited_run["missed"]
    assert "gitlocks.layout" not in edited_run["served"]
    assert probe(copy, "-B")[key] == value  # still from source, every time
    probe(copy)  # writes the .pyc, then the bundle with it
    last = probe(copy)
    assert last[key] == value and last["missed"] == []
    assert "gitlocks.layout" in last["served"]


@pytest.mark.parametrize(
    "damage",
    ["empty", "truncated", "header", "index", "other python", "entries", "not code", "mapping"],
)
def test_a_damaged_bundle_is_passed_over_and_written_again(copy: Path, damage: str) -> None:
    probe(copy)
    path = bundle_of(copy)
    data = path.read_bytes()
    if damage == "empty":
        data = b""
    elif damage == "truncated":
        data = data[: len(data) // 2]
    elif damage == "header":
        data = b"not a bundle\n" + data[20:]
    elif damage == "index":
        head = len(b"gitlocks bundle 1\n") + 8
        data = data[:head] + b"\xff" * 64 + data[head + 64 :]
    elif damage == "other python":
        head = len(b"gitlocks bundle 1\n")
        data = data[:head] + b"\x00\x00\x0d\x0a" + data[head + 4 :]
    else:  # well formed, holding what no bundle of ours would
        from gitlocks import bundle

        index: dict[str, object] = {"gitlocks.main": "main.py", "gitlocks.layout": (1, 2)}
        body = marshal.dumps(12345)
        for name in ("gitlocks.store", "gitlocks.store.local", "gitlocks.errors"):
            index[name] = (name != "gitlocks.store.local", 0, 0, 0, len(body))
        if damage in ("not code", "mapping"):  # each entry as its source says
            for name in index:
                src = copy / "gitlocks" / name.removeprefix("gitlocks.").replace(".", "/")
                package = src.is_dir()
                st = os.stat(src / "__init__.py" if package else src.with_suffix(".py"))
                if damage == "not code":  # its code an int
                    index[name] = (package, int(st.st_mtime), st.st_size, 0, len(body))
                else:  # a dict whose keys are the entry (its offset not 0, False's twin)
                    entry = (package, int(st.st_mtime), st.st_size, 7, len(body))
                    index[name] = dict.fromkeys(entry)
        raw = marshal.dumps(index)
        magic = importlib.util.MAGIC_NUMBER
        data = bundle.FORMAT + magic + len(raw).to_bytes(4, "little") + raw + body
    path.write_bytes(data)
    damaged = probe(copy)
    assert damaged["edited"] is None  # the command ran, on the package's own code
    if damage == "truncated":  # what the first half holds is still read from it
        assert damaged["served"] and "gitlocks.store.local" in damaged["missed"]
    else:
        assert damaged["served"] == []
    again = probe(copy)
    assert again["missed"] == [] and "gitlocks.store.local" in again["served"]


def test_no_pycache_no_bundle(copy: Path) -> None:
    """Without ``__pycache__`` (Python told to write no bytecode) there is nothing to bundle,
    and nothing is added to the package."""
    for cache in list((copy / "gitlocks").rglob("__pycache__")):
        shutil.rmtree(cache)
    before = sorted(p.relative_to(copy) for p in copy.rglob("*"))
    first = probe(copy, "-B")
    assert first["served"] == [] and first["edited"] is None
    assert not bundle_of(copy).exists()
    assert sorted(p.relative_to(copy) for p in copy.rglob("*")) == before


def test_the_package_s_own_directory_is_left_as_installed(copy: Path) -> None:
    """The bundle lives in the user's cache directory: the package's directory holds what
    pip put there and nothing more (uninstalling it leaves nothing behind)."""
    before = sorted(p.relative_to(copy) for p in copy.rglob("*"))
    probe(copy)
    assert bundle_of(copy).is_file() and probe(copy)["served"]
    assert sorted(p.relative_to(copy) for p in copy.rglob("*")) == before


@pytest.mark.parametrize("cache", ["relative", "unset"])
def test_without_a_cache_directory_there_is_no_bundle(copy: Path, cache: str) -> None:
    """No absolute ``$XDG_CACHE_HOME`` nor ``$HOME`` (a relative one is ignored, as the
    XDG spec says): modules import as usual, and nothing is written."""
    env = environment(copy)
    env["XDG_CACHE_HOME"] = "relative/cache"
    if cache == "unset":
        del env["XDG_CACHE_HOME"]
    env["HOME"] = "relative"
    for _ in range(2):
        done = subprocess.run([sys.executable, "-S", "-c", PROBE], env=env, cwd=copy,
                              capture_output=True, text=True, timeout=60)  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["served"] == []
    assert not (copy / "relative").exists()


def test_pyc_files_checked_by_hash_are_not_bundled(copy: Path) -> None:
    """A ``.pyc`` checked by its source's hash (reproducible builds) says nothing of the
    source's time: such modules are imported as usual, and no run writes a bundle for
    nothing."""
    for cache in list((copy / "gitlocks").rglob("__pycache__")):
        shutil.rmtree(cache)
    compileall.compile_dir(
        copy / "gitlocks",
        quiet=1,
        invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH,
    )
    probe(copy)
    assert not bundle_of(copy).exists()
    assert probe(copy)["served"] == []


def test_commands_refreshing_at_once_leave_one_whole_bundle(copy: Path) -> None:
    procs = [
        subprocess.Popen(
            [sys.executable, "-S", "-c", PROBE],
            env=environment(copy),
            cwd=copy,
            stdout=subprocess.DEVNULL,
        )
        for _ in range(8)
    ]
    assert all(p.wait(timeout=120) == 0 for p in procs)
    assert not [p for p in bundle_of(copy).parent.iterdir() if p.name.endswith(".tmp")]
    after = probe(copy)
    assert after["missed"] == [] and "gitlocks.main" in after["served"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes where the mode says it may not")
def test_a_cache_directory_that_cannot_be_written_gets_no_bundle(copy: Path) -> None:
    cache = copy.parent / "cache"
    cache.mkdir()
    cache.chmod(0o555)
    try:
        assert probe(copy)["served"] == []
        assert not bundle_of(copy).exists()
    finally:
        cache.chmod(0o755)


def command(root: Path, cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The installed script run on the copy at ``root`` (whose package comes first on the
    path), in ``cwd``."""
    script = Path(sys.executable).parent / "git-alock"
    done = subprocess.run(
        [sys.executable, str(script), *args],
        cwd=cwd,
        env={**environment(root), **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done


def test_a_shared_repository_s_umask_leaves_the_bundle_the_user_s_alone(
    copy: Path, repo: Path
) -> None:
    """A shared repository's umask (0 for ``0666``) is the command's when it writes the
    bundle at its end: the bundle and its directory are the user's alone all the same, so
    nobody else can write code this user runs."""
    subprocess.run(["git", "config", "core.sharedRepository", "0666"], cwd=repo, check=True)
    command(copy, repo, "list")
    assert stat.S_IMODE(bundle_of(copy).stat().st_mode) == 0o600
    assert stat.S_IMODE(bundle_of(copy).parent.stat().st_mode) == 0o700


def test_a_run_with_docstrings_stripped_leaves_no_bundle_of_them_for_the_others(
    copy: Path,
) -> None:
    """``-OO`` (``PYTHONOPTIMIZE=2``) imports ``.pyc`` files of its own, without docstrings
    or asserts: the bundle it writes from them is its own too. Others read theirs, with
    the docstrings a verb's help is made of."""
    stripped = probe(copy, "-OO")
    assert stripped["docs"] is False
    assert not bundle_of(copy).exists()
    probe(copy, "-OO")  # reads the bundle of its own
    assert probe(copy)["docs"] is True
    again = probe(copy)
    assert again["docs"] is True and "gitlocks.main" in again["served"]
    assert probe(copy, "-OO")["docs"] is False


def test_a_package_moved_with_its_bundle_names_its_own_files_in_tracebacks(
    copy: Path, tmp_path: Path
) -> None:
    """Code compiled where the package was before it was copied with its ``__pycache__``
    (times kept, as ``cp -a`` keeps them) names the files where they are now, as Python
    names a ``.pyc``'s: tracebacks and ``inspect`` read the package's own files."""
    probe(copy)
    moved = tmp_path / "moved"
    shutil.copytree(copy, moved)  # with the modification times, and the .pyc files
    shutil.rmtree(copy)
    probe(moved)  # the bundle of the package where it is now, from the .pyc files copied
    there = probe(moved)
    assert "gitlocks.main" in there["served"]
    assert there["code"] == str(moved / "gitlocks" / "main.py")


def test_a_bundle_claiming_an_index_of_gigabytes_is_passed_over_where_memory_is_limited(
    copy: Path,
) -> None:
    """A damaged length of the index (4 GB) is more than a process with a limit on its
    memory (``ulimit -v``) may ask for: the bundle is passed over and written again, the
    command not stopped before it starts, nor every command after it."""
    probe(copy)
    path = bundle_of(copy)
    data = path.read_bytes()
    head = len(b"gitlocks bundle 1\n") + 4
    path.write_bytes(data[:head] + b"\xff\xff\xff\xff" + data[head + 4 :])
    limited = "import resource\nresource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n"
    damaged = probe(copy, before=limited)
    assert damaged["served"] == [] and damaged["edited"] is None
    again = probe(copy, before=limited)
    assert again["missed"] == [] and "gitlocks.main" in again["served"]


@pytest.mark.parametrize("when", ["before", "after"])
def test_a_package_beside_a_module_of_its_name_is_bundled_as_python_imports_it(
    copy: Path, when: str
) -> None:
    """``layout/__init__.py`` beside ``layout.py`` (a module turned into a package, the old
    file left behind) is what Python imports: the bundle holds the package's code, never
    the module's under the package's name, even when their times and sizes are the same;
    a bundle of the module, written before the package was made, is not read for it."""
    if when == "after":
        assert probe(copy)["prefix"] == "refs/agent-locks/"
    module = copy / "gitlocks" / "layout.py"
    text = module.read_text()
    (copy / "gitlocks" / "layout").mkdir()
    package = copy / "gitlocks" / "layout" / "__init__.py"
    package.write_text(text.replace('"refs/agent-locks/"', '"refs/agent-lockz/"', 1))
    st = os.stat(module)
    os.utime(package, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(package).st_size == st.st_size
    compileall.compile_dir(copy / "gitlocks" / "layout", quiet=1)
    assert probe(copy)["prefix"] == "refs/agent-lockz/"  # Python's own import
    again = probe(copy)
    assert again["prefix"] == "refs/agent-lockz/" and "gitlocks.layout" in again["served"]
    assert again["missed"] == []


def test_a_module_turned_into_a_package_is_bundled_again(copy: Path) -> None:
    """``layout.py`` moved to ``layout/__init__.py``: Python imports the package, and the
    command writes the bundle again, which the next one reads it from."""
    probe(copy)
    base = copy / "gitlocks"
    (base / "layout").mkdir()
    (base / "layout.py").rename(base / "layout" / "__init__.py")
    compileall.compile_dir(base / "layout", quiet=1)
    moved = probe(copy)
    assert moved["prefix"] == "refs/agent-locks/"
    assert "gitlocks.layout" not in moved["served"] and "gitlocks.layout" in moved["missed"]
    again = probe(copy)
    assert "gitlocks.layout" in again["served"] and again["missed"] == []


def test_ctrl_c_while_the_bundle_is_written_ends_the_command_as_it_answered(
    copy: Path, repo: Path
) -> None:
    """The bundle is written after the answer: Ctrl-C then (here, as the file is put in
    place) leaves the command's exit code, no traceback and no temporary file."""
    script = Path(sys.executable).parent / "git-alock"
    interrupted = (
        "import os, runpy, sys\n"
        "def replace(*args):\n"
        "    raise KeyboardInterrupt\n"
        "os.replace = replace\n"
        f"sys.argv = [{str(script)!r}, 'list']\n"
        f"runpy.run_path({str(script)!r}, run_name='__main__')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", interrupted],
        cwd=repo,
        env=environment(copy),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == "no locks\n"
    assert not bundle_of(copy).exists()
    assert not [p for p in bundle_of(copy).parent.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("planted", ["fifo", "directory"])
def test_something_other_than_a_file_at_the_bundle_s_place_is_passed_over(
    copy: Path, planted: str
) -> None:
    """A FIFO (which a plain open would wait on forever) or a directory where the bundle
    belongs: every command runs, importing as usual, and none tries to replace it."""
    path = bundle_of(copy)
    path.parent.mkdir(parents=True)
    if planted == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()
    for _ in range(2):
        got = probe(copy)
        assert got["served"] == [] and got["edited"] is None
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


def test_a_link_at_the_bundle_s_place_is_neither_read_nor_replaced(
    copy: Path, tmp_path: Path
) -> None:
    """A link planted where the bundle belongs could name any file of the user's (one a
    clone checked out, say), whose code the command would run: it is passed over, as a
    FIFO is, even when it names a bundle."""
    probe(copy)
    path = bundle_of(copy)
    elsewhere = tmp_path / "elsewhere.bin"
    path.rename(elsewhere)
    path.symlink_to(elsewhere)
    for _ in range(2):
        got = probe(copy)
        assert got["served"] == [] and got["edited"] is None
    assert path.is_symlink() and os.readlink(path) == str(elsewhere)


@pytest.mark.parametrize("mode", [0o777, 0o770])
def test_a_cache_directory_others_may_write_in_is_passed_over(copy: Path, mode: int) -> None:
    """``gitlocks/`` in the cache directory made writable by others (or made by them, in a
    cache directory users share): they could put any file of the user's there, or one
    bundle in another's place. Its bundle is neither read nor written."""
    probe(copy)
    path = bundle_of(copy)
    path.parent.chmod(mode)
    stale = path.read_bytes()
    for _ in range(2):
        assert probe(copy)["served"] == []
    path.unlink()
    probe(copy)
    assert not path.exists()
    path.write_bytes(stale)
    path.parent.chmod(0o700)
    assert "gitlocks.main" in probe(copy)["served"]


def test_the_cache_directory_s_parents_are_made_0700_whatever_the_umask(copy: Path) -> None:
    """A shared repository's umask (0) is the command's when it writes the bundle: every
    directory it makes is the user's alone, as the XDG spec asks, never an ``~/.cache``
    that anyone may write in (where other programs keep caches of code too)."""
    cache = copy.parent / "cache"
    probe(copy, before="import os\nos.umask(0)\n")
    assert bundle_of(copy).is_file()
    for made in (cache, cache / "gitlocks"):
        assert stat.S_IMODE(made.stat().st_mode) == 0o700, made


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can make another user's directory")
def test_root_with_another_user_s_home_makes_no_directory_there(copy: Path, tmp_path: Path) -> None:
    """Root run with a user's ``$HOME`` (``sudo -E``, a container's user) would leave a
    ``~/.cache`` of root's in it, which the user's own programs could not write in: it
    makes nothing there, and imports as usual."""
    home = tmp_path / "someone"
    home.mkdir()
    os.chown(home, 4242, 4242)
    env = {**environment(copy), "HOME": str(home)}
    del env["XDG_CACHE_HOME"]
    for _ in range(2):
        done = subprocess.run([sys.executable, "-S", "-c", PROBE], env=env, cwd=copy,
                              capture_output=True, text=True, timeout=60)  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["served"] == []
    assert list(home.iterdir()) == []


def test_a_long_path_of_wide_characters_gets_a_bundle(tmp_path: Path) -> None:
    """A package whose escaped directory is short in characters but long in bytes (each
    ``語`` is three) is named by its hash: the file name would be more than the 255 bytes
    a name may hold, and no command would ever get its bundle."""
    base = tmp_path / "x"
    short = len(str(base / "site" / "gitlocks").replace("/", "%2F"))
    base = tmp_path / ("語" * (159 - short))
    root = base / "site"
    shutil.copytree(PACKAGE, root / "gitlocks", ignore=shutil.ignore_patterns("__pycache__"))
    compileall.compile_dir(root / "gitlocks", quiet=1)
    probe(root)
    assert "gitlocks.main" in probe(root)["served"]


COUNTED = """
from gitlocks import bundle
read, calls = bundle._read_pyc, []
def counted(*args, **kwargs):
    calls.append(args[1])
    return read(*args, **kwargs)
bundle._read_pyc = counted
bundle.install()
import gitlocks.main
bundle.refresh()
print(len(calls))
"""


def test_a_bundle_that_cannot_be_had_costs_no_command_a_read_of_every_pyc(copy: Path) -> None:
    """A file where the cache's ``gitlocks/`` belongs: there is no bundle to be had, and no
    command reads every ``.pyc`` to write one (which cost more than the bundle saves)."""
    path = bundle_of(copy)
    path.parent.parent.mkdir()
    path.parent.write_text("not a directory\n")
    for _ in range(2):
        done = subprocess.run([sys.executable, "-S", "-c", COUNTED], env=environment(copy),
                              cwd=copy, capture_output=True, text=True, timeout=60)  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert int(done.stdout) <= 3, done.stdout


def test_a_temporary_file_of_another_process_is_left_alone(
    copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The temporary name is taken (a process of the same pid in another container, sharing
    the cache directory, writes it now): this write gives up, and leaves that file be."""
    from gitlocks import bundle

    monkeypatch.setenv("XDG_CACHE_HOME", str(copy.parent / "cache"))
    path = bundle_of(copy)
    path.parent.mkdir(parents=True, mode=0o700)
    theirs = Path(f"{path}.{os.getpid()}.tmp")
    theirs.write_bytes(b"being written\n")
    with pytest.raises(FileExistsError):
        bundle.write(str(copy / "gitlocks"))
    assert theirs.read_bytes() == b"being written\n" and not path.exists()


def test_the_hooks_install_hooks_writes_start_as_the_command_does(copy: Path, repo: Path) -> None:
    """The shims ``install-hooks`` writes run the interpreter that installed them, not the
    ``git-alock`` script: they too read the bundle (the first commit writes it, as any
    command's first run does) and leave its answer as the command does."""
    env = environment(copy)
    installed = subprocess.run(
        [sys.executable, "-m", "gitlocks", "install-hooks"],
        cwd=repo, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr
    bundle_of(copy).unlink(missing_ok=True)  # written by install-hooks itself
    (repo / "a.txt").write_text("a\n")
    subprocess.run(["git", "add", "a.txt"], cwd=repo, env=env, check=True)
    done = subprocess.run(["git", "commit", "-q", "-m", "a"], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert bundle_of(copy).is_file()
