"""gRPC connections to the etcd endpoints, with failover and bounded retries.

aetcd's high-level client knows one endpoint, has no TLS option and hides watch progress
notifications, so the backend talks to etcd through the generated stubs it ships (`aetcd.rpc`) over
grpc.aio channels of its own: one channel per endpoint, and a request that finds its endpoint
unreachable moves on to the next one. Every call is bounded by `request_timeout` (which the server
sets to its --request-timeout, a minute by default), and retrying while *no* endpoint can be reached
is bounded further by `unreachable_timeout` (a few seconds): a dead etcd turns into `Unavailable`
(503 with Retry-After) quickly instead of holding every request for the whole request timeout, while
a member restart or a leader election, which take about a second, is still ridden out. The channels'
short reconnect backoff makes everything work again within about a second of etcd coming back.
"""

from __future__ import annotations

import asyncio
import urllib.parse
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

import grpc
from aetcd import rpc

from storage.interface import Unavailable, UnknownOutcome

T = TypeVar("T")

CHANNEL_OPTIONS: list[tuple[str, int]] = [
    # A LIST of many objects easily exceeds gRPC's 4 MiB default; kube lifts the limit the same way.
    ("grpc.max_receive_message_length", 2**31 - 1),
    ("grpc.max_send_message_length", 2**31 - 1),
    # gRPC's default backoff grows to 120 s: after a long etcd outage we would stay failed for
    # minutes after it came back. Cap it at 1 s.
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1000),
    # Detect a silently dead peer under an idle watch (kube: 30 s / 10 s). etcd rejects pings more
    # frequent than 5 s and pings without an active stream, so stay above and within those.
    ("grpc.keepalive_time_ms", 30_000),
    ("grpc.keepalive_timeout_ms", 10_000),
    ("grpc.keepalive_permit_without_calls", 0),
]

# How long a call keeps retrying while every endpoint refuses it: long enough to ride out a member
# restart or the election after a leader crash (~1-2 s with etcd's default 1 s election timeout),
# short enough that a dead etcd is a prompt 503 rather than a request hanging for --request-timeout.
UNREACHABLE_TIMEOUT = 3.0

# etcd cancels a watch stream whose member lost its leader only when the client asks for it (this is
# clientv3.WithRequireLeader, which kube sets on every watch); otherwise a partitioned member would
# keep an apparently healthy stream that never delivers anything.
REQUIRE_LEADER = (("hasleader", "true"),)

# Error texts meaning the request never reached an etcd that could apply it, so even a write can be
# sent again to another member without risking a double apply.
_NOT_SENT_MARKERS = ("failed to connect", "connection refused", "no leader", "not capable")
# The member's HTTP/2 stream was reset under a request in flight (it died or closed the connection):
# grpc reports that as UNKNOWN or CANCELLED "Stream removed (RST_STREAM ...)". Like a timeout, it says
# nothing of whether etcd applied the request.
_STREAM_RESET_MARKERS = ("stream removed", "rst_stream")
_STREAM_RESET_CODES = (grpc.StatusCode.UNKNOWN, grpc.StatusCode.CANCELLED)


@dataclass(frozen=True, slots=True)
class TLSFiles:
    """PEM contents (already read from disk) for the client side of TLS to etcd."""

    ca: bytes | None
    cert: bytes | None
    key: bytes | None


@dataclass(slots=True)
class Endpoint:
    url: str
    channel: grpc.aio.Channel
    kv: rpc.KVStub
    watch: rpc.WatchStub
    maintenance: rpc.MaintenanceStub
    # Whether this member answers progress requests in order (storage/etcd_watch.py); None: not asked
    # since the last watch stream to it broke.
    orders_progress: bool | None = None


def grpc_target(url: str) -> tuple[str, bool | None]:
    """`http(s)://host:port` or bare `host:port` → (gRPC target, TLS wanted; None: not said)."""
    if "://" not in url:
        return url, None
    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme not in ("http", "https"):
        raise ValueError(f"unsupported etcd endpoint scheme in {url!r}: use http:// or https://")
    if not parsed.hostname or not parsed.port:
        raise ValueError(f"etcd endpoint {url!r} needs a host and a port")
    host = f"[{parsed.hostname}]" if ":" in parsed.hostname else parsed.hostname
    return f"{host}:{parsed.port}", parsed.scheme == "https"


def open_endpoint(url: str, tls: TLSFiles | None) -> Endpoint:
    target, wants_tls = grpc_target(url)
    if wants_tls is None:
        # A bare host:port speaks TLS exactly when TLS files were configured.
        wants_tls = tls is not None
    if wants_tls:
        credentials = grpc.ssl_channel_credentials(
            root_certificates=tls.ca if tls else None,
            private_key=tls.key if tls else None,
            certificate_chain=tls.cert if tls else None,
        )
        channel = grpc.aio.secure_channel(target, credentials, options=CHANNEL_OPTIONS)
    else:
        channel = grpc.aio.insecure_channel(target, options=CHANNEL_OPTIONS)
    return Endpoint(
        url=url,
        channel=channel,
        kv=rpc.KVStub(channel),
        watch=rpc.WatchStub(channel),
        maintenance=rpc.MaintenanceStub(channel),
    )


