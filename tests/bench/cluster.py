"""A loopback Kubernetes control plane for `--aggregated`, driven through ../shared/tools/cluster/*.sh.

Why the shared scripts and not our own: they are the harness the team (and the README's "Behind a
cluster's kube-aggregator") uses, with the reference binaries of ../shared/bin (etcd 3.6.8,
kube-apiserver 1.36.2 = the kube-aggregator, the Go sample-apiserver). They are run in place, never
copied, each with its CLUSTER_DIR and CLUSTER_POINTER inside the bench's work directory (so a
colleague's cluster is never the "last one started"), on free 127.0.0.1 ports. Every script runs as
an asyncio subprocess with a time bound; down.sh always runs, and what it could not stop (a start-up
killed before env.sh was written) is killed here by the pid files the scripts keep.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import shlex
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from tests.bench.go_tools import REPO, TLSFiles, ToolError

SHARED = REPO.parent / "shared"
ANCHORS_SCRIPT = SHARED / "tools" / "anchors.sh"
SCRIPTS = SHARED / "tools" / "cluster"
NEEDED_COMMANDS = ("bash", "xz", "openssl", "curl", "kubectl", "ss", "setsid")
UP_TIMEOUT = 240.0
SCRIPT_TIMEOUT = 150.0
DOWN_TIMEOUT = 120.0

# Cluster directories whose down.sh has not run yet: the interpreter's exit runs it as a last resort.
_live: set[Path] = set()


def check_prerequisites() -> None:
    """Refuse early, with the reason, when the shared harness or a command it needs is missing."""
    if not SCRIPTS.is_dir() or not ANCHORS_SCRIPT.exists():
        raise ToolError(f"{SHARED.resolve()}/tools not found: --aggregated needs ../shared next to the repo")
    missing = [name for name in NEEDED_COMMANDS if shutil.which(name) is None]
    if missing:
        raise ToolError(f"--aggregated needs {', '.join(missing)} on PATH (xz: apt-get install -y xz-utils)")


def free_port() -> int:
    """A port nothing listens on now (the kernel's choice); a tiny race, acceptable on loopback."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True, slots=True)
class Anchors:
    """The reference binaries, unpacked by anchors.sh into its cache."""

    etcd: Path
    kube_apiserver: Path
    sample_apiserver: Path


async def run_script(argv: list[str], env: dict[str, str], timeout: float, *, check: bool = True) -> str:
    """Run a shell script to completion (killed with its session on timeout or cancellation).

    Returns stdout; a failure raises ToolError with the end of both streams, the scripts' own
    diagnostics ("[cluster] ERROR: ...").
    """
    proc = await asyncio.create_subprocess_exec(
        "bash",
        *argv,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
    except BaseException:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
        raise
    if check and proc.returncode != 0:
        text = (out + b"\n" + err).decode(errors="replace").strip()[-2500:]
        raise ToolError(f"{Path(argv[0]).name} exited {proc.returncode}:\n{text}")
    return out.decode(errors="replace")


async def unpack_anchors() -> Anchors:
    """anchors.sh: unpack (once, cached) and checksum the binaries, then parse its `export` line."""
    out = await run_script([str(ANCHORS_SCRIPT)], dict(os.environ), UP_TIMEOUT)
    values: dict[str, str] = {}
    for word in shlex.split(out.strip().splitlines()[-1]):
        name, _, value = word.partition("=")
        values[name] = value
    try:
        return Anchors(
            Path(values["ETCD_3_6"]), Path(values["KUBE_APISERVER"]), Path(values["SAMPLE_APISERVER"])
        )
    except KeyError as err:
        raise ToolError(f"anchors.sh printed no {err}: {out[-500:]!r}") from err


def _parse_env_sh(path: Path) -> dict[str, str]:
    """The `export NAME='value'` lines up.sh writes."""
    values: dict[str, str] = {}
    for line in path.read_text().splitlines():
        if line.startswith("export "):
            for word in shlex.split(line.removeprefix("export ")):
                name, _, value = word.partition("=")
                values[name] = value
    return values


@dataclass(slots=True)
class Cluster:
    """A running control plane: its URLs, the admin credentials, and the environment for the scripts."""

    directory: Path
    env: dict[str, str]
    anchors: Anchors

    @property
    def apiserver_url(self) -> str:
        return self.env["APISERVER_URL"]

    @property
    def etcd_url(self) -> str:
        return self.env["ETCD_URL"]

    @property
    def kubeconfig(self) -> Path:
        return Path(self.env["KUBECONFIG"])

    @property
    def ca(self) -> Path:
        return Path(self.env["CLUSTER_CA"])

    @property
    def tls(self) -> TLSFiles:
        """The admin certificate (O=system:masters) and the cluster CA, which signs every serving cert."""
        return TLSFiles(Path(self.env["ADMIN_CERT"]), Path(self.env["ADMIN_KEY"]), self.ca)

    def pid(self, name: str) -> int:
        """The pid run-aggregated.sh / up.sh recorded for a tracked process."""
        return int((self.directory / "run" / f"{name}.pid").read_text().strip())

    async def script(self, name: str, *args: str, timeout: float = SCRIPT_TIMEOUT, **extra: str) -> str:
        return await run_script([str(SCRIPTS / name), *args], {**self.env, **extra}, timeout)

    async def mkcert(self, out_dir: Path, name: str, sans: str) -> tuple[Path, Path]:
        """A serving certificate from the cluster CA with the name the aggregator verifies."""
        await self.script("mkcert.sh", str(out_dir), name, sans)
        return out_dir / f"{name}.crt", out_dir / f"{name}.key"

    async def register(self, group: str, version: str, port: int, namespace: str) -> None:
        """register.sh with the cluster CA as caBundle; it waits (60 s) for the APIService to be Available."""
        await self.script(
            "register.sh", group, version, str(port), str(self.ca), NAMESPACE=namespace, SERVICE="api"
        )

    async def start_sample_apiserver(self, port: int) -> None:
        """The Go anchor behind the aggregator on the cluster's etcd, as demo-wardle.sh starts it."""
        cert, key = await self.mkcert(self.directory / "wardle", "sample-apiserver", "DNS:api.wardle.svc")
        kubeconfig = str(self.kubeconfig)
        await self.script(
            "run-aggregated.sh",
            "sample-apiserver",
            str(port),
            "--",
            str(self.anchors.sample_apiserver),
            "--bind-address=127.0.0.1",
            f"--secure-port={port}",
            f"--tls-cert-file={cert}",
            f"--tls-private-key-file={key}",
            f"--etcd-servers={self.etcd_url}",
            # Not its default /registry/wardle.example.com, which holds our wardle keys' directory:
            # our wardle watch cache would read (and drop) every Go write, a cost no user has.
            f"--etcd-prefix={GO_ETCD_PREFIX}",
            f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
            f"--kubeconfig={kubeconfig}",
            f"--client-ca-file={self.ca}",
        )
        await self.register("wardle.example.com", "v1alpha1", port, "wardle")


GO_ETCD_PREFIX = "/registry/sample-apiserver"


def _base_env(directory: Path, anchors: Anchors) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "CLUSTER_DIR")}
    env.update(
        CLUSTER_DIR=str(directory),
        CLUSTER_POINTER=str(directory.parent / "cluster.pointer"),
        KUBECACHEDIR=str(directory / "kube-cache"),
        KUBECTL_WARNINGS="false",
        ETCD=str(anchors.etcd),
        KUBE_APISERVER=str(anchors.kube_apiserver),
        SAMPLE_APISERVER=str(anchors.sample_apiserver),
        ETCD_PORT=str(free_port()),
        ETCD_PEER_PORT=str(free_port()),
        APISERVER_PORT=str(free_port()),
    )
    return env


