"""Server memory per TLS connection and per watch: `python -m tests.bench.bench_connections`.

Starts `pizza-apiserver` as a subprocess (its own RSS, nothing of the client's), then from this
process opens idle TLS connections (plain `ssl` sockets, handshake done, no request) and watches (a
raw HTTP/1.1 `GET ...?watch=1` over TLS, headers read), reading the server's RSS from /proc between
steps. Prints one table: RSS when idle, KB per idle TLS connection, RSS after closing the connections
(how much of it the server gave back), and KB per open watch (measured on a second, fresh server:
on the first, the memory the closed connections left would be reused and hide the cost). Everything
is loopback and bounded (connection counts are flags; each step waits at most a few seconds for RSS
to settle).

RSS is noisy at the scale of a few KB: the figures are differences over hundreds of connections,
and the settle loop waits until two readings a short interval apart agree.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

GROUP_PATH = "/apis/restaurant.programming-kubernetes.info/v1beta1"
WATCH_PATH = f"{GROUP_PATH}/toppings?watch=1"
_SERVING = re.compile(r"Serving securely on (https://\S+)")
START_TIMEOUT = 60.0
SETTLE_TIMEOUT = 10.0
# The server gives memory back a moment after a burst of handshakes or closes (server.serving.heap_trim).
AFTER_CLOSE_WAIT = 5.0


@dataclass(frozen=True, slots=True)
class ServerProcess:
    process: subprocess.Popen[bytes]
    host: str
    port: int
    data_dir: Path

    def rss_kb(self) -> int:
        """The resident set size in KiB (VmRSS) of the server and its worker processes, summed."""
        return sum(_rss_kb(pid) for pid in _process_tree(self.process.pid))

    def client_context(self) -> ssl.SSLContext:
        """TLS as the admin: trusts the server's CA and presents the admin client certificate."""
        certs = self.data_dir / "certs"
        context = ssl.create_default_context(cafile=str(certs / "ca.crt"))
        context.load_cert_chain(certs / "admin.crt", certs / "admin.key")
        return context


@contextlib.contextmanager
def server_process(data_dir: Path, extra_args: tuple[str, ...] = ()) -> Iterator[ServerProcess]:
    """Run the installed `pizza-apiserver` on a free loopback port until the block ends."""
    executable = Path(sys.executable).with_name("pizza-apiserver")
    command = [str(executable), "--secure-port", "0", "--data-dir", str(data_dir), *extra_args]
    log_path = data_dir.with_suffix(".log")
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        url = _wait_for_url(process, log_path)
        host, port = url.removeprefix("https://").rsplit(":", 1)
        yield ServerProcess(process, host.strip("[]"), int(port), data_dir)
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _process_tree(pid: int) -> list[int]:
    """`pid` and its descendants (a supervisor with --workers N has N worker children)."""
    pids = [pid]
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            for child in (task / "children").read_text().split():
                pids.extend(_process_tree(int(child)))
    return pids


def _rss_kb(pid: int) -> int:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0  # gone meanwhile
    match = re.search(r"^VmRSS:\s+(\d+) kB", status, re.MULTILINE)
    return int(match.group(1)) if match else 0


def _wait_for_url(process: subprocess.Popen[bytes], log_path: Path) -> str:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        match = _SERVING.search(log_path.read_text(errors="replace"))
        if match:
            return match.group(1)
        if process.poll() is not None:
            raise RuntimeError(f"server exited: {log_path.read_text(errors='replace')[-2000:]}")
        time.sleep(0.1)
    raise RuntimeError("server did not report its URL in time")


def open_tls(server: ServerProcess, context: ssl.SSLContext) -> ssl.SSLSocket:
    """One TLS connection with the handshake done and nothing sent."""
    raw = socket.create_connection((server.host, server.port), timeout=30)
    return context.wrap_socket(raw, server_hostname=server.host)


def request(sock: ssl.SSLSocket, path: str, *, host: str) -> bytes:
    """Send a GET and return the response head (status line and headers)."""
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nAccept: application/json\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        if not chunk:
            raise ConnectionError("server closed the connection before the response headers")
        head += chunk
        if len(head) > 65536:
            raise ConnectionError("response head too large")
    return head.split(b"\r\n\r\n", 1)[0]


def get(server: ServerProcess, context: ssl.SSLContext, path: str) -> bytes:
    """A whole small GET on a fresh connection (body up to Content-Length), for warming up."""
    with open_tls(server, context) as sock:
        head = request(sock, path, host=server.host)
        return head


def open_watches(server: ServerProcess, context: ssl.SSLContext, count: int) -> list[ssl.SSLSocket]:
    watches = []
    for _ in range(count):
        sock = open_tls(server, context)
        head = request(sock, WATCH_PATH, host=server.host)
        if not head.startswith(b"HTTP/1.1 200"):
            sock.close()
            raise RuntimeError(f"watch refused: {head[:200]!r}")
        watches.append(sock)
    return watches


