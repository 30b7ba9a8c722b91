"""WATCH: a chunked stream of JSON WatchEvents, one per line, or kube's protobuf frames.

A protobuf client (`Accept: application/vnd.kubernetes.protobuf`, also with
`as=PartialObjectMetadata`) gets `application/vnd.kubernetes.protobuf;stream=watch`: each event a
length-prefixed WatchEvent whose object is the object's own envelope (server/endpoints/protobuf.py).
Either way an event's wire form is built once for every watcher of its version and format.

The Store's events are pumped into a queue by a task so the handler can wait on "next event",
"bookmark due" and "deadline" at once without cancelling the storage iterator mid-step. Errors after
the stream started (e.g. a too-old resourceVersion) become one ERROR event carrying a `Status`, then
the stream ends — what kube-apiserver does and what client-go's reflector expects.
"""

from __future__ import annotations

import asyncio
import logging
import random
from typing import Any

import orjson
from aiohttp import web
from multidict import MultiDict

from apis.meta.errors import StatusError
from apis.meta.fields import escape_value
from registry.generic.cache.watchers import TOO_SLOW, OpenWatch, Wakeup, WriteNow
from registry.generic.options import WatchEvent
from registry.generic.storage_errors import parse_resource_version
from server.endpoints import protobuf
from server.endpoints.negotiation import PROTOBUF, Output
from server.endpoints.query import watch_options
from server.endpoints.render import include_object, is_plain_json, render_stored
from server.endpoints.scope import ResourceScope
from server.request_info import RequestInfo
from server.request_state import MIN_REQUEST_TIMEOUT
from server.serving.connection_buffers import DIRECT_WRITE
from server.serving.request_limits import notify_connection_lost

logger = logging.getLogger(__name__)

BOOKMARK_EVERY = 60.0
# kube sends the last bookmark this long before the deadline, so a client can resume from it.
BOOKMARK_BEFORE_DEADLINE = 2.0
# The dispatcher writes an event straight into a connection only while less than this is buffered
# for it; past that, events queue for the stream's own task, which waits for the client to read.
WRITE_NOW_LIMIT = 64 * 1024
# How long a finished stream may take to reach a client that does not read, before it is cut.
FINISH_GRACE = 5.0
# aiohttp does not cancel a handler whose client disconnected (kube's request context does), so an
# idle watch looks at its connection this often; otherwise it would hold a storage watch until timeout.
CLIENT_CHECK_EVERY = 1.0


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


class OpenStreams:
    """The application's open watch streams, to wake them all when shutdown begins (an `on_shutdown`
    hook calls `close`): they then end cleanly instead of being cut after aiohttp's shutdown timeout."""

    __slots__ = ("_wakeups", "closing")

    def __init__(self) -> None:
        self.closing = False
        self._wakeups: set[Wakeup] = set()

    def add(self, wakeup: Wakeup) -> None:
        self._wakeups.add(wakeup)

    def discard(self, wakeup: Wakeup) -> None:
        self._wakeups.discard(wakeup)

    def close(self) -> None:
        self.closing = True
        for wakeup in list(self._wakeups):
            wakeup.set()


OPEN_STREAMS = web.AppKey("open_watch_streams", OpenStreams)


def _client_gone(request: web.Request) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()


