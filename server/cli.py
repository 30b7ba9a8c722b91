"""The `pizza-apiserver` command: parse flags, build the config, serve until SIGTERM/SIGINT."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
from collections.abc import Callable

from aiohttp import web

from server.app import build_app
from server.config import Config, build_config, write_admin_kubeconfig
from server.options import Options, parse_args

logger = logging.getLogger("pizza-apiserver")


def _log_level(verbosity: int) -> int:
    """kube's -v: 0 is info; 4 and up (request-level detail in kube) is debug."""
    return logging.DEBUG if verbosity >= 4 else logging.INFO


async def serve(
    options: Options, *, ready: Callable[[str], None] | None = None, stop: asyncio.Event | None = None
) -> None:
    """Serve until `stop` is set (default: SIGINT/SIGTERM); `ready` gets the URL once listening."""
    config: Config = await build_config(options)
    runner: web.AppRunner | None = None
    try:
        app = build_app(config)
        runner = web.AppRunner(app, handle_signals=False, access_log=None, shutdown_timeout=5.0)
        await runner.setup()
        if config.audit is not None:
            await config.audit.start()
        site = web.TCPSite(
            runner, options.bind_address, options.secure_port, ssl_context=config.tls.listening_context
        )
        await site.start()
        port = runner.addresses[0][1]
        host = options.bind_address if options.bind_address not in ("0.0.0.0", "::") else "127.0.0.1"
        url = f"https://{host}:{port}" if ":" not in host else f"https://[{host}]:{port}"
        kubeconfig = await asyncio.to_thread(write_admin_kubeconfig, config, url)
        await config.tls.start()
        storage = "etcd " + ",".join(options.etcd_servers) if options.etcd_servers else "embedded"
        logger.info("Serving securely on %s (storage: %s); admin kubeconfig: %s", url, storage, kubeconfig)
        if ready is not None:
            ready(url)
        stop = stop or _stop_on_signals()
        await stop.wait()
        logger.info("Shutting down")
        if options.shutdown_delay_duration:
            await asyncio.sleep(options.shutdown_delay_duration)
    finally:
        if runner is not None:
            await runner.cleanup()
        await config.close()


def _stop_on_signals() -> asyncio.Event:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    return stop


def main(argv: list[str] | None = None) -> None:
    options = parse_args(argv).complete()
    problems = options.validate()
    if problems:
        for problem in problems:
            print(f"error: {problem}", file=sys.stderr)
        sys.exit(1)
    logging.basicConfig(
        level=_log_level(options.verbosity),
        format="%(asctime)s %(levelname).1s %(name)s] %(message)s",
        stream=sys.stderr,
    )
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(options))
