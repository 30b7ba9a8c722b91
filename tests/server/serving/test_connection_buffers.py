"""TLSSite: HTTPS through CompactSSLProtocol behaves like aiohttp's TCPSite with ssl_context."""

from __future__ import annotations

import asyncio
import hashlib
import socket
import ssl
from pathlib import Path

from aiohttp import ClientSession, web
from cryptography import x509

from server.serving import connection_buffers
from server.serving.certs import ensure_client_ca, ensure_self_signed, issue_client_cert, peer_identity
from server.serving.connection_buffers import CompactSSLProtocol, TLSSite
from server.serving.heap_trim import HeapTrimmer
from server.serving.tls import build_server_context

BIG = 7 * 1024 * 1024 + 123  # more than the receive buffer, and not a multiple of a TLS record


def _contexts(tmp_path: Path) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    serving = ensure_self_signed(tmp_path / "serving", dns_names=[], ip_addresses=[])
    ca, ca_key = ensure_client_ca(tmp_path / "client")
    cert, key = issue_client_cert(
        ca, ca_key, common_name="alice", organizations=["cooks"], out_dir=tmp_path, basename="alice"
    )
    server = build_server_context(serving.cert_path, serving.key_path, [ca])
    client = ssl.create_default_context(cafile=str(serving.ca_cert_path))
    client.load_cert_chain(cert, key)
    return server, client


async def _echo(request: web.Request) -> web.StreamResponse:
    """Reports the client certificate's CN and a digest of the body; GET /big sends BIG bytes."""
    transport = request.transport
    assert transport is not None
    ssl_object = transport.get_extra_info("ssl_object")
    common_name = peer_identity(ssl_object.getpeercert(binary_form=True))[0]
    peercert = transport.get_extra_info("peercert")
    if request.path.startswith("/big"):
        response = web.Response(body=b"p" * BIG)
        if request.path == "/big-then-close":
            # Closed right after the body is handed over: all of it must precede close_notify.
            response.force_close()
        return response
    body = await request.read()
    return web.json_response(
        {
            "cn": common_name,
            "peercert_subject": [list(rdn[0]) for rdn in peercert["subject"]],
            "size": len(body),
            "sha256": hashlib.sha256(body).hexdigest(),
            "protocol": type(transport._ssl_protocol).__name__,  # type: ignore[attr-defined]
            # Slots hold everything asyncio sets per connection: no instance dict is needed.
            "unslotted": sorted(vars(transport._ssl_protocol)),  # type: ignore[attr-defined]
        }
    )


