"""HTTP/2 over TLS (ALPN "h2") for the same aiohttp Application and handler chain as HTTP/1.1.

Why: kube-aggregator (Go's transport) speaks HTTP/2 to a backend that offers h2, so every proxied
request and watch of a cluster shares one multiplexed TLS connection, as it does with kube's own
servers. Offering only http/1.1 made each concurrent proxied request a TLS connection of its own
(about 100 at 64 concurrent GETs, handshakes beyond the aggregator's 25 idle connections per host).

How: the framing, HPACK, stream states and flow-control bookkeeping are python-hyper's ``h2`` (the
library hypercorn uses). ``H2Protocol`` sits where ``BoundedRequestHandler`` sits for HTTP/1.1 —
the application protocol under ``CompactSSLProtocol``, which picks it after the handshake when ALPN
chose "h2" — and turns each stream into an aiohttp ``web.Request`` built by the Application's own
request factory, run through the same handler chain. What each stream looks like to aiohttp (its
protocol, transport, body reader and response writer) is ``server.serving.http2_stream``; the checks
of a received header block and the request message built from it are ``server.serving.http2_headers``.

Settings follow kube's ``SecureServingInfo.Serve`` (k8s.io/apiserver
pkg/server/secure_serving.go) over Go's x/net/http2 server: MAX_CONCURRENT_STREAMS 100 unless
``--http2-max-streams-per-connection`` says otherwise, 256 KiB stream windows and read frames
(``resourceBody99Percentile``), a connection window of that times the stream limit, the 90 s idle
timeout, and a header list limit of ``MaxHeaderBytes`` + 320 answered, as Go does, with a 431 on
that stream. A client's RST_STREAM ends its stream as a closed connection ends an HTTP/1.1 request
(a watch is woken through ``notify_connection_lost`` and ends; its writes, and any other handler's,
go nowhere; the task is cancelled only if aiohttp's ``handler_cancellation`` asks for it); graceful
shutdown sends GOAWAY and lets the streams under way finish.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import h2.settings
import hpack
from aiohttp import web
from aiohttp.http import RawRequestMessage
from aiohttp.streams import EMPTY_PAYLOAD, StreamReader
from aiohttp.web_exceptions import HTTPException
from aiohttp.web_server import Server
from hyperframe.frame import GoAwayFrame

from server.serving.extra_info import DIRECT_WRITE, PEER_CERTIFICATE_DER
from server.serving.http2_headers import request_error, request_message, trailers_error
from server.serving.http2_stream import Body, Stream, Writer
from server.serving.options import IDLE_TIMEOUT, MAX_HEADER_BYTES
from server.serving.rate_limited_log import RateLimitedLog

logger = logging.getLogger(__name__)
client_errors = RateLimitedLog(logger)

# kube's generic apiserver when --http2-max-streams-per-connection is 0 (kube-apiserver itself sets 1000).
DEFAULT_MAX_STREAMS = 100
# kube's resourceBody99Percentile: MaxUploadBufferPerStream (the stream window) and MaxReadFrameSize.
STREAM_WINDOW = 256 * 1024
MAX_READ_FRAME = 256 * 1024
# Go's http2 maxHeaderListSize: MaxHeaderBytes + typicalHeaders (10) * perFieldOverhead (32).
HEADER_LIST_SLACK = 10 * 32
# Header lists up to this many times the limit are decoded and answered 431 on their stream, as Go
# does; HPACK state cannot survive skipping a block, so beyond it the connection ends (a client
# that ignores our SETTINGS_MAX_HEADER_LIST_SIZE by that much is not one to keep).
DECODE_FACTOR = 4
# Queued frames go to the TLS transport once this much is waiting, so its flow control applies
# within one long write too; smaller writes are gathered until the loop's next turn.
FLUSH_AT = 64 * 1024
# The initial connection window every HTTP/2 endpoint starts with (RFC 9113 6.9.2).
DEFAULT_WINDOW = 65_535

_TOO_LARGE_BODY = b"<h1>HTTP Error 431</h1><p>Request Header Field(s) Too Large</p>"
_CANCEL = h2.errors.ErrorCodes.CANCEL
_NO_ERROR = h2.errors.ErrorCodes.NO_ERROR
_INTERNAL_ERROR = h2.errors.ErrorCodes.INTERNAL_ERROR
_REFUSED_STREAM = h2.errors.ErrorCodes.REFUSED_STREAM
_PROTOCOL_ERROR = h2.errors.ErrorCodes.PROTOCOL_ERROR


@dataclass(frozen=True, slots=True)
class Http2Settings:
    """What a connection advertises and enforces (kube's http2.Server options)."""

    max_concurrent_streams: int = DEFAULT_MAX_STREAMS
    stream_window: int = STREAM_WINDOW
    max_read_frame_size: int = MAX_READ_FRAME
    max_header_bytes: int = MAX_HEADER_BYTES
    idle_timeout: float = IDLE_TIMEOUT

    @classmethod
    def from_flags(cls, max_streams: int, max_header_bytes: int, idle_timeout: float) -> Http2Settings:
        """``max_streams`` 0 is kube's default (100)."""
        return cls(
            max_streams or DEFAULT_MAX_STREAMS, max_header_bytes=max_header_bytes, idle_timeout=idle_timeout
        )

    @property
    def connection_window(self) -> int:
        """Go's MaxUploadBufferPerConnection as kube sizes it: every stream's window at once."""
        return self.stream_window * self.max_concurrent_streams

    @property
    def header_list_limit(self) -> int:
        return self.max_header_bytes + HEADER_LIST_SLACK


DEFAULT_HTTP2 = Http2Settings()


class _Connection(h2.connection.H2Connection):
    """h2's connection, decoding header lists past the advertised limit (see ``DECODE_FACTOR``).

    h2 sets the HPACK decoder's limit to SETTINGS_MAX_HEADER_LIST_SIZE once the client acknowledges
    it, and a list over it then ends the whole connection; Go instead answers that one stream 431.
    """

    decode_limit: int = 0

    def _local_settings_acked(self) -> Any:
        changes = super()._local_settings_acked()
        if self.decode_limit:
            self.decoder.max_header_list_size = self.decode_limit
        return changes


class _PlainEncoder(hpack.Encoder):
    """HPACK without Huffman coding for our responses: profiled under 64 concurrent GETs, Huffman
    coding header values in pure Python was a fifth of the header encoding's time, for a few bytes
    per response (which the dynamic table mostly makes indexed references anyway)."""

    def encode(self, headers: Any, huffman: bool = True) -> bytes:
        return super().encode(headers, huffman=False)


class H2Protocol(asyncio.Protocol):
    """One HTTP/2 connection under the TLS layer: frames in, streams served by aiohttp's ``server``."""

    # aiohttp's Server keeps its connections with their handler task (this one has none of its own).
    _task_handler = None

    def __init__(self, server: Server, settings: Http2Settings, loop: asyncio.AbstractEventLoop) -> None:
        self._server = server
        self._settings = settings
        self._loop = loop
        self.transport: asyncio.Transport | None = None
        self._extra: dict[str, Any] = {}
        self._direct: Callable[[bytes], bool] | None = None
        config = h2.config.H2Configuration(
            client_side=False,
            header_encoding=None,
            validate_outbound_headers=False,  # built here: lower-case, no connection-specific fields
            normalize_outbound_headers=False,
            validate_inbound_headers=False,  # checked in one pass by http2_headers (_malformed)
        )
        self._h2 = _Connection(config=config)
        self._h2.encoder = _PlainEncoder()
        self._h2.decode_limit = settings.header_list_limit * DECODE_FACTOR
        self._streams: dict[int, Stream] = {}
        self._blocked: dict[int, Stream] = {}  # streams with data waiting for a window or the socket
        self._paused = False
        self._closing = False  # GOAWAY sent: no new streams
        self._last_stream = 0
        self._flush_handle: asyncio.Handle | None = None
        self._unflushed = 0
        self._idle_handle: asyncio.TimerHandle | None = None
        self._drained: asyncio.Future[None] | None = None
        self.cancels_handlers = server.handler_cancellation

    # --- connection events from the TLS layer ---

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)
        self._direct = transport.get_extra_info(DIRECT_WRITE)
        settings = self._settings
        codes = h2.settings.SettingCodes
        conn = self._h2
        conn.local_settings = h2.settings.Settings(
            client=False,
            initial_values={
                codes.MAX_CONCURRENT_STREAMS: settings.max_concurrent_streams,
                codes.INITIAL_WINDOW_SIZE: settings.stream_window,
                codes.MAX_FRAME_SIZE: settings.max_read_frame_size,
                codes.MAX_HEADER_LIST_SIZE: settings.header_list_limit,
            },
        )
        # Settings given as initial values are current at once, so h2's acknowledgement hook never
        # applies them: set what it would have (frames up to 256 KiB, header lists past 64 KiB).
        conn.max_inbound_frame_size = settings.max_read_frame_size
        conn.decoder.max_header_list_size = conn.decode_limit
        conn.initiate_connection()
        if settings.connection_window > DEFAULT_WINDOW:
            conn.increment_flow_control_window(settings.connection_window - DEFAULT_WINDOW)
        self._flush()
        self._server.connection_made(self, self.transport)  # type: ignore[arg-type]
        self._idle()

    def extra(self, name: str, default: Any = None) -> Any:
        """The TLS connection's ``get_extra_info``, looked up once per name per connection."""
        extra = self._extra
        if name in extra:
            return extra[name]
        transport = self.transport
        value = transport.get_extra_info(name, default) if transport is not None else default
        if name in ("peername", "sockname", "sslcontext", "ssl_object", PEER_CERTIFICATE_DER):
            extra[name] = value
        return value

    def data_received(self, data: bytes) -> None:
        try:
            events = self._h2.receive_data(data)
        except h2.exceptions.ProtocolError as err:
            client_errors.log(
                f"h2:{type(err).__name__}", "closing an HTTP/2 connection from %s: %s", _peer(self), err
            )
            self._flush()
            self._close_transport()
            return
        error = _malformed(events)
        if error is not None:
            # What h2 does when its own check fails: GOAWAY PROTOCOL_ERROR, no event acted upon.
            client_errors.log(
                "h2:ProtocolError", "closing an HTTP/2 connection from %s: %s", _peer(self), error
            )
            self._h2.close_connection(h2.errors.ErrorCodes.PROTOCOL_ERROR)
            self._flush()
            self._close_transport()
            return
        for event in events:
            if isinstance(event, h2.events.DataReceived):
                self._data(event)
            elif isinstance(event, h2.events.RequestReceived):
                self._request(event)
            elif isinstance(event, h2.events.StreamEnded):
                self._body_ended(event.stream_id)
            elif isinstance(event, h2.events.WindowUpdated):
                if event.stream_id == 0:
                    self._push_blocked()
                elif (stream := self._blocked.get(event.stream_id)) is not None:
                    self._push(stream)
            elif isinstance(event, h2.events.StreamReset):
                self._stream_reset(event.stream_id)
            elif isinstance(event, h2.events.RemoteSettingsChanged):
                self._push_blocked()  # the initial window or the frame size may have grown
            elif isinstance(event, h2.events.ConnectionTerminated):
                self._terminated()
                return
            elif isinstance(event, h2.events.TrailersReceived) and event.stream_ended is not None:
                self._body_ended(event.stream_id)
        self._flush()

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        self._push_blocked()

    def eof_received(self) -> bool | None:
        return None

    def connection_lost(self, exc: BaseException | None) -> None:
        self.transport = None
        if self._idle_handle is not None:
            self._idle_handle.cancel()
            self._idle_handle = None
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        for stream in list(self._streams.values()):
            stream.lost()
        self._blocked.clear()
        self._server.connection_lost(self, exc)  # type: ignore[arg-type]
        self._wake_drained()

    # --- aiohttp's Server: graceful shutdown ---

    def close(self) -> None:
        """Shutdown begins: GOAWAY, so the client opens no more streams here; those under way finish."""
        if self._closing or self.transport is None:
            return
        self._closing = True
        self._flush()
        # h2's own close_connection would forbid sending on the streams still under way.
        goaway = GoAwayFrame(0)
        goaway.last_stream_id = self._last_stream
        goaway.error_code = _NO_ERROR
        self.transport.write(goaway.serialize())
        if not self._streams:
            self._close_transport()

    async def shutdown(self, timeout: float | None = 15.0) -> None:
        """Wait up to ``timeout`` for the streams under way, then cancel what is left and close."""
        self.close()
        if self._streams and self.transport is not None:
            self._drained = self._loop.create_future()
            try:
                async with asyncio.timeout(timeout):
                    await self._drained
            except TimeoutError:
                pass
            finally:
                self._drained = None
        for stream in list(self._streams.values()):
            stream.lost()
        self._close_transport()

    def _wake_drained(self) -> None:
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)

    # --- streams ---

    def _request(self, event: h2.events.RequestReceived) -> None:
        stream_id = event.stream_id
        conn = self._h2
        if self._closing:
            conn.reset_stream(stream_id, _REFUSED_STREAM)
            return
        self._last_stream = max(self._last_stream, stream_id)
        if self._idle_handle is not None:
            self._idle_handle.cancel()
            self._idle_handle = None
        stream = Stream(self, stream_id)
        self._streams[stream_id] = stream
        body_follows = event.stream_ended is None
        message, size = request_message(event.headers or ())
        if size > self._settings.header_list_limit:
            client_errors.log(
                "h2-header-too-large",
                "answered 431 to %s: an HTTP/2 header list over %d bytes",
                _peer(self),
                self._settings.header_list_limit,
            )
            stream.remote_ended = not body_follows
            stream.task = self._loop.create_task(self._too_large(stream))
            return
        if message is None:
            conn.reset_stream(stream_id, _PROTOCOL_ERROR)
            self._streams.pop(stream_id, None)
            self._idle()
            return
        if body_follows:
            stream.body = Body(stream, self._loop, lambda size: self._consumed(stream, size))
            payload: StreamReader = stream.body
        else:
            stream.remote_ended = True
            payload = EMPTY_PAYLOAD
        stream.task = self._loop.create_task(self._serve(stream, message, payload))

    async def _serve(self, stream: Stream, message: RawRequestMessage, payload: StreamReader) -> None:
        """aiohttp's RequestHandler._handle_request and finish_response, for one stream."""
        server = self._server
        server.requests_count += 1
        writer = Writer(stream)
        task = asyncio.current_task()
        assert task is not None
        request = server.request_factory(message, payload, stream, writer, task)  # type: ignore[arg-type]
        try:
            try:
                response = await server.request_handler(request)
            except HTTPException as exc:
                response = exc
            except TimeoutError:
                response = web.Response(status=504, text="504: Gateway Timeout")
            except asyncio.CancelledError:
                raise
            except Exception:
                # As aiohttp's RequestHandler: a 500 if nothing was sent yet (a ConnectionError of
                # the handler's own, e.g. from a backend, included); else the stream is cut below.
                if stream.reset or writer.output_size or stream.headers_sent:
                    raise
                logger.exception("Error handling request from %s", request.remote)
                response = web.Response(
                    status=500, text="500 Internal Server Error", content_type="text/plain"
                )
            request._finish()
            await response.prepare(request)
            await response.write_eof()
        except asyncio.CancelledError:
            if not stream.reset and self.transport is not None and not self._closing:
                raise  # not the client's doing
        except Exception as err:
            # The client reset the stream or the connection went: nothing to tell anyone.
            if stream.reset or self.transport is None:
                return
            if not isinstance(err, ConnectionError):
                logger.exception("Error handling request from %s", request.remote)
            self.reset_stream(stream, _INTERNAL_ERROR)
        finally:
            self._done(stream)

    async def _too_large(self, stream: Stream) -> None:
        """Go's handleHeaderListTooLong."""
        try:
            self.send_headers(
                stream, [(b":status", b"431"), (b"content-type", b"text/html; charset=utf-8")], False
            )
            self.queue(stream, _TOO_LARGE_BODY, end=True)
            await self.drained(stream, 0)
        except ConnectionError:
            pass
        finally:
            self._done(stream)

    def _done(self, stream: Stream) -> None:
        """The handler returned: give back the window of what it left unread, forget the stream."""
        stream.task = None
        stream.on_lost = None
        if self._streams.pop(stream.id, None) is None:
            return
        self._blocked.pop(stream.id, None)
        if self.transport is None:
            return
        conn = self._h2
        if not stream.reset:
            if not stream.ended:
                self.reset_stream(stream, _INTERNAL_ERROR)
            elif not stream.remote_ended:
                # The answer is complete: the rest of the body is not wanted (Go's RST_STREAM NO_ERROR).
                self.reset_stream(stream, _NO_ERROR)
        if stream.unread:
            with contextlib.suppress(h2.exceptions.ProtocolError):
                conn.acknowledge_received_data(stream.unread, stream.id)
            stream.unread = 0
        self._schedule_flush()
        if not self._streams:
            if self._closing:
                self._flush()
                self._close_transport()
            else:
                self._idle()
            self._wake_drained()

    def _data(self, event: h2.events.DataReceived) -> None:
        conn = self._h2
        stream = self._streams.get(event.stream_id)
        data = event.data or b""
        controlled = event.flow_controlled_length or 0
        if stream is None or stream.body is None or stream.reset:
            if controlled:
                with contextlib.suppress(h2.exceptions.ProtocolError):
                    conn.acknowledge_received_data(controlled, event.stream_id)
            return
        padding = controlled - len(data)
        if padding:
            conn.acknowledge_received_data(padding, event.stream_id)
        if data:
            stream.unread += len(data)
            stream.body.feed_data(data)

    def _consumed(self, stream: Stream, size: int) -> None:
        """The handler read ``size`` bytes of the body: the client may send that much more."""
        stream.unread -= size
        if self.transport is None:
            return
        # Also once the body is complete or the stream reset: the bytes still count against the
        # connection's window, which would otherwise shrink with every request body it carried.
        try:
            self._h2.acknowledge_received_data(size, stream.id)
        except h2.exceptions.ProtocolError:
            return
        self._schedule_flush()

    def _body_ended(self, stream_id: int) -> None:
        stream = self._streams.get(stream_id)
        if stream is None:
            return
        stream.remote_ended = True
        if stream.body is not None and not stream.body.is_eof():
            stream.body.feed_eof()

    def _stream_reset(self, stream_id: int) -> None:
        stream = self._streams.get(stream_id)
        if stream is not None:
            self._blocked.pop(stream_id, None)
            stream.lost()

    def _terminated(self) -> None:
        """The client sent GOAWAY: h2 sends nothing more after it, so the streams end here."""
        self._closing = True
        for stream in list(self._streams.values()):
            stream.lost()
        self._flush()
        self._close_transport()

    # --- sending ---

    def send_headers(self, stream: Stream, block: list[tuple[bytes, bytes]], end: bool) -> None:
        if stream.reset or self.transport is None:
            raise ConnectionResetError("stream reset by the client")
        try:
            self._h2.send_headers(stream.id, block, end_stream=end)
        except h2.exceptions.StreamClosedError:
            stream.lost()  # its RST_STREAM is in the batch of frames being processed
            raise ConnectionResetError("stream reset by the client") from None
        stream.headers_sent = True
        if end:
            stream.end_requested = stream.ended = True
        self._schedule_flush()

    def queue(self, stream: Stream, data: bytes | bytearray | memoryview, end: bool = False) -> None:
        """Queue ``data`` (END_STREAM after it with ``end``) and send what the windows allow."""
        if stream.reset or self.transport is None:
            raise ConnectionResetError("stream reset by the client")
        if stream.end_requested:
            return
        if data:
            # A bytearray may change after the call; bytes and views are what aiohttp hands over.
            stream.pending.append(bytes(data) if isinstance(data, bytearray) else data)
            stream.pending_size += len(data)
        if end:
            stream.end_requested = True
        self._push(stream)

    def send_now(self, stream: Stream, data: bytes | memoryview) -> bool:
        """One DATA frame at once if the windows and the socket allow all of it; else False (queue it)."""
        if self._paused or self.transport is None:
            return False
        conn = self._h2
        size = len(data)
        try:
            if size > conn.max_outbound_frame_size or conn.local_flow_control_window(stream.id) < size:
                return False
            conn.send_data(stream.id, data)
        except h2.exceptions.StreamClosedError:
            stream.lost()
            return False
        self._sent(size)
        return True

    def _push(self, stream: Stream) -> None:
        try:
            self._push_frames(stream)
        except h2.exceptions.StreamClosedError:
            # Reset by the client in the batch of frames being processed: its event follows.
            self._blocked.pop(stream.id, None)
            stream.lost()

    def _push_frames(self, stream: Stream) -> None:
        conn = self._h2
        stream_id = stream.id
        pending = stream.pending
        while pending:
            if self._paused:
                self._blocked[stream_id] = stream
                return
            window = conn.local_flow_control_window(stream_id)
            if window <= 0:
                self._blocked[stream_id] = stream
                return
            size = min(window, conn.max_outbound_frame_size)
            data = pending[0]
            if len(data) > size:
                view = memoryview(data)
                piece: bytes | memoryview = view[:size]
                pending[0] = view[size:]
            else:
                piece = pending.popleft()
            stream.pending_size -= len(piece)
            last = stream.end_requested and not pending
            conn.send_data(stream_id, piece, end_stream=last)
            if last:
                stream.ended = True
            self._sent(len(piece))
        self._blocked.pop(stream_id, None)
        if stream.end_requested and not stream.ended:
            conn.end_stream(stream_id)
            stream.ended = True
            self._schedule_flush()
        stream.wake()

    def _push_blocked(self) -> None:
        for stream in list(self._blocked.values()):
            if self._paused:
                return
            if not stream.reset:
                self._push(stream)

    async def drained(self, stream: Stream, level: int) -> None:
        """Wait until at most ``level`` bytes are queued; ConnectionResetError if the stream is reset."""
        while stream.pending_size > level or (level == 0 and stream.end_requested and not stream.ended):
            if stream.reset or self.transport is None:
                break
            waiter = self._loop.create_future()
            stream.waiter = waiter
            await waiter
        if stream.reset or (self.transport is None and not stream.ended):
            raise ConnectionResetError("stream reset by the client")

    def reset_stream(self, stream: Stream, code: h2.errors.ErrorCodes) -> None:
        if self.transport is not None and not stream.reset:
            with contextlib.suppress(h2.exceptions.ProtocolError):
                self._h2.reset_stream(stream.id, code)
            self._schedule_flush()
        self._blocked.pop(stream.id, None)
        if code != _NO_ERROR:
            stream.lost()
        else:
            stream.reset = True

    def _sent(self, size: int) -> None:
        self._unflushed += size
        if self._unflushed >= FLUSH_AT:
            self._flush()
        else:
            self._schedule_flush()

    def _schedule_flush(self) -> None:
        if self._flush_handle is None:
            self._flush_handle = self._loop.call_soon(self._flush)

    def _flush(self) -> None:
        """Hand the frames h2 has serialized to the TLS transport (which may pause us: ``pause_writing``)."""
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        self._unflushed = 0
        data = self._h2.data_to_send()
        transport = self.transport
        if not data or transport is None:
            return
        direct = self._direct
        if direct is None or not direct(data):
            transport.write(data)

    # --- idle connections ---

    def _idle(self) -> None:
        """Go's http2 IdleTimeout: a connection without streams for this long gets GOAWAY and is closed."""
        timeout = self._settings.idle_timeout
        if timeout > 0 and self._idle_handle is None and self.transport is not None:
            self._idle_handle = self._loop.call_later(timeout, self._idle_timed_out)

    def _idle_timed_out(self) -> None:
        self._idle_handle = None
        if self._streams or self.transport is None:
            return
        self._closing = True
        self._h2.close_connection(error_code=_NO_ERROR, last_stream_id=self._last_stream)
        self._flush()
        self._close_transport()

    def _close_transport(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()


def _malformed(events: list[h2.events.Event]) -> str | None:
    """The first malformed header block among a read's events (h2 no longer checks them)."""
    for event in events:
        if isinstance(event, h2.events.RequestReceived):
            error = request_error(event.headers or ())
        elif isinstance(event, h2.events.TrailersReceived):
            error = trailers_error(event.headers or ())
        else:
            continue
        if error is not None:
            return error
    return None


def _peer(protocol: H2Protocol) -> str:
    peer = protocol.extra("peername")
    return f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) and len(peer) >= 2 else "a client"


def h2_handlers(server: Server, settings: Http2Settings) -> Callable[[], asyncio.BaseProtocol]:
    """A protocol factory for connections that negotiated h2, serving aiohttp's ``server``."""
    loop = asyncio.get_running_loop()

    def factory() -> asyncio.BaseProtocol:
        return H2Protocol(server, settings, loop)

    return factory
