"""How events travel to their destinations: the backend contract and kube's wrappers around it.

Ports k8s.io/apiserver's audit.Backend plus the wrappers pkg/server/options/audit.go composes:
`union` (log and webhook side by side), `ignoreErrors` (mode "blocking"), plugin/pkg/audit/buffered
(mode "batch": a bounded buffer emptied in batches by a background task, so a slow destination never
holds up a request; when the buffer is full, events are dropped with a logged error, as in kube) and
plugin/pkg/audit/truncate (drop request/response objects from oversized events, split big batches).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

from server.audit.event import event_string
from server.audit.policy import LEVEL_REQUEST, level_rank

logger = logging.getLogger(__name__)

Event = dict[str, Any]

MODE_BATCH = "batch"
MODE_BLOCKING = "blocking"
MODE_BLOCKING_STRICT = "blocking-strict"
MODES = (MODE_BATCH, MODE_BLOCKING, MODE_BLOCKING_STRICT)

TRUNCATED_ANNOTATION = "audit.k8s.io/truncated"


class Backend(Protocol):
    async def start(self) -> None: ...

    async def process(self, events: Sequence[Event]) -> bool:
        """Deliver (or queue) events; False if they were not stored. Never raises."""
        ...

    async def shutdown(self) -> None:
        """Deliver everything still pending, then release resources."""
        ...


def handle_plugin_error(plugin: str, err: object, events: Sequence[Event]) -> None:
    """kube's audit.HandlePluginError: the lost events are at least named in the server log."""
    lines = "\n".join(event_string(e) for e in events)
    logger.error(
        "Error in audit plugin '%s' affecting %d audit events: %s\nImpacted events:\n%s",
        plugin,
        len(events),
        err,
        lines,
    )


class UnionBackend:
    """Every event to every backend; success only if all stored it (kube's audit.Union)."""

    __slots__ = ("backends",)

    def __init__(self, backends: Sequence[Backend]) -> None:
        self.backends = tuple(backends)

    async def start(self) -> None:
        for backend in self.backends:
            await backend.start()

    async def process(self, events: Sequence[Event]) -> bool:
        ok = True
        for backend in self.backends:
            ok = await backend.process(events) and ok
        return ok

    async def shutdown(self) -> None:
        await asyncio.gather(*(b.shutdown() for b in self.backends))


class IgnoreErrorsBackend:
    """Mode "blocking": the request waits for the write, but a failed write does not fail the request."""

    __slots__ = ("delegate",)

    def __init__(self, delegate: Backend) -> None:
        self.delegate = delegate

    async def start(self) -> None:
        await self.delegate.start()

    async def process(self, events: Sequence[Event]) -> bool:
        await self.delegate.process(events)
        return True

    async def shutdown(self) -> None:
        await self.delegate.shutdown()


@dataclass(frozen=True, slots=True)
class BatchConfig:
    """kube's buffered.BatchConfig; durations in seconds."""

    buffer_size: int = 10000
    max_batch_size: int = 400
    max_batch_wait: float = 30.0
    throttle_enable: bool = True
    throttle_qps: float = 10.0
    throttle_burst: int = 15
    # Deliver batches concurrently (webhook) or one after another (log, where order matters).
    async_delegate: bool = True


class TokenBucket:
    """client-go's token-bucket rate limiter: starts full with `burst` tokens, refills at `qps`."""

    __slots__ = ("_burst", "_last", "_qps", "_tokens")

    def __init__(self, qps: float, burst: int) -> None:
        self._qps, self._burst = qps, burst
        self._tokens = float(burst)
        self._last: float | None = None

    def reserve(self, now: float) -> float:
        """Take a token; the seconds to wait until it is really there (0 when one was available)."""
        if self._last is not None:
            self._tokens = min(self._burst, self._tokens + (now - self._last) * self._qps)
        self._last = now
        self._tokens -= 1
        return -self._tokens / self._qps if self._tokens < 0 else 0.0


