"""One item of a deletecollection, deleted starting from the state the list gave.

Why: kube's DeleteCollection runs the full ``Store.Delete`` per item, which reads the object again
and decodes it before deleting. Here that read and decode were most of the cost of a
deletecollection (10,000 pizzas on etcd: two gRPC calls and a full decode per item). The listed item
already is a state of the object with its revision, i.e. what kube's ``Store.Delete`` would have
read had it read right after the list. So each item goes as kube's ``Store.Delete`` goes from that
state:

- ``rest.BeforeDelete`` preconditions, finalizers and the propagation policy are decided on it;
  whenever they ask for more than a plain delete (a precondition fails, a finalizer is kept or
  added) or the request is a dry run, the item goes through ``Store.delete`` itself, which reads
  the current state and answers exactly as kube (409 in kube's words, marking instead of deleting);
- otherwise the storage delete runs as kube's ``conditionalDelete`` with a ``cachedExistingObject``:
  validating admission on the listed state, then a delete only while the key's revision is still
  the listed one (etcd: a txn comparing ``mod_revision``), so the state checked is the state
  deleted. When the object changed since the list, every further try starts from the current state
  (storage preconditions, admission again, delete), and an admission denial on the listed state
  stands only if that state is still current — both as ``conditionalDelete`` does.

The answer is unaffected: the deletecollection answer is the list as read, in kube as here.
"""

from __future__ import annotations

from typing import Any, Protocol

from apis.meta.errors import GroupResource
from apis.runtime.codec import Codec
from apis.runtime.kinds import HubObject
from registry.generic.admission import ValidateObject
from registry.generic.cache.stored import StoredObject
from registry.generic.deletion import check_storage_preconditions, finalizers_for, preconditions_hold
from registry.generic.options import DeleteOptions
from registry.generic.storage_errors import interpret
from storage import interface as st


class DeletingStore(Protocol):
    """What deleting a listed item needs of its Store: the full delete to fall back on, the storage,
    the codec and the resource for errors. A Protocol, so this module does not import the Store that
    calls it (store → listed_delete, never back)."""

    @property
    def storage(self) -> st.Interface: ...

    @property
    def codec(self) -> Codec: ...

    @property
    def resource(self) -> GroupResource: ...

    async def delete(
        self, namespace: str, name: str, options: DeleteOptions, *, validate: ValidateObject = ...
    ) -> tuple[HubObject, bool]: ...


class _Stale(Exception):
    """Admission refused the listed state, which is no longer current: start again from storage."""


async def delete_listed(
    store: DeletingStore, item: StoredObject, options: DeleteOptions, validate: ValidateObject
) -> None:
    """Delete `item` as kube's ``Store.Delete`` would; errors are the API errors it raises."""
    namespace, name = item.namespace or "", item.name
    listed = item.hub()
    revision = listed.metadata.get("resourceVersion")
    if options.dry_run or not revision or not _deletes_at_once(listed.metadata, options):
        await store.delete(namespace, name, options, validate=validate)
        return
    # Only the key and mod_revision of `cached` are relied on (Interface.delete).
    cached = st.KeyValue(item.key, b"", 0, int(revision))

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
            await store.storage.delete(item.key, check=check, cached=cached)
        except _Stale:
            await store.storage.delete(item.key, check=check)
    except st.StorageError as e:
        raise interpret(e, store.resource, name) from e


def _deletes_at_once(meta: dict[str, Any], options: DeleteOptions) -> bool:
    """True when kube's Delete, reading this state, would go straight to the storage delete: the
    preconditions hold and no finalizer is kept or added by the propagation policy."""
    if not preconditions_hold(meta, options):
        return False
    changed, _ = finalizers_for(meta, options)
    return not meta.get("finalizers") and not changed