async def test_requests_bodies_and_client_certificates(tmp_path: Path) -> None:
    server_context, client_context = await asyncio.to_thread(_contexts, tmp_path)
    app = web.Application(client_max_size=2 * BIG)
    app.router.add_route("*", "/{tail:.*}", _echo)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = TLSSite(runner, "127.0.0.1", 0, ssl_context=server_context)
    await site.start()
    try:
        port = runner.addresses[0][1]
        assert site.name == f"https://127.0.0.1:{port}"
        base = f"https://127.0.0.1:{port}"
        upload = bytes(range(256)) * (BIG // 256)
        async with ClientSession() as session:
            async with session.post(f"{base}/upload", data=upload, ssl=client_context) as response:
                assert response.status == 200
                echoed = await response.json()
            assert echoed == {
                "cn": "alice",
                "peercert_subject": [["organizationName", "cooks"], ["commonName", "alice"]],
                "size": len(upload),
                "sha256": hashlib.sha256(upload).hexdigest(),
                "protocol": "CompactSSLProtocol",
                "unslotted": [],
            }
            # Keep-alive: the same connection serves a large response next, then a small request.
            async with session.get(f"{base}/big", ssl=client_context) as response:
                assert await response.read() == b"p" * BIG
            async with session.get(f"{base}/small", ssl=client_context) as response:
                assert (await response.json())["size"] == 0
            async with session.get(f"{base}/big-then-close", ssl=client_context) as response:
                assert await response.read() == b"p" * BIG
    finally:
        await runner.cleanup()


async def test_a_slow_reader_gets_every_byte_and_the_outgoing_buffer_stays_small(tmp_path: Path) -> None:
    """The socket fills while the client does not read: writing pauses, then resumes in order."""
    server_context, client_context = await asyncio.to_thread(_contexts, tmp_path)
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", _echo)
    runner = await _serve(app, server_context)
    try:
        reader, writer = await _slow_reader(runner.addresses[0][1], client_context, 32 * 1024)
        writer.write(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
        await asyncio.sleep(0.5)  # the server writes into a full socket meanwhile
        # The rest waits as plaintext; only about a chunk of ciphertext is buffered at a time (asyncio
        # would have encrypted all of it, into a MemoryBIO whose buffer then never shrinks).
        waiting = [p for p in _live_protocols() if p._write_backlog]  # type: ignore[attr-defined]
        assert waiting, "the server should still be holding part of the response"
        for protocol in waiting:
            ciphertext = protocol._outgoing.pending + protocol._transport.get_write_buffer_size()  # type: ignore[attr-defined]
            assert ciphertext <= 4 * connection_buffers.WRITE_CHUNK
        head = await reader.readuntil(b"\r\n\r\n")
        assert b"Content-Length: %d" % BIG in head
        assert await reader.readexactly(BIG) == b"p" * BIG
        writer.close()
    finally:
        await runner.cleanup()


async def _serve(app: web.Application, server_context: ssl.SSLContext) -> web.AppRunner:
    """`app` over TLSSite on a free port of 127.0.0.1; the caller cleans the runner up."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await TLSSite(runner, "127.0.0.1", 0, ssl_context=server_context).start()
    return runner


async def _slow_reader(
    port: int, client_context: ssl.SSLContext, receive_buffer: int
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A TLS client whose kernel receive buffer is small, so the server's socket fills while it
    does not read."""
    raw = socket.socket()
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    raw.setblocking(False)
    await asyncio.get_running_loop().sock_connect(raw, ("127.0.0.1", port))
    return await asyncio.open_connection(sock=raw, ssl=client_context, server_hostname="127.0.0.1")


def _live_protocols() -> list[CompactSSLProtocol]:
    import gc

    return [o for o in gc.get_objects() if isinstance(o, CompactSSLProtocol)]


async def test_connections_share_one_receive_buffer(tmp_path: Path) -> None:
    server_context, _ = await asyncio.to_thread(_contexts, tmp_path)
    loop = asyncio.get_running_loop()
    first = CompactSSLProtocol(loop, asyncio.Protocol(), server_context)
    second = CompactSSLProtocol(loop, asyncio.Protocol(), server_context)
    assert first.get_buffer(-1) is second.get_buffer(-1)
    assert len(first.get_buffer(-1)) == connection_buffers.RECEIVE_SIZE
    assert first.max_size == connection_buffers.PLAINTEXT_READ_SIZE


async def test_heap_trim_runs_once_when_a_burst_pauses() -> None:
    calls: list[float] = []
    trimmed = asyncio.Event()
    loop = asyncio.get_running_loop()

    def trim(pad: int) -> int:
        loop.call_soon_threadsafe(lambda: (calls.append(loop.time()), trimmed.set()))
        return 1

    trimmer = HeapTrimmer(after_events=3, delay=0.2, max_wait=60.0, trim=trim)
    for _ in range(2):
        trimmer.connection_changed(loop)
    await asyncio.sleep(0.3)
    assert calls == []  # below the threshold
    # Events keep coming every 0.1 s for 0.6 s: the trim waits until they pause for `delay`.
    for _ in range(6):
        trimmer.connection_changed(loop)
        await asyncio.sleep(0.1)
    last_event = loop.time() - 0.1
    await asyncio.wait_for(trimmed.wait(), 5)
    await asyncio.sleep(0.3)
    assert len(calls) == 1 and calls[0] >= last_event + 0.2 - 0.02


async def test_heap_trim_does_not_wait_past_max_wait_while_connections_keep_coming() -> None:
    trimmed = asyncio.Event()
    loop = asyncio.get_running_loop()
    trimmer = HeapTrimmer(
        after_events=1, delay=0.2, max_wait=0.5, trim=lambda pad: loop.call_soon_threadsafe(trimmed.set) or 1
    )
    began = loop.time()
    while not trimmed.is_set() and loop.time() - began < 5:
        trimmer.connection_changed(loop)  # never a pause of 0.2 s
        await asyncio.sleep(0.05)
    assert trimmed.is_set()
    assert loop.time() - began < 2


async def test_heap_trim_counts_handshakes_of_connections_that_stay_open(tmp_path: Path) -> None:
    """A burst of opens leaves freed handshake buffers in the heap too: it must trigger a trim
    without any connection closing."""
    server_context, client_context = await asyncio.to_thread(_contexts, tmp_path)
    loop = asyncio.get_running_loop()
    trimmed = asyncio.Event()

    def trim(pad: int) -> int:
        loop.call_soon_threadsafe(trimmed.set)
        return 1

    trimmer = HeapTrimmer(after_events=3, delay=0.01, max_wait=60.0, trim=trim)
    app = web.Application()
    app.router.add_route("GET", "/{tail:.*}", _echo)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    server = await loop.create_server(
        connection_buffers.compact_tls_protocols(runner.server, server_context, trimmer=trimmer),
        "127.0.0.1",
        0,
    )
    port = server.sockets[0].getsockname()[1]
    writers = []
    try:
        for _ in range(2):
            _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=client_context)
            writers.append(writer)
        await asyncio.sleep(0.1)
        assert not trimmed.is_set()  # two handshakes: below the threshold
        _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=client_context)
        writers.append(writer)
        await asyncio.wait_for(trimmed.wait(), 10)
    finally:
        for writer in writers:
            writer.close()
        server.close()
        await server.wait_closed()
        await runner.cleanup()