class _Encoder:
    """Renders events in the negotiated form; a Table's column definitions go in the first event only."""

    __slots__ = ("headers_sent", "include", "output", "plain", "proto", "scope", "share_key")

    def __init__(self, scope: ResourceScope, output: Output, include: str) -> None:
        self.scope, self.output, self.include = scope, output, include
        self.headers_sent = False
        self.plain = is_plain_json(output, pretty=False)
        self.proto = output.media == PROTOBUF
        # The key of this stream's form of an event in `event.encodings`: every watcher with the
        # same key sends the same bytes (None: a Table, rendered per stream).
        self.share_key: str | None = None
        if self.plain:
            self.share_key = scope.version
        elif self.proto:
            self.share_key = f"{scope.version}/protobuf/{output.transform}/{output.transform_version}"

    @property
    def content_type(self) -> str:
        """kube's watch Content-Type: the media type plus `;stream=watch`, except JSON's."""
        return protobuf.WATCH_CONTENT_TYPE if self.proto else self.output.content_type

    def error(self, error: StatusError) -> bytes:
        """The ERROR event that ends a stream, carrying the Status."""
        if self.proto:
            return protobuf.frame("ERROR", protobuf.status_body(error.status()))
        return orjson.dumps({"type": "ERROR", "object": error.status()}) + b"\n"

    def event(self, event: WatchEvent) -> bytes:
        if event.type == "BOOKMARK":
            bookmark = self.bookmark(event.revision, event.initial_events_end)
            if self.proto:
                return protobuf.frame("BOOKMARK", protobuf.bookmark_body(self.scope, self.output, bookmark))
            return self._line("BOOKMARK", bookmark)
        if self.proto:
            # Encode once, as JSON below: the object's message bytes are kept on the object, the
            # frame shared by every watcher of this event in this version and form.
            shared, key = event.encodings, self.share_key
            assert key is not None
            if shared is not None and (frame := shared.get(key)) is not None:
                return frame
            frame = protobuf.frame(event.type, protobuf.object_body(self.scope, event.object, self.output))
            if shared is not None:
                shared[key] = frame
            return frame
        if self.plain:
            # Encode once: the object's bytes are shared by every watcher and every read of it,
            # and the line by every watcher that receives this very event.
            shared = event.encodings
            version = self.scope.version
            if shared is not None and (line := shared.get(version)) is not None:
                return line
            line = b'{"type":"%s","object":%s}\n' % (event.type.encode(), event.object.json(version))
            if shared is not None:
                shared[version] = line
            return line
        body = render_stored(self.scope, event.object, self.output, include=self.include)
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
        if self.output.transform == "PartialObjectMetadata":
            # kube's watch encoder transforms every event's object, a bookmark's too.
            api_version = f"meta.k8s.io/{self.output.transform_version}"
            return {"kind": "PartialObjectMetadata", "apiVersion": api_version, "metadata": meta}
        return {"kind": self.scope.kind.kind, "apiVersion": self.scope.api_version, "metadata": meta}

    @staticmethod
    def _line(kind: str, body: dict[str, Any]) -> bytes:
        return orjson.dumps({"type": kind, "object": body}) + b"\n"


