"""The watch cache against a real embedded store, below HTTP: what it answers, and when it refuses.

Objects are written straight into storage (as another server, or an older release, would), so each
test sees exactly what the cache's feed sees.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import random
import tracemalloc

import orjson
import pytest

from apis.meta.errors import StatusError
from registry.generic.cache.watchers import TOO_SLOW
from registry.generic.cache.window import EventWindow
from registry.generic.installation import GroupInstallation, attach_watch_cache
from registry.generic.options import ListOptions, Predicate, WatchOptions
from registry.restaurant.install import install
from server.endpoints.query import predicate
from storage.embedded import EmbeddedStorage
from tests.fixtures.objects import stored_topping

GROUP = "restaurant.programming-kubernetes.info"
V1B1 = f"{GROUP}/v1beta1"


def key(name: str) -> str:
    return f"/{GROUP}/toppings/{name}"


@pytest.fixture
def storage(embedded_storage: EmbeddedStorage) -> EmbeddedStorage:
    return embedded_storage


async def cached(storage: EmbeddedStorage) -> GroupInstallation:
    installation = install(storage)
    feed = attach_watch_cache(installation)
    feed.start()
    assert await feed.wait_ready(10)
    return installation


async def stop(installation: GroupInstallation) -> None:
    cache = installation.stores["toppings"].cache
    assert cache is not None
    await cache.feed.stop()


async def drain(watcher, count: int, timeout: float = 5.0) -> list:
    """Wait until `count` events are queued (nobody writes them out here)."""
    async with asyncio.timeout(timeout):
        while len(watcher.pending) < count and watcher.ended is None:
            watcher.wakeup.clear()
            await watcher.wakeup.wait()
    return list(watcher.pending)


async def test_cache_answers_byte_for_byte_what_storage_answers(storage: EmbeddedStorage) -> None:
    for name, cost in (("basil", 1), ("ham", 2.5), ("tomato", 3)):
        await storage.create(
            key(name), stored_topping(name, cost, menu="classic" if name != "ham" else "meat")
        )
    plain = install(storage)  # no cache: reads through
    installation = await cached(storage)
    try:
        fast, slow = installation.stores["toppings"], plain.stores["toppings"]
        for version in ("v1alpha1", "v1beta1"):
            assert (await fast.read("", "ham")).json(version) == (await slow.read("", "ham")).json(version)
            for options in (
                ListOptions(),
                ListOptions(limit=2),
                ListOptions(predicate=predicate({"labelSelector": "menu=classic"}, ["metadata.name"])),
            ):
                a, b = await fast.read_list("", options), await slow.read_list("", options)
                assert [o.json(version) for o in a.items] == [o.json(version) for o in b.items]
                assert (a.resource_version, a.continue_token, a.remaining_item_count) == (
                    b.resource_version,
                    b.continue_token,
                    b.remaining_item_count,
                )
        # A continue token minted by one path is honoured by the other, at the same revision.
        first = await fast.read_list("", ListOptions(limit=1))
        rest = await slow.read_list("", ListOptions(continue_token=first.continue_token))
        assert [o.name for o in rest.items] == ["ham", "tomato"]
    finally:
        await stop(installation)


async def test_pages_read_at_their_revision_while_writes_go_on(storage: EmbeddedStorage) -> None:
    for name in ("a", "b", "c", "d"):
        await storage.create(key(name), stored_topping(name))
    installation = await cached(storage)
    try:
        toppings = installation.stores["toppings"]
        first = await toppings.read_list("", ListOptions(limit=2))
        # After the first page: one deleted before the cursor, one after, one created, one changed.
        await storage.delete(key("a"))
        await storage.delete(key("c"))
        await storage.create(key("bb"), stored_topping("bb"))
        await storage.guaranteed_update(key("d"), lambda kv: _cost(kv, 9))
        assert await toppings.cache.feed.wait_for(await storage.current_revision())
        rest = await toppings.read_list("", ListOptions(continue_token=first.continue_token))
        assert [o.name for o in rest.items] == ["c", "d"]
        assert orjson.loads(rest.items[1].json("v1beta1"))["spec"]["cost"] == 1
        assert rest.resource_version == first.resource_version
        now = await toppings.read_list("", ListOptions())
        assert [o.name for o in now.items] == ["b", "bb", "d"]
    finally:
        await stop(installation)


async def test_pages_at_an_older_revision_count_what_remains_as_storage_does(
    storage: EmbeddedStorage,
) -> None:
    """remainingItemCount of pages read at the first page's revision after creates, deletes and
    updates on both sides of every cursor: the cache's (counted, not walked) equals storage's."""
    rng = random.Random(8)
    names = [f"t{i:02}" for i in range(30)]
    for name in names[::2]:
        await storage.create(key(name), stored_topping(name))
    plain = install(storage)  # no cache: reads through
    installation = await cached(storage)
    try:
        fast, slow = installation.stores["toppings"], plain.stores["toppings"]
        first = await fast.read_list("", ListOptions(limit=3))
        present = set(names[::2])
        for name in rng.sample(names, 20):
            if name in present:
                if rng.random() < 0.5:
                    await storage.delete(key(name))
                    present.discard(name)
                else:
                    await storage.guaranteed_update(key(name), lambda kv: _cost(kv, 7))
            else:
                await storage.create(key(name), stored_topping(name))
                present.add(name)
        assert await fast.cache.feed.wait_for(await storage.current_revision())
        token, pages = first.continue_token, 0
        while token:
            a = await fast.read_list("", ListOptions(limit=3, continue_token=token))
            b = await slow.read_list("", ListOptions(limit=3, continue_token=token))
            assert [o.name for o in a.items] == [o.name for o in b.items]
            assert (a.continue_token, a.remaining_item_count) == (b.continue_token, b.remaining_item_count)
            token, pages = a.continue_token, pages + 1
        assert pages == 4  # 15 objects at the first page's revision, 3 a page
    finally:
        await stop(installation)


async def _cost(kv, cost: float) -> bytes:
    data = orjson.loads(kv.value)
    data["spec"]["cost"] = cost
    return orjson.dumps(data)


async def test_watch_resumes_inside_the_window_and_expires_outside_it(storage: EmbeddedStorage) -> None:
    installation = await cached(storage)
    try:
        toppings = installation.stores["toppings"]
        cache = toppings.cache
        cache.window = EventWindow(cache.feed.revision, fresh_for=0, min_capacity=4, max_capacity=4)
        revisions = [
            (await storage.create(key(f"t{i}"), stored_topping(f"t{i}"))).mod_revision for i in range(8)
        ]
        assert await cache.feed.wait_for(revisions[-1])
        # The window holds the last four events: resuming from the fourth-newest revision works...
        opened = await toppings.watch("", WatchOptions(resource_version=str(revisions[3])))
        events = await drain(opened.watcher, 4)
        assert [e.revision for e in events] == revisions[4:]
        assert [e.type for e in events] == ["ADDED"] * 4
        opened.stop(opened.watcher)
        # ...one older is 410 Expired, as kube's cacher answers a revision older than its window.
        with pytest.raises(StatusError) as expired:
            await toppings.watch("", WatchOptions(resource_version=str(revisions[2])))
        assert expired.value.code == 410
        assert expired.value.message == f"too old resource version: {revisions[2]} ({revisions[3]})"
    finally:
        await stop(installation)


async def test_a_watcher_that_cannot_keep_up_is_ended_and_the_others_are_not(
    storage: EmbeddedStorage,
) -> None:
    installation = await cached(storage)
    try:
        toppings = installation.stores["toppings"]
        slow = await toppings.watch("", WatchOptions(resource_version=str(toppings.cache.feed.revision)))
        steady = await toppings.watch("", WatchOptions(resource_version=str(toppings.cache.feed.revision)))
        slow.watcher.capacity = 3
        for i in range(6):
            await storage.create(key(f"t{i}"), stored_topping(f"t{i}"))
        events = await drain(steady.watcher, 6)
        assert [e.object.name for e in events] == [f"t{i}" for i in range(6)]
        assert slow.watcher.ended == TOO_SLOW and not slow.watcher.pending
        assert steady.watcher.ended is None
        assert slow.watcher not in toppings.cache.watchers or slow.watcher.ended
    finally:
        await stop(installation)


async def test_selectors_turn_changes_into_added_and_deleted(storage: EmbeddedStorage) -> None:
    await storage.create(key("basil"), stored_topping("basil", menu="classic"))
    installation = await cached(storage)
    try:
        toppings = installation.stores["toppings"]
        options = WatchOptions(
            predicate=Predicate(labels=predicate({"labelSelector": "menu=classic"}, []).labels),
            resource_version=str(toppings.cache.feed.revision),
        )
        opened = await toppings.watch("", options)
        await storage.guaranteed_update(key("basil"), lambda kv: _relabel(kv, "fancy"))
        await storage.create(key("ham"), stored_topping("ham", menu="fancy"))
        left = await storage.guaranteed_update(key("basil"), lambda kv: _relabel(kv, "classic"))
        events = await drain(opened.watcher, 2)
        assert [(e.type, e.object.name) for e in events] == [("DELETED", "basil"), ("ADDED", "basil")]
        # Leaving the selector reports the last matching state at the revision of the change.
        gone = orjson.loads(events[0].object.json("v1beta1"))
        assert gone["metadata"]["labels"] == {"menu": "classic"}
        assert int(gone["metadata"]["resourceVersion"]) == events[0].revision < left.mod_revision
    finally:
        await stop(installation)


async def _relabel(kv, menu: str) -> bytes:
    data = orjson.loads(kv.value)
    data["metadata"]["labels"] = {"menu": menu}
    return orjson.dumps(data)


async def test_consistent_reads_wait_for_progress_not_for_own_writes(storage: EmbeddedStorage) -> None:
    installation = await cached(storage)
    try:
        toppings = installation.stores["toppings"]
        feed = toppings.cache.feed
        # A write outside the group moves the store's revision but never reaches this feed's watch.
        elsewhere = await storage.create("/other.example.com/things/x", b"{}")
        assert feed.revision < elsewhere.mod_revision
        reached = await feed.fresh()
        assert reached == elsewhere.mod_revision <= feed.revision
        listed = await toppings.read_list("", ListOptions())
        assert int(listed.resource_version) >= elsewhere.mod_revision
        # A pizza write advances the toppings cache too: one feed per group.
        pizza = orjson.dumps(
            {"apiVersion": V1B1, "kind": "Pizza", "metadata": {"name": "p", "namespace": "default"}}
        )
        written = await storage.create(f"/{GROUP}/pizzas/default/p", pizza)
        assert await feed.wait_for(written.mod_revision)
        assert (
            installation.stores["toppings"].cache.progress((await toppings.watch("", WatchOptions())).watcher)
            >= written.mod_revision
        )
    finally:
        await stop(installation)


async def test_a_cold_cache_after_restart_serves_the_same_and_refuses_older_resumes(
    storage: EmbeddedStorage,
) -> None:
    installation = await cached(storage)
    toppings = installation.stores["toppings"]
    before = (await storage.create(key("basil"), stored_topping("basil"))).mod_revision
    await storage.create(key("ham"), stored_topping("ham"))
    await stop(installation)
    restarted = await cached(storage)
    try:
        toppings = restarted.stores["toppings"]
        listed = await toppings.read_list("", ListOptions())
        assert [o.name for o in listed.items] == ["basil", "ham"]
        # The new cache's history starts at its list; an older resume is replayed from storage,
        # which still has it, rather than sending every client back to a relist.
        resumed = await toppings.watch("", WatchOptions(resource_version=str(before)))
        [added] = await drain(resumed.watcher, 1)
        assert (added.type, added.object.name) == ("ADDED", "ham")
        resumed.stop(resumed.watcher)
        opened = await toppings.watch("", WatchOptions(resource_version=listed.resource_version))
        assert opened.watcher in toppings.cache.watchers
        await storage.delete(key("ham"))
        [deleted] = await drain(opened.watcher, 1)
        assert (deleted.type, deleted.object.name) == ("DELETED", "ham")
        # Once the compaction took that history away, the resume is 410 and the client re-lists.
        await storage.compact(await storage.current_revision())
        with pytest.raises(StatusError) as expired:
            resumed = await toppings.watch("", WatchOptions(resource_version=str(before)))
            await drain(resumed.watcher, 1)
            raise resumed.watcher.error or AssertionError("no error")
        assert expired.value.code == 410
    finally:
        await stop(restarted)


# What the menu (registry/restaurant/menu.py) adds per pizza: a menu item held as bytes, and the
# menu's own state (each pizza's toppings, each topping's pizzas) that keeps a topping's price
# change O(pizzas using it).
MENU_ITEM_BYTES = 1536


@pytest.mark.parametrize("menu", [False, True], ids=["stores", "with-menu"])
async def test_cached_objects_cost_at_most_twice_their_encoded_size(
    storage: EmbeddedStorage, menu: bool
) -> None:
    """The cache holds bytes, not object graphs (measured with tracemalloc: every Python allocation
    the fill leaves behind, index and window included); the derived menu costs a bounded amount
    more per pizza."""
    for i in range(2000):
        body = {
            "apiVersion": V1B1,
            "kind": "Pizza",
            "metadata": {
                "name": f"pizza-{i:05d}",
                "namespace": "default",
                "uid": f"6c1f{i:08d}-9a4b-4c1e-8f3a-2d0e5b7c9a11",
                "creationTimestamp": "2026-11-23T07:30:00Z",
                "generation": 1,
            },
            "spec": {"toppings": [{"name": "tomato", "quantity": 1}, {"name": "mozzarella", "quantity": 2}]},
        }
        await storage.create(f"/{GROUP}/pizzas/default/pizza-{i:05d}", orjson.dumps(body))
    installation = install(storage)
    if not menu:
        installation = dataclasses.replace(installation, resources={})
    gc.collect()
    tracemalloc.start()
    try:
        feed = attach_watch_cache(installation)
        feed.start()
        assert await feed.wait_ready(30)
        if menu:  # a derived resource starts deriving when it is first read
            listed = await installation.resources["menuitems"].read_list("", ListOptions())
            assert len(listed.items) == 2000
        gc.collect()
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    try:
        cache = installation.stores["pizzas"].cache
        encoded = sum(len(obj.json("v1beta1")) for obj in cache.index.scan(cache.prefix))
        assert len(cache.index) == 2000
        assert held <= 2 * encoded + (2000 * MENU_ITEM_BYTES if menu else 0), (held, encoded)
    finally:
        await feed.stop()
