"""Real TLS connections against an aiohttp server using the serving context and its reloader."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from cryptography import x509

from server.serving.certs import ensure_client_ca, ensure_self_signed, issue_client_cert, peer_identity
from server.serving.tls import ReloadingTLS, build_server_context

TIMEOUT = 10.0


@dataclass(slots=True)
class Material:
    cert_dir: Path
    ca: Path
    cert: Path
    key: Path
    client_ca: Path
    client_ca_key: Path
    admin_cert: Path
    admin_key: Path


@pytest.fixture
def material(tmp_path: Path) -> Material:
    cert_dir = tmp_path / "certs"
    serving = ensure_self_signed(cert_dir, dns_names=[], ip_addresses=[])
    client_ca, client_ca_key = ensure_client_ca(cert_dir)
    admin_cert, admin_key = issue_client_cert(
        client_ca,
        client_ca_key,
        common_name="admin",
        organizations=["system:masters"],
        out_dir=tmp_path,
        basename="admin",
    )
    return Material(
        cert_dir,
        serving.ca_cert_path,
        serving.cert_path,
        serving.key_path,
        client_ca,
        client_ca_key,
        admin_cert,
        admin_key,
    )


async def _whoami(request: web.Request) -> web.Response:
    ssl_object = request.transport.get_extra_info("ssl_object") if request.transport else None
    der = ssl_object.getpeercert(binary_form=True) if ssl_object else None
    if not der:
        return web.Response(text="anonymous")
    user, groups = peer_identity(der)
    return web.Response(text=f"{user}:{','.join(groups)}")


async def _serve(context: ssl.SSLContext) -> tuple[web.AppRunner, int]:
    app = web.Application()
    app.router.add_get("/whoami", _whoami)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
    await site.start()
    return runner, runner.addresses[0][1]


@pytest.fixture
async def reloading(material: Material) -> AsyncIterator[tuple[ReloadingTLS, int]]:
    tls = await ReloadingTLS.load(material.cert, material.key, [material.client_ca], check_interval=0.05)
    runner, port = await _serve(tls.listening_context)
    try:
        yield tls, port
    finally:
        await tls.stop()
        await runner.cleanup()


def _client_context(material: Material, *, with_cert: bool = False) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=material.ca)
    if with_cert:
        context.load_cert_chain(material.admin_cert, material.admin_key)
    return context


class Conn:
    """One keep-alive HTTP/1.1 connection, so a test knows exactly which TLS session it uses."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, port: int, context: ssl.SSLContext) -> Conn:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection("127.0.0.1", port, ssl=context), TIMEOUT
        )
        return cls(reader, writer)

    def server_serial(self) -> int:
        der = self.writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
        return x509.load_der_x509_certificate(der).serial_number

    async def get(self, path: str) -> tuple[int, str]:
        self.writer.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
        await self.writer.drain()
        head = await asyncio.wait_for(self.reader.readuntil(b"\r\n\r\n"), TIMEOUT)
        lines = head.decode().split("\r\n")
        headers = dict(line.split(": ", 1) for line in lines[1:] if line)
        body = await asyncio.wait_for(self.reader.readexactly(int(headers["Content-Length"])), TIMEOUT)
        return int(lines[0].split()[1]), body.decode()

    async def close(self) -> None:
        self.writer.close()
        # An unclean TLS shutdown by the peer is irrelevant to what these tests check.
        with contextlib.suppress(ssl.SSLError, ConnectionError):
            await asyncio.wait_for(self.writer.wait_closed(), TIMEOUT)


def _serial(path: Path) -> int:
    return x509.load_pem_x509_certificates(path.read_bytes())[0].serial_number


def _renew_serving_cert(material: Material) -> int:
    """Replace the serving cert and key on disk (same CA), as a cert rotation would."""
    material.cert.unlink()
    ensure_self_signed(material.cert_dir, dns_names=["renewed.example"], ip_addresses=[])
    return _serial(material.cert)


async def test_context_is_tls12_plus_with_optional_client_certs_and_http11_alpn(material: Material) -> None:
    context = await asyncio.to_thread(build_server_context, material.cert, material.key, [material.client_ca])
    assert context.minimum_version == ssl.TLSVersion.TLSv1_2
    assert context.verify_mode == ssl.CERT_OPTIONAL
    runner, port = await _serve(context)
    try:
        client = _client_context(material)
        client.set_alpn_protocols(["h2", "http/1.1"])
        conn = await Conn.open(port, client)
        assert conn.writer.get_extra_info("ssl_object").selected_alpn_protocol() == "http/1.1"
        assert await conn.get("/whoami") == (200, "anonymous")
        await conn.close()

        with_cert = await Conn.open(port, _client_context(material, with_cert=True))
        assert await with_cert.get("/whoami") == (200, "admin:system:masters")
        await with_cert.close()

        async with (
            aiohttp.ClientSession() as session,
            session.get(f"https://127.0.0.1:{port}/whoami", ssl=_client_context(material)) as resp,
        ):
            assert (resp.status, await resp.text()) == (200, "anonymous")
    finally:
        await runner.cleanup()


