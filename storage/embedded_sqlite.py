"""The synchronous SQLite half of the embedded backend: an etcd-like MVCC revision log in one table.

Every write appends one row `(revision, key, create_revision, deleted, value)` under the next global
revision, so the state at any retained revision is "the newest row per key at or below it", which is
what gives lists a consistent snapshot across pages and watches a replayable history. A delete row (a
tombstone) keeps the deleted value, because a DELETED watch event must carry the final state.

Several processes (the workers of one server) may write the same file. A write takes the writer lock
(storage/embedded_lock.py), then `BEGIN IMMEDIATE`, reads `meta.revision` *inside* the transaction and
appends under revision + 1, commits, stores the new revision in the shared counter and only then
releases the writer lock: revisions are strictly increasing and consecutive across processes, and
commits happen in revision order. Reads never trust a revision cached in memory: a read "now" reads
the newest committed rows, and a read that must agree with `meta` (a list and its count, a read at a
revision, watch history) runs in one read transaction that first reads `meta`, so the compaction and
the revision it checks are those of the snapshot it reads.

The change feed: `catch_up` reads every row after the last revision this process delivered and hands
the events, in revision order, to `publish` (the loop's fan-out). A process's own commit is published
directly when nothing is missing before it, else through `catch_up`. After each commit the writer
rings every sibling registered in `feed_members` (storage/embedded_feed.py), which then catches up.

Nothing here is thread-safe and nothing here may run on the event loop: storage/embedded.py calls
every method on its one dedicated executor thread. Keys are stored as UTF-8 BLOBs so SQLite orders
them bytewise, exactly like etcd.
"""

from __future__ import annotations

import builtins
import contextlib
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from storage import embedded_schema as schema
from storage.embedded_feed import Notifier
from storage.embedded_lock import SharedFile
from storage.interface import (
    AlreadyExists,
    CompanionExists,
    Event,
    EventType,
    FutureRevision,
    KeyValue,
    ListResult,
    NotFound,
    StorageError,
    TooOldResourceVersion,
)

# "Now" for a single-statement read: the newest committed row, whoever wrote it.
_NOW = 2**62
# How long a transaction waits for SQLite's own locks (checkpoints, recovery); writers queue on the
# writer lock first, so this is only a safety net.
_BUSY_TIMEOUT = 10.0
# Events read per catch-up query: bounds one executor call's latency and memory.
_FEED_PAGE = 1000

# (events in revision order, the revision delivered up to, history was lost before them)
Publish = Callable[[list[Event], int, bool], None]


CREATE, PUT, DELETE = "create", "put", "delete"


@dataclass(frozen=True, slots=True)
class WriteOp:
    """One write of a group commit: CREATE fails if the key exists; PUT and DELETE apply only while the
    key's mod_revision is still `expected` (0 = absent, for PUT).

    `companions` are written with a CREATE (each must be absent: CompanionExists) or deleted with a
    DELETE (each only while it holds the given bytes), in the same transaction, each under a revision
    of its own just before the key's.
    """

    kind: str
    key: str
    value: bytes = b""
    expected: int = 0
    companions: tuple[tuple[str, bytes], ...] = ()


def _one(outcomes: list[KeyValue | StorageError | None]) -> KeyValue | None:
    [outcome] = outcomes
    if isinstance(outcome, StorageError):
        raise outcome
    return outcome


