"""How the worker processes sharing one embedded store learn about each other's commits.

Each process binds a Unix datagram socket in the abstract namespace (no file to clean up: it vanishes
with the process) and registers its name in the store's `feed_members` table, in the same write
transaction that fixes the revision it has delivered up to. Every writer reads that table inside its
own write transaction, so any commit after a registration rings the new member: no commit can fall
between "delivered up to" and "rung". After COMMIT the writer sends each sibling one 8-byte datagram
with the new revision (non-blocking; a full inbox already holds a ring, a refused send means the
member died and it is dropped from the table by the next write).

A ring carries no data. The receiver's event loop wakes, and its Follower asks the storage executor to
catch up: read every row after the last delivered revision from the `revisions` table and publish
them in order to the local fan-out (storage/embedded_sqlite.py, RevisionLog.catch_up). Rings are
coalesced (one catch-up covers any number of them), so delivery is in revision order with no gap and
no duplicate whatever the timing. As a fallback against a lost ring the Follower also compares the
shared revision counter with what it has delivered every POLL_INTERVAL seconds — a load from shared
memory, no SQLite.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import socket
import struct
from collections.abc import Awaitable, Callable, Iterable

_log = logging.getLogger(__name__)
_NAMESPACE = "\0pizza-apiserver-embedded-feed/"
_RING = struct.Struct("!q")
# How often a follower checks the shared counter when no ring came (lost rings only; not the latency).
POLL_INTERVAL = 0.25


class Notifier:
    """This process's doorbell (the inbox) and the means to ring its siblings' (the outbox)."""

    def __init__(self) -> None:
        self.name = f"{os.getpid()}-{secrets.token_hex(8)}"
        self._inbox = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
        self._outbox = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
        try:
            self._inbox.bind(_NAMESPACE + self.name)
            self._inbox.setblocking(False)
            self._outbox.setblocking(False)
        except BaseException:
            self.close()
            raise

    def fileno(self) -> int:
        return self._inbox.fileno()

    def ring(self, members: Iterable[str], revision: int) -> list[str]:
        """Tell each member `revision` was committed (storage executor). Returns the members gone."""
        payload = _RING.pack(revision)
        gone = []
        for member in members:
            try:
                self._outbox.sendto(payload, _NAMESPACE + member)
            except BlockingIOError:
                pass  # its inbox is full of rings it has not read yet; one catch-up covers them all
            except (ConnectionRefusedError, FileNotFoundError):
                gone.append(member)
            except OSError as err:
                _log.warning("embedded storage: cannot ring %s: %s", member, err)
        return gone

    def drain(self) -> int:
        """Read every pending ring (event loop, non-blocking); the newest revision rung, 0 if none."""
        newest = 0
        while True:
            try:
                data = self._inbox.recv(64)
            except (BlockingIOError, InterruptedError):
                return newest
            if len(data) == _RING.size:
                newest = max(newest, _RING.unpack(data)[0])

    def close(self) -> None:
        self._inbox.close()
        self._outbox.close()


class Follower:
    """Runs a catch-up on the storage executor whenever a sibling rang (or the counter moved)."""

    def __init__(
        self,
        notifier: Notifier,
        *,
        shared_revision: Callable[[], int],
        delivered_revision: Callable[[], int],
        catch_up: Callable[[], Awaitable[None]],
    ) -> None:
        self._notifier = notifier
        self._shared_revision = shared_revision
        self._delivered_revision = delivered_revision
        self._catch_up = catch_up
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        loop.add_reader(self._notifier.fileno(), self._on_ring)
        self._task = loop.create_task(self._run(), name="embedded-storage-follower")

    def kick(self) -> None:
        """Catch up now if another process committed something not delivered here yet."""
        if self._shared_revision() > self._delivered_revision():
            self._wake.set()

    async def stop(self) -> None:
        with contextlib.suppress(ValueError, OSError):
            asyncio.get_running_loop().remove_reader(self._notifier.fileno())
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def _on_ring(self) -> None:
        if self._notifier.drain() > self._delivered_revision():
            self._wake.set()

    async def _run(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(POLL_INTERVAL):
                    await self._wake.wait()
            self._wake.clear()
            if self._shared_revision() <= self._delivered_revision():
                continue
            try:
                await self._catch_up()
            except Exception:
                _log.exception("embedded storage: catching up with other workers failed; retrying")
                await asyncio.sleep(POLL_INTERVAL)
