"""GET, LIST and WATCH of one resource from memory, with kube's cacher semantics: which reads the cache
may answer, how long it waits to be fresh, when it hands a read to storage (`Unserved`), and how a
watch starts from the state or from a revision.

kube's code for it is in k8s.io/apiserver pkg/storage/cacher: reads in `delegator/interface.go`
(ShouldDelegateList), `delegator.go` and `watch_cache.go` (waitUntilFreshAndList); watches in
`cacher.go` (Cacher.Watch), `watch_cache.go` (getAllEventsSinceLocked) and `cache_watcher.go`.
docs/architecture.md, "The watch cache", describes how this package is put together.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from apis.meta import errors
from apis.runtime.codec import Codec, DecodeError
from registry.generic.cache.feed import Unserved
from registry.generic.cache.index import ObjectIndex
from registry.generic.cache.stored import StoredObject
from registry.generic.cache.watchers import CacheWatcher
from registry.generic.cache.window import CacheEvent, EventWindow
from registry.generic.options import ListOptions, ObjectList, WatchEvent, WatchOptions
from registry.generic.storage_errors import parse_resource_version
from storage import interface as st
from storage.continuation import InvalidContinue, decode_continue, encode_continue

logger = logging.getLogger(__name__)

SelectableFields = Callable[[Any], dict[str, str]]


class ObjectObserver(Protocol):
    """Told of every object state the cache takes in, as the hub object already decoded for it, so a
    view kept beside the cache (a graceful deletion finisher's deadlines, an allocator's taken
    numbers) costs a call per event and no decoding; a resource without one pays an empty loop."""

    def seen(self, key: str, hub: Any) -> None:
        """A state of the object at `key` (every ADDED and MODIFIED, every object of a fill)."""
        ...

    def gone(self, key: str) -> None:
        """The object at `key` was deleted (or its new state could not be decoded)."""
        ...

    def filled(self, present: Callable[[str], object]) -> None:
        """The cache was (re)filled: `present(key)` is None for a key no longer there."""
        ...


class CacheFeed(Protocol):
    """What a cache's reads ask of what fills it: the group's feed (feed.GroupFeed), or the view of
    it a derived cache reads through (derived.py)."""

    @property
    def ready(self) -> bool: ...

    @property
    def revision(self) -> int:
        """Every change at or below this revision is in the cache."""
        ...

    @property
    def storage(self) -> st.Interface: ...

    async def fresh(self) -> int: ...

    async def reach(self, revision: int) -> None: ...


class ResourceCache:
    def __init__(self, codec: Codec, prefix: str, selectable_fields: SelectableFields) -> None:
        self.codec = codec
        # The resource's key directory: "/<group>/<resource>/".
        self.prefix = prefix
        self.selectable_fields = selectable_fields
        self.index = ObjectIndex()
        self.window = EventWindow()
        self.watchers: set[CacheWatcher] = set()
        self.feed: CacheFeed  # set by the feed that fills this cache
        # Empty for nearly every resource: an empty loop is all that is spent on it per event.
        self.observers: list[ObjectObserver] = []

    # --- filled by the feed ----------------------------------------------------------------------

    def ingest(self, key: str, value: bytes, revision: int) -> StoredObject | None:
        try:
            hub = self.codec.decode(value, revision)
        except DecodeError as e:
            # Read-through answers 500 for this one object; the cache must not stop for the others.
            logger.error("watch cache: cannot decode %s at revision %d: %s", key, revision, e)
            return None
        for observer in self.observers:
            observer.seen(key, hub)
        return StoredObject.from_hub(self.codec, key, hub, self.selectable_fields(hub), keep_hub=False)

    def replace(self, objects: list[StoredObject], revision: int) -> None:
        self.index = ObjectIndex(objects)
        self.window.reset(revision)
        for observer in self.observers:
            observer.filled(self.index.get)

    def apply(self, event: st.Event, now: float) -> CacheEvent | None:
        """Take in one storage event; returns it as the cache saw it (None: undecodable, skipped)."""
        key = event.key
        if event.type is st.EventType.DELETED:
            prev = self.index.remove(key)
            obj = (
                prev.at_revision(event.revision)
                if prev is not None
                else self.ingest(key, event.value, event.revision)
            )
            for observer in self.observers:
                observer.gone(key)
            kind = st.EventType.DELETED
        else:
            obj = self.ingest(key, event.value, event.revision)
            prev = self.index.put(obj) if obj is not None else self.index.remove(key)
            kind = st.EventType.MODIFIED if prev is not None else st.EventType.ADDED
        if obj is None:
            for observer in self.observers:
                observer.gone(key)
            return None
        cached = CacheEvent(kind, event.revision, key, obj, prev)
        self.window.append(cached, now)
        for watcher in self.watchers:
            watcher.dispatch(cached)
        return cached

    def end_watchers(self, reason: str) -> None:
        for watcher in self.watchers:
            watcher.end(reason)
        self.watchers.clear()

    # --- reads -----------------------------------------------------------------------------------

    def _check_ready(self) -> None:
        if not self.feed.ready:
            raise Unserved

    async def get(self, key: str, resource_version: str) -> StoredObject | None:
        """None when absent. "" is a consistent read, "0" any state, N not older than N."""
        self._check_ready()
        rv = parse_resource_version(resource_version)
        if not resource_version:
            await self.feed.fresh()
        elif rv:
            await self.feed.reach(rv)
        return self.index.get(key)

    async def list(self, prefix: str, options: ListOptions) -> ObjectList:
        """kube's ShouldDelegateList, answered from memory where kube's cacher would answer it."""
        self._check_ready()
        if options.continue_token:
            try:
                start, revision = decode_continue(options.continue_token, prefix)
            except InvalidContinue as e:
                raise errors.bad_request(str(e)) from None
            # A negative revision (minted after compaction) means "go on at the newest state".
            return await self._page_at(
                prefix, options, start, revision if revision > 0 else self.feed.revision
            )
        rv = parse_resource_version(options.resource_version)
        match = options.resource_version_match
        if match == "Exact" or (not match and rv and options.limit):
            # Exact, or the legacy rule that a non-zero resourceVersion with a limit reads at it.
            if rv > self.feed.revision:
                await self.feed.reach(rv)
            return await self._page_at(prefix, options, prefix, rv)
        if not options.resource_version:
            await self.feed.fresh()
        elif rv:
            await self.feed.reach(rv)
        return self._page(prefix, options, prefix, self.feed.revision)

    async def _page_at(self, prefix: str, options: ListOptions, start: str, revision: int) -> ObjectList:
        """A page at an older revision exists only while storage still has that revision (kube trims
        its list snapshots at compaction); otherwise storage answers, with its own 410."""
        if revision < self.feed.revision:
            try:
                await self.retained(revision)
            except st.TooOldResourceVersion:
                raise Unserved from None
        return self._page(prefix, options, start, revision)

    async def retained(self, revision: int) -> None:
        """Raise TooOldResourceVersion when storage has compacted `revision` away.

        The window may hold events older than storage's history (a compaction right after a write);
        a watch or list from such a revision must still be refused, as a read at it would be.
        """
        await self.feed.storage.check_retained(revision)

    def _page(self, prefix: str, options: ListOptions, start: str, revision: int) -> ObjectList:
        """Matching objects from `start` on, as they were at `revision`, up to the limit."""
        current = self.feed.revision
        undone: list[CacheEvent] | None = None
        if revision >= current:
            objects: Iterator[StoredObject] = self.index.scan(prefix, start)
            revision = current
        elif self.window.covers(revision):
            undone = self.window.since(revision)
            objects = self.index.scan_at(prefix, start, undone)
        else:
            raise Unserved  # older than the window: storage answers (or says it was compacted)
        predicate, limit = options.predicate, options.limit
        matches = predicate.matches
        everything = predicate.empty
        items: list[StoredObject] = []
        for obj in objects:
            if everything or matches(obj.labels, obj.fields):
                items.append(obj)
                if limit and len(items) == limit:
                    # As the storage path: a token whenever keys remain, counted only without selectors.
                    after = obj.key + "\x00"
                    rest: int | None = None
                    if everything:
                        index = self.index
                        rest = (
                            index.count(prefix, after)
                            if undone is None
                            else index.count_at(prefix, after, undone)
                        )
                        if rest == 0:
                            break
                    elif next(objects, None) is None:
                        break
                    token = encode_continue(after, prefix, revision)
                    return ObjectList(items, str(revision), token, rest)
        return ObjectList(items, str(revision))

    # --- watch -----------------------------------------------------------------------------------

    async def watch(self, prefix: str, options: WatchOptions) -> CacheWatcher:
        """Register a watcher of keys under `prefix`; its queue starts with what it must see first."""
        self._check_ready()
        rv = parse_resource_version(options.resource_version)
        initial = options.send_initial_events if options.send_initial_events is not None else rv == 0
        if initial or not rv:
            # The state (or the start point) must be fresh: "" is consistent, N is not older than N.
            if not options.resource_version:
                await self.feed.fresh()
            elif rv:
                await self.feed.reach(rv)
            return self._watch_from_state(prefix, options, send_state=initial)
        if not self.window.covers(rv):
            if not self.window.evicted:
                # History from before this cache was filled: storage replays it if it still has it
                # (a server restart must not turn every client's resume into a relist).
                raise Unserved
            raise st.TooOldResourceVersion(rv, self.window.oldest_resumable)
        if rv > self.feed.revision:
            await self.feed.reach(rv)
        elif rv < self.feed.revision:
            await self.retained(rv)
        namespace_prefix = "" if prefix == self.prefix else prefix
        watcher = CacheWatcher(options.predicate, namespace_prefix, after=rv)
        for event in self.window.since(rv):
            watcher.dispatch(event)
        self.watchers.add(watcher)
        return watcher

    def _watch_from_state(self, prefix: str, options: WatchOptions, *, send_state: bool) -> CacheWatcher:
        """No await from reading the state to registering: no event can fall between them."""
        revision = self.feed.revision
        namespace_prefix = "" if prefix == self.prefix else prefix
        watcher = CacheWatcher(options.predicate, namespace_prefix, after=revision)
        if send_state:
            matches = watcher.matches
            state = self.index.scan(prefix)
            watcher.queue(WatchEvent("ADDED", obj, revision) for obj in state if matches(obj))
            if options.send_initial_events:
                watcher.queue((WatchEvent("BOOKMARK", None, revision, initial_events_end=True),))
        self.watchers.add(watcher)
        return watcher

    def stop_watching(self, watcher: CacheWatcher) -> None:
        self.watchers.discard(watcher)

    def progress(self, watcher: CacheWatcher) -> int:
        """The revision a bookmark for `watcher` may report: every event up to it was dispatched."""
        return max(self.feed.revision, watcher.after)
