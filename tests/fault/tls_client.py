"""Raw TLS client connections for the fault tests: what an abusive client sends, byte by byte.

aiohttp's client would refuse to send most of it (oversized or malformed heads, half a request), so
these tests speak HTTP/1.1 over ``asyncio.open_connection`` themselves.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import urllib.parse
from dataclasses import dataclass

from tests.fixtures.server import RunningServer

READ_LIMIT = 4 * 1024 * 1024


@dataclass
class RawConnection:
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter

    async def send(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def response_head(self) -> bytes:
        return await self.reader.readuntil(b"\r\n\r\n")

    async def closed_by_server(self) -> bool:
        """Read until the server closes; True when it did (EOF or a reset), False on unexpected data."""
        try:
            data = await self.reader.read(READ_LIMIT)
        except (ConnectionResetError, ssl.SSLError):
            return True
        return data == b""

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(ConnectionError, ssl.SSLError):
            await self.writer.wait_closed()


async def connect(server: RunningServer, context: ssl.SSLContext | None = None) -> RawConnection:
    url = urllib.parse.urlsplit(server.url)
    reader, writer = await asyncio.open_connection(
        url.hostname, url.port, ssl=context or server.ssl_context(), limit=READ_LIMIT
    )
    return RawConnection(reader, writer)


async def connect_plain(server: RunningServer) -> RawConnection:
    """TCP only: a client that never starts the TLS handshake."""
    url = urllib.parse.urlsplit(server.url)
    reader, writer = await asyncio.open_connection(url.hostname, url.port)
    return RawConnection(reader, writer)


def status_of(head: bytes) -> int:
    return int(head.split(b" ", 2)[1])
