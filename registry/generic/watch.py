"""Storage events → object watch events, with kube's selector rules and initial-state semantics.

An object that stops matching the selector is reported as DELETED (carrying its last matching state,
at the revision of the change) and one that starts matching as ADDED — the rule of both kube watch
paths (etcd3/watcher.go transform, cacher's convertToWatchEvent) — so a client's view of "what
matches" stays correct.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from registry.generic import paging
from registry.generic.options import ListOptions, WatchEvent, WatchOptions
from registry.generic.storage_errors import parse_resource_version
from storage import interface as st

if TYPE_CHECKING:
    from registry.generic.store import Store

# Not sent to clients: the revision the watch has reached without an event for this watcher (its
# start, or a change filtered out), which is what a BOOKMARK may report.
PROGRESS = "PROGRESS"


def _wants_initial_events(options: WatchOptions, rv: int) -> bool:
    """kube: unset RV = "get state and start at most recent", "0" = "start at any"; both replay state."""
    if options.send_initial_events is not None:
        return options.send_initial_events
    return rv == 0


async def watch_objects(
    store: Store, prefix: str, options: WatchOptions, *, all_namespaces: bool
) -> AsyncIterator[WatchEvent]:
    rv = parse_resource_version(options.resource_version)
    if _wants_initial_events(options, rv):
        # A watch-list with a resourceVersion wants a state not older than it (FutureRevision if the
        # store is behind); the state is read at one revision and the watch resumes right after it.
        initial = ListOptions(
            predicate=options.predicate,
            resource_version=options.resource_version if rv else "",
            resource_version_match="NotOlderThan" if rv else "",
        )
        listed = await paging.list_objects(store, prefix, initial, all_namespaces=all_namespaces)
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
    yield WatchEvent(PROGRESS, None, start)
    async for event in events:
        translated = _translate(store, event, options)
        yield translated or WatchEvent(PROGRESS, None, event.revision)


def _translate(store: Store, event: st.Event, options: WatchOptions) -> WatchEvent | None:
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
