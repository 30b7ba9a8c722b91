"""The whole server picks up a rotated --tls-cert-file/--tls-private-key-file without dropping connections.

The files are laid out the way the kubelet mounts a Secret (`tls.crt -> ..data/tls.crt`, `..data ->
..<generation>`) and rotated the way it rotates them: the new generation is written next to the old
one and the `..data` symlink is swapped in one rename. That is what happens to the serving
certificate in a Deployment (deploy/), and it is the case a naive mtime check on the symlink misses.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import ssl
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509

from server.serving.certs import ensure_self_signed
from server.serving.tls import DEFAULT_CHECK_INTERVAL
from tests.fixtures.server import RunningServer, running_server

GROUP = "restaurant.programming-kubernetes.info"
TOPPINGS = f"/apis/{GROUP}/v1beta1/toppings"
IO_TIMEOUT = 10.0
# Bounded wait for the reload: the server checks the files every DEFAULT_CHECK_INTERVAL seconds.
RELOAD_BOUND = DEFAULT_CHECK_INTERVAL * 3 + 10.0


@dataclass(frozen=True, slots=True)
class SecretVolume:
    """A kubelet-style Secret mount holding a serving certificate and key, plus their issuing CA."""

    root: Path
    issuer_dir: Path

    @property
    def cert(self) -> Path:
        return self.root / "tls.crt"

    @property
    def key(self) -> Path:
        return self.root / "tls.key"

    @property
    def ca(self) -> Path:
        return self.issuer_dir / "ca.crt"

    @classmethod
    def create(cls, root: Path, issuer_dir: Path) -> tuple[SecretVolume, int]:
        volume = cls(root, issuer_dir)
        root.mkdir(parents=True)
        serial = volume._write_generation("..gen1")
        os.symlink("..gen1", root / "..data")
        os.symlink("..data/tls.crt", volume.cert)
        os.symlink("..data/tls.key", volume.key)
        return volume, serial

    def rotate(self, generation: str) -> int:
        """Issue a new serving certificate (same CA, new key and serial) and swap it in atomically."""
        serial = self._write_generation(generation)
        os.symlink(generation, self.root / "..data_tmp")
        os.replace(self.root / "..data_tmp", self.root / "..data")
        return serial

    def _write_generation(self, generation: str) -> int:
        (self.issuer_dir / "apiserver.crt").unlink(missing_ok=True)  # makes ensure_self_signed issue anew
        files = ensure_self_signed(self.issuer_dir, dns_names=[], ip_addresses=[])
        target = self.root / generation
        target.mkdir()
        shutil.copyfile(files.cert_path, target / "tls.crt")
        shutil.copyfile(files.key_path, target / "tls.key")
        return x509.load_pem_x509_certificates(files.cert_path.read_bytes())[0].serial_number


class Connection:
    """One keep-alive HTTP/1.1 connection over TLS, so the test knows which TLS session it uses."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, url: str, context: ssl.SSLContext) -> Connection:
        host, port = url.removeprefix("https://").rsplit(":", 1)
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(host, int(port), ssl=context), IO_TIMEOUT
        )
        return cls(reader, writer)

    @property
    def server_serial(self) -> int:
        der = self.writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
        return x509.load_der_x509_certificate(der).serial_number

    async def get(self, path: str) -> int:
        """Sends a GET and reads the whole reply; returns the status code."""
        self.writer.write(
            f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n\r\n".encode()
        )
        await self.writer.drain()
        head = await asyncio.wait_for(self.reader.readuntil(b"\r\n\r\n"), IO_TIMEOUT)
        lines = head.decode().split("\r\n")
        headers = {k.lower(): v for k, v in (line.split(": ", 1) for line in lines[1:] if line)}
        assert headers.get("connection", "").lower() != "close", headers
        await asyncio.wait_for(self.reader.readexactly(int(headers["content-length"])), IO_TIMEOUT)
        return int(lines[0].split()[1])

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(ssl.SSLError, ConnectionError):
            await asyncio.wait_for(self.writer.wait_closed(), IO_TIMEOUT)


def _client_context(server: RunningServer, volume: SecretVolume) -> ssl.SSLContext:
    """Trusts the serving CA; presents the admin (system:masters) cert the server issued at start."""
    context = ssl.create_default_context(cafile=str(volume.ca))
    context.load_cert_chain(server.cert_dir / "admin.crt", server.cert_dir / "admin.key")
    return context


async def _new_connection_serial(url: str, context: ssl.SSLContext) -> int:
    connection = await Connection.open(url, context)
    try:
        assert await connection.get(TOPPINGS) == 200  # client-cert authentication works on it, too
        return connection.server_serial
    finally:
        await connection.close()


async def test_rotated_serving_cert_is_served_to_new_connections_while_old_ones_keep_working(
    tmp_path: Path,
) -> None:
    # File work off the event loop: the server under test shares it.
    volume, first = await asyncio.to_thread(SecretVolume.create, tmp_path / "secret", tmp_path / "issuer")
    flags = ("--tls-cert-file", str(volume.cert), "--tls-private-key-file", str(volume.key))
    async with running_server(tmp_path / "data", *flags) as server:
        context = await asyncio.to_thread(_client_context, server, volume)
        old = await Connection.open(server.url, context)
        try:
            assert old.server_serial == first
            assert await old.get(TOPPINGS) == 200

            second = await asyncio.to_thread(volume.rotate, "..gen2")
            assert second != first

            async with asyncio.timeout(RELOAD_BOUND):
                while (seen := await _new_connection_serial(server.url, context)) == first:
                    await asyncio.sleep(0.1)
            assert seen == second

            # The connection from before the rotation was neither dropped nor switched.
            assert await old.get(TOPPINGS) == 200
            assert await old.get("/version") == 200
            assert old.server_serial == first
        finally:
            await old.close()
