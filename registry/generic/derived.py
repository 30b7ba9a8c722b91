"""A resource without storage, computed from other resources of its group (kube's rest.Storage that
metrics-server writes over its own informers): GET, LIST and WATCH from a DerivedCache.

A group declares one in a few lines: its kind (KindInfo with READ_VERBS and stored=False), a
`Derivation` (cache/derived.py), and `DerivedResource(codec, derivation)` in its
GroupInstallation.resources. The server attaches the cache to the group's feed (installation.py),
with or without --watch-cache: the derived objects always come from the sources' caches, as
metrics-server's always come from its informers; --watch-cache=false only leaves the stored
resources' own reads on storage.

There is no storage to fall back on when the cache cannot answer, so what a Store would read
through is answered as kube's cacher answers it: 429 while the cache is (re)filling, 410 for a
resourceVersion older than its window, 504 when it cannot catch up in time.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from apis.meta import errors
from apis.meta.errors import GroupResource, StatusError
from apis.runtime.codec import Codec
from registry.generic.cache.derived import Derivation, DerivedCache
from registry.generic.cache.feed import Unserved
from registry.generic.cache.resource_cache import ResourceCache
from registry.generic.cache.stored import StoredObject
from registry.generic.cache.watchers import OpenWatch
from registry.generic.keys import list_prefix, object_key
from registry.generic.options import ListOptions, ObjectList, WatchOptions
from registry.generic.storage_errors import interpret, parse_resource_version
from storage import interface as st


@dataclass(eq=False)
class DerivedResource:
    """A ResourceStorage (registry/generic/rest.py) over a DerivedCache."""

    codec: Codec
    derivation: Derivation
    field_names: tuple[str, ...] = ()
    cache: DerivedCache | None = None

    @property
    def resource(self) -> GroupResource:
        return GroupResource(self.codec.group, self.codec.kind.resource)

    def attach(self, sources: Mapping[str, ResourceCache]) -> DerivedCache:
        """Make the cache, fed from the given caches of the derivation's sources."""
        self.cache = DerivedCache(self.codec, self.derivation, sources)
        return self.cache

    def _namespace(self, namespace: str) -> str:
        return namespace if self.codec.kind.namespaced else ""

    def _ready_cache(self) -> DerivedCache:
        cache = self.cache
        if cache is None or not cache.feed.ready:
            # kube's cacher before it is ready (ResilientWatchCacheInitialization).
            raise errors.too_many_requests("storage is (re)initializing", 1)
        cache.activate()
        return cache

    def _unserved(self, cache: DerivedCache, resource_version: str, *, historic: bool) -> StatusError:
        """What the cache could not answer: a state it no longer holds, or one it did not reach."""
        if not cache.feed.ready:
            return errors.too_many_requests("storage is (re)initializing", 1)
        rv = parse_resource_version(resource_version)
        if historic:
            return errors.expired(f"too old resource version: {rv} ({cache.window.oldest_resumable})")
        current = cache.feed.revision
        return errors.timeout(f"Too large resource version: {rv or current + 1}, current: {current}", 1)

    async def read(self, namespace: str, name: str, *, resource_version: str = "") -> StoredObject:
        cache = self._ready_cache()
        key = object_key(self.codec.group, self.codec.kind.resource, self._namespace(namespace), name)
        try:
            found = await cache.get(key, resource_version)
        except Unserved:
            raise self._unserved(cache, resource_version, historic=False) from None
        except st.StorageError as e:
            raise interpret(e, self.resource, name) from e
        if found is None:
            raise errors.not_found(self.resource, name)
        return found

    async def read_list(self, namespace: str, options: ListOptions) -> ObjectList:
        cache = self._ready_cache()
        prefix = list_prefix(self.codec.group, self.codec.kind.resource, self._namespace(namespace))
        try:
            return await cache.list(prefix, options)
        except Unserved:
            # Unserved past freshness is a page at a revision the window no longer holds.
            historic = bool(options.continue_token) or _older(cache, options.resource_version)
            raise self._unserved(cache, options.resource_version, historic=historic) from None
        except st.StorageError as e:
            raise interpret(e, self.resource, "") from e

    async def watch(self, namespace: str, options: WatchOptions) -> OpenWatch:
        cache = self._ready_cache()
        prefix = list_prefix(self.codec.group, self.codec.kind.resource, self._namespace(namespace))
        try:
            watcher = await cache.watch(prefix, options)
        except Unserved:
            historic = _older(cache, options.resource_version)
            raise self._unserved(cache, options.resource_version, historic=historic) from None
        except st.StorageError as e:
            raise interpret(e, self.resource, "") from e
        return OpenWatch(watcher, cache.progress, cache.stop_watching)


def _older(cache: DerivedCache, resource_version: str) -> bool:
    rv = parse_resource_version(resource_version)
    return 0 < rv < cache.feed.revision