def close_all(sockets: list[ssl.SSLSocket]) -> None:
    for sock in sockets:
        with contextlib.suppress(OSError):
            sock.close()
    sockets.clear()


def settled_rss(server: ServerProcess, *, interval: float = 0.5, timeout: float = SETTLE_TIMEOUT) -> int:
    """RSS once two readings `interval` apart agree within 1%, or the last reading after `timeout`."""
    deadline = time.monotonic() + timeout
    previous = server.rss_kb()
    while True:
        time.sleep(interval)
        current = server.rss_kb()
        if abs(current - previous) <= max(64, current // 100) or time.monotonic() > deadline:
            return current
        previous = current


@dataclass(frozen=True, slots=True)
class Measurement:
    idle_kb: int
    per_connection_kb: float
    with_connections_kb: int
    after_close_kb: int
    watch_idle_kb: int
    per_watch_kb: float
    connections: int
    watches: int


def warm_up(server: ServerProcess, context: ssl.SSLContext) -> None:
    """First requests, handshakes and watches allocate once per process, not per connection."""
    for _ in range(5):
        get(server, context, f"{GROUP_PATH}/toppings")
    close_all(open_watches(server, context, 2))


def measure_connections(server: ServerProcess, connections: int) -> tuple[int, int, int]:
    """(idle RSS, RSS with `connections` idle TLS connections, RSS after closing them), KiB."""
    context = server.client_context()
    warm_up(server, context)
    idle = settled_rss(server)
    sockets = [open_tls(server, context) for _ in range(connections)]
    with_connections = settled_rss(server)
    close_all(sockets)
    time.sleep(AFTER_CLOSE_WAIT)
    return idle, with_connections, settled_rss(server)


def measure_watches(server: ServerProcess, watches: int) -> tuple[int, int]:
    """(idle RSS, RSS with `watches` open watches), KiB; on a server of its own, because memory
    freed by closed connections would be reused by the watches and hide their cost."""
    context = server.client_context()
    warm_up(server, context)
    idle = settled_rss(server)
    watching = open_watches(server, context, watches)
    try:
        return idle, settled_rss(server)
    finally:
        close_all(watching)


def measure(
    data_root: Path, *, connections: int, watches: int, server_args: tuple[str, ...] = ()
) -> Measurement:
    with server_process(data_root / "connections", server_args) as server:
        idle, with_connections, after_close = measure_connections(server, connections)
    with server_process(data_root / "watches", server_args) as server:
        watch_idle, with_watches = measure_watches(server, watches)
    return Measurement(
        idle_kb=idle,
        per_connection_kb=(with_connections - idle) / connections if connections else 0.0,
        with_connections_kb=with_connections,
        after_close_kb=after_close,
        watch_idle_kb=watch_idle,
        per_watch_kb=(with_watches - watch_idle) / watches if watches else 0.0,
        connections=connections,
        watches=watches,
    )


def _print_table(m: Measurement) -> None:
    rows = [
        ("RSS idle", f"{m.idle_kb / 1024:.1f} MB"),
        (f"RSS with {m.connections} idle TLS connections", f"{m.with_connections_kb / 1024:.1f} MB"),
        ("per idle TLS connection", f"{m.per_connection_kb:.1f} KB"),
        (
            f"RSS after closing the {m.connections} connections",
            f"{m.after_close_kb / 1024:.1f} MB ({(m.after_close_kb - m.idle_kb) / 1024:+.1f} MB vs idle)",
        ),
        (f"per open watch ({m.watches} watches, fresh server)", f"{m.per_watch_kb:.1f} KB"),
    ]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connections", type=int, default=2000, help="idle TLS connections (default 2000)")
    parser.add_argument("--watches", type=int, default=200, help="open watches (default 200)")
    parser.add_argument(
        "server_args",
        nargs="*",
        default=["--workers", "1"],
        help="flags for pizza-apiserver, after -- (default: --workers 1, one serving process)",
    )
    args = parser.parse_args(argv)
    needed = max(args.connections, args.watches) + 64
    soft, hard = raise_fd_limit(needed)
    if soft < needed:
        parser.error(f"needs {needed} file descriptors, the limit is {soft} (hard {hard})")
    with tempfile.TemporaryDirectory(prefix="bench-connections-") as tmp:
        result = measure(
            Path(tmp), connections=args.connections, watches=args.watches, server_args=tuple(args.server_args)
        )
    print(f"pizza-apiserver memory (server RSS; python {sys.version.split()[0]}, {os.cpu_count()} CPUs)")
    _print_table(result)


def raise_fd_limit(needed: int) -> tuple[int, int]:
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < needed <= hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))
        soft = needed
    return soft, hard


if __name__ == "__main__":
    main()
