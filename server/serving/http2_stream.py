"""One HTTP/2 stream as aiohttp sees a connection: its protocol, transport, body and writer.

``H2Protocol`` (server.serving.http2) owns the connection and its frames; each stream it serves gets:

- ``Stream`` as the request's ``protocol`` (what ``request.protocol`` / ``request.transport`` /
  ``request.remote`` read), whose ``transport`` is a per-stream ``StreamTransport``: the client
  certificate and every other ``get_extra_info`` come from the TLS connection, while ``write``,
  ``abort``, ``is_closing`` and the direct watch writes act on this stream only;
- ``Body``, aiohttp's ``StreamReader`` fed from DATA frames, returning flow control to the client
  as the handler reads (so a stream buffers at most its 256 KiB window);
- ``Writer``, an ``AbstractStreamWriter`` turning the response into HEADERS and DATA frames within
  the client's connection and stream windows; a stream waiting for WINDOW_UPDATE waits alone.

The writer drops HTTP/1.1's connection-specific headers and chunk framing: requests carry HTTP
version 1.1 towards aiohttp, whose ``StreamResponse`` refuses chunked responses for any other version.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import h2.errors
import hpack
from aiohttp.abc import AbstractStreamWriter
from aiohttp.compression_utils import ZLibCompressor
from aiohttp.streams import StreamReader
from multidict import CIMultiDict

from server.serving.extra_info import DIRECT_WRITE
from server.serving.options import MAX_HEADER_BYTES

if TYPE_CHECKING:
    from server.serving.http2 import H2Protocol

# A writer waits while more than this is queued on its stream (the client's window is closed, or
# the TLS connection is paused); small enough that 100 streams keep only a few MB per connection.
STREAM_HIGH_WATER = 64 * 1024

# Connection-specific fields HTTP/2 forbids (RFC 9113 8.2.2); aiohttp adds some for HTTP/1.1.
_HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"})
_UNIQUE = frozenset({"audit-id"})
_INTERNAL_ERROR = h2.errors.ErrorCodes.INTERNAL_ERROR


class Body(StreamReader):
    """A request body from DATA frames; what the handler reads is given back to the client's window."""

    __slots__ = ("_on_read",)

    def __init__(
        self, stream: Stream, loop: asyncio.AbstractEventLoop, on_read: Callable[[int], None]
    ) -> None:
        super().__init__(stream, 2**16, loop=loop)  # type: ignore[arg-type]
        self._on_read = on_read

    def _read_nowait_chunk(self, n: int) -> bytes:
        data = super()._read_nowait_chunk(n)
        if data:
            self._on_read(len(data))
        return data


