"""WATCH: a chunked stream of JSON WatchEvents, one per line.

The Store's events are pumped into a queue by a task so the handler can wait on "next event",
"bookmark due" and "deadline" at once without cancelling the storage iterator mid-step. Errors after
the stream started (e.g. a too-old resourceVersion) become one ERROR event carrying a `Status`, then
the stream ends — what kube-apiserver does and what client-go's reflector expects.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import AsyncIterator
from typing import Any

import orjson
from aiohttp import web
from multidict import MultiDict

from apis.meta import errors
from apis.meta.errors import StatusError
from apis.meta.fields import escape_value
from registry.generic.options import WatchEvent
from registry.generic.storage_errors import interpret, parse_resource_version
from server.endpoints.negotiation import Output, negotiate_output
from server.endpoints.query import watch_options
from server.endpoints.render import include_object, render_object
from server.endpoints.scope import ResourceScope
from server.request_info import RequestInfo
from server.request_state import MIN_REQUEST_TIMEOUT
from storage.interface import StorageError

logger = logging.getLogger(__name__)

BOOKMARK_EVERY = 60.0
# kube sends the last bookmark this long before the deadline, so a client can resume from it.
BOOKMARK_BEFORE_DEADLINE = 2.0
QUEUE_SIZE = 1024
# aiohttp does not cancel a handler whose client disconnected (kube's request context does), so an
# idle watch looks at its connection this often; otherwise it would hold a storage watch until timeout.
CLIENT_CHECK_EVERY = 1.0
_END = object()


def watch_timeout(requested: int | None, min_request_timeout: float) -> float:
    """timeoutSeconds, or kube's random pick in [min, 2*min) that spreads reconnects out."""
    if requested is not None and requested > 0:
        return float(requested)
    return min_request_timeout * (1 + random.random())


def _next_bookmark(now: float, deadline: float) -> float | None:
    """kube's cacher: every minute, or just before the deadline if that comes first; None when past it."""
    pre_deadline = deadline - BOOKMARK_BEFORE_DEADLINE
    if pre_deadline <= now:
        return None
    return min(now + BOOKMARK_EVERY, pre_deadline)


# Set by the application when it starts shutting down (an `on_shutdown` hook): open watches then end
# cleanly within CLIENT_CHECK_EVERY instead of being cut after aiohttp's shutdown timeout.
SHUTTING_DOWN = web.AppKey("watch_shutting_down", asyncio.Event)


def _client_gone(request: web.Request) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()


def _should_end(request: web.Request) -> bool:
    shutting_down = request.config_dict.get(SHUTTING_DOWN)
    return _client_gone(request) or (shutting_down is not None and shutting_down.is_set())


async def _pump(events: AsyncIterator[WatchEvent], queue: asyncio.Queue, scope: ResourceScope) -> None:
    try:
        async for event in events:
            await queue.put(event)
        await queue.put(_END)
    except StatusError as e:
        await queue.put(e)
    except StorageError as e:
        await queue.put(interpret(e, scope.resource, ""))
    except Exception as e:  # a watch must end with an ERROR event, never hang
        logger.exception("watch of %s failed", scope.resource)
        await queue.put(errors.internal_error(str(e)))


class _Encoder:
    """Renders events in the negotiated form; a Table's column definitions go in the first event only."""

    def __init__(self, scope: ResourceScope, output: Output, include: str) -> None:
        self.scope, self.output, self.include = scope, output, include
        self.headers_sent = False

    def event(self, event: WatchEvent) -> bytes:
        if event.type == "BOOKMARK":
            return self._line("BOOKMARK", self.bookmark(event.revision, event.initial_events_end))
        body = render_object(self.scope, event.object, self.output, include=self.include)
        if self.output.transform == "Table":
            if self.headers_sent:
                # kube sets TableOptions.NoHeaders after the first event: Go encodes the nil slice as null.
                body["columnDefinitions"] = None
            self.headers_sent = True
        return self._line(event.type, body)

    def bookmark(self, revision: int, initial_events_end: bool = False) -> dict[str, Any]:
        meta: dict[str, Any] = {"resourceVersion": str(revision)}
        if initial_events_end:
            meta["annotations"] = {"k8s.io/initial-events-end": "true"}
        return {"kind": self.scope.kind.kind, "apiVersion": self.scope.api_version, "metadata": meta}

    @staticmethod
    def _line(kind: str, body: dict[str, Any]) -> bytes:
        return orjson.dumps({"type": kind, "object": body}) + b"\n"


async def watch_objects(request: web.Request, scope: ResourceScope, info: RequestInfo) -> web.StreamResponse:
    output = negotiate_output(
        request.headers.get("Accept"), allow_transforms=("Table", "PartialObjectMetadata")
    )
    query = request.query
    if info.path_name:
        # The legacy watch of one object (/pizzas/x?watch=1) is a watch filtered to that name, as in kube.
        query = MultiDict(query)
        named = f"metadata.name={escape_value(info.path_name)}"
        query["fieldSelector"] = ",".join(filter(None, [query.get("fieldSelector", ""), named]))
    options, requested_timeout = watch_options(query, scope.selectable_fields())
    # A malformed resourceVersion is a 400 before streaming; everything after (too old, a revision
    # the store has not reached) is one ERROR event in an open stream, as kube's cacher answers.
    parse_resource_version(options.resource_version)
    encoder = _Encoder(scope, output, include_object(request.query, output))
    timeout = watch_timeout(requested_timeout, request.config_dict.get(MIN_REQUEST_TIMEOUT, 1800.0))

    events = scope.store.watch(info.namespace, options)
    queue: asyncio.Queue = asyncio.Queue(QUEUE_SIZE)
    pump = asyncio.create_task(_pump(events, queue, scope))
    response = web.StreamResponse(headers={"Content-Type": output.content_type})
    response.enable_chunked_encoding()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    next_bookmark = _next_bookmark(loop.time(), deadline) if options.allow_bookmarks else None
    revision = 0
    try:
        await response.prepare(request)
        while (now := loop.time()) < deadline:
            if _should_end(request):
                break
            until = deadline if next_bookmark is None else next_bookmark
            wait = min(max(until - now, 0), CLIENT_CHECK_EVERY)
            try:
                item = await asyncio.wait_for(queue.get(), wait)
            except TimeoutError:
                if next_bookmark is not None and loop.time() >= next_bookmark:
                    if revision:
                        await response.write(encoder.event(WatchEvent("BOOKMARK", None, revision)))
                    next_bookmark = _next_bookmark(loop.time(), deadline)
                continue
            if item is _END:
                break
            if isinstance(item, StatusError):
                await response.write(orjson.dumps({"type": "ERROR", "object": item.status()}) + b"\n")
                break
            revision = max(revision, item.revision)
            if item.type == "PROGRESS" or (item.type == "BOOKMARK" and not options.allow_bookmarks):
                continue
            await response.write(encoder.event(item))
        await response.write_eof()
    except ConnectionResetError:
        pass  # the client went away; nothing left to tell it
    finally:
        pump.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await pump
        with contextlib.suppress(Exception):
            await events.aclose()  # type: ignore[attr-defined]
    return response
