"""A TCP proxy in front of a real etcd that can lose etcd's answers, or refuse connections.

Why: "the write was sent, the answer never came" is the one storage failure a client cannot resolve
by itself, and only a proxy on the wire produces it on demand against a real etcd: requests still
reach etcd (which applies them), responses are dropped. ``refuse`` is the opposite case: nothing
reaches etcd at all (connection refused), so a write surely did not happen.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator


class BlackholeProxy:
    """Forwards 127.0.0.1:``port`` to ``upstream``; ``drop_responses()``, ``refuse()``, ``heal()``."""

    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.port = 0
        self.dropping = False
        self._server: asyncio.Server | None = None
        self._links: set[asyncio.StreamWriter] = set()
        self._pumps: set[asyncio.Task[None]] = set()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", self.port))
        self.port = sock.getsockname()[1]
        self._server = await asyncio.start_server(self._accept, sock=sock)

    def drop_responses(self) -> None:
        """From now on, etcd's bytes to the client are read and thrown away."""
        self.dropping = True

    async def refuse(self) -> None:
        """Stop listening and cut every link: new connections are refused, as with etcd down."""
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        self._cut()

    async def heal(self) -> None:
        """Cut the links (their HTTP/2 state lost frames) and forward faithfully again."""
        self.dropping = False
        self._cut()
        if self._server is None:
            await self.start()

    async def close(self) -> None:
        await self.refuse()
        for pump in list(self._pumps):
            pump.cancel()
        await asyncio.gather(*self._pumps, return_exceptions=True)

    def _cut(self) -> None:
        for writer in list(self._links):
            writer.transport.abort()
        self._links.clear()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            writer.transport.abort()
            return
        self._links.update((writer, up_writer))
        for task in (
            asyncio.create_task(self._pump(reader, up_writer, responses=False)),
            asyncio.create_task(self._pump(up_reader, writer, responses=True)),
        ):
            self._pumps.add(task)
            task.add_done_callback(self._pumps.discard)

    async def _pump(
        self, source: asyncio.StreamReader, sink: asyncio.StreamWriter, *, responses: bool
    ) -> None:
        with contextlib.suppress(ConnectionError, OSError):
            while data := await source.read(65536):
                if responses and self.dropping:
                    continue
                sink.write(data)
                await sink.drain()
        sink.transport.abort()
        self._links.discard(sink)


@contextlib.asynccontextmanager
async def blackhole_proxy(upstream_url: str) -> AsyncIterator[BlackholeProxy]:
    host, port = upstream_url.removeprefix("http://").rsplit(":", 1)
    proxy = BlackholeProxy(host, int(port))
    await proxy.start()
    try:
        yield proxy
    finally:
        await proxy.close()
