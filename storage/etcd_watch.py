"""Watching a key prefix in etcd, surviving broken streams.

One gRPC watch stream per storage watch keeps the bookkeeping trivial: the stream is ours, so when it
breaks (etcd restarted, member killed, leader lost) we open a new one on the next endpoint starting
right after the last revision we handed out. etcd then replays exactly the events we have not
delivered, so the consumer sees neither a gap nor a duplicate. Only compaction of that revision ends
the watch, with TooOldResourceVersion, as kube does (the client re-lists).

Progress notifications are not requested: etcd 3.4 before 3.4.24 may send one ahead of events still
queued for the watcher, so resuming from its revision could skip events.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator

import grpc
from aetcd import rpc

from storage.etcd_client import REQUIRE_LEADER, Endpoint, EtcdConnection, prefix_range_end
from storage.interface import Event, EventType, FutureRevision, StorageError, TooOldResourceVersion

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


async def watch_prefix(
    conn: EtcdConnection,
    full_prefix: bytes,
    strip: int,
    revision: int,
    closed: asyncio.Event,
    *,
    approximate: bool = False,
) -> AsyncGenerator[Event, None]:
    """Events under `full_prefix` after `revision` (0: from now on), until closed or the consumer stops.

    `approximate` marks a `revision` that only stands in for "now" (see EtcdStorage.watch): if it
    has been compacted before anything was delivered, start from etcd's present instead of failing.
    """
    # 0 until known when watching "from now": etcd then starts after its current revision, which
    # the `created` answer tells us, and a reconnect must resume from exactly there.
    next_rev = revision + 1 if revision else 0
    range_end = prefix_range_end(full_prefix)
    pause = 0.05
    while not closed.is_set():
        endpoint = conn.current
        call = endpoint.watch.Watch(metadata=REQUIRE_LEADER)
        try:
            create = rpc.WatchCreateRequest(
                key=full_prefix, range_end=range_end, start_revision=next_rev, prev_kv=True
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
                    conn.fail_over(endpoint)
                    break
                if resp.created:
                    pause = 0.05
                    if next_rev == 0:
                        next_rev = resp.header.revision + 1
                    elif next_rev - 1 > resp.header.revision and not approximate:
                        # etcd would just wait for the future; kube answers "Too large resource
                        # version". Ask the leader first: this member may only be lagging behind.
                        current = await current_revision(conn)
                        if next_rev - 1 > current:
                            raise FutureRevision(next_rev - 1, current)
                for ev in resp.events:
                    next_rev = ev.kv.mod_revision + 1
                    yield to_event(ev, strip)
        except grpc.aio.AioRpcError as err:
            if closed.is_set():
                return
            if err.code() in _FATAL_CODES:
                raise StorageError(full_prefix.decode(), f"etcd watch failed: {err.details()}") from err
            conn.fail_over(endpoint)
        except asyncio.CancelledError:
            # close() cancels the gRPC calls, which surfaces here as a cancellation of our own task;
            # that one ends the watch quietly. A real cancellation of the consumer propagates.
            task = asyncio.current_task()
            if closed.is_set() and task is not None and task.cancelling() == 0:
                return
            raise
        finally:
            call.cancel()
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