class RevisionLog:
    """One SQLite file holding every retained revision of every key under one key prefix."""

    def __init__(
        self,
        db: sqlite3.Connection,
        shared: SharedFile,
        prefix: str,
        publish: Publish,
        notifier: Notifier | None,
    ) -> None:
        self._db = db
        self._shared = shared
        self._prefix = prefix
        self._publish = publish
        self._notifier = notifier
        self._feed_range = (self._raw("/"), _prefix_end(self._raw("/")))
        self._members: list[str] = []
        self._members_version = -1
        self._dead_members: list[str] = []
        self._written = 0  # the revision the open write transaction appended, 0 when none
        # Write transactions this process committed (each a group commit of one or more writes).
        self.commits = 0
        with self._write() as meta:
            if notifier is not None:
                self._db.execute("INSERT OR IGNORE INTO feed_members (name) VALUES (?)", (notifier.name,))
                self._db.execute("UPDATE meta SET value = value + 1 WHERE name = 'members'")
            self._shared.store_revision(meta["revision"])  # (re)initialise the counter from the file
            # Every commit after this transaction rings this process, so nothing after here is missed.
            self._delivered = meta["revision"]
            self._compacted = meta["compacted"]

    @classmethod
    def open(cls, path: Path, *, prefix: str, publish: Publish, notifier: Notifier | None) -> RevisionLog:
        """Open (on first use, initialise) the file. `publish` gets committed events in order."""
        shared = SharedFile(path)
        try:
            db = sqlite3.connect(path, isolation_level=None, timeout=_BUSY_TIMEOUT)
            try:
                # Under the writer lock: switching to WAL and creating the schema may report "locked"
                # without waiting when two workers open a new file at once.
                shared.lock_writer()
                try:
                    db.execute("PRAGMA journal_mode=WAL")
                    # FULL: a write the API acknowledged must survive a power cut, as it would in etcd.
                    db.execute("PRAGMA synchronous=FULL")
                    db.executescript(schema.SCHEMA)
                    db.executemany(schema.INIT_META_SQL, schema.INITIAL_META)
                finally:
                    shared.unlock_writer()
                return cls(db, shared, prefix, publish, notifier)
            except BaseException:
                db.close()
                raise
        except BaseException:
            shared.close()
            raise

    def close(self) -> None:
        try:
            if self._notifier is not None:
                with contextlib.suppress(sqlite3.Error), self._write():
                    self._db.execute("DELETE FROM feed_members WHERE name = ?", (self._notifier.name,))
                    self._db.execute("UPDATE meta SET value = value + 1 WHERE name = 'members'")
            self._db.close()
        finally:
            self._shared.close()

    def current_revision(self) -> int:
        with self._snapshot() as meta:
            return meta["revision"]

    def compacted_revision(self) -> int:
        return self._compacted

    def delivered_revision(self) -> int:
        return self._delivered

    def shared_revision(self) -> int:
        """The newest revision any process committed: a load from shared memory, safe on the loop."""
        return self._shared.read_revision()

    def get(self, key: str, revision: int) -> KeyValue:
        if revision == 0:
            found = self._live(key, _NOW)
        else:
            with self._snapshot() as meta:
                _check_readable(revision, meta)
                found = self._live(key, revision)
        if found is None:
            raise NotFound(key)
        return found

    def current(self, key: str) -> KeyValue | None:
        return self._live(key, _NOW)

    def create(self, key: str, value: bytes) -> KeyValue:
        return _one(self.write_batch([WriteOp(CREATE, key, value)]))  # type: ignore[return-value]

    def put_if(self, key: str, value: bytes, expected_mod_revision: int) -> KeyValue | None:
        """Write `value` if the key's mod_revision is still `expected_mod_revision` (0 = absent).

        Returns None when someone else (any process) wrote the key in between, so the caller re-reads
        and retries.
        """
        return _one(self.write_batch([WriteOp(PUT, key, value, expected_mod_revision)]))

    def delete_if(self, key: str, expected_mod_revision: int) -> KeyValue | None:
        """Delete the key if it is still at `expected_mod_revision`, else None.

        Returns the last value stamped with the delete's revision, as kube's etcd3 store decodes a
        deleted object with the DeleteRange header revision (so the response's resourceVersion is new).
        """
        return _one(self.write_batch([WriteOp(DELETE, key, b"", expected_mod_revision)]))

    def write_batch(self, ops: Sequence[WriteOp]) -> list[KeyValue | StorageError | None]:
        """Group commit: every write in one transaction, so one COMMIT (one fsync, about 1.3 ms here)
        serves them all, where each write used to pay its own.

        Each write still gets its own revision, in order, and is checked on its own: a failed
        precondition fails that write alone (its slot holds the error, or None for a compare-and-swap
        that lost), and a later write in the batch sees the earlier ones.
        """
        applied: list[tuple[builtins.list[Event], int] | StorageError | None] = []
        with self._write() as meta:
            revision = meta["revision"]
            for op in ops:
                try:
                    outcome = self._apply(op, revision + 1)
                except StorageError as err:
                    applied.append(err)
                    continue
                if outcome is not None:
                    revision = outcome[0][-1].revision
                applied.append(outcome)
        return [self._committed(*outcome) if isinstance(outcome, tuple) else outcome for outcome in applied]

    def _apply(self, op: WriteOp, revision: int) -> tuple[builtins.list[Event], int] | None:
        """One write inside the open transaction, from `revision` on: its events (its companions'
        first, the key's last, so that the key's revision is the store's newest, as in etcd where
        they share one) and the key's create revision."""
        key, live = op.key, self._live(op.key, _NOW)
        if op.kind == CREATE:
            if live is not None:
                raise AlreadyExists(key)
            for companion, _ in op.companions:
                if self._live(companion, _NOW) is not None:
                    raise CompanionExists(companion)
            events = []
            for offset, (k, v) in enumerate((*op.companions, (key, op.value))):
                self._append(k, revision=revision + offset, create_revision=0, value=v)
                events.append(Event(EventType.ADDED, k, v, revision + offset, None))
            return events, events[-1].revision
        if op.kind == PUT:
            if (live.mod_revision if live else 0) != op.expected:
                return None
            if live is None:
                self._append(key, revision=revision, create_revision=0, value=op.value)
                return [Event(EventType.ADDED, key, op.value, revision, None)], revision
            self._append(key, revision=revision, create_revision=live.create_revision, value=op.value)
            return [Event(EventType.MODIFIED, key, op.value, revision, live.value)], live.create_revision
        if live is None or live.mod_revision != op.expected:
            return None
        deleted: builtins.list[Event] = []
        for companion, holding in op.companions:
            held = self._live(companion, _NOW)
            if held is not None and held.value == holding:
                deleted.append(self._tombstone(held, revision + len(deleted)))
        deleted.append(self._tombstone(live, revision + len(deleted)))
        return deleted, live.create_revision

    def _tombstone(self, live: KeyValue, revision: int) -> Event:
        self._append(
            live.key, revision=revision, create_revision=live.create_revision, value=live.value, deleted=True
        )
        return Event(EventType.DELETED, live.key, live.value, revision, live.value)

    def list(self, prefix: str, revision: int, start_key: str | None, limit: int) -> ListResult:
        """Keys under the directory `prefix` (ends in "/") at `revision` (0 = now) from `start_key` on."""
        with self._snapshot() as meta:
            _check_readable(revision, meta)
            at = revision or meta["revision"]
            low = self._raw(prefix)
            if start_key is not None:
                low = max(low, self._raw(start_key))
            params = {"lo": low, "hi": _prefix_end(self._raw(prefix)), "at": at}
            page = {**params, "limit": limit + 1 if limit > 0 else -1}
            rows = self._db.execute(schema.LIST_SQL, page).fetchall()
            items = [KeyValue(self._key(raw), value, create, mod) for raw, create, mod, value in rows]
            if limit <= 0 or len(items) <= limit:
                return ListResult(items=items, revision=at, more=False, remaining=0)
            (total,) = self._db.execute(schema.COUNT_SQL, params).fetchone()
        return ListResult(items=items[:limit], revision=at, more=True, remaining=total - limit)

    def history(self, prefix: str, after: int, limit: int) -> builtins.list[Event]:
        """Up to `limit` events under the directory `prefix` with revision > `after`, oldest first."""
        with self._snapshot() as meta:
            if after > meta["revision"]:
                raise FutureRevision(after, meta["revision"])
            if after < meta["compacted"]:
                raise TooOldResourceVersion(after, meta["compacted"], meta["revision"])
            raw_prefix = self._raw(prefix)
            return self._events(raw_prefix, _prefix_end(raw_prefix), after, limit)

    def catch_up(self) -> None:
        """Publish, in revision order, every commit (any process's) after the last one delivered."""
        while True:
            with self._snapshot() as meta:
                newest = meta["revision"]
                if newest <= self._delivered:
                    return
                if self._delivered < meta["compacted"]:
                    # Another process compacted history this process never delivered: watchers must
                    # re-watch (and get 410 if they are that far behind), as etcd's would.
                    self._delivered = newest
                    self._publish([], newest, True)
                    return
                events = self._events(*self._feed_range, self._delivered, _FEED_PAGE)
            upto = events[-1].revision if len(events) == _FEED_PAGE else newest
            self._delivered = upto
            self._publish(events, upto, False)

    def compact(self, revision: int) -> int:
        """Drop history at or below `revision`; returns the compacted revision now in force.

        Idempotent and serialised by the writer lock, so several processes compacting is harmless.
        """
        with self._write() as meta:
            if revision > meta["revision"]:
                raise FutureRevision(revision, meta["revision"])
            if revision <= meta["compacted"]:
                self._compacted = meta["compacted"]
                return self._compacted
            self._db.execute(schema.COMPACT_SQL, {"rev": revision})
            self._db.execute("UPDATE meta SET value = ? WHERE name = 'compacted'", (revision,))
        self._compacted = revision
        return revision

    def _events(self, low: bytes, high: bytes, after: int, limit: int) -> builtins.list[Event]:
        params = {"after": after, "lo": low, "hi": high, "limit": limit}
        events = []
        for revision, raw, create_revision, deleted, value, previous in self._db.execute(
            schema.HISTORY_SQL, params
        ):
            key = self._key(raw)
            if deleted:
                events.append(Event(EventType.DELETED, key, value, revision, value))
            elif create_revision == revision:
                events.append(Event(EventType.ADDED, key, value, revision, None))
            else:
                events.append(Event(EventType.MODIFIED, key, value, revision, previous))
        return events

    def _live(self, key: str, at: int) -> KeyValue | None:
        row = self._db.execute(schema.LATEST_SQL, (self._raw(key), at)).fetchone()
        if row is None or row[2]:
            return None
        mod_revision, create_revision, _, value = row
        return KeyValue(key, value, create_revision, mod_revision)

    def _append(
        self, key: str, *, revision: int, create_revision: int, value: bytes, deleted: bool = False
    ) -> int:
        """Insert the row for `revision` (create_revision 0 = this write creates the key)."""
        self._db.execute(
            "INSERT INTO revisions (revision, key, create_revision, deleted, value) VALUES (?, ?, ?, ?, ?)",
            (revision, self._raw(key), create_revision or revision, int(deleted), value),
        )
        self._db.execute("UPDATE meta SET value = ? WHERE name = 'revision'", (revision,))
        self._written = revision
        return revision

    def _committed(self, events: builtins.list[Event], create_revision: int) -> KeyValue:
        """Publish after COMMIT: directly when they are the next revisions to deliver, else by catching
        up. The KeyValue is the last event's (the written key; the others are its companions)."""
        if events[0].revision == self._delivered + 1:
            self._delivered = events[-1].revision
            self._publish(events, events[-1].revision, False)
        else:
            self.catch_up()
        event = events[-1]
        return KeyValue(event.key, event.value, create_revision, event.revision)

    @contextlib.contextmanager
    def _snapshot(self) -> Iterator[dict[str, int]]:
        """One read transaction: `meta` and every query inside see the same committed state."""
        self._db.execute("BEGIN")
        try:
            yield self._meta()
        finally:
            self._db.execute("COMMIT")

    @contextlib.contextmanager
    def _write(self) -> Iterator[dict[str, int]]:
        """Writer lock + BEGIN IMMEDIATE: `meta` inside is the newest state, and stays so until COMMIT.

        After COMMIT the counter is advanced while the writer lock is still held (so it never goes
        backwards and never runs ahead of committed data), then the siblings are rung.
        """
        self._shared.lock_writer()
        written = 0
        try:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                meta = self._meta()
                self._refresh_members(meta["members"])
                self._written = 0
                yield meta
                self._db.execute("COMMIT")
                self.commits += 1
            except BaseException:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise
            written = self._written
            if written:
                self._shared.store_revision(written)
        finally:
            self._shared.unlock_writer()
        if written and self._notifier is not None and self._members:
            self._dead_members += self._notifier.ring(self._members, written)

    def _refresh_members(self, version: int) -> None:
        """Inside a write transaction: forget siblings that died, reload the list when it changed."""
        if self._notifier is None:
            return
        if self._dead_members:
            dead = [(name,) for name in self._dead_members if name != self._notifier.name]
            self._db.executemany("DELETE FROM feed_members WHERE name = ?", dead)
            self._db.execute("UPDATE meta SET value = value + 1 WHERE name = 'members'")
            self._dead_members = []
            version = -1
        if version != self._members_version:
            rows = self._db.execute("SELECT name FROM feed_members").fetchall()
            self._members = [name for (name,) in rows if name != self._notifier.name]
            self._members_version = version if version >= 0 else self._meta()["members"]

    def _meta(self) -> dict[str, int]:
        return {name: int(value) for name, value in self._db.execute("SELECT name, value FROM meta")}

    def _raw(self, key: str) -> bytes:
        return (self._prefix + key).encode("utf-8")

    def _key(self, raw: bytes) -> str:
        return raw.decode("utf-8")[len(self._prefix) :]


def _check_readable(revision: int, meta: dict[str, int]) -> None:
    if revision > meta["revision"]:
        raise FutureRevision(revision, meta["revision"])
    if 0 < revision < meta["compacted"]:
        raise TooOldResourceVersion(revision, meta["compacted"], meta["revision"])


def _prefix_end(prefix: bytes) -> bytes:
    """etcd's GetPrefixRangeEnd: the smallest key greater than every key starting with `prefix`."""
    for index in range(len(prefix) - 1, -1, -1):
        if prefix[index] < 0xFF:
            return prefix[:index] + bytes([prefix[index] + 1])
    raise ValueError(f"prefix {prefix!r} has no finite range end")