async def watch_objects(request: web.Request, scope: ResourceScope, info: RequestInfo) -> web.StreamResponse:
    output = protobuf.negotiate(request.headers.get("Accept"), scope, ("Table", "PartialObjectMetadata"))
    query = request.query
    if info.path_name:
        # The legacy watch of one object (/pizzas/x?watch=1) is a watch filtered to that name, as in kube.
        query = MultiDict(query)
        named = f"metadata.name={escape_value(info.path_name)}"
        query["fieldSelector"] = ",".join(filter(None, [query.get("fieldSelector", ""), named]))
    options, requested_timeout = watch_options(
        query, scope.selectable_fields(), scope.unsupported_field_label
    )
    # A malformed resourceVersion is a 400 before streaming; everything after (too old, a revision
    # the store has not reached) is one ERROR event in an open stream, as kube's cacher answers.
    parse_resource_version(options.resource_version)
    encoder = _Encoder(scope, output, include_object(request.query, output))
    timeout = watch_timeout(requested_timeout, request.config_dict.get(MIN_REQUEST_TIMEOUT, 1800.0))

    opened: OpenWatch | None = None
    opening_error: StatusError | None = None
    try:
        opened = await scope.reads.watch(info.namespace, options)
    except StatusError as e:
        opening_error = e
    response = web.StreamResponse(headers={"Content-Type": encoder.content_type})
    response.enable_chunked_encoding()
    # The stream is this coroutine's own loop, not a coroutine of its own: every open watch keeps
    # its frames for as long as it runs.
    wakeup: Wakeup | None = None
    told_of_loss = False
    streams = request.config_dict.get(OPEN_STREAMS)
    try:
        await response.prepare(request)
        await response.write(b"")  # the headers go out now: the client knows the watch started
        if opened is None:
            assert opening_error is not None
            await response.write(encoder.error(opening_error))
        else:
            watcher = opened.watcher
            allow_bookmarks = options.allow_bookmarks
            loop = asyncio.get_running_loop()
            deadline = loop.time() + timeout
            next_bookmark = _next_bookmark(loop.time(), deadline) if allow_bookmarks else None
            # While nothing is queued, the dispatcher writes events straight into the connection.
            watcher.write_now = _direct_writer(request.transport, encoder)
            # The dispatcher wakes the stream for queued events; the connection's end and shutdown
            # wake it too, so an idle watch sleeps until its next bookmark instead of polling.
            wakeup = watcher.wakeup
            told_of_loss = notify_connection_lost(request, wakeup.set)
            if streams is not None:
                streams.add(wakeup)
            # A client that stops reading must not hold the stream past its deadline (a write would
            # wait for it forever); one that could not keep up is cut off at once and re-watches.
            async with asyncio.timeout(timeout + FINISH_GRACE):
                while True:
                    while (event := watcher.take()) is not None:
                        if event.type == "BOOKMARK" and not allow_bookmarks:
                            continue
                        await response.write(encoder.event(event))
                    if watcher.ended is not None:
                        if watcher.error is not None:
                            await response.write(encoder.error(watcher.error))
                        break
                    now = loop.time()
                    if now >= deadline or _client_gone(request) or (streams is not None and streams.closing):
                        break
                    if next_bookmark is not None and now >= next_bookmark:
                        if watcher.pending:
                            continue  # a bookmark never overtakes an event at or below its revision
                        revision = opened.progress(watcher)
                        if revision:
                            await response.write(encoder.event(WatchEvent("BOOKMARK", None, revision)))
                        next_bookmark = _next_bookmark(now, deadline)
                        continue
                    until = deadline if next_bookmark is None else min(deadline, next_bookmark)
                    wakeup.clear()
                    if watcher.pending or watcher.ended is not None:
                        continue
                    # One timer handle per wait (asyncio.timeout would add a Timeout and a cancellation).
                    wait = max(until - now, 0)
                    if not told_of_loss:
                        wait = min(wait, CLIENT_CHECK_EVERY)
                    timer = loop.call_later(wait, wakeup.set)
                    try:
                        await wakeup.wait()
                    finally:
                        timer.cancel()
            if watcher.ended == TOO_SLOW and request.transport is not None:
                request.transport.abort()
                return response
        async with asyncio.timeout(FINISH_GRACE):
            await response.write_eof()
    except (ConnectionResetError, ConnectionError):
        pass  # the client went away; nothing left to tell it
    except TimeoutError:
        if request.transport is not None:
            request.transport.abort()
    finally:
        if told_of_loss:
            notify_connection_lost(request, None)
        if streams is not None and wakeup is not None:
            streams.discard(wakeup)
        if opened is not None:
            opened.stop(opened.watcher)
    return response


def _direct_writer(transport: asyncio.Transport | None, encoder: _Encoder) -> WriteNow:
    """The watcher's `write_now`: the event's chunk, encoded once for every watcher of its version,
    written straight into the connection while it takes data; False to have it queued instead."""
    chunk_key = f"{encoder.share_key}/chunk"
    direct = transport.get_extra_info(DIRECT_WRITE) if transport is not None else None

    def write_now(event: WatchEvent) -> bool:
        if transport is None:
            return False
        shared = event.encodings if encoder.share_key is not None else None
        chunk = shared.get(chunk_key) if shared is not None else None
        if chunk is None:
            line = encoder.event(event)
            chunk = b"%x\r\n%s\r\n" % (len(line), line)
            if shared is not None:
                shared[chunk_key] = chunk
        if direct is not None and direct(chunk):
            return True
        if transport.is_closing() or transport.get_write_buffer_size() > WRITE_NOW_LIMIT:
            return False
        transport.write(chunk)
        return True

    return write_now