class BufferedBackend:
    """Mode "batch": requests only append to a bounded buffer; a task delivers batches.

    A batch leaves when it has `max_batch_size` events or `max_batch_wait` has passed. Shutdown stops
    taking events, delivers every buffered one and waits for deliveries in flight, so a graceful stop
    loses nothing that was accepted.
    """

    def __init__(self, delegate: Backend, config: BatchConfig, name: str) -> None:
        self.delegate, self.config, self.name = delegate, config, name
        self._buffer: collections.deque[Event] = collections.deque()
        self._wakeup = asyncio.Event()
        self._stopping = False
        self._stopped = asyncio.Event()
        self._closed = False
        self._runner: asyncio.Task[None] | None = None
        self._deliveries: set[asyncio.Task[bool]] = set()
        self._throttle = (
            TokenBucket(config.throttle_qps, config.throttle_burst) if config.throttle_enable else None
        )

    async def start(self) -> None:
        await self.delegate.start()
        self._runner = asyncio.create_task(self._run(), name=f"audit-{self.name}-batches")

    async def process(self, events: Sequence[Event]) -> bool:
        for i, event in enumerate(events):
            if self._stopping:
                handle_plugin_error(self.name, "audit buffer shut down", events[i:])
                break
            if len(self._buffer) >= self.config.buffer_size:
                handle_plugin_error(self.name, "audit buffer queue blocked", events[i:])
                break
            self._buffer.append(event)
        self._wakeup.set()
        # kube's buffered backend reports success even when it had to drop: a full buffer must not
        # fail requests (the loss is in the server log).
        return True

    async def shutdown(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._stopping = True
        self._stopped.set()
        self._wakeup.set()
        if self._runner is not None:
            await self._runner
        else:  # never started: deliver inline
            await self._drain()
        await self.delegate.shutdown()

    @property
    def pending(self) -> int:
        """Events buffered and not yet handed to the destination."""
        return len(self._buffer)

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while not self._stopping:
            if not self._buffer:
                # Idle until an event (or shutdown) arrives; a batch's wait starts with its first event.
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            deadline = loop.time() + self.config.max_batch_wait
            batch: list[Event] = []
            while len(batch) < self.config.max_batch_size:
                if self._buffer:
                    batch.append(self._buffer.popleft())
                    continue
                remaining = deadline - loop.time()
                if self._stopping or remaining <= 0:
                    break
                self._wakeup.clear()
                try:
                    await asyncio.wait_for(self._wakeup.wait(), remaining)
                except TimeoutError:
                    break
            if batch:
                await self._dispatch(batch)
        await self._drain()

    async def _drain(self) -> None:
        while self._buffer:
            batch = [
                self._buffer.popleft() for _ in range(min(self.config.max_batch_size, len(self._buffer)))
            ]
            await self._dispatch(batch)
        if self._deliveries:
            await asyncio.gather(*self._deliveries, return_exceptions=True)

    async def _dispatch(self, batch: list[Event]) -> None:
        if self._throttle is not None and not self._stopping:
            delay = self._throttle.reserve(asyncio.get_running_loop().time())
            if delay > 0:
                # Throttled, but not past shutdown: once stopping, everything left goes out at once
                # (kube would keep throttling and delay the stop for as long as that takes).
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stopped.wait(), delay)
        if not self.config.async_delegate:
            await self._deliver(batch)
            return
        task = asyncio.create_task(self._deliver(batch))
        self._deliveries.add(task)
        task.add_done_callback(self._deliveries.discard)

    async def _deliver(self, batch: list[Event]) -> bool:
        try:
            return await self.delegate.process(batch)
        except Exception as err:  # a backend must never take the batching task down
            handle_plugin_error(self.name, err, batch)
            return False


@dataclass(frozen=True, slots=True)
class TruncateConfig:
    max_event_size: int = 100 * 1024
    max_batch_size: int = 10 * 1024 * 1024


class TruncateBackend:
    """kube's truncate plugin: oversized events lose their objects (and get annotated); batches split."""

    __slots__ = ("config", "delegate", "name")

    def __init__(self, delegate: Backend, config: TruncateConfig, name: str = "truncate") -> None:
        self.delegate, self.config, self.name = delegate, config, name

    async def start(self) -> None:
        await self.delegate.start()

    async def shutdown(self) -> None:
        await self.delegate.shutdown()

    async def process(self, events: Sequence[Event]) -> bool:
        ok = True
        batch: list[Event] = []
        batch_size = 0
        impacted: list[Event] = []
        for event in events:
            size = len(orjson.dumps(event))
            if size > self.config.max_event_size and level_rank(event["level"]) >= level_rank(LEVEL_REQUEST):
                event = truncate_event(event)
                size = len(orjson.dumps(event))
            if size > self.config.max_event_size:
                impacted.append(event)
                continue
            if batch and batch_size + size > self.config.max_batch_size:
                ok = await self.delegate.process(batch) and ok
                batch, batch_size = [], 0
            batch.append(event)
            batch_size += size
        if batch:
            ok = await self.delegate.process(batch) and ok
        if impacted:
            handle_plugin_error(self.name, "event is too large even after truncating", impacted)
        return ok


def truncate_event(event: Event) -> Event:
    out = {k: v for k, v in event.items() if k not in ("requestObject", "responseObject")}
    out["annotations"] = {**event.get("annotations", {}), TRUNCATED_ANNOTATION: "true"}
    return out
