"""TLSSite on a Python whose asyncio ``SSLProtocol`` is not the one CompactSSLProtocol was written for.

CompactSSLProtocol overrides and reads private methods and fields of asyncio/sslproto.py. The first
test fails when a Python moves one of them (and names it); the second shows what the server does
then: TLS through asyncio's own protocol, HTTP/1.1 only, as ``web.TCPSite`` serves it.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from pathlib import Path

import pytest
from aiohttp import web

from server.serving import connection_buffers
from server.serving.connection_buffers import TLSSite
from tests.server.serving.test_connection_buffers import _contexts


async def test_this_pythons_sslproto_has_all_that_compact_tls_relies_on() -> None:
    assert connection_buffers._find_sslproto_problems(asyncio.get_running_loop()) == ()


async def _protocol_name(request: web.Request) -> web.Response:
    transport = request.transport
    assert transport is not None
    return web.Response(text=type(transport._ssl_protocol).__name__)  # type: ignore[attr-defined]


async def test_without_it_tls_is_asyncios_own_and_h2_is_not_offered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    fields = (*connection_buffers._SSLPROTO_FIELDS, "_moved_by_a_new_python")
    monkeypatch.setattr(connection_buffers, "_SSLPROTO_FIELDS", fields)
    monkeypatch.setattr(connection_buffers, "_sslproto_problems", None)
    server_context, client_context = await asyncio.to_thread(_contexts, tmp_path)
    server_context.set_alpn_protocols(["h2", "http/1.1"])
    # As server.serving.tls does after a certificate reload: each handshake moves to a newer context,
    # which offers h2 too.
    reloaded, _ = await asyncio.to_thread(_contexts, tmp_path)
    reloaded.set_alpn_protocols(["h2", "http/1.1"])

    def to_reloaded(ssl_object: ssl.SSLObject, server_name: str | None, listening: ssl.SSLContext) -> None:
        ssl_object.context = reloaded

    server_context.sni_callback = to_reloaded
    client_context.set_alpn_protocols(["h2", "http/1.1"])
    app = web.Application()
    app.router.add_get("/", _protocol_name)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    with caplog.at_level(logging.WARNING, logger="server.serving.connection_buffers"):
        await TLSSite(runner, "127.0.0.1", 0, ssl_context=server_context).start()
    try:
        reader, writer = await asyncio.open_connection(
            "127.0.0.1", runner.addresses[0][1], ssl=client_context
        )
        assert writer.get_extra_info("ssl_object").selected_alpn_protocol() == "http/1.1"
        writer.write(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        answer = await asyncio.wait_for(reader.read(), 10)
        writer.close()
    finally:
        await runner.cleanup()
    assert answer.startswith(b"HTTP/1.1 200 OK\r\n")
    assert answer.endswith(b"\r\n\r\nSSLProtocol")
    [warning] = [r.getMessage() for r in caplog.records]
    assert "SSLProtocol()._moved_by_a_new_python" in warning and "HTTP/1.1 only" in warning
