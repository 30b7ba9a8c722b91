"""Connection hygiene under abuse, as Go's http.Server in kube: timeouts, header limits, a connection cap.

Each test runs the real server over real TLS on loopback with short timeouts (flags), and a raw TLS
client that misbehaves on purpose. Bounded: at most a few dozen connections and a few seconds each.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import urllib.parse
import warnings
from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest

from tests.fault.tls_client import connect, connect_plain, status_of
from tests.fixtures.server import RunningServer, running_server

# Generous bounds for a loaded machine: the server's own timeouts below are 1 s.
BOUND = 30.0
HEALTHZ = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
TOPPINGS = "/apis/restaurant.programming-kubernetes.info/v1beta1/toppings"


@pytest.fixture
async def strict_server(tmp_path: Path) -> AsyncIterator[RunningServer]:
    flags = ("--read-header-timeout=1s", "--idle-timeout=1s", "--max-connections=8")
    async with running_server(tmp_path / "data", *flags) as server:
        yield server


def _no_tracebacks(caplog: pytest.LogCaptureFixture) -> None:
    noisy = [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    assert noisy == [], [r.getMessage() for r in noisy]


async def test_slowloris_is_cut_off_after_the_header_timeout(strict_server: RunningServer) -> None:
    conn = await connect(strict_server)
    await conn.send(b"GET /healthz HTTP/1.1\r\n")

    async def dribble() -> None:
        for _ in range(int(BOUND * 5)):
            await conn.send(b"X")
            await asyncio.sleep(0.2)

    dribbling = asyncio.create_task(dribble())
    try:
        async with asyncio.timeout(BOUND):
            assert await conn.closed_by_server()
    finally:
        dribbling.cancel()
        await asyncio.gather(dribbling, return_exceptions=True)
        await conn.close()


async def test_idle_keep_alive_connections_are_closed(strict_server: RunningServer) -> None:
    conn = await connect(strict_server)
    await conn.send(HEALTHZ)
    head = await conn.response_head()
    assert status_of(head) == 200
    await conn.reader.readexactly(2)  # "ok"
    async with asyncio.timeout(BOUND):
        assert await conn.closed_by_server()
    await conn.close()


async def test_a_client_that_never_starts_tls_is_dropped(strict_server: RunningServer) -> None:
    conn = await connect_plain(strict_server)
    async with asyncio.timeout(BOUND):
        assert await conn.closed_by_server()
    await conn.close()


async def test_connections_over_the_cap_are_refused_and_capacity_returns(
    strict_server: RunningServer,
) -> None:
    held = [await connect(strict_server) for _ in range(8)]
    for conn in held:  # every one completed its handshake and is served
        await conn.send(HEALTHZ)
        assert status_of(await conn.response_head()) == 200
        await conn.reader.readexactly(2)
    with pytest.raises((ConnectionError, ssl.SSLError, asyncio.IncompleteReadError, OSError)):
        async with asyncio.timeout(BOUND):
            extra = await connect(strict_server)
            await extra.send(HEALTHZ)
            await extra.response_head()
    await held.pop().close()
    async with asyncio.timeout(BOUND):
        while True:  # the server notices the close a moment later
            try:
                again = await connect(strict_server)
                await again.send(HEALTHZ)
                assert status_of(await again.response_head()) == 200
                await again.close()
                break
            except (ConnectionError, ssl.SSLError, asyncio.IncompleteReadError):
                await asyncio.sleep(0.1)
    for conn in held:
        await conn.close()


async def test_heads_up_to_1_mib_are_served_and_larger_get_431(
    embedded_server: RunningServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    # A 100 KB URL (aiohttp alone stops at 8,190 bytes): kube's answer, a 404 Status, not a 400.
    conn = await connect(embedded_server)
    await conn.send(f"GET {TOPPINGS}/{'a' * 100_000} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    head = await conn.response_head()
    assert status_of(head) == 404, head
    length_header = next(h for h in head.split(b"\r\n") if h.lower().startswith(b"content-length"))
    length = int(length_header.split(b":")[1])
    assert orjson.loads(await conn.reader.readexactly(length))["reason"] == "NotFound"
    await conn.close()

    # 900 KB of headers together: served.
    headers = b"".join(b"X-Filler-%d: %s\r\n" % (i, b"v" * 8000) for i in range(110))
    conn = await connect(embedded_server)
    await conn.send(b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + headers + b"\r\n")
    assert status_of(await conn.response_head()) == 200
    await conn.close()

    # Over 1 MiB + 4 KiB: Go's plain-text 431, and the connection is closed.
    for _ in range(3):
        headers = b"".join(b"X-Filler-%d: %s\r\n" % (i, b"v" * 8000) for i in range(140))
        conn = await connect(embedded_server)
        await conn.send(b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + headers + b"\r\n")
        head = await conn.response_head()
        assert head.startswith(b"HTTP/1.0 431 Request Header Fields Too Large\r\n"), head
        assert await conn.reader.read() == b"431 Request Header Fields Too Large"
        await conn.close()

    too_large = [r for r in caplog.records if "431" in r.getMessage()]
    assert len(too_large) == 1, "one rate-limited line for three refusals"
    _no_tracebacks(caplog)


async def test_malformed_requests_get_400_without_a_traceback(
    embedded_server: RunningServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    for garbage in (b"\x16\x03\x01 not http\r\n\r\n", b"GET / HTTP/1.1\r\nBad Header\r\n\r\n"):
        conn = await connect(embedded_server)
        await conn.send(garbage)
        head = await conn.response_head()
        assert status_of(head) == 400, head
        await conn.close()
    _no_tracebacks(caplog)


def _client(maximum: ssl.TLSVersion, ciphers: str | None = None) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.maximum_version = maximum
    if ciphers:
        context.set_ciphers(ciphers)
    return context


async def _handshake(server: RunningServer, context: ssl.SSLContext) -> str | None:
    """The negotiated cipher, or None when the server refused every one offered."""
    try:
        conn = await connect(server, context)
    except (ssl.SSLError, ConnectionError):
        return None
    cipher = conn.writer.get_extra_info("cipher")
    await conn.close()
    return cipher[0] if cipher else None


async def test_tls12_offers_gos_default_suites_only(embedded_server: RunningServer) -> None:
    tls12 = ssl.TLSVersion.TLSv1_2
    # Go's defaults (crypto/tls defaultCipherSuites), ECDSA as the generated serving key is.
    for name in ("ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-ECDSA-CHACHA20-POLY1305", "ECDHE-ECDSA-AES128-SHA"):
        assert await _handshake(embedded_server, _client(tls12, name)) == name
    # CBC with SHA-256/384: OpenSSL's defaults offer them, Go's do not.
    for name in ("ECDHE-ECDSA-AES128-SHA256", "ECDHE-ECDSA-AES256-SHA384"):
        assert await _handshake(embedded_server, _client(tls12, name)) is None


async def test_tls_flags_choose_suites_and_the_minimum_version(tmp_path: Path) -> None:
    flags = ("--tls-cipher-suites=TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "--tls-min-version=VersionTLS12")
    async with running_server(tmp_path / "a", *flags) as server:
        tls12 = ssl.TLSVersion.TLSv1_2
        assert await _handshake(server, _client(tls12)) == "ECDHE-ECDSA-AES256-GCM-SHA384"
        assert await _handshake(server, _client(tls12, "ECDHE-ECDSA-AES128-GCM-SHA256")) is None
    async with running_server(tmp_path / "b", "--tls-min-version=VersionTLS13") as server:
        assert await _handshake(server, _client(ssl.TLSVersion.TLSv1_2)) is None
        assert await _handshake(server, _client(ssl.TLSVersion.TLSv1_3)) is not None


async def _s_client(server: RunningServer, *args: str) -> bool:
    """Whether the real ``openssl s_client`` completes a handshake with these options."""
    url = urllib.parse.urlsplit(server.url)
    process = await asyncio.create_subprocess_exec(
        "openssl",
        "s_client",
        "-connect",
        f"{url.hostname}:{url.port}",
        *args,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    async with asyncio.timeout(BOUND):
        output, _ = await process.communicate()
    # s_client prints "Cipher is (NONE)" or "no peer certificate available" after a refused handshake.
    return process.returncode == 0 and b"Cipher is (NONE)" not in output and b"Server certificate" in output


async def _rsa_serving_flags(directory: Path) -> tuple[str, ...]:
    """An RSA serving certificate: with TLS 1.2 an ECDSA one also needs its own curve among the
    client's groups, which would blur what the key exchange groups alone allow."""
    directory.mkdir(parents=True)
    cert, key = directory / "tls.crt", directory / "tls.key"
    process = await asyncio.create_subprocess_exec(
        "openssl",
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "1",
        "-subj",
        "/CN=127.0.0.1",
        "-keyout",
        str(key),
        "-out",
        str(cert),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    async with asyncio.timeout(BOUND):
        assert await process.wait() == 0
    return (f"--tls-cert-file={cert}", f"--tls-private-key-file={key}")


@pytest.mark.parametrize("version", ["-tls1_3", "-tls1_2"])
async def test_key_exchange_groups_are_gos_defaults(tmp_path: Path, version: str) -> None:
    async with running_server(tmp_path / "data", *await _rsa_serving_flags(tmp_path / "rsa")) as server:
        # Go's defaultCurvePreferences: X25519, P-256, P-384, P-521 (plus ML-KEM hybrids Go ≥ 1.24 has).
        for group in ("X25519", "P-256", "P-384", "P-521"):
            assert await _s_client(server, version, "-groups", group), group
        # X448: OpenSSL's default list offers it, Go never does.
        assert not await _s_client(server, version, "-groups", "X448")


async def test_tls_curve_preferences_narrow_the_groups(tmp_path: Path) -> None:
    flags = (*await _rsa_serving_flags(tmp_path / "rsa"), "--tls-curve-preferences=24")  # P-384 only
    async with running_server(tmp_path / "data", *flags) as server:
        for version in ("-tls1_3", "-tls1_2"):
            assert await _s_client(server, version, "-groups", "P-384")
            assert not await _s_client(server, version, "-groups", "X25519:P-256:P-521")


def _old_client(version: ssl.TLSVersion) -> ssl.SSLContext:
    """A client that speaks only ``version`` and allows what OpenSSL's security level 1 forbids, so a
    refused handshake is the server's doing."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        context = _client(version, "DEFAULT:@SECLEVEL=0")
        context.minimum_version = version
    return context


@pytest.mark.parametrize("version", [ssl.TLSVersion.TLSv1, ssl.TLSVersion.TLSv1_1])
async def test_tls10_and_11_are_refused_by_default(
    embedded_server: RunningServer, version: ssl.TLSVersion
) -> None:
    assert await _handshake(embedded_server, _old_client(version)) is None
    assert not await _s_client(
        embedded_server,
        "-tls1" if version == ssl.TLSVersion.TLSv1 else "-tls1_1",
        "-cipher",
        "DEFAULT:@SECLEVEL=0",
    )


async def test_tls10_is_served_with_min_version_tls10(tmp_path: Path) -> None:
    async with running_server(tmp_path / "data", "--tls-min-version=VersionTLS10") as server:
        for version in (ssl.TLSVersion.TLSv1, ssl.TLSVersion.TLSv1_1):
            conn = await connect(server, _old_client(version))
            try:
                ssl_object = conn.writer.get_extra_info("ssl_object")
                assert (
                    ssl_object.version()
                    == {ssl.TLSVersion.TLSv1: "TLSv1", ssl.TLSVersion.TLSv1_1: "TLSv1.1"}[version]
                )
                await conn.send(HEALTHZ)
                assert (await conn.response_head()).startswith(b"HTTP/1.1 200")
            finally:
                await conn.close()
        assert await _s_client(server, "-tls1", "-cipher", "DEFAULT:@SECLEVEL=0")
        # Go's suites still rule: a TLS 1.0 client offering only a suite outside them is refused.
        assert await _handshake(server, _client(ssl.TLSVersion.TLSv1_2, "ECDHE-ECDSA-AES128-SHA256")) is None