def kill_tracked(directory: Path) -> None:
    """What down.sh left: every pid file's process, if it still runs the recorded binary (blocking)."""
    for pid_file in (directory / "run").glob("*.pid"):
        with contextlib.suppress(OSError, ValueError):
            pid = int(pid_file.read_text().strip())
            recorded = Path(pid_file.with_suffix(".pid.exe").read_text().strip()).resolve()
            if Path(f"/proc/{pid}/exe").resolve() != recorded:
                continue
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and Path(f"/proc/{pid}").exists():
                time.sleep(0.1)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _down_blocking(directory: Path, env: dict[str, str]) -> None:
    """down.sh, then kill_tracked: the exit-time fallback, when no event loop is left."""
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        subprocess.run(
            ["bash", str(SCRIPTS / "down.sh")],
            env=env,
            capture_output=True,
            timeout=DOWN_TIMEOUT,
            check=False,
        )
    kill_tracked(directory)
    _live.discard(directory)


_envs: dict[Path, dict[str, str]] = {}


@atexit.register
def _down_leftovers() -> None:
    for directory in list(_live):
        _down_blocking(directory, _envs[directory])


@contextlib.asynccontextmanager
async def loopback_cluster(
    directory: Path, anchors: Anchors, up_env: Mapping[str, str] | None = None
) -> AsyncIterator[Cluster]:
    """up.sh in `directory` (fresh), yield the cluster, and always down.sh + kill what is left.

    `up_env` adds to up.sh's environment (e.g. APISERVER_EXTRA_ARGS for a flag of kube-apiserver).
    """
    shutil.rmtree(directory, ignore_errors=True)
    directory.parent.mkdir(parents=True, exist_ok=True)
    env = {**_base_env(directory, anchors), **(up_env or {})}
    _live.add(directory)
    _envs[directory] = env
    try:
        await run_script([str(SCRIPTS / "up.sh")], env, UP_TIMEOUT)
        yield Cluster(directory, {**env, **_parse_env_sh(directory / "env.sh")}, anchors)
    finally:
        with contextlib.suppress(ToolError, OSError, TimeoutError):
            if (directory / "env.sh").exists():
                await run_script([str(SCRIPTS / "down.sh")], env, DOWN_TIMEOUT, check=False)
        await asyncio.to_thread(kill_tracked, directory)
        _live.discard(directory)
