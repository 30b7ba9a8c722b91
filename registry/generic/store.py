"""The generic Store: CRUD and watch for any kind over storage.Interface, driven by a Strategy.

This is k8s.io/apiserver's pkg/registry/generic/registry/store.go in Python. The order of steps on a
write is kube's: (mutating admission in the caller) → prepare → validate → validating admission →
storage. Dry-run runs every step and skips only the write. Deleting is registry/generic/deletion.py.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace

from apis.meta import errors
from apis.meta.errors import GroupKind, GroupResource, StatusError
from apis.meta.field import FieldError, invalid
from apis.meta.validation import validate_object_meta, validate_object_meta_update
from apis.runtime.codec import Codec
from apis.runtime.kinds import HubObject
from apis.runtime.scale import validate_scale_spec, validate_scale_status
from apis.schema.ratchet import ratchet
from registry.generic import deletion, metadata, paging
from registry.generic.admission import ValidateObject
from registry.generic.cache.feed import Unserved
from registry.generic.cache.resource_cache import ResourceCache
from registry.generic.cache.stored import StoredObject
from registry.generic.cache.watchers import OpenWatch
from registry.generic.delete_collection import DEFAULT_WORKERS, PAGE_SIZE, delete_in_pages
from registry.generic.deletion import should_delete_during_update
from registry.generic.key_locks import KeyLocks
from registry.generic.keys import list_prefix, object_key, resource_prefix
from registry.generic.managed_fields import FieldTracker
from registry.generic.options import DeleteOptions, ListOptions, ObjectList, WatchOptions
from registry.generic.storage_errors import interpret, parse_resource_version
from registry.generic.strategy import Strategy
from registry.generic.watch import watch_storage
from storage import interface as st

# The versioned object's schema/rule errors for (new, old): reported in the same 422 as the rest.
FieldErrors = list[FieldError]  # named here: inside Store, `list` is the method
CheckObject = Callable[[HubObject, HubObject | None], FieldErrors]
# Produces the new object from the current one (None when missing): applies the PUT body or patch
# and runs mutating admission. Runs again on every optimistic-concurrency retry.
UpdatedObject = Callable[[HubObject | None], Awaitable[HubObject]]

GENERATE_NAME_ATTEMPTS = 8


async def _allow(new: HubObject, old: HubObject | None) -> None:
    return None


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

    def new_cache(self) -> ResourceCache:
        """An empty cache for this resource; a GroupFeed fills it."""
        return ResourceCache(
            self.codec, resource_prefix(self.codec.group, self.codec.kind.resource), self.selectable_fields
        )

    @property
    def resource(self) -> GroupResource:
        return GroupResource(self.codec.group, self.codec.kind.resource)

    @property
    def group_kind(self) -> GroupKind:
        return GroupKind(self.codec.group, self.codec.kind.kind)

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

    # --- create ----------------------------------------------------------------------------------

    def _prepare_create(self, obj: HubObject) -> None:
        metadata.fill_for_create(obj.metadata)
        self.strategy.prepare_for_create(obj)

    def _validate_create(self, obj: HubObject, check: CheckObject | None = None) -> None:
        errs = validate_object_meta(
            obj.metadata, namespaced=self.strategy.namespaced, name_fn=self.strategy.validate_name
        )
        schema_errs = check(obj, None) if check is not None else []
        # The strategy's checks assume a schema-valid object; kube reports all of it in one 422.
        errs += schema_errs or self.strategy.validate(obj)
        errs += self._scale_errors(obj)
        if errs:
            raise errors.invalid(self.group_kind, obj.metadata.get("name") or "", errs)
        self.strategy.canonicalize(obj)

    async def create(
        self,
        obj: HubObject,
        *,
        validate: ValidateObject = _allow,
        dry_run: bool = False,
        manager: FieldTracker | None = None,
        check: CheckObject | None = None,
    ) -> HubObject:
        """Create `obj` (a hub object already through mutating admission).

        With a `manager`, metadata.managedFields records the fields it set (untracked otherwise).
        `check` adds the versioned object's schema and rule errors to the same 422.
        """
        generated = not obj.metadata.get("name") and bool(obj.metadata.get("generateName"))
        self._prepare_create(obj)
        self._track(None, obj, manager)
        for attempt in range(GENERATE_NAME_ATTEMPTS):
            if generated:
                obj.metadata["name"] = self.name_generator(obj.metadata["generateName"])
            self._validate_create(obj, check)
            await validate(obj, None)
            name = obj.metadata["name"]
            key = self.key(obj.metadata.get("namespace", ""), name)
            try:
                if dry_run:
                    await self._require_absent(key, name)
                    return obj
                kv = await self.storage.create(key, self.codec.encode(obj))
            except st.AlreadyExists as e:
                if generated and attempt + 1 < GENERATE_NAME_ATTEMPTS:
                    continue
                raise await self._create_conflict(key, obj) from e
            except st.StorageError as e:
                raise interpret(e, self.resource, name) from e
            return self._with_rv(obj, kv.mod_revision)
        raise AssertionError("unreachable")

    def _scale_errors(self, obj: HubObject) -> tuple[FieldError, ...]:
        """A kind with a scale subresource keeps its replicas and selector readable as a Scale on
        every write, whichever endpoint it came through (apiextensions' ValidateScaleSpec/Status)."""
        scale = self.codec.kind.scale
        if scale is None:
            return ()
        return (*validate_scale_spec(obj, scale), *validate_scale_status(obj, scale))

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

    # --- update ----------------------------------------------------------------------------------

    async def update(
        self,
        namespace: str,
        name: str,
        updated: UpdatedObject,
        *,
        validate_create: ValidateObject = _allow,
        validate_update: ValidateObject = _allow,
        force_allow_create: bool = False,
        dry_run: bool = False,
        strategy: Strategy | None = None,
        manager: FieldTracker | None = None,
        check: CheckObject | None = None,
    ) -> tuple[HubObject, bool]:
        """Replace or patch one object; returns (object, created). `check`: as for create, with the
        stored object on update."""
        strategy = strategy or self.strategy
        key = self.key(namespace, name)
        created = False

        async def attempt(kv: st.KeyValue | None) -> bytes:
            nonlocal created
            old = self.decode(kv) if kv is not None else None
            if old is None:
                if not (strategy.allow_create_on_update or force_allow_create):
                    raise errors.not_found(self.resource, name)
                obj = await updated(None)
                self._check_identity(obj, namespace, name)
                self._prepare_create(obj)
                self._track(None, obj, manager)
                self._validate_create(obj, check)
                await validate_create(obj, None)
                created = True
                return self.codec.encode(obj)
            obj = await updated(copy.deepcopy(old))
            self._check_identity(obj, namespace, name)
            self._check_preconditions(obj, old, strategy)
            obj.metadata["generation"] = old.metadata.get("generation")
            metadata.keep_for_update(obj.metadata, old.metadata)
            strategy.prepare_for_update(obj, old)
            self._track(old, obj, manager)
            errs = validate_object_meta_update(obj.metadata, old.metadata)
            errs += validate_object_meta(
                obj.metadata, namespaced=self.strategy.namespaced, name_fn=self.strategy.validate_name
            )
            schema_errs = check(obj, old) if check is not None else []
            errs += schema_errs or self._ratchet(strategy.validate_update(obj, old), obj, old)
            errs += self._scale_errors(obj)
            if errs:
                raise errors.invalid(self.group_kind, name, errs)
            strategy.canonicalize(obj)
            await validate_update(obj, old)
            if should_delete_during_update(obj.metadata, old.metadata):
                raise _EmptiedFinalizers(obj)
            created = False
            return self.codec.encode(obj)

        try:
            if dry_run:
                kv = await self._get_or_none(key)
                new_bytes = await attempt(kv)
                result = self.codec.decode(new_bytes, kv.mod_revision if kv else 0)
                return result, created
            async with self.update_locks.hold(key):
                kv = await self.storage.guaranteed_update(key, attempt, ignore_not_found=True)
        except _EmptiedFinalizers as emptied:
            return await deletion.finish_deletion(self, key, emptied.obj, dry_run=dry_run), False
        except st.StorageError as e:
            raise interpret(e, self.resource, name) from e
        return self.decode(kv), created

    def _ratchet(self, errs: FieldErrors, obj: HubObject, old: HubObject) -> FieldErrors:
        """Validation ratcheting (KEP-4008) for the strategy's errors too: they repeat schema bounds on
        the hub, so an unchanged old value must pass them as it passes the schema. Their paths are
        the hub's, compared in the storage version (the hub's shape for the kinds declared here; a
        path that does not resolve is compared at the whole object, so it is reported)."""
        if not errs:
            return errs
        version = self.codec.kind.storage_version
        new_data, old_data = self.codec.to_version(obj, version), self.codec.to_version(old, version)
        return ratchet(errs, new_data, old_data, self.codec.kind.versions[version].schema)

    def _track(self, live: HubObject | None, obj: HubObject, manager: FieldTracker | None) -> None:
        """After the strategy prepared `obj`, so ownership follows what is actually stored."""
        if manager is not None:
            manager.track(self.codec, live, obj)

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
        self, namespace: str, name: str, options: DeleteOptions, *, validate: ValidateObject = _allow
    ) -> tuple[HubObject, bool]:
        """Delete one object; returns (object, deleted_now): marked as deleting while finalizers remain."""
        return await deletion.delete(self, namespace, name, options, validate)

    async def delete_collection(
        self,
        namespace: str,
        list_options: ListOptions,
        delete_options: DeleteOptions,
        *,
        validate: ValidateObject = _allow,
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


class _EmptiedFinalizers(Exception):
    """Raised inside an update that removes the last finalizer of a deleting object (kube's
    errEmptiedFinalizers): the update is not written, the object is deleted."""

    def __init__(self, obj: HubObject) -> None:
        super().__init__("emptied finalizers")
        self.obj = obj