async def test_the_client_certificate_is_made_once_per_connection(tmp_path: Path) -> None:
    """Authentication reads the DER on every request; TLSSite's connections keep one copy."""
    from server.authn.x509 import peer_certificate

    server_context, client_context = await asyncio.to_thread(_contexts, tmp_path)
    seen: list[bytes | None] = []

    async def handler(request: web.Request) -> web.Response:
        seen.append(peer_certificate(request))
        seen.append(peer_certificate(request))
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_get("/", handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = TLSSite(runner, "127.0.0.1", 0, ssl_context=server_context)
    await site.start()
    try:
        port = runner.addresses[0][1]
        async with ClientSession() as session:
            for _ in range(2):  # two requests on one keep-alive connection
                async with session.get(f"https://127.0.0.1:{port}/", ssl=client_context) as response:
                    assert response.status == 200
    finally:
        await runner.cleanup()
    assert len(seen) == 4 and all(der is seen[0] for der in seen)
    assert seen[0] is not None
    x509_cert = x509.load_der_x509_certificate(seen[0])
    assert x509_cert.subject.rfc4514_string() == "CN=alice,O=cooks"


async def test_direct_writes_and_queued_writes_reach_the_client_in_order(tmp_path: Path) -> None:
    """Watch events go the short way (`write_small`) until the socket fills; from then on they go the
    general way, behind what is already waiting. A slow reader must still get every piece, in order."""
    server_context, client_context = await asyncio.to_thread(_contexts, tmp_path)
    pieces = [b"%07d\n" % i * 128 for i in range(2048)]  # 1 KiB each, 2 MiB in all
    taken: dict[str, int] = {"direct": 0, "general": 0}

    async def handler(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        response.content_length = sum(len(p) for p in pieces)
        await response.prepare(request)
        transport = request.transport
        assert transport is not None
        # A small kernel buffer, so that the socket is full long before the last piece.
        transport.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 16 * 1024)
        write_small = transport.get_extra_info(connection_buffers.DIRECT_WRITE)
        for piece in pieces:
            if write_small(piece):
                taken["direct"] += 1
            else:
                transport.write(piece)
                taken["general"] += 1
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_get("/", handler)
    runner = await _serve(app, server_context)
    try:
        reader, writer = await _slow_reader(runner.addresses[0][1], client_context, 16 * 1024)
        writer.write(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        await asyncio.sleep(0.3)  # the server fills the socket meanwhile
        await reader.readuntil(b"\r\n\r\n")
        assert await reader.readexactly(sum(len(p) for p in pieces)) == b"".join(pieces)
        writer.close()
    finally:
        await runner.cleanup()
    assert taken["direct"] > 0 and taken["general"] > 0, taken
