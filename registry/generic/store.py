"""The generic Store: CRUD and watch for any kind over storage.Interface, driven by a Strategy.

This is k8s.io/apiserver's pkg/registry/generic/registry/store.go in Python. The order of steps on a
write is kube's: (mutating admission in the caller) → prepare → validate → validating admission →
storage. Dry-run runs every step and skips only the write.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from apis.meta import errors
from apis.meta.errors import GroupKind, GroupResource, StatusError
from apis.meta.validation import validate_object_meta, validate_object_meta_update
from apis.runtime.codec import Codec
from registry.generic import metadata, paging
from registry.generic.keys import list_prefix, object_key
from registry.generic.options import DeleteOptions, ListOptions, ObjectList, WatchEvent, WatchOptions
from registry.generic.storage_errors import interpret, parse_resource_version
from registry.generic.strategy import Strategy
from registry.generic.watch import watch_objects
from storage import interface as st

# Validating admission, called with (new, old); raises StatusError to deny.
ValidateObject = Callable[[Any, Any | None], Awaitable[None]]
# Produces the new object from the current one (None when missing): applies the PUT body or patch
# and runs mutating admission. Runs again on every optimistic-concurrency retry.
UpdatedObject = Callable[[Any | None], Awaitable[Any]]

GENERATE_NAME_ATTEMPTS = 8


async def _allow(new: Any, old: Any | None) -> None:
    return None


@dataclass(frozen=True)
class Store:
    codec: Codec
    strategy: Strategy
    storage: st.Interface

    @property
    def resource(self) -> GroupResource:
        return GroupResource(self.codec.group, self.codec.kind.resource)

    @property
    def group_kind(self) -> GroupKind:
        return GroupKind(self.codec.group, self.codec.kind.kind)

    def key(self, namespace: str, name: str) -> str:
        return object_key(self.codec.kind.resource, namespace if self.strategy.namespaced else "", name)

    def _decode(self, kv: st.KeyValue) -> Any:
        return self.codec.decode(kv.value, kv.mod_revision)

    def _with_rv(self, obj: Any, revision: int) -> Any:
        obj.metadata["resourceVersion"] = str(revision)
        return obj

    # --- reads -----------------------------------------------------------------------------------

    async def get(self, namespace: str, name: str, *, resource_version: str = "") -> Any:
        # Any resourceVersion ("0" = any, N = not older than N) is served by the newest state, as kube
        # does when it reads through to storage; it still has to be a valid one.
        parse_resource_version(resource_version)
        try:
            kv = await self.storage.get(self.key(namespace, name))
        except st.StorageError as e:
            raise interpret(e, self.resource, name) from e
        return self._decode(kv)

    async def list(self, namespace: str, options: ListOptions) -> ObjectList:
        prefix = list_prefix(self.codec.kind.resource, namespace if self.strategy.namespaced else "")
        try:
            return await paging.list_objects(self, prefix, options)
        except st.StorageError as e:
            raise interpret(e, self.resource, "") from e

    def matches(self, obj: Any, options: ListOptions | WatchOptions) -> bool:
        return options.predicate.matches(obj.metadata.get("labels") or {}, self.selectable_fields(obj))

    def selectable_fields(self, obj: Any) -> dict[str, str]:
        fields = {"metadata.name": obj.metadata.get("name", "")}
        if self.strategy.namespaced:
            fields["metadata.namespace"] = obj.metadata.get("namespace", "")
        fields.update(self.strategy.field_attributes(obj))
        return fields

    def watch(self, namespace: str, options: WatchOptions) -> AsyncIterator[WatchEvent]:
        prefix = list_prefix(self.codec.kind.resource, namespace if self.strategy.namespaced else "")
        return watch_objects(self, prefix, options)

    # --- create ----------------------------------------------------------------------------------

    def _prepare_create(self, obj: Any) -> None:
        metadata.fill_for_create(obj.metadata)
        self.strategy.prepare_for_create(obj)

    def _validate_create(self, obj: Any) -> None:
        errs = validate_object_meta(obj.metadata, namespaced=self.strategy.namespaced)
        errs += self.strategy.validate(obj)
        if errs:
            raise errors.invalid(self.group_kind, obj.metadata.get("name") or "", errs)
        self.strategy.canonicalize(obj)

    async def create(self, obj: Any, *, validate: ValidateObject = _allow, dry_run: bool = False) -> Any:
        """Create `obj` (a hub object already through mutating admission)."""
        generated = not obj.metadata.get("name") and bool(obj.metadata.get("generateName"))
        self._prepare_create(obj)
        for attempt in range(GENERATE_NAME_ATTEMPTS):
            if generated:
                obj.metadata["name"] = metadata.generate_name(obj.metadata["generateName"])
            self._validate_create(obj)
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
                raise interpret(e, self.resource, name) from e
            except st.StorageError as e:
                raise interpret(e, self.resource, name) from e
            return self._with_rv(obj, kv.mod_revision)
        raise AssertionError("unreachable")

    async def _require_absent(self, key: str, name: str) -> None:
        try:
            await self.storage.get(key)
        except st.NotFound:
            return
        raise errors.already_exists(self.resource, name)

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
    ) -> tuple[Any, bool]:
        """Replace or patch one object; returns (object, created)."""
        strategy = strategy or self.strategy
        key = self.key(namespace, name)
        created = False

        async def attempt(kv: st.KeyValue | None) -> bytes:
            nonlocal created
            old = self._decode(kv) if kv is not None else None
            if old is None:
                if not (strategy.allow_create_on_update or force_allow_create):
                    raise errors.not_found(self.resource, name)
                obj = await updated(None)
                self._check_identity(obj, namespace, name)
                self._prepare_create(obj)
                self._validate_create(obj)
                await validate_create(obj, None)
                created = True
                return self.codec.encode(obj)
            obj = await updated(copy.deepcopy(old))
            self._check_identity(obj, namespace, name)
            self._check_preconditions(obj, old, strategy)
            obj.metadata["generation"] = old.metadata.get("generation")
            metadata.keep_for_update(obj.metadata, old.metadata)
            strategy.prepare_for_update(obj, old)
            errs = validate_object_meta_update(obj.metadata, old.metadata)
            errs += validate_object_meta(obj.metadata, namespaced=self.strategy.namespaced)
            errs += strategy.validate_update(obj, old)
            if errs:
                raise errors.invalid(self.group_kind, name, errs)
            strategy.canonicalize(obj)
            await validate_update(obj, old)
            created = False
            return self.codec.encode(obj)

        try:
            if dry_run:
                kv = await self._get_or_none(key)
                new_bytes = await attempt(kv)
                result = self.codec.decode(new_bytes, kv.mod_revision if kv else 0)
                return result, created
            kv = await self.storage.guaranteed_update(key, attempt, ignore_not_found=True)
        except st.StorageError as e:
            raise interpret(e, self.resource, name) from e
        obj = self._decode(kv)
        if _should_delete_during_update(obj):
            return await self._finish_deletion(key, obj), created
        return obj, created

    async def _get_or_none(self, key: str) -> st.KeyValue | None:
        try:
            return await self.storage.get(key)
        except st.NotFound:
            return None

    def _check_identity(self, obj: Any, namespace: str, name: str) -> None:
        """The URL names the object; a body naming another is a client error (kube: 400)."""
        body_name = obj.metadata.get("name")
        if body_name != name:
            raise errors.bad_request(
                f"the name of the object ({body_name}) does not match the name on the URL ({name})"
            )
        if self.strategy.namespaced:
            obj.metadata["namespace"] = obj.metadata.get("namespace") or namespace

    def _check_preconditions(self, obj: Any, old: Any, strategy: Strategy) -> None:
        uid = obj.metadata.get("uid")
        if uid and uid != old.metadata.get("uid"):
            raise errors.conflict(
                self.resource,
                obj.metadata.get("name", ""),
                f"Precondition failed: UID in precondition: {uid}, UID in object meta: {old.metadata.get('uid')}",
            )
        rv = obj.metadata.get("resourceVersion")
        if not rv:
            if strategy.allow_unconditional_update:
                return
            from apis.meta.field import invalid

            raise errors.invalid(
                self.group_kind,
                obj.metadata.get("name", ""),
                [invalid("metadata.resourceVersion", 0, "must be specified for an update")],
            )
        if rv != old.metadata.get("resourceVersion"):
            raise errors.conflict(self.resource, obj.metadata.get("name", ""), errors.OBJECT_MODIFIED)

    # --- delete ----------------------------------------------------------------------------------

    async def delete(
        self,
        namespace: str,
        name: str,
        options: DeleteOptions,
        *,
        validate: ValidateObject = _allow,
    ) -> tuple[Any, bool]:
        """Delete one object; returns (object, deleted_now). Finalizers turn it into a graceful delete."""
        key = self.key(namespace, name)
        try:
            kv = await self.storage.get(key)
        except st.StorageError as e:
            raise interpret(e, self.resource, name) from e
        current = self._decode(kv)
        self._check_delete_preconditions(current, options)
        await validate(current, current)
        finalizers = _finalizers_for(current, options)
        if finalizers or current.metadata.get("deletionTimestamp"):
            return await self._mark_deleting(key, name, current, finalizers, options), False
        if options.dry_run:
            return current, True
        return await self._delete_now(key, name, options), True

    def _check_delete_preconditions(self, obj: Any, options: DeleteOptions) -> None:
        if options.uid and options.uid != obj.metadata.get("uid"):
            raise errors.conflict(
                self.resource,
                obj.metadata.get("name", ""),
                f"Precondition failed: UID in precondition: {options.uid}, "
                f"UID in object meta: {obj.metadata.get('uid')}",
            )
        if options.resource_version and options.resource_version != obj.metadata.get("resourceVersion"):
            raise errors.conflict(
                self.resource,
                obj.metadata.get("name", ""),
                f"Precondition failed: ResourceVersion in precondition: {options.resource_version}, "
                f"ResourceVersion in object meta: {obj.metadata.get('resourceVersion')}",
            )

    async def _delete_now(self, key: str, name: str, options: DeleteOptions) -> Any:
        async def check(kv: st.KeyValue) -> None:
            self._check_delete_preconditions(self._decode(kv), options)

        try:
            kv = await self.storage.delete(key, check=check)
        except st.StorageError as e:
            raise interpret(e, self.resource, name) from e
        return self._decode(kv)

    async def _mark_deleting(
        self, key: str, name: str, current: Any, finalizers: list[str], options: DeleteOptions
    ) -> Any:
        """Graceful deletion: set deletionTimestamp (once) and the propagation finalizer, keep the object."""

        async def mark(kv: st.KeyValue | None) -> bytes:
            assert kv is not None
            obj = self._decode(kv)
            self._check_delete_preconditions(obj, options)
            if not obj.metadata.get("deletionTimestamp"):
                obj.metadata["deletionTimestamp"] = metadata.now_rfc3339()
                obj.metadata["deletionGracePeriodSeconds"] = 0
            obj.metadata["finalizers"] = _finalizers_for(obj, options)
            return self.codec.encode(obj)

        if options.dry_run:
            return self.codec.decode(await mark(await self.storage.get(key)), int(current.metadata["resourceVersion"]))
        try:
            kv = await self.storage.guaranteed_update(key, mark)
        except st.StorageError as e:
            raise interpret(e, self.resource, name) from e
        return self._decode(kv)

    async def _finish_deletion(self, key: str, obj: Any) -> Any:
        """The update that removed the last finalizer of a deleting object deletes it (kube does the same)."""
        rv = obj.metadata.get("resourceVersion")

        async def unchanged(kv: st.KeyValue) -> None:
            if str(kv.mod_revision) != rv:
                raise st.Conflict(key)

        try:
            await self.storage.delete(key, check=unchanged)
        except (st.NotFound, st.Conflict):
            pass
        except st.StorageError as e:
            raise interpret(e, self.resource, obj.metadata.get("name", "")) from e
        return obj

    async def delete_collection(
        self,
        namespace: str,
        list_options: ListOptions,
        delete_options: DeleteOptions,
        *,
        validate: ValidateObject = _allow,
    ) -> ObjectList:
        listed = await self.list(namespace, list_options)
        deleted = []
        for item in listed.items:
            try:
                obj, _ = await self.delete(
                    item.metadata.get("namespace", ""), item.metadata["name"], delete_options, validate=validate
                )
            except StatusError as e:
                if e.code == 404:
                    continue
                raise
            deleted.append(obj)
        return ObjectList(items=deleted, resource_version=listed.resource_version)


def _finalizers_for(obj: Any, options: DeleteOptions) -> list[str]:
    """The object's finalizers plus the one its propagation policy asks the garbage collector for."""
    finalizers = [f for f in obj.metadata.get("finalizers") or [] if f not in ("orphan", "foregroundDeletion")]
    kept = [f for f in obj.metadata.get("finalizers") or [] if f in ("orphan", "foregroundDeletion")]
    policy = options.propagation_policy
    if policy is None and options.orphan_dependents is not None:
        policy = "Orphan" if options.orphan_dependents else "Background"
    if policy == "Orphan":
        kept = ["orphan"]
    elif policy == "Foreground":
        kept = ["foregroundDeletion"]
    elif policy == "Background":
        kept = []
    return finalizers + kept


def _should_delete_during_update(obj: Any) -> bool:
    return bool(obj.metadata.get("deletionTimestamp")) and not obj.metadata.get("finalizers")
