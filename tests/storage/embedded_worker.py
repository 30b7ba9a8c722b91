"""A worker OS process for the multi-process embedded-store tests: it opens the store with the lock the
test (playing the supervisor) handed it, and runs commands sent over a pipe, one at a time.

Started with the "spawn" multiprocessing context, as `pizza-apiserver --workers N` starts its workers.
Every command answers ("ok", result) or ("error", exception type name, message).
"""

from __future__ import annotations

import asyncio
import contextlib
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from storage.embedded import StoreLock, open_embedded
from storage.interface import Event, Interface, KeyValue

PREFIX = "/registry/test.example.com"
Summary = tuple[str, str, bytes, int]


def summarize(event: Event) -> Summary:
    return (event.type.value, event.key, event.value, event.revision)


async def increment(store: Interface, key: str, times: int) -> list[int]:
    """`times` read-modify-write increments of an integer value, each retried on conflict."""

    async def plus_one(current: KeyValue | None) -> bytes:
        return str(int(current.value) + 1 if current is not None else 1).encode()

    return [
        (await store.guaranteed_update(key, plus_one, ignore_not_found=True)).mod_revision
        for _ in range(times)
    ]


async def collect(store: Interface, prefix: str, start: int, count: int, timeout: float) -> list[Summary]:
    events = store.watch(prefix, start)
    try:
        async with asyncio.timeout(timeout):
            return [summarize(await anext(events)) for _ in range(count)]
    finally:
        await events.aclose()


async def serve(lock: StoreLock | None, path: Path, conn: Connection, history_limit: int) -> None:
    try:
        store = await open_embedded(path, prefix=PREFIX, lock=lock, history_limit=history_limit)
    except Exception as err:
        conn.send(("error", type(err).__name__, str(err)))
        return
    conn.send(("ok", "open"))
    watches: dict[str, asyncio.Task[list[Summary]]] = {}
    try:
        while True:
            command, *args = await asyncio.to_thread(conn.recv)
            try:
                result: Any
                if command == "stop":
                    break
                if command == "create":
                    result = (await store.create(args[0], args[1])).mod_revision
                elif command == "creates":
                    base, count = args
                    result = [(await store.create(f"{base}{i:04d}", b"x")).mod_revision for i in range(count)]
                elif command == "increment":
                    result = await increment(store, args[0], args[1])
                elif command == "get":
                    result = (await store.get(args[0])).value
                elif command == "current_revision":
                    result = await store.current_revision()
                elif command == "compact":
                    await store.compact(args[0])
                    result = None
                elif command == "watch":  # name, prefix, start, count: collect in the background
                    name, prefix, start, count = args
                    watches[name] = asyncio.create_task(collect(store, prefix, start, count, 30.0))
                    await asyncio.sleep(0)  # the watch is registered before the next command runs
                    result = None
                elif command == "collected":
                    result = await watches.pop(args[0])
                else:
                    raise ValueError(f"unknown command {command}")
                conn.send(("ok", result))
            except Exception as err:
                conn.send(("error", type(err).__name__, str(err)))
    finally:
        for task in watches.values():
            task.cancel()
        await store.close()


def main(lock: StoreLock | None, path: Path, conn: Connection, history_limit: int = 10000) -> None:
    with contextlib.suppress(KeyboardInterrupt, EOFError):
        asyncio.run(serve(lock, path, conn, history_limit))
