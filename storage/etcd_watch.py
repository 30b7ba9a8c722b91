"""Watching a key prefix in etcd, surviving broken streams, with progress requests.

One gRPC watch stream per storage watch keeps the bookkeeping trivial: the stream is ours, so when it
breaks (etcd restarted, member killed, leader lost) we open a new one on the next endpoint starting
right after the last revision we handed out. etcd then replays exactly the events we have not
delivered, so the consumer sees neither a gap nor a duplicate. Only compaction of that revision ends
the watch, with TooOldResourceVersion, as kube does (the client re-lists).

Progress requests (kube's `RequestWatchProgress`): a `WatchProgressRequest` on the stream makes etcd
answer, once every watcher on it is synced, with an empty response at its current revision, after
every event at or below it. That is what lets a watch cache prove it is current when etcd's revision
moved because of writes outside its prefix. etcd before 3.4.31 and 3.5.0-3.5.12 may answer ahead of
events still queued (etcd-io/etcd#15220), so, like kube's feature-support check, the stream asks the
member it is connected to for its version each time it (re)connects and offers progress only on a
member that orders it; elsewhere `request_progress()` says False and the cache reads etcd instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import AsyncGenerator

import grpc
from aetcd import rpc

from storage.etcd_client import REQUIRE_LEADER, Endpoint, EtcdConnection, prefix_range_end
from storage.interface import Event, EventType, FutureRevision, StorageError, TooOldResourceVersion

logger = logging.getLogger(__name__)

# Errors that say the request itself is wrong, where reconnecting would only repeat the failure.
_FATAL_CODES = frozenset(
    {
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.PERMISSION_DENIED,
        grpc.StatusCode.UNAUTHENTICATED,
        grpc.StatusCode.UNIMPLEMENTED,
    }
)
_MAX_PAUSE = 1.0
# How long asking a member for its version may take before the stream goes on without progress.
VERSION_CHECK_TIMEOUT = 2.0
_PROGRESS_REQUEST = rpc.WatchRequest(progress_request=rpc.WatchProgressRequest())
_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")


def orders_progress(version: str) -> bool:
    """Whether an etcd of `version` sends a requested progress notification only after every event
    at or below its revision: kube's check (3.4.31+, 3.5.13+, every later minor). Unparsable: no."""
    match = _VERSION.match(version)
    if match is None:
        return False
    major, minor, patch = (int(part) for part in match.groups())
    if (major, minor) == (3, 4):
        return patch >= 31
    if (major, minor) == (3, 5):
        return patch >= 13
    return (major, minor) > (3, 5)


async def member_orders_progress(endpoint: Endpoint) -> bool:
    """Ask the member behind `endpoint` for its version (kube's FeatureSupportChecker, per member).

    Remembered on the endpoint until a watch stream to it breaks: what answers after a reconnect
    may be another etcd (a rolling upgrade or downgrade)."""
    if endpoint.orders_progress is None:
        try:
            status = await endpoint.maintenance.Status(rpc.StatusRequest(), timeout=VERSION_CHECK_TIMEOUT)
        except grpc.aio.AioRpcError as err:
            logger.info(
                "etcd %s did not tell its version (%s): no progress requests", endpoint.url, err.code()
            )
            return False  # not remembered: the next stream asks again
        endpoint.orders_progress = orders_progress(status.version)
        if not endpoint.orders_progress:
            logger.warning(
                "etcd %s is %s: its progress notifications may overtake events (needs 3.4.31, 3.5.13 "
                "or later), so consistent reads go to etcd instead of the watch cache",
                endpoint.url,
                status.version,
            )
    return endpoint.orders_progress


def to_event(ev: rpc.Event, strip: int) -> Event:
    """etcd's PUT/DELETE (with prev_kv) → the storage event; the create/update split is etcd's own rule."""
    key = ev.kv.key[strip:].decode()
    prev = ev.prev_kv.value if ev.HasField("prev_kv") else None
    if ev.type == rpc.Event.DELETE:
        # The DELETE record carries no value; clients see the object's last state, taken from prev_kv.
        return Event(EventType.DELETED, key, prev or b"", ev.kv.mod_revision, prev)
    if ev.kv.create_revision == ev.kv.mod_revision:
        return Event(EventType.ADDED, key, ev.kv.value, ev.kv.mod_revision, None)
    return Event(EventType.MODIFIED, key, ev.kv.value, ev.kv.mod_revision, prev)


def _is_progress(resp: rpc.WatchResponse) -> bool:
    """An answer to a progress request: no events and nothing else to say (its watch_id is -1 on
    etcd 3.5.13+ and 3.6, the watcher's own on older members)."""
    return not resp.events and not resp.created and not resp.canceled and not resp.compact_revision


