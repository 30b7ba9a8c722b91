"""aiohttp's request handler with Go's http.Server limits: header-read and idle timeouts, 1 MiB of headers.

Why: aiohttp waits for a request's headers as long as its keep-alive timeout (an hour by default),
however slowly they arrive, caps each line at 8,190 bytes with a plain 400, and logs every malformed
request as an ERROR with a traceback. kube's server (Go's net/http as k8s.io/apiserver configures it
in pkg/server/secure_serving.go) instead:

- closes a connection whose request line and headers are not complete ``ReadHeaderTimeout`` (32 s)
  after their first byte (on a new connection, after it is accepted), without an answer;
- closes a keep-alive connection idle for ``IdleTimeout`` (90 s);
- takes up to ``MaxHeaderBytes`` (1 MiB) + 4,096 bytes of request line and headers together, and
  answers more with ``431 Request Header Fields Too Large`` as plain text, then closes.

``BoundedRequestHandler`` does the same: it counts the bytes that arrive while no request is parsed
yet and runs one timer per request head. The per-line limits of aiohttp's parser are raised to the
total, so the total is what decides. Malformed requests still get aiohttp's 400, but are logged as one
rate-limited line per cause (``RateLimitedLog``), never a traceback: they are the client's error.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.web_protocol import RequestHandler
from aiohttp.web_request import BaseRequest
from aiohttp.web_server import Server

from server.serving.options import IDLE_TIMEOUT, MAX_HEADER_BYTES, READ_HEADER_TIMEOUT
from server.serving.rate_limited_log import RateLimitedLog

logger = logging.getLogger(__name__)
client_errors = RateLimitedLog(logger)

# Go's http.Server reads at most MaxHeaderBytes + 4096 (bufio's slack, initialReadLimitSize).
HEADER_SLACK = 4096
TOO_LARGE = (
    b"HTTP/1.0 431 Request Header Fields Too Large\r\n"
    b"Content-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"
    b"431 Request Header Fields Too Large"
)


@dataclass(frozen=True, slots=True)
class RequestLimits:
    """Seconds and bytes; a timeout of 0 disables it (as in Go)."""

    read_header_timeout: float = READ_HEADER_TIMEOUT
    idle_timeout: float = IDLE_TIMEOUT
    max_header_bytes: int = MAX_HEADER_BYTES

    @property
    def header_cap(self) -> int:
        return self.max_header_bytes + HEADER_SLACK


class _MessageQueue(list[Any]):
    """aiohttp's queue of parsed requests waiting for the handler, as a list: aiohttp only appends,
    counts and pops from the front, a connection nearly never holds more than one, and an empty
    deque's first block costs every connection (every open watch) ~0.6 KB."""

    __slots__ = ()

    def popleft(self) -> Any:
        return self.pop(0)


class BoundedRequestHandler(RequestHandler):
    """A RequestHandler that enforces ``RequestLimits`` on each request's head."""

    __slots__ = ("_head_bytes", "_head_timer", "_limits", "_on_lost")

    def __init__(
        self, manager: Server, *, loop: asyncio.AbstractEventLoop, limits: RequestLimits, **kwargs: Any
    ) -> None:
        cap = limits.header_cap
        kwargs.update(
            keepalive_timeout=limits.idle_timeout,
            max_line_size=cap,
            max_field_size=cap,
            # A header line takes 4 bytes at least ("a:\r\n"): the byte cap bounds the count.
            max_headers=cap // 4,
        )
        super().__init__(manager, loop=loop, **kwargs)
        self._limits = limits
        self._head_bytes = 0
        self._head_timer: asyncio.TimerHandle | None = None
        self._on_lost: Callable[[], object] | None = None
        self._messages = _MessageQueue()  # type: ignore[assignment]

    def _reading_head(self) -> bool:
        """No request is parsed and waiting, and the handler is idle (or has not served one yet):
        what arrives now is a request line or headers, not a body or a lingering payload."""
        return not self._messages and (self._waiter is not None or self._request_count == 0)

    def data_received(self, data: bytes) -> None:
        if self._force_close or self._close:
            return
        if not self._reading_head():
            super().data_received(data)
            return
        self._head_bytes += len(data)
        if self._head_timer is None and self._limits.read_header_timeout > 0:
            self._head_timer = self._loop.call_later(self._limits.read_header_timeout, self._head_timed_out)
        if self._head_bytes > self._limits.header_cap:
            self._refuse_too_large()
            return
        parsed = self._request_count
        super().data_received(data)
        if self._request_count != parsed:
            self._head_done()

    def _head_done(self) -> None:
        self._head_bytes = 0
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        client_errors.log(
            "read-header-timeout",
            "closing a connection from %s: request headers incomplete after %ss",
            _peer(self.transport),
            self._limits.read_header_timeout,
        )
        self.force_close()

    def _refuse_too_large(self) -> None:
        self._head_done()
        client_errors.log(
            "header-too-large",
            "answered 431 to %s: request line and headers over %d bytes",
            _peer(self.transport),
            self._limits.max_header_bytes,
        )
        if self.transport is not None:
            self.transport.write(TOO_LARGE)
        self.force_close()

    def connection_lost(self, exc: BaseException | None) -> None:
        self._head_done()
        super().connection_lost(exc)
        on_lost, self._on_lost = self._on_lost, None
        if on_lost is not None:
            on_lost()

    def handle_error(
        self,
        request: BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        """A request aiohttp could not parse: the client's error, answered without a traceback."""
        if not isinstance(exc, HttpProcessingError) or status >= 500:
            return super().handle_error(request, status, exc, message)
        client_errors.log(
            f"bad-request:{type(exc).__name__}",
            "answered %d to %s: %s",
            status,
            request.remote,
            (message or str(exc))[:200],
        )
        response = web.Response(status=status, text=message or "Bad Request", content_type="text/plain")
        response.force_close()
        return response


def notify_connection_lost(request: BaseRequest, callback: Callable[[], object] | None) -> bool:
    """Have `callback` called when the request's connection goes (None: no longer); False when the
    connection is not one of ours, so the caller must look at its transport itself.

    aiohttp does not cancel a handler whose client left (kube cancels the request's context): a
    long-running response (a watch) learns of it here instead of polling its transport. Over HTTP/2
    the stream's reset by the client counts as its connection going.
    """
    protocol = request.protocol
    if isinstance(protocol, BoundedRequestHandler):
        protocol._on_lost = callback
        return True
    # An HTTP/2 stream (imported here: http2 imports this module's settings): its RST_STREAM, or
    # its connection's end, is what a closed connection is to HTTP/1.1.
    from server.serving.http2_stream import notify_stream_lost

    return notify_stream_lost(protocol, callback)


def _peer(transport: asyncio.BaseTransport | None) -> str:
    peer = transport.get_extra_info("peername") if transport is not None else None
    return f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) and len(peer) >= 2 else "a client"


def bounded_handlers(server: Server, limits: RequestLimits) -> Any:
    """A protocol factory making ``BoundedRequestHandler``s for aiohttp's ``server``, with its settings."""
    loop = asyncio.get_running_loop()
    # Server keeps the AppRunner's handler settings (access log, lingering time, ...) in _kwargs and
    # has no public way to choose the handler class; the handler's own limits replace the parser's.
    settings = dict(server._kwargs)

    def factory() -> BoundedRequestHandler:
        return BoundedRequestHandler(server, loop=loop, limits=limits, **settings)

    return factory
