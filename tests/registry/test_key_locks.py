"""KeyLocks: writers of one key queue in arrival order; other keys are not held up; nothing leaks."""

from __future__ import annotations

import asyncio

from registry.generic.key_locks import KeyLocks


async def test_one_key_is_held_by_one_writer_at_a_time_in_arrival_order() -> None:
    locks = KeyLocks()
    inside: list[str] = []
    order: list[int] = []

    async def writer(n: int) -> None:
        async with locks.hold("/pizzas/default/a"):
            inside.append("a")
            assert inside.count("a") == 1  # nobody else holds the key
            order.append(n)
            await asyncio.sleep(0.001)
            inside.remove("a")

    await asyncio.gather(*(writer(n) for n in range(20)))
    assert order == list(range(20))
    assert len(locks) == 0


async def test_other_keys_proceed_and_a_failing_writer_releases() -> None:
    locks = KeyLocks()
    held = asyncio.Event()
    release = asyncio.Event()

    async def slow() -> None:
        async with locks.hold("a"):
            held.set()
            await release.wait()

    task = asyncio.create_task(slow())
    await held.wait()
    async with asyncio.timeout(1):
        async with locks.hold("b"):
            pass  # not blocked by "a"
    release.set()
    await task

    try:
        async with locks.hold("a"):
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    async with asyncio.timeout(1):
        async with locks.hold("a"):
            pass
    assert len(locks) == 0
