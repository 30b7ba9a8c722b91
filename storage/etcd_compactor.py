"""Periodic compaction of etcd history, the way kube-apiserver does it.

etcd keeps every revision until told otherwise. Each tick compacts to the revision seen at the
previous tick, so watchers and paged lists always have at least one interval of history. Several
API servers (or a kube-apiserver sharing the etcd) coordinate through the version of the shared
`compact_rev_key`: only the one whose compare-and-swap on that version succeeds compacts this round
(staging/src/k8s.io/apiserver/pkg/storage/etcd3/compact.go).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass

import grpc
from aetcd import rpc

from storage.etcd_client import Endpoint, EtcdConnection
from storage.interface import StorageError

# Deliberately outside any resource prefix and identical to kube's, so both coordinate.
COMPACT_REV_KEY = b"compact_rev_key"

log = logging.getLogger(__name__)


@dataclass(slots=True)
class CompactState:
    # The compact_rev_key version we expect (kube's "compact time").
    version: int = 0
    # The store revision seen at the previous tick: what the next successful tick compacts to.
    revision: int = 0


async def compact_tick(conn: EtcdConnection, state: CompactState) -> int:
    """One round of kube's protocol; returns the revision compacted to, or 0 when it was not our turn."""
    txn = rpc.TxnRequest(
        compare=[
            rpc.Compare(
                result=rpc.Compare.EQUAL,
                target=rpc.Compare.VERSION,
                key=COMPACT_REV_KEY,
                version=state.version,
            )
        ],
        success=[
            rpc.RequestOp(request_put=rpc.PutRequest(key=COMPACT_REV_KEY, value=str(state.revision).encode()))
        ],
        failure=[rpc.RequestOp(request_range=rpc.RangeRequest(key=COMPACT_REV_KEY))],
    )

    async def send(endpoint: Endpoint, left: float) -> rpc.TxnResponse:
        return await endpoint.kv.Txn(txn, timeout=left)

    resp = await conn.call(send, idempotent=False, key=COMPACT_REV_KEY.decode())
    previous = state.revision
    state.revision = resp.header.revision
    if not resp.succeeded:
        kvs = resp.responses[0].response_range.kvs
        state.version = kvs[0].version if kvs else 0
        return 0
    state.version += 1
    if previous == 0:
        # Like kube: nothing to compact on the first tick after start.
        return 0
    await compact_to(conn, previous)
    return previous


async def compact_to(conn: EtcdConnection, revision: int) -> None:
    """Compact etcd's history at `revision`; compacting an already compacted revision is a no-op."""

    async def send(endpoint: Endpoint, left: float) -> rpc.CompactionResponse:
        return await endpoint.kv.Compact(rpc.CompactionRequest(revision=revision), timeout=left)

    try:
        await conn.call(send, idempotent=True)
    except grpc.aio.AioRpcError as err:
        if err.code() == grpc.StatusCode.OUT_OF_RANGE and "compacted" in (err.details() or ""):
            return
        raise


def compaction_request() -> rpc.RangeRequest:
    """The read of compact_rev_key, where kube's protocol records the revision it compacted to."""
    return rpc.RangeRequest(key=COMPACT_REV_KEY)


def recorded_compaction(resp: rpc.RangeResponse) -> int:
    """The revision in compact_rev_key's value (kube's etcd3 compactor reads the same), 0 when none
    was recorded."""
    try:
        return int(resp.kvs[0].value) if resp.kvs else 0
    except ValueError:
        return 0


async def run_compactor(
    conn: EtcdConnection, interval: float, on_compacted: Callable[[int], None] = lambda _: None
) -> None:
    """Compact every `interval` seconds until cancelled; a failed round is logged and retried next tick."""
    state = CompactState()
    while True:
        await asyncio.sleep(interval)
        try:
            compacted = await compact_tick(conn, state)
        except (StorageError, grpc.aio.AioRpcError) as err:
            log.warning("etcd compaction failed: %s", err)
            continue
        if compacted:
            on_compacted(compacted)
            log.info("etcd: compacted to revision %d", compacted)
