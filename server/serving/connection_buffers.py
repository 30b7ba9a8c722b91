"""TLS connections without asyncio's 256 KiB buffer each: a serving site for the HTTPS port.

Why: asyncio's ``SSLProtocol`` (asyncio/sslproto.py, the TLS layer of every loop-made TLS
connection) allocates ``bytearray(max_size)``, 256 KiB, when a connection is accepted and keeps it
for the connection's life; the socket is read into it and the bytes are copied into the connection's
``ssl.MemoryBIO`` at once. Measured: +288 KB of server RSS per idle TLS connection, +303 KB per open
watch. Worse, after glibc's first free of such a block its mmap threshold rises above 256 KiB, so
later ones come from the heap, and 2,000 closed connections left +563 MB that was never returned.

``CompactSSLProtocol`` is that same protocol with one receive buffer per thread (an event loop runs
in one thread, and it reads a socket into the buffer and copies it out in one synchronous step: see
``get_buffer``), plaintext reads of one TLS record (16 KiB) instead of 256 KiB, writes encrypted a
chunk at a time (asyncio encrypts a whole 8 MB response into a buffer the connection then keeps),
slots instead of a 1.6 KB instance dict, and the parsed peer certificate made only on request.
Everything else — handshake, SNI callback, shutdown, flow control, ``get_extra_info("ssl_object")``
— is asyncio's. Measured with ``python -m tests.bench.bench_connections``: ~28 KB per idle TLS
connection (about 21 KB of it OpenSSL's own state, 5 KB of that the client certificate), ~38 KB per
open watch at 200 watches (~43 KB at 1,000), and after 2,000 connections close RSS is back within
~12 MB of idle (``server.serving.heap_trim``).

asyncio has no public hook to choose the TLS protocol of a server, and aiohttp's sites pass the
``SSLContext`` to ``loop.create_server(ssl=...)``, which builds ``SSLProtocol`` itself. ``TLSSite``
therefore listens without ``ssl=`` and wraps each accepted connection in ``CompactSSLProtocol``
itself — exactly what the loop would have done (``_make_ssl_transport``), scoped to this server's
listening socket instead of patching asyncio for every TLS connection of the process.

All of this leans on asyncio's private ``SSLProtocol`` (CPython 3.11-3.13). ``TLSSite.start`` first
checks that the methods and fields used here are there (``sslproto_problems``); where they are not,
it serves TLS through asyncio's own protocol instead, HTTP/1.1 only, as ``web.TCPSite`` would, and
logs what is off.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
import threading
from asyncio import sslproto
from collections.abc import Callable
from typing import cast

from aiohttp import web

from server.serving.extra_info import DIRECT_WRITE, PEER_CERTIFICATE_DER
from server.serving.heap_trim import HeapTrimmer
from server.serving.http2 import DEFAULT_HTTP2, Http2Settings, h2_handlers
from server.serving.rate_limited_log import RateLimitedLog
from server.serving.request_limits import RequestLimits, bounded_handlers

__all__ = ["DIRECT_WRITE", "PEER_CERTIFICATE_DER", "CompactSSLProtocol", "TLSSite", "compact_tls_protocols"]

logger = logging.getLogger(__name__)
refusals = RateLimitedLog(logger)

# Plaintext per SSLObject.read call: OpenSSL returns at most one record (16 KiB) per read anyway.
PLAINTEXT_READ_SIZE = 16 * 1024
# Ciphertext per recv from the socket: shared, so its size costs nothing per connection; a
# connection's incoming MemoryBIO grows to about this much at most, as it is drained after each read.
RECEIVE_SIZE = 64 * 1024
# Plaintext encrypted at a time before its ciphertext moves on to the socket: what a connection's
# outgoing MemoryBIO grows to (its buffer never shrinks while the connection lives).
WRITE_CHUNK = 64 * 1024

# getattr: a Python whose asyncio lacks it must still import this module, to serve the plain way.
_WRAPPED = getattr(getattr(sslproto, "SSLProtocolState", None), "WRAPPED", None)

# What CompactSSLProtocol overrides or calls, and the fields it reads or replaces, of asyncio's
# SSLProtocol: all present in CPython 3.11 to 3.13 (asyncio/sslproto.py).
_SSLPROTO_METHODS = (
    "_on_handshake_complete",
    "_set_app_protocol",
    "_get_extra_info",
    "_do_write",
    "_process_outgoing",
    "_control_app_writing",
    "_fatal_error",
    "get_buffer",
    "resume_writing",
    "connection_lost",
)
_SSLPROTO_FIELDS = (
    "_ssl_buffer",
    "_ssl_buffer_view",
    "_write_backlog",
    "_write_buffer_size",
    "_sslobj",
    "_outgoing",
    "_state",
    "_ssl_writing_paused",
    "_extra",
    "_transport",
    "_loop",
)
_sslproto_problems: tuple[str, ...] | None = None

_per_thread = threading.local()


def _receive_buffer() -> memoryview:
    """This thread's receive buffer (an event loop and all its connections live in one thread)."""
    view: memoryview | None = getattr(_per_thread, "view", None)
    if view is None:
        view = memoryview(bytearray(RECEIVE_SIZE))
        _per_thread.view = view
    return view