async def test_context_without_client_cas_ignores_client_certs(material: Material) -> None:
    context = await asyncio.to_thread(build_server_context, material.cert, material.key, [])
    assert context.verify_mode == ssl.CERT_NONE
    runner, port = await _serve(context)
    try:
        conn = await Conn.open(port, _client_context(material, with_cert=True))
        assert await conn.get("/whoami") == (200, "anonymous")
        await conn.close()
    finally:
        await runner.cleanup()


async def test_reload_serves_new_cert_to_new_connections_and_keeps_old_ones(
    material: Material, reloading: tuple[ReloadingTLS, int]
) -> None:
    tls, port = reloading
    old_serial = _serial(material.cert)
    old = await Conn.open(port, _client_context(material, with_cert=True))
    assert old.server_serial() == old_serial
    assert await old.get("/whoami") == (200, "admin:system:masters")

    assert not await tls.reload_if_changed()  # nothing changed yet
    new_serial = await asyncio.to_thread(_renew_serving_cert, material)
    assert await tls.reload_if_changed()

    new = await Conn.open(port, _client_context(material, with_cert=True))
    assert new.server_serial() == new_serial != old_serial
    assert await new.get("/whoami") == (200, "admin:system:masters")  # client CA survives the swap
    # The connection accepted before the swap keeps working on its original certificate.
    assert await old.get("/whoami") == (200, "admin:system:masters")
    assert old.server_serial() == old_serial
    await old.close()
    await new.close()


async def test_background_task_picks_up_changes(
    material: Material, reloading: tuple[ReloadingTLS, int]
) -> None:
    tls, port = reloading
    await tls.start()
    new_serial = await asyncio.to_thread(_renew_serving_cert, material)
    async with asyncio.timeout(TIMEOUT):
        while True:
            conn = await Conn.open(port, _client_context(material))
            seen = conn.server_serial()
            await conn.close()
            if seen == new_serial:
                break
            await asyncio.sleep(0.05)


async def test_clients_without_sni_get_the_reloaded_cert(
    material: Material, reloading: tuple[ReloadingTLS, int]
) -> None:
    """The swap happens in the SNI callback: prove OpenSSL calls it when no SNI is sent."""
    tls, port = reloading
    new_serial = await asyncio.to_thread(_renew_serving_cert, material)
    assert await tls.reload_if_changed()

    # Python sends no SNI when connecting to an IP address.
    conn = await Conn.open(port, _client_context(material))
    assert conn.writer.get_extra_info("ssl_object").server_hostname == "127.0.0.1"
    assert conn.server_serial() == new_serial
    await conn.close()

    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl binary not installed")
    proc = await asyncio.create_subprocess_exec(
        openssl,
        "s_client",
        "-connect",
        f"127.0.0.1:{port}",
        "-noservername",
        "-CAfile",
        str(material.ca),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), TIMEOUT)
    text = out.decode(errors="replace")
    served = x509.load_pem_x509_certificate(
        text[
            text.index("-----BEGIN CERTIFICATE-----") : text.index("-----END CERTIFICATE-----") + 25
        ].encode()
    )
    assert served.serial_number == new_serial
    assert "Verify return code: 0 (ok)" in text


async def test_broken_files_keep_the_previous_context_until_fixed(
    material: Material, reloading: tuple[ReloadingTLS, int]
) -> None:
    tls, port = reloading
    old_serial = _serial(material.cert)
    good_cert = material.cert.read_bytes()
    material.cert.write_text("half-written garbage")

    assert not await tls.reload_if_changed()
    conn = await Conn.open(port, _client_context(material))
    assert conn.server_serial() == old_serial
    await conn.close()

    material.cert.write_bytes(good_cert)
    assert await tls.reload_if_changed()  # retried because the broken state was never recorded


async def test_reloaded_client_ca_is_used_to_verify_new_connections(
    material: Material, reloading: tuple[ReloadingTLS, int]
) -> None:
    tls, port = reloading

    def rotate_client_ca() -> None:
        material.client_ca.unlink()
        material.client_ca_key.unlink()
        ensure_client_ca(material.cert_dir)
        issue_client_cert(
            material.client_ca,
            material.client_ca_key,
            common_name="carol",
            organizations=["devs"],
            out_dir=material.admin_cert.parent,
            basename="admin",
        )

    await asyncio.to_thread(rotate_client_ca)
    # Before the reload the server still trusts only the old client CA: the new cert is refused.
    with pytest.raises((ssl.SSLError, ConnectionError, asyncio.IncompleteReadError)):
        conn = await Conn.open(port, _client_context(material, with_cert=True))
        await conn.get("/whoami")  # TLS 1.3: the rejection (alert, then EOF) shows on first read

    assert await tls.reload_if_changed()
    conn = await Conn.open(port, _client_context(material, with_cert=True))
    assert await conn.get("/whoami") == (200, "carol:devs")
    await conn.close()
