"""Deleting objects, as k8s.io/apiserver's generic Store does: one object, the item of a
deletecollection, and the update that removes the last finalizer of an object being deleted.

kube's Store.Delete: when finalizers remain — the object's own or the garbage collector's that the
propagation policy asks for — or the kind's strategy declares graceful deletion and the delete asks
for a grace period (registry/generic/graceful_deletion.py), the delete is an update that marks the
object as deleting; otherwise the object goes at once.
The garbage-collector finalizer precedence (store.go: shouldOrphanDependents, shouldDeleteDependents,
deletionFinalizersForGarbageCollection), markAsDeleting and ShouldDeleteDuringUpdate are plain
functions over ObjectMeta and DeleteOptions. The cluster's garbage collector does the rest through
ownerReferences; this server only records the intent as the `orphan` / `foregroundDeletion`
finalizers.

One item of a deletecollection is deleted starting from the state the list gave (`delete_listed`).
Why: kube's DeleteCollection runs the full ``Store.Delete`` per item, which reads the object again
and decodes it before deleting. Here that read and decode were most of the cost of a
deletecollection (10,000 pizzas on etcd: two gRPC calls and a full decode per item). The listed item
already is a state of the object with its revision, i.e. what kube's ``Store.Delete`` would have
read had it read right after the list. So each item goes as kube's ``Store.Delete`` goes from that
state:

- ``rest.BeforeDelete`` preconditions, finalizers and the propagation policy are decided on it;
  whenever they ask for more than a plain delete (a precondition fails, a finalizer is kept or
  added) or the request is a dry run, the item goes through ``delete`` itself, which reads
  the current state and answers exactly as kube (409 in kube's words, marking instead of deleting);
- otherwise the storage delete runs as kube's ``conditionalDelete`` with a ``cachedExistingObject``:
  validating admission on the listed state, then a delete only while the key's revision is still
  the listed one (etcd: a txn comparing ``mod_revision``), so the state checked is the state
  deleted. When the object changed since the list, every further try starts from the current state
  (storage preconditions, admission again, delete), and an admission denial on the listed state
  stands only if that state is still current — both as ``conditionalDelete`` does.

The answer is unaffected: the deletecollection answer is the list as read, in kube as here. Paging
and the pool of concurrent deletes are registry/generic/delete_collection.py.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol

from apis.meta import errors
from apis.meta.errors import GroupResource, StatusError
from apis.meta.validation import FINALIZER_DELETE_DEPENDENTS, FINALIZER_ORPHAN_DEPENDENTS
from apis.runtime.codec import Codec
from apis.runtime.kinds import HubObject
from registry.generic import metadata
from registry.generic.admission import ValidateObject
from registry.generic.allocation import Allocator
from registry.generic.cache.stored import StoredObject
from registry.generic.graceful_deletion import NOT_GRACEFUL, GracefulDeletion, before_delete, set_grace
from registry.generic.options import DeleteOptions
from registry.generic.storage_errors import interpret
from storage import interface as st


class DeletingStore(Protocol):
    """What deleting needs of its Store: the storage, the codec, the resource for errors, where an
    object is kept. A Protocol, so this module does not import the Store that calls it
    (store → deletion, never back)."""

    @property
    def storage(self) -> st.Interface: ...

    @property
    def codec(self) -> Codec: ...

    @property
    def resource(self) -> GroupResource: ...

    @property
    def graceful_deletion(self) -> GracefulDeletion | None: ...

    def key(self, namespace: str, name: str) -> str: ...

    # The resource's allocated number, released with the object (None for most resources).
    @property
    def allocator(self) -> Allocator | None: ...


async def delete_key(
    store: DeletingStore, key: str, check: st.DeleteCheck, cached: st.KeyValue | None = None
) -> st.KeyValue:
    """The one place an object finally leaves storage: with the number key it holds, in the same
    transaction (registry/generic/allocation.py), so a number is free exactly when its object is
    gone. A cached state without its bytes cannot say which number to release: it is read again."""
    allocator = store.allocator
    if allocator is None:
        return await store.storage.delete(key, check=check, cached=cached)
    cached = cached if cached is not None and cached.value else None
    return await store.storage.delete(key, check=check, cached=cached, companions=allocator.released_with)


_GC_FINALIZERS = (FINALIZER_ORPHAN_DEPENDENTS, FINALIZER_DELETE_DEPENDENTS)


def _first_gc_finalizer(finalizers: list[str]) -> str | None:
    return next((f for f in finalizers if f in _GC_FINALIZERS), None)


def should_orphan(finalizers: list[str], options: DeleteOptions) -> bool:
    """shouldOrphanDependents: the request's choice (orphanDependents first), else the object's own."""
    if options.orphan_dependents is not None:
        return options.orphan_dependents
    if options.propagation_policy is not None:
        return options.propagation_policy == "Orphan"
    return _first_gc_finalizer(finalizers) == FINALIZER_ORPHAN_DEPENDENTS


def should_delete_dependents(finalizers: list[str], options: DeleteOptions) -> bool:
    """shouldDeleteDependents (foreground deletion), with the same order of precedence."""
    if options.orphan_dependents is not None:
        return False
    if options.propagation_policy is not None:
        return options.propagation_policy == "Foreground"
    return _first_gc_finalizer(finalizers) == FINALIZER_DELETE_DEPENDENTS


def finalizers_for(meta: dict[str, Any], options: DeleteOptions) -> tuple[bool, list[str]]:
    """deletionFinalizersForGarbageCollection: (changed, finalizers) with the propagation policy's
    finalizer in place; an unchanged set keeps the stored order (no write)."""
    current = list(meta.get("finalizers") or [])
    wanted = [f for f in current if f not in _GC_FINALIZERS]
    if should_orphan(current, options):
        wanted.append(FINALIZER_ORPHAN_DEPENDENTS)
    if should_delete_dependents(current, options):
        wanted.append(FINALIZER_DELETE_DEPENDENTS)
    if set(wanted) == set(current):
        return False, current
    return True, wanted


def mark_as_deleting(meta: dict[str, Any]) -> None:
    """markAsDeleting, for kinds without graceful deletion: the first mark bumps generation (its
    controllers must notice), deletionTimestamp never moves later, the grace period is 0."""
    now = metadata.now_rfc3339()
    existing = meta.get("deletionTimestamp")
    if not existing and int(meta.get("generation") or 0) > 0:
        meta["generation"] = int(meta["generation"]) + 1
    if not existing or existing > now:
        meta["deletionTimestamp"] = now
    meta["deletionGracePeriodSeconds"] = 0


def should_delete_during_update(meta: dict[str, Any], old: dict[str, Any]) -> bool:
    """ShouldDeleteDuringUpdate: no finalizer left on an object whose deletion was requested."""
    if meta.get("finalizers") or not old.get("deletionTimestamp"):
        return False
    return not old.get("deletionGracePeriodSeconds")


def preconditions_hold(meta: dict[str, Any], options: DeleteOptions) -> bool:
    """The uid and resourceVersion preconditions of a delete hold for this state (no error built)."""
    if options.uid is not None and options.uid != meta.get("uid"):
        return False
    return options.resource_version is None or options.resource_version == meta.get("resourceVersion")


def check_storage_preconditions(
    meta: dict[str, Any], options: DeleteOptions, resource: GroupResource
) -> None:
    """storage.Preconditions.Check: the preconditions, re-checked against the state a try of the
    storage delete starts from, in the storage layer's words (rest.BeforeDelete has its own)."""
    _check_preconditions(meta, options, resource, _STORAGE_WORDS)