# Connections presenting the same client certificate (a controller's connection pool, kubectl's
# watches) share one copy of its DER, ~0.5 KB per connection otherwise, and with it the cached hash.
_DER_COPIES: dict[bytes, bytes] = {}
_DER_COPIES_MAX = 1024


def _shared_copy(der: bytes) -> bytes:
    kept = _DER_COPIES.get(der)
    if kept is None:
        if len(_DER_COPIES) >= _DER_COPIES_MAX:
            _DER_COPIES.clear()  # bounded; a dropped entry costs one more copy, nothing else
        kept = _DER_COPIES[der] = der
    return kept


class CompactSSLProtocol(sslproto.SSLProtocol):
    """asyncio's server-side SSLProtocol with a shared receive buffer and record-sized plaintext reads."""

    max_size = PLAINTEXT_READ_SIZE
    # The attributes asyncio's SSLProtocol sets on each instance (Python 3.11), as slots: 33 of them
    # made its instance __dict__ ~1.6 KB per connection, slots take 8 bytes each. A name missing here
    # (another Python version) still works, in the __dict__; tests check the dict stays empty. The
    # three timer attributes have class-level defaults in asyncio, which slots would hide: __init__
    # sets them.
    __slots__ = (
        "_app_protocol",
        "_app_protocol_is_buffer",
        "_app_reading_paused",
        "_app_state",
        "_app_transport",
        "_app_transport_created",
        "_app_writing_paused",
        "_conn_lost",
        "_count",
        "_eof_received",
        "_extra",
        "_h2_factory",
        "_handshake_start_time",
        "_handshake_timeout_handle",
        "_incoming",
        "_incoming_high_water",
        "_incoming_low_water",
        "_loop",
        "_outgoing",
        "_outgoing_high_water",
        "_outgoing_low_water",
        "_server_hostname",
        "_server_side",
        "_shutdown_timeout_handle",
        "_ssl_buffer",
        "_ssl_buffer_view",
        "_ssl_handshake_timeout",
        "_ssl_reading_paused",
        "_ssl_shutdown_timeout",
        "_ssl_writing_paused",
        "_sslcontext",
        "_sslobj",
        "_state",
        "_transport",
        "_trimmer",
        "_waiter",
        "_write_backlog",
        "_write_buffer_size",
    )

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        app_protocol: asyncio.BaseProtocol,
        context: ssl.SSLContext,
        *,
        trimmer: HeapTrimmer | None = None,
        count: ConnectionCount | None = None,
        handshake_timeout: float | None = None,
        h2_factory: Callable[[], asyncio.BaseProtocol] | None = None,
    ) -> None:
        self._h2_factory = h2_factory
        self._handshake_start_time: float | None = None
        self._handshake_timeout_handle: asyncio.TimerHandle | None = None
        self._shutdown_timeout_handle: asyncio.TimerHandle | None = None
        super().__init__(
            loop, app_protocol, context, None, server_side=True, ssl_handshake_timeout=handshake_timeout
        )
        # Drop the buffer the base class just allocated for this connection alone.
        self._ssl_buffer_view = _receive_buffer()
        self._ssl_buffer = self._ssl_buffer_view.obj
        # A list instead of asyncio's deque, whose first block takes ~0.6 KB even when empty (which
        # the backlog nearly always is). asyncio only appends, clears and takes from the front.
        self._write_backlog: list[bytes | bytearray | memoryview] = []  # type: ignore[assignment]
        self._trimmer = trimmer
        self._count = count

    def get_buffer(self, n: int) -> memoryview:
        """The thread's shared buffer. Safe to share: the selector transport calls ``get_buffer``,
        ``recv_into`` and ``buffer_updated`` back to back, and ``buffer_updated`` copies the bytes into
        this connection's MemoryBIO before anything else can run on the loop."""
        return self._ssl_buffer_view

    def _on_handshake_complete(self, handshake_exc: BaseException | None) -> None:
        # The one place that knows the negotiated protocol before the application protocol sees the
        # connection: a client that chose h2 by ALPN gets the HTTP/2 protocol (server.serving.http2)
        # instead of the HTTP/1.1 handler made at accept, which then never starts.
        if handshake_exc is None and self._h2_factory is not None:
            sslobj = self._sslobj
            if sslobj is not None and sslobj.selected_alpn_protocol() == "h2":
                self._set_app_protocol(self._h2_factory())
        self._h2_factory = None
        super()._on_handshake_complete(handshake_exc)
        # asyncio keeps the client certificate parsed into a dict for get_extra_info("peercert"):
        # ~1.3 KiB per connection for a value nothing here reads (authentication takes the DER from
        # ssl_object). Drop it; _get_extra_info builds it again should anyone ask.
        self._extra.pop("peercert", None)
        # The handshake's buffers were just freed between objects this connection keeps.
        if handshake_exc is None and self._trimmer is not None:
            self._trimmer.connection_changed(self._loop)

    def _get_extra_info(self, name: str, default: object = None) -> object:
        if name == PEER_CERTIFICATE_DER:
            # Authentication asks on every request (twice: front-proxy and x509); the certificate
            # cannot change within a connection (OpenSSL renegotiation is off), so one DER copy
            # serves them all, and as the same bytes object its hash for the cache lookup is kept.
            extra = self._extra
            if name not in extra:
                ssl_object = extra.get("ssl_object")
                der = None
                if isinstance(ssl_object, ssl.SSLObject):
                    der = ssl_object.getpeercert(binary_form=True)
                extra[name] = _shared_copy(der) if der is not None else None
            return extra[name]
        if name == DIRECT_WRITE:
            return self.write_small
        if name == "peercert":
            ssl_object = self._extra.get("ssl_object")
            if isinstance(ssl_object, ssl.SSLObject):
                return ssl_object.getpeercert()
        return super()._get_extra_info(name, default)

    def write_small(self, data: bytes) -> bool:
        """Encrypt `data` and hand the record to the socket now, if nothing waits before it.

        A watch event fanned out to a thousand connections is a thousand small writes, and asyncio's
        general way (backlog, then two reads of the outgoing buffer and two flow-control checks) was
        about a third of each delivery's time, measured with py-spy. This is the same work without
        the bookkeeping that only matters when something is pending. False when something is (a
        backlog, a paused socket, a closing connection) or `data` is large: the caller then writes
        the general way, which queues it in order.
        """
        if self._write_backlog or self._ssl_writing_paused or self._state is not _WRAPPED:
            return False
        if len(data) > WRITE_CHUNK:
            return False
        try:
            self._sslobj.write(data)
        except sslproto.SSLAgainErrors:
            return False  # nothing was written; the general way keeps it in the backlog and retries
        # WRAPPED means connected: asyncio drops the socket transport only after leaving that state.
        cast(asyncio.WriteTransport, self._transport).write(self._outgoing.read())
        self._control_app_writing()
        return True

    def _do_write(self) -> None:
        """Encrypt the backlog a chunk at a time, moving each chunk's ciphertext to the socket.

        asyncio encrypts the whole backlog into the outgoing MemoryBIO at once, and that buffer never
        shrinks: after one 8 MB LIST a keep-alive connection held ~8 MB until it closed. Here the BIO
        holds at most about ``WRITE_CHUNK``. While the socket transport is paused (its buffer is
        full), plaintext waits in the backlog instead — it counts for flow control just the same —
        and ``resume_writing`` carries on. When flushing before close_notify everything is encrypted
        at once, as asyncio does, so no data can be left behind the shutdown.
        """
        backlog = self._write_backlog
        try:
            while backlog:
                if self._ssl_writing_paused and self._state == _WRAPPED:
                    break
                data = backlog[0]
                size = len(data)
                count = self._sslobj.write(memoryview(data)[:WRITE_CHUNK] if size > WRITE_CHUNK else data)
                if count < size:
                    backlog[0] = memoryview(data)[count:]
                else:
                    del backlog[0]
                self._write_buffer_size -= count
                self._process_outgoing()
        except sslproto.SSLAgainErrors:
            pass
        self._process_outgoing()

    def resume_writing(self) -> None:
        super().resume_writing()
        if self._write_backlog and self._state == _WRAPPED:
            try:
                self._do_write()
            except Exception as exc:
                self._fatal_error(exc, "Fatal error on SSL protocol")

    def connection_lost(self, exc: BaseException | None) -> None:
        super().connection_lost(exc)
        if self._count is not None:
            self._count.release()
            self._count = None
        if self._trimmer is not None:
            self._trimmer.connection_changed(self._loop)