class Stream:
    """One request: its send queue and window state, and what aiohttp reads as ``request.protocol``."""

    __slots__ = (
        "body",
        "chunked",
        "conn",
        "end_requested",
        "ended",
        "headers_sent",
        "id",
        "on_lost",
        "pending",
        "pending_size",
        "remote_ended",
        "reset",
        "task",
        "transport",
        "unread",
        "waiter",
    )

    # aiohttp's request reads these from its protocol (multipart limits); HTTP/2 bounds the head.
    max_field_size = MAX_HEADER_BYTES
    max_headers = MAX_HEADER_BYTES // 4
    _reading_paused = False

    def __init__(self, conn: H2Protocol, stream_id: int) -> None:
        self.conn = conn
        self.id = stream_id
        self.pending: deque[bytes | memoryview] = deque()
        self.pending_size = 0
        self.end_requested = False
        self.ended = False  # END_STREAM sent
        self.remote_ended = False  # the request body is complete
        self.reset = False
        self.headers_sent = False
        self.chunked = False
        self.unread = 0  # received and not yet read by the handler: returned to the window when done
        self.body: Body | None = None
        self.task: asyncio.Task[None] | None = None
        self.waiter: asyncio.Future[None] | None = None
        self.on_lost: Callable[[], object] | None = None
        self.transport = StreamTransport(self)

    # --- what aiohttp's BaseRequest and StreamReader ask of a protocol ---

    @property
    def connected(self) -> bool:
        return not self.reset and self.conn.transport is not None

    @property
    def ssl_context(self) -> Any:
        return self.conn.extra("sslcontext")

    @property
    def peername(self) -> Any:
        return self.conn.extra("peername")

    @property
    def sockname(self) -> Any:
        return self.conn.extra("sockname")

    def pause_reading(self) -> None:
        """Nothing to do: the stream window already bounds what the client may send unread."""

    def resume_reading(self, resume_parser: bool = True) -> None:
        """See ``pause_reading``."""

    # --- the stream's state ---

    @property
    def closing(self) -> bool:
        return self.reset or self.end_requested or self.conn.transport is None

    def wake(self) -> None:
        waiter = self.waiter
        if waiter is not None:
            self.waiter = None
            if not waiter.done():
                waiter.set_result(None)

    def lost(self) -> None:
        """The client reset the stream or the connection went: end the handler as kube's context does."""
        if self.reset:
            return
        self.reset = True
        self.pending.clear()
        self.pending_size = 0
        if self.body is not None and not self.body.is_eof():
            self.body.set_exception(ConnectionResetError("stream reset"))
        self.wake()
        on_lost, self.on_lost = self.on_lost, None
        if on_lost is not None:
            on_lost()
        # As aiohttp treats a closed HTTP/1.1 connection: the handler is cancelled only when the
        # server asks for that; otherwise a watch ends through ``on_lost`` (released, and counted in
        # the metrics like any finished request) and other handlers finish with their writes dropped.
        task = self.task
        if (
            self.conn.cancels_handlers
            and task is not None
            and not task.done()
            and task is not asyncio.current_task()
        ):
            task.cancel()


class StreamTransport(asyncio.Transport):
    """``request.transport`` of an HTTP/2 request: the TLS connection's information, this stream's
    writes. Written to directly only by the watch endpoint (``server/endpoints/watch.py``), in
    HTTP/1.1 chunk framing, which is unwrapped here into DATA frames."""

    __slots__ = ("_stream",)

    def __init__(self, stream: Stream) -> None:
        # No super().__init__(): its extra dict would go unused (get_extra_info asks the connection).
        self._stream = stream

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        if name == DIRECT_WRITE:
            return self._write_small
        return self._stream.conn.extra(name, default)

    def is_closing(self) -> bool:
        return self._stream.closing

    def close(self) -> None:
        self.abort()

    def abort(self) -> None:
        """Cut this stream alone: RST_STREAM INTERNAL_ERROR, Go's answer to an aborted handler."""
        stream = self._stream
        if not stream.reset and not stream.ended:
            stream.conn.reset_stream(stream, _INTERNAL_ERROR)

    def write(self, data: bytes | bytearray | memoryview) -> None:
        stream = self._stream
        if stream.closing:
            return
        conn = stream.conn
        for piece in _unchunk(data) if stream.chunked else (data,):
            conn.queue(stream, piece)

    def _write_small(self, data: bytes) -> bool:
        """``DIRECT_WRITE``: a watch event framed now if nothing waits before it and the windows allow."""
        stream = self._stream
        if stream.pending or stream.closing or not stream.headers_sent:
            return False
        pieces = _unchunk(data) if stream.chunked else (data,)
        return len(pieces) == 1 and stream.conn.send_now(stream, pieces[0])

    def get_write_buffer_size(self) -> int:
        return self._stream.pending_size

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return (0, STREAM_HIGH_WATER)

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        """Fixed: the stream's queue is bounded by ``STREAM_HIGH_WATER``."""

    def is_reading(self) -> bool:
        return not self._stream.reset

    def pause_reading(self) -> None:
        """Flow control bounds the stream's reading; see ``Stream.pause_reading``."""

    def resume_reading(self) -> None:
        """See ``pause_reading``."""