# How a failed uid / resourceVersion precondition is worded: {0} the precondition, {1} the record's.
_STORAGE_WORDS = (
    "Precondition failed: UID in precondition: {0}, UID in object meta: {1}",
    "Precondition failed: ResourceVersion in precondition: {0}, ResourceVersion in object meta: {1}",
)
_BEFORE_DELETE_WORDS = (
    "the UID in the precondition ({0}) does not match the UID in record ({1}). "
    "The object might have been deleted and then recreated",
    "the ResourceVersion in the precondition ({0}) does not match the ResourceVersion in record ({1}). "
    "The object might have been modified",
)


def _check_preconditions(
    meta: dict[str, Any], options: DeleteOptions, resource: GroupResource, words: tuple[str, str]
) -> None:
    name, uid, rv = (meta.get(f, "") for f in ("name", "uid", "resourceVersion"))
    if options.uid is not None and options.uid != uid:
        raise errors.conflict(resource, name, words[0].format(options.uid, uid))
    if options.resource_version is not None and options.resource_version != rv:
        raise errors.conflict(resource, name, words[1].format(options.resource_version, rv))


# --- one object ------------------------------------------------------------------------------------


async def delete(
    store: DeletingStore, namespace: str, name: str, options: DeleteOptions, validate: ValidateObject
) -> tuple[HubObject, bool]:
    """kube's Store.Delete: returns (object, deleted_now); marks the object as deleting instead while
    finalizers remain or a grace period runs."""
    key = store.key(namespace, name)
    try:
        kv = await store.storage.get(key)
    except st.StorageError as e:
        raise interpret(e, store.resource, name) from e
    current = store.codec.decode(kv.value, kv.mod_revision)
    _check_delete_preconditions(store.codec, current, options)
    grace = before_delete(store.graceful_deletion, current, options)
    if grace.pending:
        # Already going at least as soon as asked: nothing changes, finalizers included (kube).
        return current, False
    changed, _ = finalizers_for(current.metadata, options)
    if grace.graceful or current.metadata.get("finalizers") or changed:
        try:
            marked = await _mark_deleting(store, key, name, options, validate)
        except _AlreadyDeleting:
            return current, False
        if marked is not None:
            obj, then_delete = marked
            if not then_delete or options.dry_run:
                return obj, False
            return await _delete_after_grace(store, key, name, options, validate, obj), True
    return await _delete_now(store, key, name, options, validate, read=(kv, current)), True


