"""The generic Store: CRUD and watch for any kind over storage.Interface, driven by a Strategy.

This is k8s.io/apiserver's pkg/registry/generic/registry/store.go in Python. The order of steps on a
write is kube's: (mutating admission in the caller) → prepare → validate (registry/generic/
validation.py) → validating admission → storage, the same steps for a create and an update.
Dry-run runs every step and skips only the write. Deleting is registry/generic/deletion.py.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace

from apis.meta import errors
from apis.meta.errors import GroupKind, GroupResource, StatusError
from apis.meta.field import invalid
from apis.runtime.codec import Codec
from apis.runtime.kinds import HubObject
from registry.generic import deletion, metadata, paging
from registry.generic.admission import ValidateObject
from registry.generic.allocation import Allocation, Allocator, Reservation
from registry.generic.cache.feed import Unserved
from registry.generic.cache.resource_cache import ResourceCache
from registry.generic.cache.stored import StoredObject
from registry.generic.cache.watchers import OpenWatch
from registry.generic.delete_collection import DEFAULT_WORKERS, PAGE_SIZE, delete_in_pages
from registry.generic.deletion import should_delete_during_update
from registry.generic.graceful_deletion import GracefulDeletion
from registry.generic.key_locks import KeyLocks
from registry.generic.keys import list_prefix, object_key, resource_prefix
from registry.generic.options import (
    DeleteOptions,
    ListOptions,
    ObjectList,
    WatchOptions,
    WriteOptions,
    admit_all,
)
from registry.generic.storage_errors import interpret, parse_resource_version
from registry.generic.strategy import Strategy
from registry.generic.validation import validate_write
from registry.generic.watch import watch_storage
from storage import interface as st

# Produces the new object from the current one (None when missing): applies the PUT body or patch
# and runs mutating admission. Runs again on every optimistic-concurrency retry.
UpdatedObject = Callable[[HubObject | None], Awaitable[HubObject]]

GENERATE_NAME_ATTEMPTS = 8


@dataclass(eq=False)
class Store:
    codec: Codec
    strategy: Strategy
    storage: st.Interface
    # generateName → name (kube: the strategy's names.NameGenerator); replaceable to make collisions testable.
    name_generator: Callable[[str], str] = metadata.generate_name
    # The watch cache serving reads and watches (attached by the server with --watch-cache); None
    # reads through to storage. Writes always go to storage.
    cache: ResourceCache | None = None
    # Deletes a deletecollection runs at once (--delete-collection-workers).
    delete_collection_workers: int = DEFAULT_WORKERS
    # Updates of one key queue here rather than race each other's compare-and-swap (key_locks.py).
    update_locks: KeyLocks = field(default_factory=KeyLocks)
    # A number field every created object gets, unique across the resource (allocation.py).
    allocation: Allocation | None = None
    allocator: Allocator | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        if self.allocation is not None:
            self.allocator = Allocator(self.allocation, self.codec, self.storage)

    def new_cache(self) -> ResourceCache:
        """An empty cache for this resource; a GroupFeed fills it."""
        cache = ResourceCache(
            self.codec, resource_prefix(self.codec.group, self.codec.kind.resource), self.selectable_fields
        )
        if self.allocator is not None:
            cache.observers.append(self.allocator)
        return cache

    @property
    def resource(self) -> GroupResource:
        return GroupResource(self.codec.group, self.codec.kind.resource)

    @property
    def field_names(self) -> tuple[str, ...]:
        """The strategy's selectable fields (registry/generic/rest.py)."""
        return self.strategy.field_names

    @property
    def group_kind(self) -> GroupKind:
        return GroupKind(self.codec.group, self.codec.kind.kind)

    @property
    def graceful_deletion(self) -> GracefulDeletion | None:
        return self.strategy.graceful_deletion

    def key(self, namespace: str, name: str) -> str:
        return object_key(
            self.codec.group, self.codec.kind.resource, namespace if self.strategy.namespaced else "", name
        )

    def prefix(self, namespace: str) -> str:
        """The directory a list or watch reads: one namespace's, or the whole resource's."""
        return list_prefix(self.codec.group, self.codec.kind.resource, self._scope(namespace))

    def _scope(self, namespace: str) -> str:
        return namespace if self.strategy.namespaced else ""

    def _all_namespaces(self, namespace: str) -> bool:
        return self.strategy.namespaced and not namespace

    def decode(self, kv: st.KeyValue) -> HubObject:
        """A stored object as a hub, its resourceVersion the revision it was written at."""
        return self.codec.decode(kv.value, kv.mod_revision)

    def _with_rv(self, obj: HubObject, revision: int) -> HubObject:
        obj.metadata["resourceVersion"] = str(revision)
        return obj

    # --- reads -----------------------------------------------------------------------------------

    async def read(self, namespace: str, name: str, *, resource_version: str = "") -> StoredObject:
        """One object, from the cache when it can answer (see ResourceCache.get), else from storage."""
        key = self.key(namespace, name)
        if self.cache is not None:
            try:
                found = await self.cache.get(key, resource_version)
            except Unserved:
                pass
            except st.StorageError as e:
                raise interpret(e, self.resource, name) from e
            else:
                if found is None:
                    raise errors.not_found(self.resource, name)
                return found
        # Any resourceVersion ("0" = any, N = not older than N) is served by the newest state, as kube
        # does when it reads through to storage; it still has to be a valid one, and not from the future.
        rv = parse_resource_version(resource_version)
        try:
            if rv and (current := await self.storage.current_revision()) < rv:
                raise st.FutureRevision(rv, current)
            kv = await self.storage.get(key)
        except st.StorageError as e:
            raise interpret(e, self.resource, name) from e
        return self.stored(self.decode(kv), key)

    async def get(self, namespace: str, name: str, *, resource_version: str = "") -> HubObject:
        """The hub object, the caller's to change."""
        return (await self.read(namespace, name, resource_version=resource_version)).hub()

    async def read_list(self, namespace: str, options: ListOptions) -> ObjectList:
        """A list of StoredObjects, from the cache when it can answer (see ResourceCache.list)."""
        prefix = self.prefix(namespace)
        try:
            if self.cache is not None:
                try:
                    return await self.cache.list(prefix, options)
                except Unserved:
                    pass
            result = await paging.list_from_storage(
                self, prefix, options, all_namespaces=self._all_namespaces(namespace)
            )
        except st.StorageError as e:
            raise interpret(e, self.resource, "") from e
        items = [self.stored(hub) for hub in result.items]
        return replace(result, items=items)

    async def list(self, namespace: str, options: ListOptions) -> ObjectList:
        """A list of hub objects, the caller's to change."""
        result = await self.read_list(namespace, options)
        return replace(result, items=[obj.hub() for obj in result.items])

    def stored(self, hub: HubObject, key: str = "") -> StoredObject:
        """A hub read through from storage, in the form the read paths serve (it keeps the hub)."""
        key = key or self.key(hub.metadata.get("namespace", ""), hub.metadata.get("name", ""))
        return StoredObject.from_hub(self.codec, key, hub, self.selectable_fields(hub), keep_hub=True)

    def matches(self, obj: HubObject, options: ListOptions | WatchOptions) -> bool:
        return options.predicate.matches(obj.metadata.get("labels") or {}, self.selectable_fields(obj))

    def selectable_fields(self, obj: HubObject) -> dict[str, str]:
        fields = {"metadata.name": obj.metadata.get("name", "")}
        if self.strategy.namespaced:
            fields["metadata.namespace"] = obj.metadata.get("namespace", "")
        fields.update(self.strategy.field_attributes(obj))
        return fields

    async def watch(self, namespace: str, options: WatchOptions) -> OpenWatch:
        """Start a watch. Errors known before any event (a resourceVersion too old for the cache, or
        from the future) are raised here; errors found later end the watcher with `error` set."""
        prefix = self.prefix(namespace)
        if self.cache is not None:
            cache = self.cache
            try:
                watcher = await cache.watch(prefix, options)
            except Unserved:
                pass
            except st.StorageError as e:
                raise interpret(e, self.resource, "") from e
            else:
                return OpenWatch(watcher, cache.progress, cache.stop_watching)
        return watch_storage(self, prefix, options, all_namespaces=self._all_namespaces(namespace))

    # --- create and update ---------------------------------------------------------------------

    def _prepare(
        self, obj: HubObject, old: HubObject | None, strategy: Strategy, write: WriteOptions
    ) -> None:
        """kube's rest.BeforeCreate/BeforeUpdate before validation: system metadata, the strategy's
        preparation, then ownership (after the strategy, so it follows what is actually stored)."""
        if old is None:
            metadata.fill_for_create(obj.metadata)
            strategy.prepare_for_create(obj)
        else:
            obj.metadata["generation"] = old.metadata.get("generation")
            metadata.keep_for_update(obj.metadata, old.metadata)
            strategy.prepare_for_update(obj, old)
        if write.manager is not None:
            write.manager.track(self.codec, old, obj)

    async def _validate(
        self, obj: HubObject, old: HubObject | None, strategy: Strategy, write: WriteOptions
    ) -> None:
        """Every check of the registry (registry/generic/validation.py), then validating admission."""
        if (
            old is not None
            and self.allocator is not None
            and (immutable := self.allocator.validate_update(obj, old))
        ):
            raise errors.invalid(self.group_kind, obj.metadata.get("name") or "", immutable)
        validate_write(self.codec, strategy, obj, old, write)
        await write.admission(obj, old)

    async def create(self, obj: HubObject, write: WriteOptions | None = None) -> HubObject:
        """Create `obj` (a hub object already through mutating admission): prepare → allocate →
        validate → validating admission → storage, a generated name or a number chosen by the
        server tried again on a collision."""
        write = write or WriteOptions()
        generated = not obj.metadata.get("name") and bool(obj.metadata.get("generateName"))
        self._prepare(obj, None, self.strategy, write)
        lost: set[int] = set()  # numbers this create lost to another one
        for attempt in range(GENERATE_NAME_ATTEMPTS):
            if generated:
                obj.metadata["name"] = self.name_generator(obj.metadata["generateName"])
            reservation = await self._reserve(obj, write, lost) if self.allocator is not None else None
            written = False
            try:
                await self._validate(obj, None, self.strategy, write)
                name = obj.metadata["name"]
                key = self.key(obj.metadata.get("namespace", ""), name)
                try:
                    if write.dry_run:
                        await self._require_absent(key, name)
                        if reservation is not None and not reservation.chosen:
                            await self._allocator.check_free(obj, reservation.number)
                        return obj
                    if reservation is None:
                        kv = await self.storage.create(key, self.codec.encode(obj))
                    else:
                        companions = self._allocator.companions(key, obj, reservation.number)
                        kv = await self.storage.create(key, self.codec.encode(obj), companions=companions)
                    written = True
                except st.CompanionExists as e:
                    assert reservation is not None
                    if not reservation.chosen:
                        raise self._allocator.taken(obj, reservation.number) from e
                    lost.add(reservation.number)
                    self._allocator.unset(obj)  # choose another on the next try
                    continue
                except st.AlreadyExists as e:
                    if generated and attempt + 1 < GENERATE_NAME_ATTEMPTS:
                        if reservation is not None and reservation.chosen:
                            self._allocator.unset(obj)
                        continue
                    raise await self._create_conflict(key, obj) from e
                except st.StorageError as e:
                    raise interpret(e, self.resource, name) from e
                return self._with_rv(obj, kv.mod_revision)
            finally:
                if reservation is not None:
                    self._allocator.done(reservation, written=written)
        raise errors.internal_error("failed to create the object: too many collisions, try again")

    @property
    def _allocator(self) -> Allocator:
        assert self.allocator is not None
        return self.allocator

    async def _reserve(self, obj: HubObject, write: WriteOptions, lost: set[int]) -> Reservation:
        """kube's BeginCreate: the number is set before validation and validating admission see the
        object; nothing is written until the create's own transaction."""
        # After a lost race the cache is known to be behind: the number keys say what is taken.
        cached = self.cache is not None and self.cache.feed.ready and not lost
        try:
            reservation = await self._allocator.reserve(obj, cached=cached, excluded=lost)
        except st.StorageError as e:
            raise interpret(e, self.resource, obj.metadata.get("name", "")) from e
        if reservation.chosen:
            self._allocator.sync_decoded(obj, write)
        return reservation

    async def _require_absent(self, key: str, name: str) -> None:
        """A dry-run create collides like a real one (kube's DryRunnableStorage.Create: KeyExists)."""
        try:
            await self.storage.get(key)
        except st.NotFound:
            return
        raise st.AlreadyExists(key)

    async def _create_conflict(self, key: str, obj: HubObject) -> StatusError:
        """kube's create errors: a generated name that collides is the server's failure
        (rest.CheckGeneratedNameError), and a name held by an object still being deleted says so."""
        name = obj.metadata.get("name", "")
        if obj.metadata.get("generateName"):
            error = errors.StatusError(
                409,
                "AlreadyExists",
                f'{self.resource} "{name}" already exists, the server was not able to generate a unique name '
                "for the object",
                {
                    "name": name,
                    "group": self.resource.group,
                    "kind": self.resource.resource,
                    "retryAfterSeconds": 1,
                },
            )
        else:
            error = errors.already_exists(self.resource, name)
        try:
            existing = self.decode(await self.storage.get(key))
        except st.StorageError:
            return error
        if existing.metadata.get("deletionTimestamp"):
            error.message = f"object is being deleted: {error.message}"
        return error

    async def update(
        self,
        namespace: str,
        name: str,
        updated: UpdatedObject,
        write: WriteOptions | None = None,
        *,
        strategy: Strategy | None = None,
        force_allow_create: bool = False,
    ) -> tuple[HubObject, bool]:
        """Replace or patch one object; returns (object, created). The steps are create's, from the
        stored object: `updated` → preconditions → prepare → validate → validating admission →
        storage, all again on a conflict. `strategy` is a subresource's; a missing object is created
        (through the main strategy) only when it allows that or `force_allow_create` (apply)."""
        write = write or WriteOptions()
        key = self.key(namespace, name)
        created = False

        async def attempt(kv: st.KeyValue | None) -> bytes:
            nonlocal created
            old = self.decode(kv) if kv is not None else None
            steps = strategy or self.strategy
            if old is None:
                if not (steps.allow_create_on_update or force_allow_create):
                    raise errors.not_found(self.resource, name)
                steps = self.strategy
            obj = await updated(copy.deepcopy(old) if old is not None else None)
            self._check_identity(obj, namespace, name)
            if self.allocator is not None:
                if old is None:
                    raise _CreateInstead(obj)  # the number is written with the object: create()
                self.allocator.keep_on_update(obj, old)
            if old is not None:
                self._check_preconditions(obj, old, steps)
            self._prepare(obj, old, steps, write)
            await self._validate(obj, old, steps, write)
            if old is not None and should_delete_during_update(obj.metadata, old.metadata):
                raise _EmptiedFinalizers(obj)
            created = old is None
            return self.codec.encode(obj)

        try:
            if write.dry_run:
                kv = await self._get_or_none(key)
                new_bytes = await attempt(kv)
                result = self.codec.decode(new_bytes, kv.mod_revision if kv else 0)
                return result, created
            async with self.update_locks.hold(key):
                kv = await self.storage.guaranteed_update(key, attempt, ignore_not_found=True)
        except _EmptiedFinalizers as emptied:
            return await deletion.finish_deletion(self, key, emptied.obj, dry_run=write.dry_run), False
        except _CreateInstead as creating:
            return await self.create(creating.obj, write), True
        except st.StorageError as e:
            raise interpret(e, self.resource, name) from e
        return self.decode(kv), created

    async def _get_or_none(self, key: str) -> st.KeyValue | None:
        try:
            return await self.storage.get(key)
        except st.NotFound:
            return None

    def _check_identity(self, obj: HubObject, namespace: str, name: str) -> None:
        """The URL names the object; a body naming another is a client error (kube: 400)."""
        body_name = obj.metadata.get("name")
        if body_name != name:
            raise errors.bad_request(
                f"the name of the object ({body_name}) does not match the name on the URL ({name})"
            )
        if self.strategy.namespaced:
            obj.metadata["namespace"] = obj.metadata.get("namespace") or namespace

    def _check_preconditions(self, obj: HubObject, old: HubObject, strategy: Strategy) -> None:
        uid = obj.metadata.get("uid")
        if uid and uid != old.metadata.get("uid"):
            raise errors.conflict(
                self.resource,
                obj.metadata.get("name", ""),
                f"Precondition failed: UID in precondition: {uid}, "
                f"UID in object meta: {old.metadata.get('uid')}",
            )
        rv = obj.metadata.get("resourceVersion")
        if not rv:
            if strategy.allow_unconditional_update:
                # kube's doUnconditionalUpdate: the update applies to the stored object's version.
                obj.metadata["resourceVersion"] = old.metadata.get("resourceVersion")
                return
            # kube names the resource here, not the kind (store.go: qualifiedKind from the resource).
            raise errors.invalid(
                GroupKind(self.codec.group, self.codec.kind.resource),
                obj.metadata.get("name", ""),
                [invalid("metadata.resourceVersion", 0, "must be specified for an update")],
            )
        if rv != old.metadata.get("resourceVersion"):
            raise errors.conflict(self.resource, obj.metadata.get("name", ""), errors.OBJECT_MODIFIED)

    # --- delete (registry/generic/deletion.py) ---------------------------------------------------

    async def delete(
        self, namespace: str, name: str, options: DeleteOptions, *, validate: ValidateObject = admit_all
    ) -> tuple[HubObject, bool]:
        """Delete one object; returns (object, deleted_now): marked as deleting while finalizers remain."""
        return await deletion.delete(self, namespace, name, options, validate)

    async def delete_collection(
        self,
        namespace: str,
        list_options: ListOptions,
        delete_options: DeleteOptions,
        *,
        validate: ValidateObject = admit_all,
    ) -> ObjectList:
        """kube's DeleteCollection (``registry.generic.delete_collection``): every item as ``delete``
        would (``deletion.delete_listed``: from its listed state while that is current),
        ``delete_collection_workers`` at once, in pages unless the caller set a limit."""

        async def delete_item(item: StoredObject) -> None:
            await deletion.delete_listed(self, item, delete_options, validate)

        return await delete_in_pages(
            functools.partial(self.read_list, namespace),
            delete_item,
            list_options,
            self.delete_collection_workers,
            page_size=0 if self.cache is not None else PAGE_SIZE,
        )


class _CreateInstead(Exception):
    """Raised inside an update that would create an object of a resource with an allocated field: its
    number is written with it, which only create() does."""

    def __init__(self, obj: HubObject) -> None:
        super().__init__("create instead")
        self.obj = obj


class _EmptiedFinalizers(Exception):
    """Raised inside an update that removes the last finalizer of a deleting object (kube's
    errEmptiedFinalizers): the update is not written, the object is deleted."""

    def __init__(self, obj: HubObject) -> None:
        super().__init__("emptied finalizers")
        self.obj = obj
