"""`--workers N`: N server processes on one port, as N kube-apiserver replicas over one storage.

The supervisor (the process the user started) does what must happen once, then starts the workers:

1. It binds the listening address with SO_REUSEPORT but never listens on it. That fixes the port
   (`--secure-port 0` picks one for all workers) and keeps it reserved while workers come and go,
   yet the kernel sends it no connection: only listening sockets join the port's reuseport group.
2. It generates the certificates (workers then find and reuse them) and, on the embedded storage,
   claims the store's lock (a second server on the data dir is refused here, before any worker
   starts); every worker inherits the locked descriptor and shares the store (storage/embedded_lock.py).
3. It makes the directory where every worker keeps its metric values, so that any worker answers
   /metrics for the whole server (server/metrics_multiprocess.py), and removes it at exit.
4. It starts the workers with the "spawn" multiprocessing context: each is a fresh interpreter that
   builds its own config, storage client, watch caches and event loop — nothing half-initialised
   (threads, an event loop, TLS or grpc state) is copied by fork. Starting costs one interpreter
   start-up per worker, once, in parallel.
5. Each worker listens on the port with SO_REUSEPORT, and the kernel spreads new connections evenly
   over the workers' accept queues by a hash of the connection. One listening socket shared by all
   (inherited, every worker accepting) balances badly with asyncio: every worker's loop wakes on each
   connection, and the first to wake accepts up to 100 queued connections in one go, so one worker
   takes most of them.
6. When every worker reported it listens, it writes the admin kubeconfig and logs the one
   "Serving securely on https://HOST:PORT ..." line.

Then it waits. SIGTERM/SIGINT are forwarded to every worker (SIGTERM), which shut down as a single
server does; workers still running after the grace period are killed. A worker that exits on its own
is a failure: the others are stopped and the supervisor exits 1. Workers never outlive the
supervisor: the kernel kills them if it dies (PR_SET_PDEATHSIG), and they stop when their pipe to it
closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import dataclasses
import logging
import multiprocessing
import os
import signal
import socket
import sys
import time
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import Any

from server.cli import _stop_on_signals, serve, server_url, storage_name
from server.config import ServingCerts, prepare_certs, write_admin_kubeconfig_for
from server.metrics_multiprocess import SharedDirectory
from server.options import Options
from storage.embedded_lock import StorageInUse, StoreLock, inherit

logger = logging.getLogger("pizza-apiserver")
START_TIMEOUT = 120.0
# Beyond --shutdown-delay-duration: how long workers get to finish before they are killed.
STOP_GRACE = 30.0
_PR_SET_PDEATHSIG = 1


def supervise(options: Options) -> int:
    """Run `options.workers.workers` workers until a signal (exit 0) or a worker's failure (exit 1)."""
    try:
        placeholder = _reserve_port(options.serving.bind_address, options.serving.secure_port)
    except OSError as err:
        listen = options.serving
        logger.error("cannot listen on %s:%d: %s", listen.bind_address, listen.secure_port, err)
        return 1
    lock: StoreLock | None = None
    try:
        # The lock first: a second server on the data dir must not touch its certificates either.
        if options.etcd.uses_embedded_storage:
            lock = StoreLock.claim(options.generic.data_dir / "storage.db")
        serving = prepare_certs(options)
    except StorageInUse as err:
        logger.error("%s", err)
        placeholder.close()
        return 1
    except BaseException:
        if lock is not None:
            lock.release()
        placeholder.close()
        raise
    port = placeholder.getsockname()[1]
    metrics = SharedDirectory()
    try:
        return _Workers(
            options,
            dataclasses.replace(options, serving=dataclasses.replace(options.serving, secure_port=port)),
            lock,
            serving,
            metrics,
        ).run()
    finally:
        metrics.remove()
        if lock is not None:
            lock.release()
        placeholder.close()


def _reserve_port(address: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)  # as asyncio's workers do
        sock.bind((address, port))
    except BaseException:
        sock.close()
        raise
    return sock


