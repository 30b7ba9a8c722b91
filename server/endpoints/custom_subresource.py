"""Serves a group's custom subresources: a Getter's object, a Connecter's stream (chunked or WebSocket).

kube's installer gives a rest.Getter the GET handler of any object (so Tables and YAML work as for the
parent) and hands a rest.Connecter the raw request (handlers/rest.go ConnectResource). Here a Connecter
only yields bytes and this module owns the transport: a chunked response, or for a WebSocket upgrade
the channel protocol of exec/attach (channel_websocket.py). Either way the stream stops, and the
Connecter's iterator is closed, as soon as the client leaves or the server shuts down.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

from aiohttp import web

from apis.meta import errors
from apis.meta.errors import StatusError
from registry.generic.cache.watchers import Wakeup
from registry.generic.custom_subresources import Connecter, CustomSubresource, Getter, SubresourceRequest
from server.endpoints import channel_websocket
from server.endpoints.negotiation import JSON, YAML, negotiate_output
from server.endpoints.render import include_object
from server.endpoints.scope import ResourceScope
from server.endpoints.table import table
from server.endpoints.watch import OPEN_STREAMS
from server.request_info import RequestInfo
from server.responses import encode
from server.serving.request_limits import notify_connection_lost

Handler = Callable[[web.Request, ResourceScope, RequestInfo], Awaitable[web.StreamResponse]]

# When the connection cannot report its own loss (not one of ours), how often a stream looks at it.
CLIENT_CHECK_EVERY = 1.0


def custom_handler(sub: CustomSubresource, scope: ResourceScope, info: RequestInfo) -> Handler:
    """The handler for `info.verb` on a custom subresource, or kube's 405 for a verb it does not serve."""
    if info.verb not in sub.verbs:
        raise errors.method_not_supported(scope.resource, info.verb)
    return get_subresource if isinstance(sub, Getter) else connect_subresource


def subresource_request(request: web.Request, scope: ResourceScope, info: RequestInfo) -> SubresourceRequest:
    return SubresourceRequest(
        group=scope.group.group,
        version=scope.version,
        namespace=info.namespace,
        name=info.name,
        query=request.query,
    )


async def get_subresource(request: web.Request, scope: ResourceScope, info: RequestInfo) -> web.Response:
    getter = scope.custom_subresources[info.subresource]
    assert isinstance(getter, Getter)
    output = negotiate_output(request.headers.get("Accept"), allow_transforms=("Table",))
    include = include_object(request.query, output)
    body = await getter.get(subresource_request(request, scope, info))
    obj: dict[str, Any] = {"apiVersion": scope.api_version, "kind": getter.kind, **body}
    if output.transform == "Table":
        obj = table(getter, [(obj, obj)], include_object=include, table_version=output.transform_version)
    pretty = request.query.get("pretty", "") in ("1", "true", "True")
    encoded = encode(obj, YAML if output.media == YAML else JSON, pretty=pretty)
    return web.Response(body=encoded, headers={"Content-Type": output.content_type})


async def connect_subresource(
    request: web.Request, scope: ResourceScope, info: RequestInfo
) -> web.StreamResponse:
    connecter = scope.custom_subresources[info.subresource]
    assert isinstance(connecter, Connecter)
    websocket = channel_websocket.is_upgrade(request)
    if websocket:
        protocol = channel_websocket.negotiate(request)  # a 400 before anything else is asked
    # Bad options and a missing parent are plain 4xx answers, before any stream (or upgrade) starts.
    chunks = await connecter.connect(subresource_request(request, scope, info))
    try:
        if websocket:
            return await channel_websocket.serve(request, protocol, chunks, _follow)
        response = web.StreamResponse(headers={"Content-Type": connecter.content_type})
        response.enable_chunked_encoding()
        await response.prepare(request)
        await response.write(b"")  # the headers go out now, as for a watch
        try:
            if await _follow(request, chunks, response.write, None):
                await response.write_eof()
        except ConnectionError:
            pass  # the client went away; nothing left to tell it
        except StatusError:
            # No Status can follow a started stream: cut it, so the client sees it truncated (as the
            # timeout filter does), never complete-looking.
            if request.transport is not None:
                request.transport.abort()
        return response
    finally:
        await chunks.aclose()


class _Lost(Wakeup):
    """Set when the client leaves or the server shuts down (OpenStreams wakes it): a future to wait on
    next to the iterator's step, without a task of its own."""

    __slots__ = ("future",)

    def __init__(self) -> None:
        super().__init__()
        self.future: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def set(self) -> None:
        super().set()
        if not self.future.done():
            self.future.set_result(None)


async def _follow(
    request: web.Request,
    chunks: AsyncGenerator[bytes, None],
    write: Callable[[bytes], Awaitable[None]],
    gone: asyncio.Future[Any] | None,
) -> bool:
    """Write every chunk until the stream ends (True), or the client leaves (for a WebSocket: `gone`,
    its close) or the server stops (False). A pending step of the iterator is then cancelled."""
    lost = _Lost()
    told = notify_connection_lost(request, lost.set)
    streams = request.config_dict.get(OPEN_STREAMS)
    if streams is not None:
        streams.add(lost)
    if gone is not None:
        gone.add_done_callback(lambda _: lost.set())
    step: asyncio.Future[bytes] | None = None
    try:
        while True:
            if lost.is_set() or (streams is not None and streams.closing):
                return False
            step = asyncio.ensure_future(anext(chunks))
            while not step.done():
                await asyncio.wait(
                    (step, lost.future),
                    timeout=None if told else CLIENT_CHECK_EVERY,
                    return_when=asyncio.FIRST_COMPLETED,
                )
                transport = request.transport
                if lost.is_set() or transport is None or transport.is_closing():
                    return False
            done, step = step, None
            try:
                chunk = done.result()
            except StopAsyncIteration:
                return True
            await write(chunk)
    finally:
        if step is not None:
            step.cancel()
            with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
                await step
        if told:
            notify_connection_lost(request, None)
        if streams is not None:
            streams.discard(lost)
