"""The processes behind a holder: the session process a command runs under (found by
walking up past shells and git), whether a process is still alive, the names and
variables that steer the walk, and where the register of harness sessions lives.

Process facts come from ``/proc`` on Linux and from ``ps`` elsewhere. Stdlib only: every
command imports this module.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping
from functools import cache

from gitlocks.core.digest import sha256_hex
from gitlocks.core.record import validate_holder
from gitlocks.core.text import is_digits
from gitlocks.core.value import Value
from gitlocks.errors import InvalidHolder, UsageError

# Processes that only pass a command along; the session is above them. ``git-*`` is
# matched by prefix (git's helpers, and our own ``git-alock`` entry point). A runner that
# waits on its command instead of exec'ing it (``uv run``, ``make``, ``npm exec``) is
# short-lived: taken for the session, it would make a lock that dies with the command,
# held by an id nobody can ask for again. ``AGENT_SESSION_SKIP`` adds names.
SHELLS = frozenset(
    {
        "sh", "bash", "dash", "zsh", "fish", "ksh", "mksh", "ash", "yash",
        "tcsh", "csh", "busybox", "nu", "pwsh",
    }
)  # fmt: skip
PASS_THROUGH = SHELLS | frozenset(
    {
        # wrappers that exec or wait on a command
        "env", "sudo", "doas", "su", "runuser", "nohup", "nice", "ionice",
        "timeout", "setsid", "stdbuf", "time", "xargs", "flock", "chrt", "taskset",
        "script", "unbuffer",
        # language and project runners
        "uv", "uvx", "poetry", "pipenv", "pdm", "hatch", "rye", "pipx", "conda",
        "mamba", "micromamba", "tox", "nox", "npx", "npm", "pnpm", "pnpx", "yarn",
        "bun", "bunx", "corepack", "cargo", "bundle", "bundler",
        # task runners and environment loaders
        "make", "gmake", "just", "direnv", "mise", "rtx", "asdf", "nix", "nix-shell",
        "devbox", "watchexec", "entr", "nodemon", "pre-commit", "pre-push",
        "git",
        # sandboxes an agent harness runs its shell commands in
        "codex-linux-sandbox", "bwrap", "sandbox-exec", "firejail",
    }
)  # fmt: skip

# Servers that host terminals (multiplexers, terminal emulators, remote logins) and init
# systems. Each of their children is a separate terminal, pane or login: the walk stops
# below one, so every pane is its own holder, never the server that outlives them all.
TERMINAL_SERVERS = frozenset(
    {
        "tmux", "tmux: server", "screen", "SCREEN", "zellij", "abduco", "dtach",
        "sshd", "dropbear", "mosh-server", "login", "getty", "agetty",
        "xterm", "uxterm", "urxvt", "rxvt", "alacritty", "kitty", "wezterm", "wezterm-gui",
        "foot", "st", "terminator", "tilix", "konsole", "gnome-terminal-",
        "gnome-terminal-server", "xfce4-terminal", "mate-terminal", "lxterminal",
        "qterminal", "terminology", "ghostty", "Terminal", "iTerm2",
    }
)  # fmt: skip

# A derived session that started this close before us is likely a launcher that waits on
# one command and exits: its exit would end the claim. Claims warn about it.
SHORT_LIVED_SECONDS = 2.0

# Comma-separated extra process names to walk past, for runners not listed above.
SKIP_ENV = "AGENT_SESSION_SKIP"

# The holder a harness session exported to its shell tool (Claude Code's CLAUDE_ENV_FILE):
# asked after the process tree, for a shell whose sandbox hides the harness process.
HOLDER_ENV = "GITLOCKS_HOLDER"
# Exported beside it: a tag of the pid namespace the harness runs in (``holder_scope``).
HOLDER_SCOPE_ENV = "GITLOCKS_HOLDER_SCOPE"

# The agent harnesses' own process names. One of them met unregistered on the way up is a
# session of its own whose guard has not spoken (or is not installed): not the harness
# whose shell started it, nor the holder that harness exported.
HARNESS_PROCESSES = frozenset({"claude", "codex", "gemini", "copilot"})

# Init systems and subreapers: every orphan ends up below one, so none is ever a session
# in the harness register, even where it is the first process that is no pass-through.
INIT_PROCESSES = frozenset(
    {
        "systemd", "init", "launchd", "tini", "dumb-init", "docker-init", "catatonit",
        "s6-svscan", "runit", "openrc-init", "containerd-shim", "runsv",
    }
)  # fmt: skip

# Linux keeps the first 15 bytes of a process name (``comm``).
_COMM_LEN = 15

# Ancestor chains are short; the bound only guards against a corrupt or cyclic view.
_MAX_WALK = 64


class SessionProcess(Value):
    """A process identified well enough to tell later whether it is still the same one."""

    __slots__ = ("host", "name", "pid", "start_time", "terminal")

    def __init__(self, pid: int, start_time: str, name: str, host: str, terminal: str = "") -> None:
        self.pid = pid
        self.start_time = start_time  # opaque; equal only for the same process
        self.name = name
        self.host = host
        self.terminal = terminal  # right under a terminal server: "tmux-3", "ssh-pts4"; else ""


class _ProcInfo(Value):
    __slots__ = ("name", "ppid", "start_time", "tty")

    def __init__(self, ppid: int, start_time: str, name: str, tty: int = 0) -> None:
        self.ppid = ppid
        self.start_time = start_time
        self.name = name
        self.tty = tty  # tty_nr of /proc/<pid>/stat; 0 for none (or unknown)


@cache
def _has_proc() -> bool:
    # FreeBSD may mount a procfs at /proc too, but without the Linux ``stat`` file.
    return os.path.exists("/proc/self/stat")


@cache
def _boot_id() -> str:
    # Start ticks count from boot, so they repeat across reboots; the boot id does not.
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return "unknown-boot"


@cache
def host_identity() -> str:
    """Where a pid can be judged: this boot and this pid namespace; "" where unknown. A host
    name is no such place (docs/design.md, section 3.3)."""
    if not _has_proc():
        return ""  # no /proc: no way to name the pid namespace, so no pid is judged
    try:
        namespace = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return ""
    boot = _boot_id()
    return "" if boot == "unknown-boot" else f"{boot}:{namespace}"


def holder_scope() -> str:
    """A tag of this pid namespace on this boot (of ``host_identity``); "" where unknown."""
    ident = host_identity()
    return sha256_hex(ident.encode())[:16] if ident else ""


def _linux_info(pid: int) -> _ProcInfo | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return None
    # The name sits in parentheses and may itself contain spaces and ')'.
    left, right = text.find("("), text.rfind(")")
    fields = text[right + 2 :].split()
    if left < 0 or right < left or len(fields) < 20:
        return None
    state, ppid, tty, start_ticks = fields[0], fields[1], fields[4], fields[19]
    if state in ("Z", "X"):  # exited, not yet reaped: as gone as a process gets
        return None
    name = text[left + 1 : right]
    if name.startswith("memfd:") or len(name.encode()) >= _COMM_LEN:
        name = _program_name(pid) or name  # run from memory, or cut to 15 bytes
    tty_nr = int(tty) if tty.lstrip("-").isdigit() else 0
    return _ProcInfo(int(ppid), f"{_boot_id()}:{start_ticks}", name, tty_nr)


def _program_name(pid: int) -> str:
    """The base name of ``argv[0]``: what a person would call the program."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            first = f.read(4096).split(b"\0", 1)[0]
    except OSError:
        return ""
    return os.fsdecode(first).rsplit("/", 1)[-1].lstrip("-")


