"""Storage events → object watch events, with kube's selector rules and initial-state semantics.

An object that stops matching the selector is reported as DELETED (carrying its last matching state,
at the revision of the change) and one that starts matching as ADDED — the rule of both kube watch
paths (etcd3/watcher.go transform, cacher's convertToWatchEvent) — so a client's view of "what
matches" stays correct.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator
from typing import Any, Protocol

from apis.meta import errors
from apis.meta.errors import GroupResource, StatusError
from apis.runtime.codec import Codec
from apis.runtime.kinds import HubObject
from registry.generic import paging
from registry.generic.cache.stored import StoredObject
from registry.generic.cache.watchers import QUEUE_CAPACITY, STOPPED, CacheWatcher, OpenWatch
from registry.generic.options import ListOptions, WatchEvent, WatchOptions
from registry.generic.storage_errors import interpret, parse_resource_version
from storage import interface as st


class WatchSource(paging.ListSource, Protocol):
    """What a watch read through to storage needs of a resource's Store beyond listing: the codec for
    events' values, the served form of an object, and the resource for errors (store → watch, never
    back)."""

    @property
    def codec(self) -> Codec: ...

    @property
    def resource(self) -> GroupResource: ...

    def stored(self, hub: HubObject, key: str = "") -> StoredObject: ...


logger = logging.getLogger(__name__)

# Not sent to clients: the revision the watch has reached without an event for this watcher (its
# start, or a change filtered out), which is what a BOOKMARK may report.
PROGRESS = "PROGRESS"


def _wants_initial_events(options: WatchOptions, rv: int) -> bool:
    """kube: unset RV = "get state and start at most recent", "0" = "start at any"; both replay state."""
    if options.send_initial_events is not None:
        return options.send_initial_events
    return rv == 0


async def storage_watch_events(
    store: WatchSource, prefix: str, options: WatchOptions, *, all_namespaces: bool
) -> AsyncGenerator[WatchEvent, None]:
    rv = parse_resource_version(options.resource_version)
    if _wants_initial_events(options, rv):
        # A watch-list with a resourceVersion wants a state not older than it (FutureRevision if the
        # store is behind); the state is read at one revision and the watch resumes right after it.
        initial = ListOptions(
            predicate=options.predicate,
            resource_version=options.resource_version if rv else "",
            resource_version_match="NotOlderThan" if rv else "",
        )
        listed = await paging.list_from_storage(store, prefix, initial, all_namespaces=all_namespaces)
        start = int(listed.resource_version)
        for obj in listed.items:
            yield WatchEvent("ADDED", obj, start)
        if options.send_initial_events:
            yield WatchEvent("BOOKMARK", None, start, initial_events_end=True)
    elif rv:
        start = rv
    else:
        start = await store.storage.current_revision()
    events = store.storage.watch(prefix, start)
    try:
        yield WatchEvent(PROGRESS, None, start)
        async for event in events:
            if event.type is st.EventType.PROGRESS:
                yield WatchEvent(PROGRESS, None, event.revision)
                continue
            translated = _translate(store, event, options)
            yield translated or WatchEvent(PROGRESS, None, event.revision)
    finally:
        await events.aclose()


def _translate(store: WatchSource, event: st.Event, options: WatchOptions) -> WatchEvent | None:
    current: Any = store.codec.decode(event.value, event.revision)
    if event.type is st.EventType.DELETED:
        # `value` is the last state; decoded at the delete's revision, so a client can resume there.
        return WatchEvent("DELETED", current, event.revision) if store.matches(current, options) else None
    now = store.matches(current, options)
    if event.type is st.EventType.ADDED or event.prev_value is None:
        return WatchEvent("ADDED", current, event.revision) if now else None
    previous = store.codec.decode(event.prev_value, event.revision)
    before = store.matches(previous, options)
    if now and before:
        return WatchEvent("MODIFIED", current, event.revision)
    if now:
        return WatchEvent("ADDED", current, event.revision)
    if before:
        return WatchEvent("DELETED", previous, event.revision)
    return None


def watch_storage(
    store: WatchSource, prefix: str, options: WatchOptions, *, all_namespaces: bool
) -> OpenWatch:
    """A watch read through to storage (no cache, or the cache cannot serve it): a task pumps the
    translated storage events into the same kind of watcher queue the cache fills, so the HTTP layer
    streams both the same way."""
    watcher = CacheWatcher(options.predicate, "", after=0)
    reached = [0]
    events = storage_watch_events(store, prefix, options, all_namespaces=all_namespaces)

    async def pump() -> None:
        try:
            async for event in events:
                # Storage already cuts off a watcher that stops reading; here the stream only has to
                # keep the queue short, waiting for the HTTP side to drain it.
                while len(watcher.pending) >= QUEUE_CAPACITY // 2 and watcher.ended is None:
                    await asyncio.sleep(0.005)
                reached[0] = max(reached[0], event.revision)
                if event.type == PROGRESS:
                    continue
                obj = store.stored(event.object) if event.object is not None else None
                watcher.offer(WatchEvent(event.type, obj, event.revision, event.initial_events_end))
                if watcher.ended is not None:
                    return
            watcher.end(STOPPED)
        except StatusError as e:
            watcher.fail(e)
        except st.StorageError as e:
            watcher.fail(interpret(e, store.resource, ""))
        except Exception as e:  # a watch must end with an ERROR event, never hang
            logger.exception("watch of %s failed", store.resource)
            watcher.fail(errors.internal_error(str(e)))
        finally:
            await events.aclose()

    task = asyncio.get_running_loop().create_task(pump())

    def stop(_: CacheWatcher) -> None:
        task.cancel()

    return OpenWatch(watcher, lambda _: reached[0], stop)
