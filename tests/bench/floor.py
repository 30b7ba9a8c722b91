"""The floor: the fastest a Python aiohttp HTTPS server answers these requests on this machine.

A minimal aiohttp handler that returns, for each request, the exact body bytes captured from the
real server for that method, path and query. It does no routing beyond a dict lookup, no
authentication, no storage, no JSON. TLS is set up like server/serving/tls.py's context (TLS >= 1.2,
the same serving certificate and key, ALPN http/1.1, client certificates verified against the
server's client CA, here required) so the handshake and the encryption of the same bytes cost
the same. Driven by the same Go client with the same settings, its figures are the ceiling a
Python server in one process can reach: the table prints each server figure as a fraction of it.

Run as `python -m tests.bench.floor --cert-dir DIR --routes DIR`; it logs the same
"Serving securely on https://..." line as the server, on a free loopback port.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import socket
import ssl
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web

ROUTES_INDEX = "routes.json"


def route_key(method: str, path: str, query: Mapping[str, str]) -> str:
    """How a captured response is found again: method, path and the sorted, decoded query."""
    params = "&".join(f"{k}={v}" for k, v in sorted(query.items()))
    return f"{method.upper()} {path}?{params}"


@dataclass(frozen=True, slots=True)
class Captured:
    status: int
    content_type: str
    body: bytes


class RouteWriter:
    """Stores captured responses under a directory, one file per body plus an index (for the subprocess)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.index: dict[str, dict[str, object]] = {}
        directory.mkdir(parents=True, exist_ok=True)

    def add(self, key: str, response: Captured) -> None:
        name = f"{len(self.index)}.body"
        (self.directory / name).write_bytes(response.body)
        self.index[key] = {"status": response.status, "content_type": response.content_type, "file": name}
        (self.directory / ROUTES_INDEX).write_text(json.dumps(self.index, indent=1))


def load_routes(directory: Path) -> dict[str, Captured]:
    index = json.loads((directory / ROUTES_INDEX).read_text())
    return {
        key: Captured(int(r["status"]), str(r["content_type"]), (directory / str(r["file"])).read_bytes())
        for key, r in index.items()
    }


def build_context(cert_dir: Path) -> ssl.SSLContext:
    """The real server's TLS settings (server/serving/tls.py) with its generated files."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(certfile=cert_dir / "apiserver.crt", keyfile=cert_dir / "apiserver.key")
    context.set_alpn_protocols(["http/1.1"])
    context.load_verify_locations(cafile=cert_dir / "client-ca.crt")
    context.verify_mode = ssl.CERT_REQUIRED
    return context


def build_app(routes: dict[str, Captured]) -> web.Application:
    async def handle(request: web.Request) -> web.Response:
        await request.read()  # a POST/PATCH body is received in full, as the server must
        found = routes.get(route_key(request.method, request.path, request.query))
        if found is None:
            return web.Response(status=404, text="not captured\n")
        return web.Response(status=found.status, body=found.body, content_type=found.content_type)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    return app


async def serve(cert_dir: Path, routes_dir: Path) -> None:
    runner = web.AppRunner(build_app(load_routes(routes_dir)), access_log=None, handle_signals=False)
    await runner.setup()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    site = web.SockSite(runner, sock, ssl_context=build_context(cert_dir))
    await site.start()
    print(
        f"Serving securely on https://127.0.0.1:{sock.getsockname()[1]} (floor)", file=sys.stderr, flush=True
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await runner.cleanup()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cert-dir", type=Path, required=True, help="the real server's <data-dir>/certs")
    parser.add_argument("--routes", type=Path, required=True, help="directory written by RouteWriter")
    args = parser.parse_args()
    asyncio.run(serve(args.cert_dir, args.routes))


if __name__ == "__main__":
    main()
