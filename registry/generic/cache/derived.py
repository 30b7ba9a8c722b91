"""The cache of a resource without storage: objects computed from other resources' cache events.

A group describes the computation as a `Derivation` (which derived objects a source event may
change, and what such an object is now); this cache keeps the results in an ObjectIndex and an
EventWindow like a ResourceCache, so GET, LIST (selectors, limit and continue) and WATCH (from a
resourceVersion, with bookmarks) are the ResourceCache's own code. The group's feed tells it of every
source event in revision order, after the source's own cache took it in (feed.py), so a derivation
reads its sources' current state.

One source event can change many derived objects (a topping's new price changes every pizza's menu
item that uses it), and a watch resumed from any resourceVersion it was sent must neither miss nor
repeat one. So derived resourceVersions are not the source revisions themselves: the i-th object
changed by the event at revision R is at `R * SPAN + i`, and "every change up to R" is
`R * SPAN + SPAN - 1`. They are ordered as the source events are; a read "not older than" one waits
for the source revision it came from. Clients treat resourceVersions as opaque, and only compare
those of one resource.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

import orjson

from apis.meta.schemas import OBJECT_META
from apis.runtime.codec import Codec
from registry.generic.cache.resource_cache import ResourceCache
from registry.generic.cache.stored import StoredObject
from registry.generic.cache.watchers import REINITIALIZED
from registry.generic.cache.window import CacheEvent
from registry.generic.keys import object_key, resource_prefix
from storage import interface as st

if TYPE_CHECKING:
    from registry.generic.cache.feed import GroupFeed

# Derived changes one source event may make before the cache gives up telling them one by one (it
# then ends its watches, whose clients list again): far more than a group's objects of one kind.
SPAN = 1_000_000

_META_ORDER = tuple(OBJECT_META["properties"])

# (namespace, name) of a derived object; namespace "" for a cluster-scoped resource.
DerivedName = tuple[str, str]


def _dumps(data: Any) -> bytes:
    """orjson.dumps at its exact size (orjson's own buffer is 4 KiB however small the object), as
    the cache keeps these for as long as it runs."""
    return memoryview(orjson.dumps(data)).tobytes()


def _digest(body: dict[str, Any]) -> bytes:
    """What tells two derivations of an object apart, in 16 bytes rather than the whole encoding."""
    return hashlib.blake2b(orjson.dumps(body), digest_size=16).digest()


def through(revision: int) -> int:
    """The derived resourceVersion that stands for every change up to source `revision`."""
    return revision * SPAN + SPAN - 1


def source_revision(resource_version: int) -> int:
    """The source revision a derived resourceVersion was made at."""
    return resource_version // SPAN


class Derivation(Protocol):
    """A group's computation of a resource from other resources of the group. It may keep state of
    its own (an index from a topping to the pizzas using it), built by `reset` and kept by `changed`."""

    @property
    def sources(self) -> tuple[str, ...]:
        """The resources (plural names) the derived objects are computed from."""
        ...

    def reset(self, sources: Mapping[str, Iterable[StoredObject]]) -> Iterable[DerivedName]:
        """Start again from every current object of every source; returns every derived object's name."""
        ...

    def changed(self, resource: str, event: CacheEvent) -> Iterable[DerivedName]:
        """Take in one event of the source `resource`; returns the derived objects it may change."""
        ...

    def derive(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The derived object now, as a GET in the storage version answers it (pruned, empty
        values left out) but without apiVersion, kind and resourceVersion; None when there is none."""
        ...


class _SourceView:
    """The group's feed as the derived cache's reads see it: its revisions in derived resourceVersions."""

    __slots__ = ("feed",)

    def __init__(self, feed: GroupFeed) -> None:
        self.feed = feed

    @property
    def ready(self) -> bool:
        return self.feed.ready

    @property
    def revision(self) -> int:
        return through(self.feed.revision)

    @property
    def storage(self) -> st.Interface:
        return self.feed.storage

    async def fresh(self) -> int:
        return through(await self.feed.fresh())

    async def reach(self, revision: int) -> None:
        try:
            await self.feed.reach(source_revision(revision))
        except st.FutureRevision as e:
            raise st.FutureRevision(revision, through(e.current)) from None


class DerivedCache(ResourceCache):
    def __init__(self, codec: Codec, derivation: Derivation, sources: Mapping[str, ResourceCache]) -> None:
        super().__init__(codec, resource_prefix(codec.group, codec.kind.resource), self._fields)
        self.derivation = derivation
        self._resource_of = {cache: resource for resource, cache in sources.items()}
        self._sources = dict(sources)
        # A digest of each object's derivation, without resourceVersion: an event only when it changes.
        self._content: dict[str, bytes] = {}
        # Dormant until the resource is first read (`activate`): until then the sources' events cost
        # it nothing, so a group's derived resources do not tax the writes of a server nobody asks
        # them of. Once active it stays so, and is rebuilt on every (re)fill like any cache.
        self.active = False

    def bind(self, feed: GroupFeed) -> None:
        self.feed = _SourceView(feed)

    def _fields(self, hub: Any) -> dict[str, str]:
        return self._fields_of(hub.metadata)

    def _fields_of(self, metadata: Mapping[str, Any]) -> dict[str, str]:
        fields = {"metadata.name": metadata.get("name", "")}
        if self.codec.kind.namespaced:
            fields["metadata.namespace"] = metadata.get("namespace", "")
        return fields

    def _key(self, namespace: str, name: str) -> str:
        kind = self.codec.kind
        return object_key(self.codec.group, kind.resource, namespace if kind.namespaced else "", name)

    def _stored(self, key: str, body: dict[str, Any], resource_version: int) -> StoredObject:
        """The derivation's object as a GET in the storage version answers it: encoded straight
        from its dict (it is already in that form), ObjectMeta's fields in kube's order."""
        codec = self.codec
        metadata = {**body.get("metadata", {}), "resourceVersion": str(resource_version)}
        metadata = {k: metadata[k] for k in _META_ORDER if k in metadata}
        data: dict[str, Any] = {
            "apiVersion": codec.api_version(codec.kind.storage_version),
            "kind": codec.kind.kind,
        }
        data.update(body)
        data["metadata"] = metadata
        encoded = _dumps(data)
        labels = metadata.get("labels") or {}
        return StoredObject(codec, key, labels, self._fields_of(metadata), encoded=encoded)

    # --- filled by the feed ----------------------------------------------------------------------

    def activate(self) -> None:
        """Start deriving, from the sources' state now. The feed applies an event and advances its
        revision without yielding in between, so at any await point the sources hold exactly the
        state at the feed's revision: that is the state, and the revision, the cache starts from (a
        watch from an older resourceVersion is told 410 and lists again)."""
        if not self.active:
            self.active = True
            self.rebuild(source_revision(self.feed.revision))

    def rebuild(self, revision: int) -> None:
        """Everything again from the sources' state at `revision` (the feed (re)filled them)."""
        if not self.active:
            return
        names = self.derivation.reset({r: cache.index.scan("") for r, cache in self._sources.items()})
        resource_version = through(revision)
        objects: list[StoredObject] = []
        content: dict[str, bytes] = {}
        for namespace, name in names:
            body = self.derivation.derive(namespace, name)
            if body is None:
                continue
            key = self._key(namespace, name)
            content[key] = _digest(body)
            objects.append(self._stored(key, body, resource_version))
        self._content = content
        self.replace(objects, resource_version)

    def source_changed(self, source: ResourceCache, event: CacheEvent, now: float) -> None:
        """One source event, after its cache took it in: an event per derived object it changed."""
        if not self.active:
            return
        resource = self._resource_of.get(source)
        if resource is None:
            return
        names = self.derivation.changed(resource, event)
        if not names:
            return
        told = 0
        for namespace, name in sorted(set(names)):
            key = self._key(namespace, name)
            body = self.derivation.derive(namespace, name)
            encoded = _digest(body) if body is not None else None
            if encoded == self._content.get(key):
                continue
            if told == SPAN - 1:
                # No resourceVersion left at this revision: the watches end and their clients list.
                self.end_watchers(REINITIALIZED)
                self.window.reset(through(event.revision))
            quiet = told >= SPAN - 1
            at = through(event.revision) if quiet else event.revision * SPAN + told
            told += 1
            prev: StoredObject | None
            if body is None:
                self._content.pop(key, None)
                prev = self.index.remove(key)
                if prev is None:
                    continue
                obj = prev.at_revision(at)
                kind = st.EventType.DELETED
            else:
                self._content[key] = encoded or b""
                obj = self._stored(key, body, at)
                prev = self.index.put(obj)
                kind = st.EventType.MODIFIED if prev is not None else st.EventType.ADDED
            if quiet:
                continue
            cached = CacheEvent(kind, at, key, obj, prev)
            self.window.append(cached, now)
            for watcher in self.watchers:
                watcher.dispatch(cached)

    # --- reads -----------------------------------------------------------------------------------

    async def retained(self, revision: int) -> None:
        """Nothing of this resource is in storage: the window alone says what can be served."""