class ConnectionCount:
    """Open connections against ``--max-connections`` (0: no limit)."""

    __slots__ = ("limit", "open")

    def __init__(self, limit: int = 0) -> None:
        self.limit = limit
        self.open = 0

    def acquire(self) -> bool:
        if self.limit and self.open >= self.limit:
            return False
        self.open += 1
        return True

    def release(self) -> None:
        self.open -= 1


class _Refused(asyncio.Protocol):
    """A connection over the limit: closed as soon as it is accepted, before any TLS work or buffer."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport.abort()


def compact_tls_protocols(
    protocol_factory: Callable[[], asyncio.BaseProtocol],
    context: ssl.SSLContext,
    *,
    trimmer: HeapTrimmer | None = None,
    count: ConnectionCount | None = None,
    handshake_timeout: float | None = None,
    h2_factory: Callable[[], asyncio.BaseProtocol] | None = None,
) -> Callable[[], asyncio.BaseProtocol]:
    """A protocol factory for ``loop.create_server`` (without ``ssl=``) that puts TLS in front of
    ``protocol_factory``'s protocols, as ``create_server(ssl=context)`` would, but compactly; beyond
    ``count``'s limit, connections are closed at once (a rate-limited log line says so). Connections
    that negotiate h2 by ALPN get ``h2_factory``'s protocol instead."""
    loop = asyncio.get_running_loop()

    def factory() -> asyncio.BaseProtocol:
        if count is not None and not count.acquire():
            refusals.log("max-connections", "refusing connections: %d open (--max-connections)", count.open)
            return _Refused()
        return CompactSSLProtocol(
            loop,
            protocol_factory(),
            context,
            trimmer=trimmer,
            count=count,
            handshake_timeout=handshake_timeout,
            h2_factory=h2_factory,
        )

    return factory