class EtcdWatch:
    """Events under `full_prefix` after `revision` (0: from now on), until closed or the consumer
    stops; PROGRESS events in between once asked for (`request_progress`).

    `approximate` marks a `revision` that only stands in for "now" (see EtcdStorage.watch): if it
    has been compacted before anything was delivered, start from etcd's present instead of failing.
    """

    def __init__(
        self,
        conn: EtcdConnection,
        full_prefix: bytes,
        strip: int,
        revision: int,
        closed: asyncio.Event,
        *,
        approximate: bool = False,
    ) -> None:
        self._conn = conn
        self._full_prefix = full_prefix
        self._strip = strip
        self._revision = revision
        self._closed = closed
        self._approximate = approximate
        # The live stream, once etcd created the watcher on it, when its member orders progress.
        self._progress_call: grpc.aio.StreamStreamCall | None = None
        self._sender: asyncio.Task[None] | None = None
        self._send_again = False
        self._events = self._run()

    def __aiter__(self) -> EtcdWatch:
        return self

    async def __anext__(self) -> Event:
        return await self._events.__anext__()

    def request_progress(self) -> bool:
        """Ask etcd for progress now. False while the stream is (re)connecting or its member may
        answer ahead of queued events: then no PROGRESS is promised."""
        call = self._progress_call
        if call is None:
            return False
        if self._sender is not None:
            self._send_again = True  # one write at a time on a stream; this one follows it
        else:
            self._sender = asyncio.get_running_loop().create_task(self._send_progress(call))
        return True

    async def _send_progress(self, call: grpc.aio.StreamStreamCall) -> None:
        try:
            while True:
                self._send_again = False
                await call.write(_PROGRESS_REQUEST)
                if not self._send_again:
                    return
        except Exception as err:  # the stream broke or ended: the reader reconnects, the cache re-asks
            logger.debug("progress request not sent: %s", err)
        finally:
            self._sender = None

    async def aclose(self) -> None:
        await self._events.aclose()
        if self._sender is not None:
            self._sender.cancel()

    async def _run(self) -> AsyncGenerator[Event, None]:
        revision, approximate, closed = self._revision, self._approximate, self._closed
        # 0 until known when watching "from now": etcd then starts after its current revision, which
        # the `created` answer tells us, and a reconnect must resume from exactly there.
        next_rev = revision + 1 if revision else 0
        range_end = prefix_range_end(self._full_prefix)
        pause = 0.05
        while not closed.is_set():
            endpoint = self._conn.current
            call = endpoint.watch.Watch(metadata=REQUIRE_LEADER)
            try:
                create = rpc.WatchCreateRequest(
                    key=self._full_prefix, range_end=range_end, start_revision=next_rev, prev_kv=True
                )
                await call.write(rpc.WatchRequest(create_request=create))
                while True:
                    resp = await call.read()
                    if resp is grpc.aio.EOF:
                        break
                    if resp.compact_revision and approximate and next_rev == revision + 1:
                        next_rev = 0
                        break
                    if resp.compact_revision:
                        raise TooOldResourceVersion(next_rev - 1, resp.compact_revision, resp.header.revision)
                    if resp.canceled:
                        # e.g. "etcdserver: no leader": the member cannot serve; try another one.
                        self._conn.fail_over(endpoint)
                        break
                    if resp.created:
                        pause = 0.05
                        if next_rev == 0:
                            next_rev = resp.header.revision + 1
                        elif next_rev - 1 > resp.header.revision and not approximate:
                            # etcd would just wait for the future; kube answers "Too large resource
                            # version". Ask the leader first: this member may only be lagging behind.
                            current = await current_revision(self._conn)
                            if next_rev - 1 > current:
                                raise FutureRevision(next_rev - 1, current)
                        if await member_orders_progress(endpoint):
                            self._progress_call = call
                        continue
                    if _is_progress(resp):
                        if self._progress_call is call:
                            # Every event at or below it was delivered: a reconnect resumes after it.
                            next_rev = max(next_rev, resp.header.revision + 1)
                            yield Event(EventType.PROGRESS, "", b"", resp.header.revision, None)
                        continue
                    for ev in resp.events:
                        next_rev = ev.kv.mod_revision + 1
                        yield to_event(ev, self._strip)
            except grpc.aio.AioRpcError as err:
                if closed.is_set():
                    return
                if err.code() in _FATAL_CODES:
                    raise StorageError(
                        self._full_prefix.decode(), f"etcd watch failed: {err.details()}"
                    ) from err
                self._conn.fail_over(endpoint)
            except asyncio.CancelledError:
                # close() cancels the gRPC calls, which surfaces here as a cancellation of our own
                # task; that one ends the watch quietly. A real cancellation of the consumer propagates.
                task = asyncio.current_task()
                if closed.is_set() and task is not None and task.cancelling() == 0:
                    return
                raise
            finally:
                self._progress_call = None
                call.cancel()
            # Whatever answers next may be another etcd: ask its version again.
            endpoint.orders_progress = None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(closed.wait(), pause)
            pause = min(pause * 2, _MAX_PAUSE)


async def compacted_revision(conn: EtcdConnection, key: bytes, timeout: float = 2.0) -> int:
    """etcd's current compaction revision, or 0 if it cannot tell within `timeout`.

    etcd reports it nowhere but in the answer to a watch that starts below it, so open one at
    revision 1 and read the cancellation. Only used on the error path of a compacted read.
    """
    call = conn.current.watch.Watch(metadata=REQUIRE_LEADER)
    try:
        async with asyncio.timeout(timeout):
            await call.write(
                rpc.WatchRequest(create_request=rpc.WatchCreateRequest(key=key, start_revision=1))
            )
            while True:
                resp = await call.read()
                if resp is grpc.aio.EOF or resp.canceled:
                    return resp.compact_revision if resp is not grpc.aio.EOF else 0
    except (TimeoutError, grpc.aio.AioRpcError):
        return 0
    finally:
        call.cancel()


async def current_revision(conn: EtcdConnection) -> int:
    """The store's revision from a linearizable (quorum) read."""

    async def send(endpoint: Endpoint, left: float) -> rpc.RangeResponse:
        return await endpoint.kv.Range(rpc.RangeRequest(key=b"\x00", count_only=True), timeout=left)

    resp = await conn.call(send, idempotent=True)
    return resp.header.revision
