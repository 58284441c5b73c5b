"""The transports people push lock refs over, each serving bare repositories the test makes:
a local path, ``git daemon``, smart HTTP (``git http-backend`` behind ``http.server``) and
ssh (Debian's ``sshd``, started by the test as the current user). All listen on 127.0.0.1
on a free port; each can be stopped (connections are then refused) and started again on
the same port."""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from support.daemon import Daemon, free_port
from support.remote import make_bare

SSHD = Path("/usr/sbin/sshd")
TRANSPORTS = ["path", "daemon", "http", "ssh"]
START_TIMEOUT = 10.0


@dataclass(frozen=True)
class Remote:
    """A bare repository and the URL a clone pushes to it by."""

    bare: Path
    url: str


class Host:
    """Serves the bare repositories under ``base`` over one transport."""

    name = ""

    def __init__(self, base: Path) -> None:
        self.base = base
        base.mkdir(parents=True, exist_ok=True)

    def url(self, bare: Path) -> str:
        raise NotImplementedError

    def env(self) -> dict[str, str]:
        """What a client's environment needs to reach this host."""
        return {}

    def remote(self, name: str = "locks.git", **config: str) -> Remote:
        bare = make_bare(self.base / name, **config)
        return Remote(bare, self.url(bare))

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass


class LocalPath(Host):
    """A bare repository on this machine, named by its path. Stopped, it is moved away: a
    remote that is not there, as a path on an unmounted disk is."""

    name = "path"

    def url(self, bare: Path) -> str:
        return str(bare)

    def start(self) -> None:
        if (away := self._away()).exists():
            away.rename(self.base)

    def stop(self) -> None:
        self.base.rename(self._away())

    def _away(self) -> Path:
        return self.base.with_name(self.base.name + "-away")


class GitDaemon(Host):
    name = "daemon"

    def __init__(self, base: Path) -> None:
        super().__init__(base)
        self.daemon = Daemon(base)

    def url(self, bare: Path) -> str:
        return self.daemon.url(bare.relative_to(self.base).as_posix())

    def start(self) -> None:
        self.daemon.start()

    def stop(self) -> None:
        self.daemon.stop()


class Served(Host):
    """A host that is a server process of ours, in its own session."""

    def __init__(self, base: Path) -> None:
        super().__init__(base)
        self.port = free_port()
        self.log = base.with_name(f"{base.name}-{self.name}.log")
        self.proc: subprocess.Popen[bytes] | None = None

    def command(self) -> list[str]:
        raise NotImplementedError

    def start(self) -> None:
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(
                self.command(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
            )
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"{self.name} did not answer on port {self.port}:\n{self.log_text()}")

    def stop(self) -> None:
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=5)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=5)
        self.proc = None

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


class SmartHttp(Served):
    """``git http-backend`` as CGI, served by ``support/smarthttp.py`` in its own process."""

    name = "http"

    def url(self, bare: Path) -> str:
        return f"http://127.0.0.1:{self.port}/{bare.relative_to(self.base).as_posix()}"

    def remote(self, name: str = "locks.git", **config: str) -> Remote:
        return super().remote(name, **{"http.receivepack": "true", **config})

    def command(self) -> list[str]:
        server = Path(__file__).with_name("smarthttp.py")
        return [sys.executable, str(server), str(self.base), str(self.port)]


class Sshd(Served):
    """Debian's ``sshd`` on 127.0.0.1 with its own configuration, host key and one client
    key, running as the current user. A session runs with the test's PATH, HOME and
    ``GIT_CONFIG_NOSYSTEM``, as a push to a local path would."""

    name = "ssh"

    def __init__(self, base: Path) -> None:
        super().__init__(base)
        keys = base.with_name(f"{base.name}-ssh")
        keys.mkdir()
        for key in ("host", "client"):
            subprocess.run(
                ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(keys / key)], check=True
            )
        shutil.copy(keys / "client.pub", keys / "authorized_keys")
        settings = {
            "ListenAddress": "127.0.0.1",
            "Port": str(self.port),
            "HostKey": str(keys / "host"),
            "PidFile": str(keys / "sshd.pid"),
            "AuthorizedKeysFile": str(keys / "authorized_keys"),
            "PubkeyAuthentication": "yes",
            "PasswordAuthentication": "no",
            "KbdInteractiveAuthentication": "no",
            "PermitRootLogin": "prohibit-password",
            "UsePAM": "no",
            "StrictModes": "no",  # the keys live in the test's temporary directory
            "MaxStartups": "256",  # racing tests connect many at once
            "LogLevel": "ERROR",
        }
        environment = {
            "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"],
            "HOME": os.environ["HOME"],
            "GIT_CONFIG_NOSYSTEM": "1",
        }
        lines = [f"{key} {value}" for key, value in settings.items()]
        lines.append("SetEnv " + " ".join(f'"{k}={v}"' for k, v in environment.items()))
        self.config = keys / "sshd_config"
        self.config.write_text("\n".join(lines) + "\n")
        self.key = keys / "client"

    def url(self, bare: Path) -> str:
        return f"ssh://127.0.0.1:{self.port}{bare}"

    def env(self) -> dict[str, str]:
        # -F none: the client reads no configuration of the user's (ssh finds it through the
        # password database, never through HOME, which the tests reset).
        ssh = ["ssh", "-F", "none", "-p", str(self.port), "-i", str(self.key)]
        options = ["IdentitiesOnly=yes", "IdentityAgent=none", "StrictHostKeyChecking=no",
                   "UserKnownHostsFile=/dev/null", "BatchMode=yes", "LogLevel=ERROR"]  # fmt: skip
        for option in options:
            ssh += ["-o", option]
        return {"GIT_SSH_COMMAND": shlex.join(ssh)}

    def command(self) -> list[str]:
        # sshd re-executes itself by its absolute path; as root it also needs its privilege
        # separation directory, which Debian's service makes at boot.
        if os.geteuid() == 0:
            Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        return [str(SSHD), "-D", "-e", "-f", str(self.config)]


HOSTS: dict[str, type[Host]] = {
    "path": LocalPath,
    "daemon": GitDaemon,
    "http": SmartHttp,
    "ssh": Sshd,
}


@contextlib.contextmanager
def serve(kind: str, base: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Host]:
    """A started host of ``kind`` serving ``base``, its client settings in the environment,
    stopped afterwards; skipped where ``sshd`` is not installed."""
    if kind == "ssh" and not SSHD.exists():
        pytest.skip("ssh transport: /usr/sbin/sshd is not installed (Debian: openssh-server)")
    host = HOSTS[kind](base)
    for name, value in host.env().items():
        monkeypatch.setenv(name, value)
    host.start()
    try:
        yield host
    finally:
        host.stop()


@pytest.fixture(params=TRANSPORTS)
def host(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Host]:
    """Each transport in turn, serving bare repositories under ``tmp_path / "served"``."""
    with serve(request.param, tmp_path / "served", monkeypatch) as served:
        yield served