class _Workers:
    """The supervisor's state: the worker processes, their pipes, and the signals received."""

    def __init__(
        self,
        options: Options,
        worker_options: Options,
        lock: StoreLock | None,
        serving: ServingCerts,
        metrics: SharedDirectory,
    ):
        self._options = options
        self._metrics = metrics
        self._worker_options = worker_options
        self._lock = lock
        self._serving = serving
        self._processes: list[BaseProcess] = []
        self._pipes: list[Connection] = []
        self._signals: list[int] = []
        self._wakeup_read, self._wakeup_write = socket.socketpair()

    def run(self) -> int:
        self._wakeup_write.setblocking(False)
        previous_fd = signal.set_wakeup_fd(self._wakeup_write.fileno())
        previous = {sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
        try:
            self._start()
            if not self._wait_until_listening():
                return self._stop(failed=True)
            url = server_url(self._options.serving.bind_address, self._worker_options.serving.secure_port)
            kubeconfig = write_admin_kubeconfig_for(self._options, self._serving, url)
            pids = ", ".join(str(process.pid) for process in self._processes)
            logger.info("%d workers listening (pids %s)", len(self._processes), pids)
            logger.info(
                "Serving securely on %s (storage: %s); admin kubeconfig: %s",
                url,
                storage_name(self._options),
                kubeconfig,
            )
            return self._stop(failed=not self._wait_for_signal())
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            signal.set_wakeup_fd(previous_fd)
            self._wakeup_read.close()
            self._wakeup_write.close()

    def _on_signal(self, signum: int, frame: object) -> None:
        self._signals.append(signum)

    def _start(self) -> None:
        context = multiprocessing.get_context("spawn")
        for index in range(self._options.workers.workers):
            parent, child = context.Pipe()
            process = context.Process(
                target=worker_main,
                args=(self._worker_options, index, self._lock, child, os.getpid()),
                name=f"pizza-apiserver-worker-{index}",
            )
            process.start()
            child.close()
            self._processes.append(process)
            self._pipes.append(parent)

    def _wait_until_listening(self) -> bool:
        """True once every worker reported it listens; False on a signal, a death or the timeout."""
        waiting = dict(zip(self._pipes, self._processes, strict=True))
        deadline = time.monotonic() + START_TIMEOUT
        while waiting:
            ready = self._wait(
                [*waiting, *(p.sentinel for p in waiting.values())], deadline - time.monotonic()
            )
            if self._signals:
                return False
            for pipe in [pipe for pipe in waiting if pipe in ready]:
                try:
                    message = pipe.recv()
                except EOFError:
                    message = ("failed", "it exited")
                if message[0] == "ready":
                    del waiting[pipe]
                    continue
                logger.error("worker %s failed to start: %s", waiting[pipe].name, message[1])
                return False
            if any(process.sentinel in ready for process in waiting.values()):
                return False
            if time.monotonic() > deadline:
                logger.error("workers did not start within %.0f s", START_TIMEOUT)
                return False
        return True

    def _wait_for_signal(self) -> bool:
        """Until a signal (True) or a worker exiting on its own (False)."""
        sentinels = {process.sentinel: process for process in self._processes}
        while not self._signals:
            for sentinel in self._wait(list(sentinels), None):
                process = sentinels[sentinel]
                process.join(0)
                if process.pid is not None:
                    self._metrics.forget(process.pid)
                logger.error(
                    "worker %s (pid %s) exited unexpectedly: code %s",
                    process.name,
                    process.pid,
                    process.exitcode,
                )
                return False
        return True

    def _wait(self, objects: list[Any], timeout: float | None) -> list[Any]:
        """The ready sentinels among `objects`; the wakeup socket is drained, never returned."""
        ready = wait([*objects, self._wakeup_read], timeout if timeout is None else max(timeout, 0.0))
        if self._wakeup_read in ready:
            with contextlib.suppress(BlockingIOError):
                self._wakeup_read.recv(512, socket.MSG_DONTWAIT)
        return [item for item in ready if item is not self._wakeup_read]

    def _stop(self, *, failed: bool) -> int:
        """SIGTERM every live worker, wait for them (killing stragglers); 1 if anything went wrong."""
        for process in self._processes:
            if process.is_alive() and process.pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + self._options.generic.shutdown_delay_duration + STOP_GRACE
        for process in self._processes:
            process.join(max(deadline - time.monotonic(), 0.0))
            if process.is_alive():
                logger.error("worker %s (pid %s) did not stop in time; killing it", process.name, process.pid)
                process.kill()
                process.join(5)
                failed = True
        for pipe in self._pipes:
            pipe.close()
        logger.info("all workers stopped")
        return 1 if failed else 0


# --- in the worker process --------------------------------------------------------------------


def worker_main(
    options: Options, index: int, lock: StoreLock | None, pipe: Connection, supervisor: int
) -> None:
    """A worker's entry point (a spawned interpreter): serve until told to stop, or the supervisor is gone."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != supervisor:  # it died before the line above took effect
        sys.exit(1)
    logging.basicConfig(
        level=options.logs.level,
        format=f"%(asctime)s %(levelname).1s %(name)s] [worker {index}] %(message)s",
        stream=sys.stderr,
    )
    if lock is not None:
        inherit(lock)
    try:
        asyncio.run(_serve_worker(options, pipe))
    except KeyboardInterrupt:
        pass
    except Exception as err:
        logger.exception("worker %d failed", index)
        with contextlib.suppress(OSError):
            pipe.send(("failed", f"{type(err).__name__}: {err}"))
        sys.exit(1)


async def _serve_worker(options: Options, pipe: Connection) -> None:
    stop = _stop_on_signals()
    # The pipe only ever becomes readable when the supervisor closes it (or dies): stop then.
    asyncio.get_running_loop().add_reader(pipe.fileno(), stop.set)
    await serve(options, ready=lambda url: pipe.send(("ready", os.getpid())), stop=stop, worker=True)