def _unchunk(data: bytes | bytearray | memoryview) -> list[memoryview]:
    """The payloads of HTTP/1.1 chunks (``<hex size>\\r\\n<payload>\\r\\n``...), without copying them."""
    raw = data if isinstance(data, bytes) else bytes(data)
    view = memoryview(raw)
    pieces: list[memoryview] = []
    position, end = 0, len(raw)
    while position < end:
        line_end = raw.index(b"\r\n", position)
        size = int(raw[position:line_end].split(b";", 1)[0], 16)
        if size == 0:
            break
        start = line_end + 2
        pieces.append(view[start : start + size])
        position = start + size + 2
    return pieces


class Writer(AbstractStreamWriter):
    """aiohttp's response writer for one stream: HEADERS, then DATA within the windows, END_STREAM."""

    __slots__ = ("_compress", "_headers", "_stream")

    def __init__(self, stream: Stream) -> None:
        self._stream = stream
        self._headers: list[tuple[bytes, bytes]] | None = None
        self._compress: ZLibCompressor | None = None
        self.buffer_size = 0
        self.output_size = 0
        self.length: int | None = 0

    def enable_chunking(self) -> None:
        """HTTP/2 has its own framing: only the watch endpoint's direct writes need unwrapping."""
        self._stream.chunked = True

    def enable_compression(self, encoding: str = "deflate", strategy: int | None = None) -> None:
        self._compress = ZLibCompressor(encoding=encoding, strategy=strategy)

    async def write_headers(self, status_line: str, headers: CIMultiDict[str]) -> None:
        status = status_line.split(" ", 2)[1].encode("ascii")
        block = [(b":status", status)]
        for name, value in headers.items():
            lower = name.lower()
            if lower in _UNIQUE:
                # A value no other response repeats: kept out of HPACK's table, where it would
                # only push out the ones that do repeat.
                block.append(hpack.NeverIndexedHeaderTuple(lower.encode("utf-8"), value.encode("utf-8")))
            elif lower not in _HOP_BY_HOP:
                block.append((lower.encode("utf-8"), value.encode("utf-8")))
        self._headers = block

    def send_headers(self, end: bool = False) -> None:
        block, self._headers = self._headers, None
        if block is not None:
            self._stream.conn.send_headers(self._stream, block, end)

    async def write(self, chunk: bytes | bytearray | memoryview) -> None:
        if self._compress is not None and chunk:
            chunk = await self._compress.compress(chunk)
        self.send_headers()
        if chunk:
            self.output_size += len(chunk)
            if self.on_body_write is not None:
                self.on_body_write(len(chunk), self.output_size)
            stream = self._stream
            stream.conn.queue(stream, chunk)
            if stream.pending_size > STREAM_HIGH_WATER:
                await stream.conn.drained(stream, STREAM_HIGH_WATER)
        elif self._stream.reset:
            raise ConnectionResetError("stream reset by the client")

    async def write_eof(self, chunk: bytes = b"") -> None:
        if self._compress is not None:
            chunk = (await self._compress.compress(chunk) if chunk else b"") + self._compress.flush()
        stream = self._stream
        if not chunk and self._headers is not None:
            self.send_headers(end=True)
            return
        self.send_headers()
        if chunk:
            self.output_size += len(chunk)
            if self.on_body_write is not None:
                self.on_body_write(len(chunk), self.output_size)
        stream.conn.queue(stream, chunk, end=True)
        await stream.conn.drained(stream, 0)

    async def drain(self) -> None:
        await self._stream.conn.drained(self._stream, STREAM_HIGH_WATER)


def notify_stream_lost(protocol: object, callback: Callable[[], object] | None) -> bool:
    """``request_limits.notify_connection_lost`` for a request on an HTTP/2 stream; False for others."""
    if not isinstance(protocol, Stream):
        return False
    if callback is not None and protocol.reset:
        callback()  # already gone: the watch sees it at once
        return True
    protocol.on_lost = callback
    return True
