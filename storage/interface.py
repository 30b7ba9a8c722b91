"""The async storage contract every backend implements.

Storage is byte-oriented on purpose: it knows keys, revisions and watch, never schemas. The registry
encodes objects (in their storage version) before they reach this layer, so a backend can be swapped
without touching API semantics. Preconditions on object content (uid, resourceVersion) are expressed as
callbacks that receive the current value, because only the registry can read the bytes.

Revisions are global and monotonic, like etcd's: every write gets a new revision, and an object's
`mod_revision` becomes its `metadata.resourceVersion`.
"""

from __future__ import annotations

import enum
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class KeyValue:
    key: str
    value: bytes
    create_revision: int
    mod_revision: int


@dataclass(frozen=True, slots=True)
class ListResult:
    items: list[KeyValue]
    # The revision the list was read at; a later page must be read at this same revision.
    revision: int
    # True when keys after the last returned one exist under the prefix (at `revision`).
    more: bool
    # How many keys after the returned page exist (at `revision`); 0 when `more` is False.
    remaining: int


class EventType(enum.StrEnum):
    ADDED = "ADDED"
    MODIFIED = "MODIFIED"
    DELETED = "DELETED"
    # No key and no value: every change under the watched prefix at or below `revision` has been
    # delivered (etcd's progress notification). Only sent after WatchStream.request_progress().
    PROGRESS = "PROGRESS"


@dataclass(frozen=True, slots=True)
class Event:
    type: EventType
    key: str
    # For DELETED: the last value the key had before the delete (what clients see as the final state).
    value: bytes
    # The revision of this change (for DELETED: the revision of the delete itself).
    revision: int
    # The value before this change; None for ADDED.
    prev_value: bytes | None


class StorageError(Exception):
    """Base of every error a backend raises; the API layer maps each subclass to one HTTP status."""

    def __init__(self, key: str, message: str = "") -> None:
        super().__init__(message or key)
        self.key = key


class NotFound(StorageError):
    """The key does not exist (→ 404)."""


class AlreadyExists(StorageError):
    """create() on a key that exists (→ 409 AlreadyExists)."""


class CompanionExists(StorageError):
    """create() with companions found one of them (`key`) present: nothing was written.

    Distinct from AlreadyExists, which is about the object itself (409): a companion records that
    something the object holds (an allocated number, registry/generic/allocation.py) is taken, and
    only the caller knows whether that means "try another" or a 422.
    """


class Conflict(StorageError):
    """A revision precondition failed (→ 409 Conflict)."""


class TooOldResourceVersion(StorageError):
    """A read or watch asked for a revision that was compacted away (→ 410 Expired/Gone)."""

    def __init__(self, requested: int, oldest: int, current: int = 0) -> None:
        super().__init__("", f"too old resource version: {requested} ({oldest})")
        self.requested = requested
        self.oldest = oldest
        self.current = current


class FutureRevision(StorageError):
    """A read asked for a revision newer than the store has (→ 504 Timeout 'Too large resource version')."""

    def __init__(self, requested: int, current: int) -> None:
        super().__init__("", f"Too large resource version: {requested}, current: {current}")
        self.requested = requested
        self.current = current


class Unavailable(StorageError):
    """The backend cannot be reached now and nothing was changed (→ 503 with Retry-After)."""


class UnknownOutcome(StorageError):
    """A write reached the backend but no answer came back in time: it may have been applied (→ 504).

    kube's etcd3 store answers such a write with a Timeout, never with "unavailable": a client told
    503 retries a create that in fact succeeded and gets 409 AlreadyExists.
    """


# Receives the current value (None when the key is missing) and returns the new bytes to store.
# Returning bytes equal to the current value means "no change": nothing is written and the
# revision stays. Raising any exception aborts the update and is propagated unchanged, which is how
# the registry expresses preconditions, validation failures and admission denials.
UpdateFunc = Callable[[KeyValue | None], Awaitable[bytes]]


class WatchStream(Protocol):
    """What `Interface.watch` returns: the events, plus a way to learn how far the stream has got."""

    def __aiter__(self) -> AsyncIterator[Event]: ...

    async def __anext__(self) -> Event: ...

    def request_progress(self) -> bool:
        """Ask for a PROGRESS event at (at least) the store's revision now, after the events before it.

        False when this backend cannot promise that now: an etcd member before the fix of
        etcd-io/etcd#15220 may report progress ahead of events still queued, and a stream that is
        (re)connecting has no member yet; the caller must then not rely on progress. True does not
        promise an answer to this very request (etcd 3.6 drops one while a watcher catches up): a
        caller that waits asks again.
        """
        ...

    async def aclose(self) -> None: ...