def _check_delete_preconditions(codec: Codec, obj: HubObject, options: DeleteOptions) -> None:
    """kube's rest.BeforeDelete: fail early, in its words, naming the *kind* where the resource goes."""
    by_kind = GroupResource(codec.group, codec.kind.kind)
    _check_preconditions(obj.metadata, options, by_kind, _BEFORE_DELETE_WORDS)


async def _delete_now(
    store: DeletingStore,
    key: str,
    name: str,
    options: DeleteOptions,
    validate: ValidateObject,
    read: tuple[st.KeyValue, HubObject] | None = None,
) -> HubObject:
    """Preconditions and admission run against the state actually deleted; dry-run stops there.

    ``read`` is the state the caller just read and decoded: storage starts from it (no second
    read), and while it is the state being deleted it is not decoded again (a deletecollection
    of 10,000 spent most of its time decoding each object three times).
    """
    checked: list[tuple[bytes, HubObject]] = []

    async def check(kv: st.KeyValue) -> None:
        same = read is not None and read[0].mod_revision == kv.mod_revision and read[0].value == kv.value
        obj = read[1] if same and read is not None else store.codec.decode(kv.value, kv.mod_revision)
        checked[:] = [(kv.value, obj)]
        check_storage_preconditions(obj.metadata, options, store.resource)
        await validate(obj, obj)

    try:
        if options.dry_run:
            kv = await store.storage.get(key)
            await check(kv)
        else:
            kv = await delete_key(store, key, check, read[0] if read else None)
    except st.StorageError as e:
        raise interpret(e, store.resource, name) from e
    if checked and checked[0][0] == kv.value:
        # The object checked is the one deleted (ours alone, decoded for this request): answer
        # with it, stamped with the delete's revision as decode would.
        obj = checked[0][1]
        obj.metadata["resourceVersion"] = str(kv.mod_revision)
        return obj
    return store.codec.decode(kv.value, kv.mod_revision)


class _DeleteNow(Exception):
    """Raised inside the marking update when no finalizer remains: abort it and delete instead."""


class _AlreadyDeleting(Exception):
    """Raised inside the marking update when the current state is already being deleted at least
    as soon as asked (kube's errAlreadyDeleting): nothing is written."""


async def _mark_deleting(
    store: DeletingStore, key: str, name: str, options: DeleteOptions, validate: ValidateObject
) -> tuple[HubObject, bool] | None:
    """kube's updateForGracefulDeletionAndFinalizers: set the propagation finalizers, then either the
    graceful deletion's timestamp and period, or (no grace period) deletionTimestamp and period 0
    while any finalizer remains. Returns (the object written, whether to delete it now: a period
    shortened to 0 with no finalizer left); None means nothing holds it (e.g. Background dropped the
    only "orphan"): the caller deletes at once."""
    codec = store.codec
    delete_after: list[bool] = [False]

    async def mark(kv: st.KeyValue | None) -> bytes:
        assert kv is not None
        obj = codec.decode(kv.value, kv.mod_revision)
        check_storage_preconditions(obj.metadata, options, store.resource)
        await validate(obj, obj)
        _check_delete_preconditions(codec, obj, options)
        grace = before_delete(store.graceful_deletion, obj, options)
        if grace.pending:
            raise _AlreadyDeleting
        changed, finalizers = finalizers_for(obj.metadata, options)
        if changed:
            obj.metadata["finalizers"] = finalizers
        held = bool(obj.metadata.get("finalizers"))
        if grace.graceful:
            set_grace(obj.metadata, grace)
            delete_after[0] = grace.period == 0 and not held
        elif held:
            mark_as_deleting(obj.metadata)
            delete_after[0] = False
        else:
            raise _DeleteNow
        return codec.encode(obj)

    try:
        if options.dry_run:
            kv = await store.storage.get(key)
            return codec.decode(await mark(kv), kv.mod_revision), delete_after[0]
        kv = await store.storage.guaranteed_update(key, mark)
    except _DeleteNow:
        return None
    except st.StorageError as e:
        raise interpret(e, store.resource, name) from e
    return codec.decode(kv.value, kv.mod_revision), delete_after[0]


