"""`pizza-apiserver --workers 2` as a real subprocess, on the embedded storage and on etcd.

The kernel spreads connections over the workers (SO_REUSEPORT); the tests find out which worker holds
each connection (from /proc: the server side of the TCP connection and the worker's descriptors), so
"written through one worker, read and watched through the other" is checked, not hoped for.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.fixtures.server import REPO, RunningServer, ServerProcess, server_args, start_server_process
from tests.integration.conftest import Api
from tests.integration.test_etcd_server import etcd_flags, unique_prefix

STOP_TIMEOUT = 30.0
# Per group; all on one worker by chance: 2 x 2**-16.
CONNECTIONS = 16
# Fresh connections tried to reach a worker none of the first ones reached.
MORE_CONNECTIONS = 40


def worker_pids(supervisor: int) -> list[int]:
    """The supervisor's worker processes (its other child is multiprocessing's resource tracker)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        with contextlib.suppress(OSError):
            stat = Path(f"/proc/{entry}/stat").read_text()
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            if parent == supervisor and b"spawn_main" in Path(f"/proc/{entry}/cmdline").read_bytes():
                pids.append(int(entry))
    return sorted(pids)


def serving_worker(server_port: int, client_port: int, workers: list[int]) -> int:
    """Which worker holds the server side of the loopback connection from `client_port`."""
    wanted = f":{server_port:04X}", f":{client_port:04X}"
    inode = None
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[1].endswith(wanted[0]) and fields[2].endswith(wanted[1]):
            inode = fields[9]
    assert inode is not None, f"no server socket for client port {client_port}"
    for pid in workers:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                if os.readlink(f"/proc/{pid}/fd/{fd}") == f"socket:[{inode}]":
                    return pid
    raise AssertionError(f"no worker holds socket {inode}")


class Connection:
    """One keep-alive TLS connection (a session limited to one) and the worker serving it."""

    def __init__(self, server: RunningServer) -> None:
        connector = aiohttp.TCPConnector(ssl=server.ssl_context(), limit=1)
        self.server = server
        self.session = aiohttp.ClientSession(base_url=server.url, connector=connector)
        self.api = Api(server, self.session)
        self.client_port = 0
        self.worker = 0

    async def identify(self, server_port: int, workers: list[int]) -> None:
        # A watch keeps the response (and so the connection) open while we look at it; it is then read
        # to its end, so the connection stays in the session's pool for the requests that follow.
        params = {"watch": "1", "timeoutSeconds": "1"}
        async with self.session.get(self.api.toppings_path(), params=params) as response:
            client_port = response.connection.transport.get_extra_info("sockname")[1]  # type: ignore[union-attr]
            await response.read()
        assert self.client_port in (0, client_port), "the connection was replaced"
        self.client_port = client_port
        self.worker = await asyncio.to_thread(serving_worker, server_port, client_port, workers)


@contextlib.asynccontextmanager
async def connections(proc: ServerProcess, count: int) -> AsyncIterator[list[Connection]]:
    server = RunningServer(proc.url, proc.data_dir, proc.kubeconfig, proc.data_dir / "certs")
    opened = [Connection(server) for _ in range(count)]
    try:
        yield opened
    finally:
        for connection in opened:
            await connection.session.close()


@contextlib.asynccontextmanager
async def identified_connections(
    proc: ServerProcess, count: int
) -> AsyncIterator[tuple[list[Connection], list[int]]]:
    """`count` connections covering every worker, each knowing the worker that serves it, and the pids.

    The kernel picks a worker per connection by hash, so `count` connections may all land on one
    worker by chance (2 x 2**-8 for eight). Rather than make every test open many, a connection
    to an over-represented worker is swapped for a fresh one until each worker holds one; a worker
    still never reached after `MORE_CONNECTIONS` tries is a real failure (it is not listening).
    """
    workers = worker_pids(proc.process.pid)
    port = int(proc.url.rsplit(":", 1)[1])
    async with connections(proc, count) as opened:
        await asyncio.gather(*(connection.identify(port, workers) for connection in opened))
        for _ in range(MORE_CONNECTIONS):
            missing = set(workers) - {c.worker for c in opened}
            if not missing or count < len(workers):
                break
            fresh = Connection(opened[0].server)
            await fresh.identify(port, workers)
            if fresh.worker not in missing:
                await fresh.session.close()
                continue
            crowded = max(workers, key=lambda pid: sum(c.worker == pid for c in opened))
            index = next(i for i, c in enumerate(opened) if c.worker == crowded)
            await opened[index].session.close()
            opened[index] = fresh
        yield opened, workers


def stop(proc: ServerProcess) -> int:
    proc.process.send_signal(signal.SIGTERM)
    return proc.process.wait(STOP_TIMEOUT)


def gone(pids: list[int]) -> bool:
    return not any(Path(f"/proc/{pid}").exists() for pid in pids)