def is_unreachable(err: grpc.aio.AioRpcError) -> bool:
    code = err.code()
    if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
        return True
    return is_stream_reset(err)


def is_stream_reset(err: grpc.aio.AioRpcError) -> bool:
    details = (err.details() or "").lower()
    return err.code() in _STREAM_RESET_CODES and any(m in details for m in _STREAM_RESET_MARKERS)


def never_reached_etcd(err: grpc.aio.AioRpcError) -> bool:
    details = (err.details() or "").lower()
    return err.code() == grpc.StatusCode.UNAVAILABLE and any(m in details for m in _NOT_SENT_MARKERS)


class EtcdConnection:
    """The set of endpoints, which one is preferred now, and the retry policy for unary calls."""

    def __init__(
        self,
        endpoints: list[Endpoint],
        request_timeout: float,
        unreachable_timeout: float = UNREACHABLE_TIMEOUT,
    ) -> None:
        if not endpoints:
            raise ValueError("at least one etcd endpoint is required")
        self.endpoints = endpoints
        self.request_timeout = request_timeout
        self.unreachable_timeout = unreachable_timeout
        self.closed = False
        self._current = 0

    @property
    def current(self) -> Endpoint:
        return self.endpoints[self._current]

    def fail_over(self, failed: Endpoint) -> None:
        """Prefer the next endpoint, unless another caller already moved away from `failed`."""
        if self.endpoints[self._current] is failed:
            self._current = (self._current + 1) % len(self.endpoints)

    async def call(
        self,
        op: Callable[[Endpoint, float], Awaitable[T]],
        *,
        idempotent: bool,
        key: str = "",
        timeout: float | None = None,
    ) -> T:
        """Run `op(endpoint, seconds_left)` until it succeeds, trying every endpoint in turn.

        Reads are retried on any unreachable endpoint; writes only when the error proves etcd never
        saw them (a write that timed out may have been applied, and blindly repeating it could turn
        a successful create into AlreadyExists). Gives up with Unavailable when the time is spent,
        or when no endpoint could be reached for `unreachable_timeout`; a write that may have reached
        etcd and got no answer is UnknownOutcome instead. Errors other than unreachability are etcd's
        answer and propagate unchanged.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + (timeout if timeout is not None else self.request_timeout)
        # No new attempt starts after this; an attempt that has started may use the time up to deadline.
        retry_until = deadline
        pause = 0.05
        attempts = 0
        last: grpc.aio.AioRpcError | None = None
        while True:
            if self.closed:
                raise Unavailable(key, "etcd client is closed")
            now = loop.time()
            left = deadline - now
            if left <= 0 or now >= retry_until:
                raise Unavailable(key, f"etcd unavailable: {last.details() if last else 'timed out'}")
            endpoint = self.current
            try:
                return await op(endpoint, left)
            except asyncio.CancelledError:
                # close() cancels calls in flight; to their callers that is etcd going away, not a
                # cancellation of their own task.
                task = asyncio.current_task()
                if self.closed and task is not None and task.cancelling() == 0:
                    raise Unavailable(key, "etcd client is closed") from None
                raise
            except grpc.aio.AioRpcError as err:
                if not is_unreachable(err):
                    raise
                not_sent = never_reached_etcd(err)
                if not idempotent and not not_sent:
                    raise UnknownOutcome(key, f"etcd did not answer: {err.details()}") from err
                retry = (err.code() == grpc.StatusCode.UNAVAILABLE or is_stream_reset(err)) and (
                    idempotent or not_sent
                )
                if not retry:
                    raise Unavailable(key, f"etcd unavailable: {err.details()}") from err
                self.fail_over(endpoint)
                if last is None:
                    # From the first refusal on, retries may take unreachable_timeout at most.
                    retry_until = min(deadline, loop.time() + self.unreachable_timeout)
                last = err
            attempts += 1
            if attempts % len(self.endpoints) == 0:
                # Every endpoint refused: wait a little before the next round, but never past the deadline.
                await asyncio.sleep(max(0.0, min(pause, retry_until - loop.time())))
                pause = min(pause * 2, 0.5)

    async def close(self) -> None:
        self.closed = True
        for endpoint in self.endpoints:
            await endpoint.channel.close()


def prefix_range_end(prefix: bytes) -> bytes:
    """The smallest key greater than every key starting with `prefix` (etcd's GetPrefixRangeEnd)."""
    end = bytearray(prefix)
    for i in range(len(end) - 1, -1, -1):
        if end[i] < 0xFF:
            end[i] += 1
            return bytes(end[: i + 1])
    # All 0xff: the range extends to the end of the keyspace.
    return b"\x00"