async def _delete_after_grace(
    store: DeletingStore,
    key: str,
    name: str,
    options: DeleteOptions,
    validate: ValidateObject,
    written: HubObject,
) -> HubObject:
    """The delete after the update that shortened a grace period to 0 (kube's deleteImmediately with
    ignoreNotFound): a resourceVersion precondition now means the state just written, and another
    delete that removed the object first (another worker, the finisher) is no error."""
    if options.resource_version is not None:
        options = dataclasses.replace(options, resource_version=written.metadata.get("resourceVersion"))
    try:
        return await _delete_now(store, key, name, options, validate)
    except StatusError as e:
        if e.code == 404:
            return written
        raise


async def finish_deletion(store: DeletingStore, key: str, obj: HubObject, *, dry_run: bool) -> HubObject:
    """kube's deleteWithoutFinalizers: the update that empties the finalizers of a deleting object
    is not written; the stored object is deleted instead (watchers see one DELETED carrying the last
    stored state) and the caller gets the updated object. Only the uid guards the delete, and a
    concurrent delete that got there first is fine."""
    same_uid = DeleteOptions(uid=obj.metadata.get("uid"))

    async def same_object(kv: st.KeyValue) -> None:
        current = store.codec.decode(kv.value, kv.mod_revision)
        check_storage_preconditions(current.metadata, same_uid, store.resource)

    if dry_run:
        return obj
    try:
        await delete_key(store, key, same_object)
    except st.NotFound:
        pass
    except st.StorageError as e:
        raise interpret(e, store.resource, obj.metadata.get("name", "")) from e
    return obj


# --- one item of a deletecollection ----------------------------------------------------------------


class _Stale(Exception):
    """Admission refused the listed state, which is no longer current: start again from storage."""


async def delete_listed(
    store: DeletingStore, item: StoredObject, options: DeleteOptions, validate: ValidateObject
) -> None:
    """Delete `item` as kube's ``Store.Delete`` would; errors are the API errors it raises."""
    namespace, name = item.namespace or "", item.name
    listed = item.hub()
    revision = listed.metadata.get("resourceVersion")
    if options.dry_run or not revision or not _deletes_at_once(store, listed, options):
        await delete(store, namespace, name, options, validate)
        return
    # Only the key and mod_revision of `cached` are relied on (Interface.delete), and its value where
    # an allocated number must be released with it: the listed state's JSON, which the cache holds.
    value = item.json(store.codec.kind.storage_version) if store.allocator is not None else b""
    cached = st.KeyValue(item.key, value, 0, int(revision))

    async def check(kv: st.KeyValue) -> None:
        if kv is not cached:
            current = store.codec.decode(kv.value, kv.mod_revision)
            check_storage_preconditions(current.metadata, options, store.resource)
            await validate(current, current)
            return
        try:
            await validate(listed, listed)
        except Exception:
            if (await store.storage.get(item.key)).mod_revision == cached.mod_revision:
                raise
            raise _Stale from None

    try:
        try:
            await delete_key(store, item.key, check, cached)
        except _Stale:
            await delete_key(store, item.key, check)
    except st.StorageError as e:
        raise interpret(e, store.resource, name) from e


def _deletes_at_once(store: DeletingStore, listed: HubObject, options: DeleteOptions) -> bool:
    """True when kube's Delete, reading this state, would go straight to the storage delete: the
    preconditions hold, no grace period applies, and no finalizer is kept or added by the
    propagation policy."""
    meta = listed.metadata
    if not preconditions_hold(meta, options):
        return False
    policy = store.graceful_deletion
    if policy is not None and before_delete(policy, listed, options) != NOT_GRACEFUL:
        return False
    changed, _ = finalizers_for(meta, options)
    return not meta.get("finalizers") and not changed
