"""kube's channel WebSocket protocol for a streaming subresource (exec/attach speak it since kube 1.30).

k8s.io/apimachinery wsstream with remotecommand's subprotocols: every binary message starts with one
byte naming its channel (0 stdin, 1 stdout, 2 stderr, 3 error, 4 resize); a stream's bytes go on
channel 1, and at the end a metav1.Status goes on the error channel before the close (v4 and later,
where success is reported too). v5.channel.k8s.io adds channel 255, the client's "close this channel"
signal, which a read-only stream receives and ignores. The first message is an empty one on channel 1,
as the kubelet sends to tell the client the stream is established.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

import orjson
from aiohttp import WSMsgType, web

from apis.meta import errors
from apis.meta.errors import StatusError

V5 = "v5.channel.k8s.io"
V4 = "v4.channel.k8s.io"
PROTOCOLS: tuple[str, ...] = (V5, V4)
STDOUT = 1
ERROR = 3
CLOSE = 255
# metav1.Status{Status: Success} as Go's json.Marshal writes it (the kubelet's v4 status writer).
SUCCESS = orjson.dumps({"metadata": {}, "status": "Success"})

Follow = Callable[
    [
        web.Request,
        AsyncGenerator[bytes, None],
        Callable[[bytes], Awaitable[None]],
        "asyncio.Future[Any] | None",
    ],
    Awaitable[bool],
]


def is_upgrade(request: web.Request) -> bool:
    """wsstream.IsWebSocketRequest: a `Connection: upgrade` request to `Upgrade: websocket`."""
    connection = request.headers.get("Connection", "")
    upgrade = "upgrade" in (token.strip().lower() for token in connection.split(","))
    return upgrade and request.headers.get("Upgrade", "").strip().lower() == "websocket"


def negotiate(request: web.Request) -> str:
    """The first subprotocol the client offers that this server speaks, as wsstream's handshake picks."""
    offered = [p.strip() for p in request.headers.get("Sec-WebSocket-Protocol", "").split(",") if p.strip()]
    for protocol in offered:
        if protocol in PROTOCOLS:
            return protocol
    raise errors.bad_request(
        f"requested protocol(s) are not supported: [{' '.join(offered)}]; supports [{' '.join(PROTOCOLS)}]"
    )


async def serve(
    request: web.Request, protocol: str, chunks: AsyncGenerator[bytes, None], follow: Follow
) -> web.WebSocketResponse:
    """Upgrade, then send what `chunks` yields on channel 1 and the outcome on channel 3, and close."""
    ws = web.WebSocketResponse(protocols=(protocol,))
    await ws.prepare(request)
    closed = asyncio.ensure_future(_until_closed(ws))
    stdout = bytes([STDOUT])

    async def write(chunk: bytes) -> None:
        await ws.send_bytes(stdout + chunk)

    try:
        await write(b"")
        try:
            finished = await follow(request, chunks, write, closed)
        except StatusError as err:
            await ws.send_bytes(bytes([ERROR]) + orjson.dumps(err.status()))
        else:
            if finished:
                await ws.send_bytes(bytes([ERROR]) + SUCCESS)
        await ws.close()
    except ConnectionError:
        pass  # the client went away
    finally:
        closed.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await closed
    return ws


async def _until_closed(ws: web.WebSocketResponse) -> None:
    """Read (and drop) what the client sends, close signals included, until its close arrives."""
    async for message in ws:
        if message.type in (WSMsgType.CLOSE, WSMsgType.ERROR):
            return
