"""List with selectors, limit and continue, as kube's etcd3 store GetList does it.

Pages are read at one fixed revision (carried in the continue token), so a client paging through a
large list sees one consistent snapshot. Selectors filter after reading, so a page may take several
storage reads to fill; the continue token always points just past the last key *examined*.
"""

from __future__ import annotations

from typing import Protocol

from apis.meta import errors
from apis.meta.fields import single_name
from apis.runtime.kinds import HubObject
from registry.generic.options import ListOptions, ObjectList, WatchOptions
from registry.generic.storage_errors import parse_resource_version
from storage import interface as st
from storage.continuation import InvalidContinue, decode_continue, encode_continue


class ListSource(Protocol):
    """What listing storage needs of a resource's Store: its storage, how a stored object decodes, and
    which objects a selector matches. A Protocol, so this module does not import the Store that calls
    it (store → paging, never back)."""

    @property
    def storage(self) -> st.Interface: ...

    def decode(self, kv: st.KeyValue) -> HubObject: ...

    def matches(self, obj: HubObject, options: ListOptions | WatchOptions) -> bool: ...


# kube grows the storage page when a selector filters most items out, up to this many keys a read.
MAX_READ = 10_000


# kube's etcd3 store messages (storage/etcd3/store.go) for lists whose revision was compacted away.
EXPIRED_LIST = "The resourceVersion for the provided list is too old."
INCONSISTENT_CONTINUE = (
    "The provided continue parameter is too old to display a consistent list result. You can start a "
    "new list without the continue parameter, or use the continue token in this response to retrieve "
    "the remainder of the results. Continuing with the provided token results in an inconsistent list - "
    "objects that were created, modified, or deleted between the time the first chunk was returned and "
    "now may show up in the list."
)


class ExpiredContinue(errors.StatusError):
    """410 Expired whose Status carries a token to go on at the newest revision (kube: rv -1)."""

    def __init__(self, token: str) -> None:
        super().__init__(410, "Expired", INCONSISTENT_CONTINUE)
        self.continue_token = token

    def status(self) -> dict:
        body = super().status()
        body["metadata"] = {"continue": self.continue_token}
        return body


async def _start(store: ListSource, prefix: str, options: ListOptions) -> tuple[str, int]:
    """Where to start reading and at which revision (0 = newest)."""
    if options.continue_token:
        try:
            key, revision = decode_continue(options.continue_token, prefix)
        except InvalidContinue as e:
            raise errors.bad_request(str(e)) from None
        # A negative revision (minted after compaction) means "go on at the newest state".
        return key, max(revision, 0)
    rv = parse_resource_version(options.resource_version)
    match = options.resource_version_match
    if match == "Exact" or (not match and rv and options.limit):
        # Exact, or kube's legacy rule: a non-zero resourceVersion with a limit reads at that revision.
        return prefix, rv
    if rv:
        # NotOlderThan: the newest state is fine as long as the store has reached rv.
        current = await store.storage.current_revision()
        if current < rv:
            raise st.FutureRevision(rv, current)
    return prefix, 0


async def list_from_storage(
    store: ListSource, prefix: str, options: ListOptions, *, all_namespaces: bool
) -> ObjectList:
    """`all_namespaces`: a namespaced resource listed across namespaces, where a name alone names no key."""
    predicate = options.predicate
    name = single_name(predicate.fields) if predicate.fields is not None else None
    start, revision = await _start(store, prefix, options)
    try:
        if name is not None and not options.continue_token and not all_namespaces:
            return await _list_single(store, prefix, name, options, revision)
        return await _read_pages(store, prefix, options, start, revision)
    except st.TooOldResourceVersion:
        if options.continue_token:
            raise ExpiredContinue(encode_continue(start, prefix, -1)) from None
        raise errors.expired(EXPIRED_LIST) from None


async def _read_pages(
    store: ListSource, prefix: str, options: ListOptions, start: str, revision: int
) -> ObjectList:
    predicate = options.predicate
    limit = options.limit
    items: list = []
    read = min(max(limit, 1) * 2, MAX_READ) if limit else 0
    while True:
        page = await store.storage.list(prefix, revision=revision, start_key=start, limit=read)
        revision = page.revision
        for i, kv in enumerate(page.items):
            obj = store.decode(kv)
            if store.matches(obj, options):
                items.append(obj)
            if limit and len(items) == limit:
                unread = len(page.items) - i - 1
                if not (unread or page.more):
                    return ObjectList(items, str(revision))
                token = encode_continue(kv.key + "\x00", prefix, revision)
                remaining = unread + page.remaining if predicate.empty else None
                return ObjectList(items, str(revision), token, remaining)
        if not page.more or not page.items:
            return ObjectList(items, str(revision))
        start = page.items[-1].key + "\x00"
        read = min(read * 2, MAX_READ)


async def _list_single(
    store: ListSource, prefix: str, name: str, options: ListOptions, revision: int
) -> ObjectList:
    """fieldSelector=metadata.name=<x> (what `kubectl delete --wait` sends) reads one key, as kube's
    GetToList does: one storage read, so the list's resourceVersion is the revision the object was
    read at and a watch from it misses nothing."""
    key = prefix + name
    page = await store.storage.list(prefix, revision=revision, start_key=key, limit=1)
    items = []
    if page.items and page.items[0].key == key:
        obj = store.decode(page.items[0])
        if store.matches(obj, options):
            items.append(obj)
    return ObjectList(items, str(page.revision))
