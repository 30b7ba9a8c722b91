"""Storage backend benchmark: `python -m tests.bench.bench_storage` (from the repository root).

Starts a private etcd (the test fixture's process code) and an embedded store in a temp dir, runs the
same bounded workload on both at concurrency 1 and 50, and prints one table. Numbers are for
comparing the backends on one machine, not absolute truths: client and server share the 2 cores.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from storage.etcd import EtcdConfig, open_etcd
from storage.interface import Interface, KeyValue
from tests.fixtures.etcd import start_etcd

PREFIX = "/registry/bench.example.com"


@dataclass(frozen=True, slots=True)
class Row:
    backend: str
    operation: str
    concurrency: int
    ops: int
    seconds: float

    @property
    def rate(self) -> float:
        return self.ops / self.seconds if self.seconds else float("inf")


async def run_bounded(count: int, concurrency: int, op: Callable[[int], Awaitable[object]]) -> float:
    """Run op(0..count-1) with at most `concurrency` in flight; seconds taken."""
    next_index = 0

    async def worker() -> None:
        nonlocal next_index
        while next_index < count:
            index = next_index
            next_index += 1
            await op(index)

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(min(concurrency, count))))
    return time.perf_counter() - start


def appending(suffix: bytes) -> Callable[[KeyValue | None], Awaitable[bytes]]:
    async def update(current: KeyValue | None) -> bytes:
        return (current.value if current else b"")[: -len(suffix)] + suffix

    return update


async def bench_backend(name: str, store: Interface, ops: int, value: bytes, concurrency: int) -> list[Row]:
    base = f"/bench/c{concurrency}/"
    rows: list[Row] = []

    def row(operation: str, count: int, seconds: float) -> None:
        rows.append(Row(name, operation, concurrency, count, seconds))

    row("create", ops, await run_bounded(ops, concurrency, lambda i: store.create(f"{base}{i:06d}", value)))
    row("get", ops, await run_bounded(ops, concurrency, lambda i: store.get(f"{base}{i:06d}")))
    pages = max(ops // 10, 1)
    row(
        "list page of 100",
        pages,
        await run_bounded(
            pages, concurrency, lambda i: store.list(base, start_key=f"{base}{(i * 97) % ops:06d}", limit=100)
        ),
    )
    full = max(ops // 200, 1)
    row(f"list all {ops}", full, await run_bounded(full, concurrency, lambda i: store.list(base)))
    row(
        "update (CAS)",
        ops,
        await run_bounded(
            ops, concurrency, lambda i: store.guaranteed_update(f"{base}{i:06d}", appending(b"%06d" % i))
        ),
    )
    contended = max(ops // 4, 1)
    await store.create(f"{base}hot", value)
    row(
        "update (CAS, 1 hot key)",
        contended,
        await run_bounded(
            contended, concurrency, lambda i: store.guaranteed_update(f"{base}hot", appending(b"%06d" % i))
        ),
    )
    row(
        "watch delivery", ops, await watch_delivery(store, f"/bench/w{concurrency}/", ops, value, concurrency)
    )
    return rows


async def watch_delivery(store: Interface, base: str, ops: int, value: bytes, concurrency: int) -> float:
    """Seconds from the first write until a watcher has received all `ops` events."""
    events = store.watch(base, await store.current_revision())
    received = 0

    async def consume() -> None:
        nonlocal received
        async for _ in events:
            received += 1
            if received == ops:
                return

    consumer = asyncio.create_task(consume())
    start = time.perf_counter()
    await run_bounded(ops, concurrency, lambda i: store.create(f"{base}{i:06d}", value))
    await asyncio.wait_for(consumer, 120)
    elapsed = time.perf_counter() - start
    await events.aclose()  # type: ignore[attr-defined]
    return elapsed


def print_table(rows: list[Row]) -> None:
    header = f"{'backend':<9} {'operation':<24} {'conc':>4} {'ops':>6} {'seconds':>8} {'ops/s':>9}"
    print(header)
    print("-" * len(header))
    for r in rows:
        print(
            f"{r.backend:<9} {r.operation:<24} {r.concurrency:>4} {r.ops:>6} {r.seconds:>8.2f} {r.rate:>9.0f}"
        )


async def main(ops: int, value_size: int, concurrencies: list[int]) -> list[Row]:
    from storage.embedded import open_embedded

    value = b"x" * value_size
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="bench-storage-") as tmp:
        # Blocking process start-up runs in a worker thread, off the event loop.
        etcd = await asyncio.to_thread(start_etcd, Path(tmp) / "etcd")
        try:
            etcd_store = await open_etcd(EtcdConfig(servers=[etcd.client_url], prefix=PREFIX))
            embedded_store = await open_embedded(Path(tmp) / "embedded.db", prefix=PREFIX)
            try:
                for concurrency in concurrencies:
                    for name, store in (("etcd", etcd_store), ("embedded", embedded_store)):
                        rows += await bench_backend(name, store, ops, value, concurrency)
            finally:
                await etcd_store.close()
                await embedded_store.close()
        finally:
            await asyncio.to_thread(etcd.kill)
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=2000, help="operations per measurement (default 2000)")
    parser.add_argument("--value-size", type=int, default=1024, help="bytes per value (default 1024)")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 50])
    args = parser.parse_args()
    print_table(asyncio.run(main(args.ops, args.value_size, args.concurrency)))
