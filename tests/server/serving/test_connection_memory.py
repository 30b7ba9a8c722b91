"""An idle TLS connection costs the real server far less than asyncio's 256 KiB read buffer.

Memory, not time: the server runs as a subprocess (`pizza-apiserver --workers 1`, its RSS alone),
and this process opens 200 idle TLS connections to it over loopback. Measured: ~288 KB per connection
with asyncio's own TLS protocol, ~26-30 KB with `server.serving.connection_buffers` (about 21 KB of it
is OpenSSL's per-connection state). The threshold, 96 KB, is well above the measured cost and its
noise (the RSS difference over 200 connections is ~6 MB, and moves by a MB or two), and far below
the 256 KiB that a per-connection buffer of asyncio's size alone would add: a regression that brings
back any buffer of 64 KiB or more per connection fails.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bench.bench_connections import close_all, open_tls, server_process, settled_rss, warm_up

CONNECTIONS = 200
MAX_KB_PER_CONNECTION = 96


def _served_through_tls_site() -> bool:
    import server.cli

    return hasattr(server.cli, "TLSSite")


@pytest.mark.skipif(
    not _served_through_tls_site(),
    reason="server/cli.py does not listen through server.serving.connection_buffers.TLSSite yet",
)
def test_idle_tls_connection_costs_well_under_256_kib(tmp_path: Path) -> None:
    with server_process(tmp_path / "data", ("--workers", "1")) as server:
        context = server.client_context()
        warm_up(server, context)
        idle = settled_rss(server)
        sockets = [open_tls(server, context) for _ in range(CONNECTIONS)]
        try:
            with_connections = settled_rss(server)
        finally:
            close_all(sockets)
    per_connection = (with_connections - idle) / CONNECTIONS
    assert per_connection < MAX_KB_PER_CONNECTION, f"{per_connection:.1f} KB per idle TLS connection"