def _tty_name(tty_nr: int) -> str:
    """``pts4`` or ``tty1`` for a tty_nr (Linux's device numbering); "" for none."""
    if tty_nr <= 0:
        return ""
    major, minor = (tty_nr >> 8) & 0xFFF, (tty_nr & 0xFF) | ((tty_nr >> 12) & 0xFFF00)
    if 136 <= major <= 143:
        return f"pts{(major - 136) * 256 + minor}"
    return f"tty{minor}" if major == 4 else f"tty{major}.{minor}"


def _ps_info(pid: int) -> _ProcInfo | None:
    """The fallback without /proc; ``lstart`` has one-second resolution."""
    import subprocess  # only here: most commands never need it, and it costs start-up time

    try:
        out = subprocess.run(
            ["ps", "-o", "ppid=,stat=,lstart=,comm=", "-p", str(pid)],
            capture_output=True,
            text=True,
            timeout=10,
            env={**os.environ, "LC_ALL": "C"},  # lstart must not depend on the locale
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    fields = out.split()
    # ppid, stat, five lstart words ("Mon Jan  1 12:00:00 2024"), then the command.
    if len(fields) < 8 or not fields[0].isdigit() or fields[1].startswith("Z"):
        return None
    # macOS prints the executable path, and "-zsh" for a login shell.
    name = " ".join(fields[7:]).rsplit("/", 1)[-1].lstrip("-")
    return _ProcInfo(int(fields[0]), "ps:" + " ".join(fields[2:7]), name)


def _proc_info(pid: int) -> _ProcInfo | None:
    if pid <= 0:
        return None
    return _linux_info(pid) if _has_proc() else _ps_info(pid)


def process_start_time(pid: int) -> str | None:
    """The start time of a live process ``pid``, or None if there is none (or unreadable)."""
    info = _proc_info(pid)
    return info.start_time if info else None


def process_alive(pid: int, start_time: str) -> bool:
    """Whether ``pid`` is still the process that started at ``start_time`` (pid reuse: no)."""
    return bool(start_time) and process_start_time(pid) == start_time


def parent_pid(pid: int) -> int | None:
    """The parent of a live process ``pid``, or None if there is none (or unreadable)."""
    info = _proc_info(pid)
    return info.ppid if info else None


def parent_chain(pid: int) -> list[tuple[int, str, str]]:
    """``pid`` and its ancestors up to pid 1, as (pid, start time, name): at most
    ``_MAX_WALK`` of them, nearest first; empty where ``pid`` cannot be read. Pid 1 is
    included: in a container it is whatever the container runs, an agent harness too."""
    found: list[tuple[int, str, str]] = []
    current = pid
    for _ in range(_MAX_WALK):
        if current < 1:
            break
        info = _proc_info(current)
        if info is None:
            break
        found.append((current, info.start_time, info.name))
        if current == 1 or info.ppid == current:
            break
        current = info.ppid
    return found


def valid_holder(value: str) -> bool:
    """Whether ``value`` is a usable holder id (``validate_holder`` without raising)."""
    try:
        validate_holder(value)
    except InvalidHolder:
        return False
    return True


def skip_names(env: Mapping[str, str] | None = None) -> frozenset[str]:
    """The extra pass-through names of ``AGENT_SESSION_SKIP`` (comma-separated)."""
    raw = (os.environ if env is None else env).get(SKIP_ENV, "")
    return frozenset(name.strip() for name in raw.split(",") if name.strip())


def is_pass_through(name: str, extra: frozenset[str] = frozenset()) -> bool:
    """A shell, a command wrapper, a runner or git (or a name of ``extra``): never the
    session. A runner's retitled name (``npm exec ...``) counts by its first word, and a name
    cut to Linux's 15 bytes matches a longer listed name it begins."""
    if name.startswith("git-"):
        return True
    names = {name, name.split(" ", 1)[0]}
    if not names.isdisjoint(PASS_THROUGH) or not names.isdisjoint(extra):
        return True
    return len(name.encode()) >= _COMM_LEN and any(e.startswith(name) for e in extra)


def is_terminal_server(name: str) -> bool:
    """A multiplexer, terminal emulator, remote-login server or init system."""
    return name in TERMINAL_SERVERS or name.split(" ", 1)[0] in TERMINAL_SERVERS


def session_process(pid: int | None = None, env: Mapping[str, str] | None = None) -> SessionProcess:
    """The session: the first process from ``pid`` (default: our parent, as we are
    ``git-alock``) upwards that is not a pass-through (``env`` may name more in
    ``AGENT_SESSION_SKIP``). A terminal server is never the session: the walk stops right below
    it, so each terminal is its own holder. Past pid 1 or an unreadable parent, the topmost
    process seen; if even ``pid`` is unreadable, one with an empty start time (never alive)."""
    env = os.environ if env is None else env
    current = os.getppid() if pid is None else pid
    host = os.uname().nodename  # what socket.gethostname() returns, without the import
    extra = skip_names(env)
    found: SessionProcess | None = None
    below: tuple[SessionProcess, int] | None = None  # the last process passed, its tty
    for _ in range(_MAX_WALK):
        info = _proc_info(current)
        if info is None:
            break
        if below is not None and is_terminal_server(info.name):
            proc, tty = below
            terminal = _terminal(info.name, tty, env, proc.pid)
            return SessionProcess(proc.pid, proc.start_time, proc.name, proc.host, terminal)
        found = SessionProcess(current, info.start_time, info.name, host)
        if not is_pass_through(info.name, extra) or current <= 1 or info.ppid == current:
            break
        below = (found, info.tty)
        current = info.ppid
    return found or SessionProcess(current, "", "", host)


def _pane_of(pid: int, env: Mapping[str, str]) -> str:
    """The tmux pane (``TMUX_PANE``) of process ``pid``, read from its own environment, so
    that every command run in a pane names it alike; ours only where that cannot be read."""
    raw = env.get("TMUX_PANE", "")
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            for item in f.read(1 << 20).split(b"\0"):
                if item.startswith(b"TMUX_PANE="):
                    raw = item[10:].decode("ascii", "replace")
                    break
    except OSError:
        pass
    digits = raw.removeprefix("%")
    return str(int(digits)) if is_digits(digits) and len(digits) < 10 else ""


def _terminal(server: str, tty_nr: int, env: Mapping[str, str], pid: int = 0) -> str:
    """A name for the terminal a session sits in, under terminal server ``server``."""
    tty = _tty_name(tty_nr)
    pane = _pane_of(pid, env) if server.startswith("tmux") else ""
    if pane:
        return f"tmux-{pane}"
    kind = {"screen": "screen", "SCREEN": "screen", "sshd": "ssh", "dropbear": "ssh"}
    prefix = kind.get(server.split(" ", 1)[0].rstrip(":"), "tty")
    return f"{prefix}-{tty}" if tty else prefix


def started_just_before_us(proc: SessionProcess) -> bool:
    """Whether ``proc`` started within ``SHORT_LIVED_SECONDS`` before this process: a
    launcher waiting on one command, most likely (Linux only; False where unknown)."""
    mine = process_start_time(os.getpid())
    try:
        boot, ticks = proc.start_time.rsplit(":", 1)
        my_boot, my_ticks = (mine or "").rsplit(":", 1)
        hz = os.sysconf("SC_CLK_TCK")
    except (ValueError, OSError):
        return False
    if boot != my_boot or not ticks.isdigit() or not my_ticks.isdigit():
        return False
    return 0 <= (int(my_ticks) - int(ticks)) / hz < SHORT_LIVED_SECONDS


def _current_user() -> str:
    try:
        import pwd  # Unix only, and only when the environment names no user

        return pwd.getpwuid(os.getuid()).pw_name
    except (ImportError, KeyError):  # no pwd module, or a uid without a passwd entry
        return str(os.getuid())


def session_holder_id(proc: SessionProcess, user: str | None = None) -> str:
    """``<name>-<8 hex>``, or for a terminal's shell ``<terminal>-<user>-<6 hex>``
    (``tmux-3-alice-1f2e3d``): readable, and unique per (pid, start time, user, host)."""
    user = _current_user() if user is None else user
    key = "\0".join((str(proc.pid), proc.start_time, user, proc.host))
    digest = sha256_hex(key.encode())
    if proc.terminal:
        who = name_part(user)[:20].strip("-.") or "user"
        label = name_part(proc.terminal)[:30].strip("-.") or "tty"
        return f"{label}-{who}-{digest[:6]}"
    name = name_part(proc.name)[:40].strip("-.") or "agent"
    return f"{name}-{digest[:8]}"


def name_part(text: str) -> str:
    """``text`` with each run of characters a holder id may not hold made one ``-``."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text)


def register_dir(env: Mapping[str, str] | None = None) -> str | None:
    """Where the register of harness sessions lives (``gitlocks.identity.sessions``), or
    None when no home is known."""
    env = os.environ if env is None else env
    state = env.get("XDG_STATE_HOME", "")
    if not os.path.isabs(state):  # unset or relative: ignored, as the spec says
        home = env.get("HOME", "")
        if not os.path.isabs(home):
            return None
        state = os.path.join(home, ".local", "state")
    return os.path.join(state, "gitlocks", "sessions")


def trusted(where: str) -> bool:
    """Whether ``where`` is a directory of ours that nobody else can write: an entry names
    the holder of every command below a process, the guard's own included, so a register
    on a shared directory (``XDG_STATE_HOME=/tmp/...``) is neither read nor written."""
    try:
        st = os.stat(where)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o022


def declared_session(env: Mapping[str, str]) -> SessionProcess | None:
    """The process ``AGENT_SESSION_PID`` names, honoured exactly (agent integrations set it)."""
    raw = env.get("AGENT_SESSION_PID", "").strip()
    if not raw:
        return None
    if not is_digits(raw) or len(raw) > 10 or not 0 < int(raw) < 1 << 32:
        raise UsageError(f"invalid AGENT_SESSION_PID {raw!r}: a process id is a positive number")
    info = _proc_info(int(raw))  # None: gone already, named but with no start time, never judged
    start_time, name = (info.start_time, info.name) if info else ("", "")
    return SessionProcess(int(raw), start_time, name, os.uname().nodename)