class TLSSite(web.BaseSite):
    """``web.TCPSite`` for HTTPS with ``CompactSSLProtocol`` connections (host/port, or a bound ``sock``).

    Use it where ``web.TCPSite(runner, host, port, ssl_context=...)`` was; ``runner.addresses`` and
    shutdown work the same. Requests are read by ``BoundedRequestHandler`` under ``limits`` (Go's
    http.Server timeouts and header limit), and at most ``max_connections`` are open at once (0: no
    limit); more are closed as soon as they are accepted. With ``http2`` (by default kube's settings
    under ``limits``' header limit and idle timeout), connections whose client chose h2 by ALPN are
    served by ``server.serving.http2``; the context offers h2 (``TLSPolicy.alpn``) only if it is set.
    """

    __slots__ = (
        "_count",
        "_host",
        "_http2",
        "_limits",
        "_port",
        "_reuse_address",
        "_reuse_port",
        "_sock",
        "_trimmer",
    )

    def __init__(
        self,
        runner: web.BaseRunner,
        host: str | None = None,
        port: int = 0,
        *,
        ssl_context: ssl.SSLContext,
        sock: socket.socket | None = None,
        backlog: int = 128,
        reuse_address: bool | None = None,
        reuse_port: bool | None = None,
        limits: RequestLimits | None = None,
        max_connections: int = 0,
        http2: Http2Settings | None = DEFAULT_HTTP2,
    ) -> None:
        super().__init__(runner, ssl_context=ssl_context, backlog=backlog)
        self._limits = limits or RequestLimits()
        if http2 is DEFAULT_HTTP2:
            http2 = Http2Settings(
                max_header_bytes=self._limits.max_header_bytes, idle_timeout=self._limits.idle_timeout
            )
        self._http2 = http2
        self._count = ConnectionCount(max_connections)
        self._host, self._port, self._sock = host, port, sock
        self._reuse_address, self._reuse_port = reuse_address, reuse_port
        # Closed connections leave freed memory inside the heap; see server.serving.heap_trim.
        self._trimmer = HeapTrimmer()

    @property
    def name(self) -> str:
        if self._server is not None and self._server.sockets:
            host, port = self._server.sockets[0].getsockname()[:2]
        else:
            host, port = self._host or "0.0.0.0", self._port
        return f"https://[{host}]:{port}" if ":" in host else f"https://{host}:{port}"

    @property
    def open_connections(self) -> int:
        return self._count.open

    async def start(self) -> None:
        await super().start()
        server = self._runner.server
        assert server is not None and self._ssl_context is not None
        loop = asyncio.get_running_loop()
        # Go's tlsHandshakeTimeout: the read-header timeout when no read timeout is set.
        handshake_timeout = self._limits.read_header_timeout or None
        factory: Callable[[], asyncio.BaseProtocol]
        problems = sslproto_problems(loop)
        if problems:
            # asyncio's own TLS, as web.TCPSite(ssl_context=...) listens; the request limits stay.
            logger.warning(
                "asyncio's SSLProtocol lacks what server.serving.connection_buffers relies on (%s): "
                "serving TLS through asyncio's own protocol, HTTP/1.1 only; HTTP/2, compact connection "
                "buffers, --max-connections and heap trimming are off",
                ", ".join(problems),
            )
            factory = bounded_handlers(server, self._limits)
            context: ssl.SSLContext | None = _offer_http1_only(self._ssl_context)
            plain_timeout = handshake_timeout
        else:
            factory = compact_tls_protocols(
                bounded_handlers(server, self._limits),
                self._ssl_context,
                trimmer=self._trimmer,
                count=self._count,
                handshake_timeout=handshake_timeout,
                h2_factory=h2_handlers(server, self._http2) if self._http2 is not None else None,
            )
            context = plain_timeout = None  # TLS is CompactSSLProtocol's, inside the factory
        if self._sock is not None:
            self._server = await loop.create_server(
                factory,
                sock=self._sock,
                backlog=self._backlog,
                ssl=context,
                ssl_handshake_timeout=plain_timeout,
            )
        else:
            self._server = await loop.create_server(
                factory,
                self._host,
                self._port,
                backlog=self._backlog,
                reuse_address=self._reuse_address,
                reuse_port=self._reuse_port,
                ssl=context,
                ssl_handshake_timeout=plain_timeout,
            )


