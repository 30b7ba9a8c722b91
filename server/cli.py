"""The `pizza-apiserver` command: parse flags, build the config, serve until SIGTERM/SIGINT.

With `--workers 1` this process serves. With more, it becomes the supervisor of that many worker
processes (server/supervisor.py), each of which runs `serve` on the same port.
`pizza-apiserver migrate-storage ...` runs the storage version migration instead
(server/migrate_storage/command.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import sys
from collections.abc import Callable

from aiohttp import web

from server.app import build_app
from server.config import Config, build_config, write_admin_kubeconfig
from server.options import Options, parse_args
from server.serving.connection_buffers import TLSSite
from server.serving.http2 import Http2Settings
from server.serving.request_limits import RequestLimits

logger = logging.getLogger("pizza-apiserver")


async def serve(
    options: Options,
    *,
    ready: Callable[[str], None] | None = None,
    stop: asyncio.Event | None = None,
    worker: bool = False,
) -> None:
    """Serve until `stop` is set (default: SIGINT/SIGTERM); `ready` gets the URL once listening.

    `worker`: one of several processes on the port (SO_REUSEPORT); the supervisor, not this process,
    writes the admin kubeconfig and announces the URL once every worker listens.
    """
    config: Config = await build_config(options)
    runner: web.AppRunner | None = None
    try:
        app = build_app(config)
        runner = web.AppRunner(app, handle_signals=False, access_log=None, shutdown_timeout=5.0)
        await runner.setup()
        if config.audit is not None:
            await config.audit.start()
        # asyncio's TLS protocol with a per-thread receive buffer instead of 256 KiB per connection.
        serving = options.serving
        site = TLSSite(
            runner,
            serving.bind_address,
            serving.secure_port,
            ssl_context=config.tls.listening_context,
            reuse_port=worker or None,
            # Go listens with the kernel's somaxconn, aiohttp with 128: 10,000 clients connecting at
            # once (watches opening) overflowed the accept queue into SYN retries and handshake timeouts.
            backlog=socket.SOMAXCONN,
            limits=RequestLimits(serving.read_header_timeout, serving.idle_timeout, serving.max_header_bytes),
            max_connections=serving.max_connections,
            http2=None
            if serving.disable_http2_serving
            else Http2Settings.from_flags(
                serving.http2_max_streams_per_connection, serving.max_header_bytes, serving.idle_timeout
            ),
        )
        await site.start()
        url = server_url(options.serving.bind_address, runner.addresses[0][1])
        if not worker:
            kubeconfig = await asyncio.to_thread(write_admin_kubeconfig, config, url)
        await config.tls.start()
        if not worker:
            logger.info(
                "Serving securely on %s (storage: %s); admin kubeconfig: %s",
                url,
                storage_name(options),
                kubeconfig,
            )
        if ready is not None:
            ready(url)
        stop = stop or _stop_on_signals()
        await stop.wait()
        logger.info("Shutting down")
        if options.generic.shutdown_delay_duration:
            await asyncio.sleep(options.generic.shutdown_delay_duration)
    finally:
        if runner is not None:
            await runner.cleanup()
        await config.close()


def server_url(bind_address: str, port: int) -> str:
    """The URL clients use: the bind address, or loopback when bound to every interface."""
    host = bind_address if bind_address not in ("0.0.0.0", "::") else "127.0.0.1"
    return f"https://{host}:{port}" if ":" not in host else f"https://[{host}]:{port}"


def storage_name(options: Options) -> str:
    return "etcd " + ",".join(options.etcd.etcd_servers) if options.etcd.etcd_servers else "embedded"


def _stop_on_signals() -> asyncio.Event:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    return stop


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["migrate-storage"]:
        from server.migrate_storage.command import main as migrate_storage

        sys.exit(migrate_storage(args[1:]))
    options = parse_args(args).complete()
    problems = options.validate()
    if problems:
        for problem in problems:
            print(f"error: {problem}", file=sys.stderr)
        sys.exit(1)
    logging.basicConfig(
        level=options.logs.level,
        format="%(asctime)s %(levelname).1s %(name)s] %(message)s",
        stream=sys.stderr,
    )
    if options.workers.workers > 1:
        from server.supervisor import supervise

        sys.exit(supervise(options))
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(options))
