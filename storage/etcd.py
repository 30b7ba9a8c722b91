"""etcd v3 storage backend: kube's etcd3 store semantics over asyncio gRPC.

Every write is a single-key transaction guarded by a revision compare, so optimistic concurrency is
etcd's, not ours: create requires create_revision == 0, update and delete require the mod_revision
they read (kube's GuaranteedUpdate/conditionalDelete loop, retried with the fresh value etcd hands
back in the transaction's else branch). A create or a delete may carry companion keys (an allocated
number's, storage.interface) in the same transaction. Keys given to this class are relative
("/pizzas/ns/name"); the configured prefix is added on the way in and removed on the way out.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import grpc
from aetcd import rpc

from storage.etcd_client import (
    UNREACHABLE_TIMEOUT,
    Endpoint,
    EtcdConnection,
    TLSFiles,
    is_unreachable,
    open_endpoint,
    prefix_range_end,
)
from storage.etcd_compactor import compact_to, compaction_request, recorded_compaction, run_compactor
from storage.etcd_watch import EtcdWatch, compacted_revision
from storage.interface import (
    AlreadyExists,
    CompanionExists,
    Companions,
    DeleteCheck,
    FutureRevision,
    KeyValue,
    ListResult,
    NotFound,
    StorageError,
    TooOldResourceVersion,
    Unavailable,
    UpdateFunc,
)
from storage.revision_reads import SharedRevisionReads

# kube-apiserver's --etcd-healthcheck-timeout default: /readyz must answer well before probes time out.
HEALTHCHECK_TIMEOUT = 2.0
# How often check_retained re-reads the compaction kube's compactors record (the cacher's
# compactorPollPeriod).
COMPACTION_POLL = 15.0


@dataclass(slots=True)
class EtcdConfig:
    servers: list[str]
    prefix: str = "/registry/restaurant.programming-kubernetes.info"
    cafile: str | None = None
    certfile: str | None = None
    keyfile: str | None = None
    request_timeout: float = 5.0
    # Seconds between compactions; 0 disables (another API server or etcd itself compacts).
    compaction_interval: float = 300.0
    # Seconds a call keeps retrying while no endpoint can be reached (see etcd_client).
    unreachable_timeout: float = UNREACHABLE_TIMEOUT


def _read_tls(config: EtcdConfig) -> TLSFiles | None:
    """Read the PEM files (blocking disk I/O: callers run this in a worker thread)."""
    if not (config.cafile or config.certfile or config.keyfile):
        return None
    if bool(config.certfile) != bool(config.keyfile):
        raise ValueError("etcd client TLS needs both a certificate file and a key file")

    def read(path: str | None) -> bytes | None:
        return Path(path).read_bytes() if path else None

    return TLSFiles(ca=read(config.cafile), cert=read(config.certfile), key=read(config.keyfile))


async def open_etcd(config: EtcdConfig) -> EtcdStorage:
    """Open channels to every endpoint and start the compactor.

    etcd need not be up yet (as with kube-apiserver, calls fail with Unavailable until it is);
    open_etcd waits at most HEALTHCHECK_TIMEOUT for it.
    """
    if not config.servers:
        raise ValueError("no etcd servers configured")
    # Off the event loop: reading certificate files is synchronous disk I/O.
    tls = await asyncio.to_thread(_read_tls, config)
    endpoints = [open_endpoint(url, tls) for url in config.servers]
    conn = EtcdConnection(endpoints, config.request_timeout, config.unreachable_timeout)
    store = EtcdStorage(conn, config.prefix)
    # Best effort: learn where etcd is now, so that a watch "from now" opened before any other call
    # has a starting point (see EtcdStorage.watch). etcd being down here is not an error.
    with contextlib.suppress(StorageError):
        await store.revision_now(timeout=HEALTHCHECK_TIMEOUT)
    if config.compaction_interval > 0:
        store.start_compactor(config.compaction_interval)
    return store


class EtcdStorage:
    """storage.Interface over etcd v3."""

    def __init__(self, conn: EtcdConnection, prefix: str) -> None:
        self._conn = conn
        self._prefix = prefix.rstrip("/")
        self._strip = len(self._prefix.encode())
        self._closed = asyncio.Event()
        self._compactor: asyncio.Task[None] | None = None
        # The newest store revision any answer has shown us; see watch().
        self._seen_revision = 0
        self._revision_reads = SharedRevisionReads(self.revision_now)
        # The newest compaction this client knows of (check_retained), and when it last read etcd's.
        self._compacted = 0
        self._compaction_read_at = -COMPACTION_POLL

    def start_compactor(self, interval: float) -> None:
        self._compactor = asyncio.create_task(
            run_compactor(self._conn, interval, self._learn_compaction), name="etcd-compactor"
        )

    def _learn_compaction(self, revision: int) -> None:
        self._compacted = max(self._compacted, revision)

    # -- keys and values -------------------------------------------------------------------------

    def _full(self, key: str) -> bytes:
        return (self._prefix + key).encode()

    def _kv(self, kv: rpc.KeyValue) -> KeyValue:
        return KeyValue(kv.key[self._strip :].decode(), kv.value, kv.create_revision, kv.mod_revision)

    # -- the two RPCs everything is built from ---------------------------------------------------

    async def _range(
        self, req: rpc.RangeRequest, key: str, timeout: float | None = None
    ) -> rpc.RangeResponse:
        async def send(endpoint: Endpoint, left: float) -> rpc.RangeResponse:
            return await endpoint.kv.Range(req, timeout=left)

        try:
            resp: rpc.RangeResponse = await self._conn.call(send, idempotent=True, key=key, timeout=timeout)
        except grpc.aio.AioRpcError as err:
            raise await self._translate(err, key, req.revision) from err
        self._seen_revision = max(self._seen_revision, resp.header.revision)
        return resp

    async def _txn(self, req: rpc.TxnRequest, key: str) -> rpc.TxnResponse:
        async def send(endpoint: Endpoint, left: float) -> rpc.TxnResponse:
            return await endpoint.kv.Txn(req, timeout=left)

        try:
            resp: rpc.TxnResponse = await self._conn.call(send, idempotent=False, key=key)
        except grpc.aio.AioRpcError as err:
            raise await self._translate(err, key, 0) from err
        self._seen_revision = max(self._seen_revision, resp.header.revision)
        return resp

    async def _translate(self, err: grpc.aio.AioRpcError, key: str, revision: int) -> StorageError:
        details = err.details() or ""
        if err.code() == grpc.StatusCode.OUT_OF_RANGE and "compacted" in details:
            oldest = await compacted_revision(self._conn, self._full("/"))
            self._learn_compaction(oldest)
            return TooOldResourceVersion(revision, oldest or revision + 1, self._seen_revision)
        if err.code() == grpc.StatusCode.OUT_OF_RANGE and "future" in details:
            return FutureRevision(revision, await self.current_revision())
        if is_unreachable(err):
            return Unavailable(key, f"etcd unavailable: {details}")
        return StorageError(key, f"etcd: {details}")

    # -- Interface -------------------------------------------------------------------------------

    async def create(
        self, key: str, value: bytes, *, companions: Mapping[str, bytes] | None = None
    ) -> KeyValue:
        full = self._full(key)
        writes = {full: value, **{self._full(k): v for k, v in (companions or {}).items()}}
        txn = rpc.TxnRequest(
            compare=[
                rpc.Compare(result=rpc.Compare.EQUAL, target=rpc.Compare.CREATE, key=k, create_revision=0)
                for k in writes
            ],
            success=[rpc.RequestOp(request_put=rpc.PutRequest(key=k, value=v)) for k, v in writes.items()],
            # With companions, a failure says which keys exist, so the caller can tell them apart.
            failure=[rpc.RequestOp(request_range=rpc.RangeRequest(key=k, count_only=True)) for k in writes]
            if companions
            else [],
        )
        while True:
            resp = await self._txn(txn, key)
            if resp.succeeded:
                revision = resp.header.revision
                return KeyValue(key, value, revision, revision)
            if not companions or resp.responses[0].response_range.count:
                raise AlreadyExists(key)
            for companion, answer in zip(companions, resp.responses[1:], strict=True):
                if answer.response_range.count:
                    raise CompanionExists(companion)
            # Every key was deleted between the compare and the reads: try again.

    async def get(self, key: str, *, revision: int = 0) -> KeyValue:
        resp = await self._range(rpc.RangeRequest(key=self._full(key), revision=revision), key)
        if not resp.kvs:
            raise NotFound(key)
        return self._kv(resp.kvs[0])

    async def list(
        self, prefix: str, *, revision: int = 0, start_key: str | None = None, limit: int = 0
    ) -> ListResult:
        full_prefix = self._full(directory(prefix))
        start = max(self._full(start_key), full_prefix) if start_key else full_prefix
        req = rpc.RangeRequest(
            key=start, range_end=prefix_range_end(full_prefix), revision=revision, limit=max(limit, 0)
        )
        resp = await self._range(req, prefix)
        items = [self._kv(kv) for kv in resp.kvs]
        # `count` is every key in [start, end) at that revision, ignoring the limit (kube's
        # remainingItemCount is computed the same way).
        remaining = resp.count - len(items) if resp.more else 0
        return ListResult(items, revision or resp.header.revision, resp.more, remaining)

    async def guaranteed_update(
        self, key: str, update: UpdateFunc, *, ignore_not_found: bool = False
    ) -> KeyValue:
        full = self._full(key)
        resp = await self._range(rpc.RangeRequest(key=full), key)
        current = self._kv(resp.kvs[0]) if resp.kvs else None
        while True:
            if current is None and not ignore_not_found:
                raise NotFound(key)
            new_value = await update(current)
            if current is not None and new_value == current.value:
                # Nothing changed: no write, and the revision stays (kube skips the txn too).
                return current
            expected = current.mod_revision if current is not None else 0
            txn = rpc.TxnRequest(
                compare=[
                    rpc.Compare(
                        result=rpc.Compare.EQUAL, target=rpc.Compare.MOD, key=full, mod_revision=expected
                    )
                ],
                success=[rpc.RequestOp(request_put=rpc.PutRequest(key=full, value=new_value))],
                failure=[rpc.RequestOp(request_range=rpc.RangeRequest(key=full))],
            )
            resp_txn = await self._txn(txn, key)
            if resp_txn.succeeded:
                revision = resp_txn.header.revision
                created = current.create_revision if current is not None else revision
                return KeyValue(key, new_value, created, revision)
            # Lost a race: etcd already gave us the winner's value; retry on it without another read.
            kvs = resp_txn.responses[0].response_range.kvs
            current = self._kv(kvs[0]) if kvs else None

    async def delete(
        self,
        key: str,
        *,
        check: DeleteCheck | None = None,
        cached: KeyValue | None = None,
        companions: Companions | None = None,
    ) -> KeyValue:
        full = self._full(key)
        if cached is not None:
            current = cached  # a stale value fails the txn's compare, which returns the current one
        else:
            resp = await self._range(rpc.RangeRequest(key=full), key)
            if not resp.kvs:
                raise NotFound(key)
            current = self._kv(resp.kvs[0])
        while True:
            if check is not None:
                await check(current)
            # prev_kv: the value deleted, which a `cached` revision alone does not carry.
            success = [rpc.RequestOp(request_delete_range=rpc.DeleteRangeRequest(key=full, prev_kv=True))]
            if companions is not None:
                success += [_delete_holding(self._full(k), v) for k, v in companions(current).items()]
            txn = rpc.TxnRequest(
                compare=[
                    rpc.Compare(
                        result=rpc.Compare.EQUAL,
                        target=rpc.Compare.MOD,
                        key=full,
                        mod_revision=current.mod_revision,
                    )
                ],
                success=success,
                failure=[rpc.RequestOp(request_range=rpc.RangeRequest(key=full))],
            )
            resp_txn = await self._txn(txn, key)
            if resp_txn.succeeded:
                # Like kube's conditionalDelete: the last value, stamped with the delete's revision.
                prev = resp_txn.responses[0].response_delete_range.prev_kvs
                last = prev[0] if prev else current  # the key is ours: no need to decode it back
                return KeyValue(key, last.value, last.create_revision, resp_txn.header.revision)
            kvs = resp_txn.responses[0].response_range.kvs
            if not kvs:
                raise NotFound(key)
            current = self._kv(kvs[0])

    def watch(self, prefix: str, revision: int) -> EtcdWatch:
        """Revision 0 means "from now": from the moment of this call, not of the first iteration.

        The stream only opens when the consumer first iterates, and this method cannot wait for etcd,
        so "now" is the newest revision this client has seen: every write it acknowledged is at or
        below it. Until the client has seen any, the stream starts from etcd's present.
        """
        full = self._full(directory(prefix))
        if revision == 0 and self._seen_revision:
            return EtcdWatch(
                self._conn, full, self._strip, self._seen_revision, self._closed, approximate=True
            )
        return EtcdWatch(self._conn, full, self._strip, revision, self._closed)

    async def current_revision(self) -> int:
        """A quorum read's revision, shared by the readers that arrived while the last one ran."""
        return await self._revision_reads.current()

    async def revision_now(self, timeout: float | None = None) -> int:
        resp = await self._range(rpc.RangeRequest(key=self._full("/"), count_only=True), "", timeout)
        return resp.header.revision

    async def compact(self, revision: int) -> None:
        try:
            await compact_to(self._conn, revision)
        except grpc.aio.AioRpcError as err:
            raise await self._translate(err, "", revision) from err
        self._learn_compaction(revision)

    async def check_retained(self, revision: int) -> None:
        """From what this client knows, re-reading compact_rev_key at most every COMPACTION_POLL:
        a page or a resumed watch served from the cache costs no round trip (kube's cacher trims its
        snapshots the same way). A compaction by etcd's own --auto-compaction is not recorded there;
        it is learnt when a read meets it."""
        now = asyncio.get_running_loop().time()
        if now - self._compaction_read_at >= COMPACTION_POLL:
            resp = await self._range(compaction_request(), "compact_rev_key")
            self._learn_compaction(recorded_compaction(resp))
            self._compaction_read_at = now
        if revision < self._compacted:
            raise TooOldResourceVersion(revision, self._compacted, self._seen_revision)

    async def check(self) -> None:
        """A quorum read with a short deadline: what kube's etcd readiness check does."""
        req = rpc.RangeRequest(key=self._full("/health"), count_only=True)

        async def send(endpoint: Endpoint, left: float) -> rpc.RangeResponse:
            return await endpoint.kv.Range(req, timeout=left)

        timeout = min(HEALTHCHECK_TIMEOUT, self._conn.request_timeout)
        try:
            await self._conn.call(send, idempotent=True, key="/health", timeout=timeout)
        except grpc.aio.AioRpcError as err:
            raise Unavailable("", f"etcd not ready: {err.details()}") from err

    async def close(self) -> None:
        if self._closed.is_set():
            return
        self._closed.set()
        await self._revision_reads.close()
        if self._compactor is not None:
            self._compactor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._compactor
        await self._conn.close()


def _delete_holding(key: bytes, value: bytes) -> rpc.RequestOp:
    """A nested Txn (etcd >= 3.3): delete `key` only while it holds `value`, whatever else happens."""
    return rpc.RequestOp(
        request_txn=rpc.TxnRequest(
            compare=[rpc.Compare(result=rpc.Compare.EQUAL, target=rpc.Compare.VALUE, key=key, value=value)],
            success=[rpc.RequestOp(request_delete_range=rpc.DeleteRangeRequest(key=key))],
        )
    )


def directory(prefix: str) -> str:
    """A list or watch prefix is a directory, as in kube's etcd3 store: "/a" must not match "/ab"."""
    return prefix if prefix.endswith("/") else prefix + "/"