def sslproto_problems(loop: asyncio.AbstractEventLoop) -> tuple[str, ...]:
    """What CompactSSLProtocol relies on that this Python's asyncio lacks; empty when all is there.

    Checked once per process, on a scratch instance of asyncio's own SSLProtocol (nothing is sent).
    """
    global _sslproto_problems
    if _sslproto_problems is None:
        _sslproto_problems = _find_sslproto_problems(loop)
    return _sslproto_problems


def _find_sslproto_problems(loop: asyncio.AbstractEventLoop) -> tuple[str, ...]:
    base = sslproto.SSLProtocol
    problems = [
        f"sslproto.{name}" for name in ("SSLProtocolState", "SSLAgainErrors") if not hasattr(sslproto, name)
    ]
    if hasattr(sslproto, "SSLProtocolState") and _WRAPPED is None:
        problems.append("sslproto.SSLProtocolState.WRAPPED")
    problems += [
        f"SSLProtocol.{name}" for name in _SSLPROTO_METHODS if not callable(getattr(base, name, None))
    ]
    try:
        scratch = base(
            loop, asyncio.Protocol(), ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER), None, server_side=True
        )
    except Exception as err:
        problems.append(f"SSLProtocol(...): {type(err).__name__}: {err}")
    else:
        problems += [f"SSLProtocol().{name}" for name in _SSLPROTO_FIELDS if not hasattr(scratch, name)]
        # Its transport, never connected, would warn of being left unclosed when collected.
        transport = getattr(scratch, "_app_transport", None)
        if isinstance(transport, asyncio.BaseTransport):
            transport.close()
    return tuple(problems)


def _offer_http1_only(context: ssl.SSLContext) -> ssl.SSLContext:
    """ALPN without h2 on `context` and on every context its SNI callback switches a handshake to
    (``server.serving.tls`` swaps in reloaded certificates so): asyncio's own TLS protocol cannot hand
    a connection to ``H2Protocol``, and an h2 client answered in HTTP/1.1 would fail."""
    http1 = ["http/1.1"]
    context.set_alpn_protocols(http1)
    chosen = context.sni_callback
    if chosen is not None:

        def on_client_hello(
            ssl_object: ssl.SSLObject, server_name: str | None, listening: ssl.SSLContext
        ) -> int | None:
            answer = chosen(ssl_object, server_name, listening)
            ssl_object.context.set_alpn_protocols(http1)  # ALPN is chosen after this callback
            return answer

        context.sni_callback = on_client_hello
    return context