# Called with the current value before a delete; raising aborts the delete (e.g. a uid mismatch).
DeleteCheck = Callable[[KeyValue], Awaitable[None]]

# Given the value about to be deleted, the companion keys that go with it, each with the bytes it must
# still hold to be deleted (a companion holding anything else, or missing, is left alone).
Companions = Callable[[KeyValue], Mapping[str, bytes]]


class Interface(Protocol):
    """What the registry needs from a backend. Both backends pass tests/storage/conformance."""

    async def create(
        self, key: str, value: bytes, *, companions: Mapping[str, bytes] | None = None
    ) -> KeyValue:
        """Store a new key. Raises AlreadyExists.

        `companions` are other keys written in the same transaction, every one of them required to be
        absent too (etcd: one Txn comparing every key's create_revision with 0): either all keys are
        written or none. A companion that exists raises CompanionExists naming it; the object itself
        existing is still AlreadyExists. Companions share the object's revision (etcd) or
        get revisions of their own just before it (embedded store); either way the object's is the
        newest, and the returned KeyValue is the object's.
        """
        ...

    async def get(self, key: str, *, revision: int = 0) -> KeyValue:
        """Read a key, at `revision` when non-zero. Raises NotFound, TooOldResourceVersion."""
        ...

    async def list(
        self, prefix: str, *, revision: int = 0, start_key: str | None = None, limit: int = 0
    ) -> ListResult:
        """Keys under `prefix` in key order, read at `revision` (0 = now).

        `start_key` is inclusive, so a continuation passes the last key + "\\x00". `limit` 0 means
        all. Raises TooOldResourceVersion when `revision` was compacted, FutureRevision when it is
        ahead of the store.
        """
        ...

    async def guaranteed_update(
        self, key: str, update: UpdateFunc, *, ignore_not_found: bool = False
    ) -> KeyValue:
        """Read-modify-write with optimistic concurrency, retried on a concurrent write.

        `update` may run more than once; it must be pure apart from raising. With
        `ignore_not_found`, a missing key is passed to `update` as None and the result is created;
        otherwise a missing key raises NotFound without calling `update`.
        """
        ...

    async def delete(
        self,
        key: str,
        *,
        check: DeleteCheck | None = None,
        cached: KeyValue | None = None,
        companions: Companions | None = None,
    ) -> KeyValue:
        """Delete a key and return its last value, with mod_revision set to the delete's revision
        (what kube reports as the deleted object's resourceVersion). `check` runs on every try.
        `cached` is the state the caller just read (kube's cachedExistingObject): the first try
        passes it to `check` and deletes only while the key's mod_revision is still cached's,
        instead of reading again; a stale one only costs a retry with the current value. Only its
        key and mod_revision are relied on (a watch cache holds decoded objects, not the stored
        bytes); the returned value is always the one actually deleted. Raises NotFound.

        `companions`, called after `check` on every try with the value being deleted, names keys
        deleted in the same transaction, each only while it still holds the given bytes. With
        `companions`, a `cached` state is passed to it too, so it must then carry the value."""
        ...

    def watch(self, prefix: str, revision: int) -> WatchStream:
        """Events under `prefix` with revision > `revision`, in revision order, exactly once.

        The watch starts when `watch()` is called, not when first iterated, so a write made right
        after the call is never missed; `revision` 0 means "after the newest revision now".

        Raises TooOldResourceVersion (when iterated) if `revision` is older than what the backend
        retains. The iterator ends only when the backend closes or the consumer stops.
        """
        ...

    async def current_revision(self) -> int:
        """The newest revision in the store (what an empty list reports as its resourceVersion).

        At least the revision of every write this server has acknowledged, which is what makes a
        "consistent read" from a watch cache wait for the right point."""
        ...

    async def compact(self, revision: int) -> None:
        """Forget history at or below `revision`; reads and watches from there get TooOld."""
        ...

    async def check_retained(self, revision: int) -> None:
        """Raise TooOldResourceVersion when history before `revision` is known to be compacted.

        For a watch cache serving a page or a resumed watch at an older revision from its own memory:
        the answer may come from what the backend knows rather than a round trip (etcd: its own
        compactions and the revision kube's compactors record, re-read every 15 s as kube's cacher
        does), so a compaction by another client moments ago may still pass, as with kube's list
        snapshots; the objects served are the revision's either way."""
        ...

    async def check(self) -> None:
        """Raise Unavailable when the backend cannot serve; used by /readyz."""
        ...

    async def close(self) -> None: ...