async def watch_names(api: Api, rv: str, count: int) -> list[tuple[str, str, str]]:
    params = {"watch": "1", "resourceVersion": rv, "timeoutSeconds": "20"}
    async with api.session.get(api.toppings_path(), params=params) as stream:
        assert stream.status == 200
        events: list[Any] = await api.read_events(stream, count)
    return [
        (e["type"], e["object"]["metadata"]["name"], e["object"]["metadata"]["resourceVersion"])
        for e in events
    ]


@pytest.mark.parametrize("backend", ["embedded", "etcd"])
async def test_two_workers_serve_one_port_over_one_storage(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    flags = ["--workers", "2"]
    if backend == "etcd":
        flags += etcd_flags([request.getfixturevalue("etcd_server").client_url], unique_prefix())
    proc = await asyncio.to_thread(start_server_process, tmp_path / "data", *flags)
    try:
        workers = worker_pids(proc.process.pid)
        assert len(workers) == 2
        port = int(proc.url.rsplit(":", 1)[1])
        async with connections(proc, 2 * CONNECTIONS) as opened:
            await asyncio.gather(*(connection.identify(port, workers) for connection in opened))
            # A connection serves one request at a time: half for requests, half for the watches.
            conns, watchers = opened[:CONNECTIONS], opened[CONNECTIONS:]
            for group in (conns, watchers):
                assert {c.worker for c in group} == set(workers), (
                    "the kernel put every connection on one worker"
                )
            writer = conns[0]
            others = [c for c in conns if c.worker != writer.worker]
            same = [c for c in conns[1:] if c.worker == writer.worker]
            start = (await writer.api.get(writer.api.toppings_path())).body["metadata"]["resourceVersion"]

            watches = [asyncio.create_task(watch_names(c.api, start, 3)) for c in watchers]
            await asyncio.sleep(0.3)  # the watches are open (each replays from `start` anyway)
            for name in ("salami", "tomato"):
                assert (
                    await writer.api.post(writer.api.toppings_path(), writer.api.topping(name))
                ).status == 201
            # Read-your-writes through the other worker, at once: no waiting for its watch cache to hear.
            for connection in [*others, *same]:
                got = await connection.api.get(connection.api.toppings_path(name="tomato"))
                assert got.status == 200, got
                listed = await connection.api.get(connection.api.toppings_path())
                assert [i["metadata"]["name"] for i in listed.body["items"]] == ["salami", "tomato"]
            # Optimistic concurrency across workers: a stale resourceVersion is refused on the other one.
            salami = (await writer.api.get(writer.api.toppings_path(name="salami"))).body
            salami["spec"]["cost"] = 2
            assert (await writer.api.put(writer.api.toppings_path(name="salami"), salami)).status == 200
            salami["spec"]["cost"] = 3
            conflict = await others[0].api.put(others[0].api.toppings_path(name="salami"), salami)
            assert conflict.status == 409, conflict

            seen = await asyncio.wait_for(asyncio.gather(*watches), 20)
            first = seen[0]
            assert [(kind, name) for kind, name, _ in first] == [
                ("ADDED", "salami"),
                ("ADDED", "tomato"),
                ("MODIFIED", "salami"),
            ]
            assert all(events == first for events in seen), "workers disagree on the event stream"
            # Every request went over the connection identified at the start, so over that worker (the
            # watches' connections were closed by leaving their streams early).
            await asyncio.gather(*(connection.identify(port, workers) for connection in conns))
            log = proc.log.read_text()
            assert log.count("Serving securely on") == 1
    finally:
        code = await asyncio.to_thread(stop, proc)
    assert code == 0, proc.log.read_text()[-3000:]
    assert gone(workers)
    assert "all workers stopped" in proc.log.read_text()


async def test_a_second_server_on_the_data_dir_is_refused(tmp_path: Path) -> None:
    proc = await asyncio.to_thread(start_server_process, tmp_path / "data", "--workers", "2")
    try:
        for workers in ("2", "1"):
            second = await asyncio.to_thread(
                subprocess.run,
                [sys.executable, "-m", "server", *server_args(tmp_path / "data", "--workers", workers)],
                cwd=REPO,
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert second.returncode != 0
            assert "already in use by another server" in second.stderr
        async with connections(proc, 1) as (connection,):
            assert (await connection.api.get("/readyz")).status == 200
    finally:
        assert await asyncio.to_thread(stop, proc) == 0


async def test_a_worker_dying_stops_the_server_with_an_error(tmp_path: Path) -> None:
    proc = await asyncio.to_thread(start_server_process, tmp_path / "data", "--workers", "2")
    workers = worker_pids(proc.process.pid)
    try:
        os.kill(workers[0], signal.SIGKILL)
        code = await asyncio.to_thread(proc.process.wait, STOP_TIMEOUT)
    finally:
        proc.stop()
    assert code == 1
    assert gone(workers)
    assert "exited unexpectedly" in proc.log.read_text()
