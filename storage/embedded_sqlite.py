"""The synchronous SQLite half of the embedded backend: an etcd-like MVCC revision log in one table.

Every write appends one row `(revision, key, create_revision, deleted, value)` under the next global
revision, so the state at any retained revision is "the newest row per key at or below it", which is
what gives lists a consistent snapshot across pages and watches a replayable history. A delete row (a
tombstone) keeps the deleted value, because a DELETED watch event must carry the final state.

Nothing here is thread-safe and nothing here may run on the event loop: storage/embedded.py calls
every method on its one dedicated executor thread. Keys are stored as UTF-8 BLOBs so SQLite orders
them bytewise, exactly like etcd.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

from storage.interface import (
    AlreadyExists,
    Event,
    EventType,
    FutureRevision,
    KeyValue,
    ListResult,
    NotFound,
    StorageError,
    TooOldResourceVersion,
)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS revisions (
    revision INTEGER PRIMARY KEY,
    key BLOB NOT NULL,
    create_revision INTEGER NOT NULL,
    deleted INTEGER NOT NULL,
    value BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS revisions_by_key ON revisions (key, revision);
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
"""

# Like a fresh etcd, an empty store is at revision 1 and the first write gets revision 2.
_INITIAL_META = (("revision", 1), ("compacted", 0))

_LATEST_SQL = (
    "SELECT revision, create_revision, deleted, value FROM revisions"
    " WHERE key = ? AND revision <= ? ORDER BY revision DESC LIMIT 1"
)
# The newest row per key at :at, in [lo, hi); tombstones mean "absent at :at".
_SNAPSHOT = (
    "FROM revisions AS r JOIN (SELECT MAX(revision) AS revision FROM revisions"
    " WHERE key >= :lo AND key < :hi AND revision <= :at GROUP BY key) AS latest"
    " ON r.revision = latest.revision WHERE r.deleted = 0"
)
_LIST_SQL = f"SELECT r.key, r.create_revision, r.revision, r.value {_SNAPSHOT} ORDER BY r.key LIMIT :limit"
_COUNT_SQL = f"SELECT COUNT(*) {_SNAPSHOT}"
_HISTORY_SQL = (
    "SELECT r.revision, r.key, r.create_revision, r.deleted, r.value,"
    " (SELECT p.value FROM revisions AS p WHERE p.key = r.key AND p.revision < r.revision"
    "  ORDER BY p.revision DESC LIMIT 1)"
    " FROM revisions AS r WHERE r.revision > :after AND r.key >= :lo AND r.key < :hi"
    " ORDER BY r.revision LIMIT :limit"
)
# A row is history once a newer row of its key exists at or below :rev; a tombstone at or below :rev
# is history too. The newest row per key at :rev survives, so reads at :rev stay exact.
_COMPACT_SQL = (
    "DELETE FROM revisions WHERE revision <= :rev AND (deleted = 1 OR EXISTS ("
    " SELECT 1 FROM revisions AS n WHERE n.key = revisions.key"
    " AND n.revision > revisions.revision AND n.revision <= :rev))"
)

Publish = Callable[[Event], None]


class StorageInUse(StorageError):
    """Another process (or another open in this one) holds the store's lock file."""


class RevisionLog:
    """One SQLite file holding every retained revision of every key under one key prefix."""

    def __init__(self, db: sqlite3.Connection, lock_fd: int, prefix: str, publish: Publish) -> None:
        self._db = db
        self._lock_fd = lock_fd
        self._prefix = prefix
        self._publish = publish
        self._revision = self._meta("revision")
        self._compacted = self._meta("compacted")

    @classmethod
    def open(cls, path: Path, *, prefix: str, publish: Publish) -> RevisionLog:
        """Lock, open and (on first use) initialise the file. `publish` gets each committed Event."""
        path.parent.mkdir(parents=True, exist_ok=True)
        lock_fd = _lock(path.with_name(path.name + ".lock"), path)
        try:
            db = sqlite3.connect(path, isolation_level=None)
            try:
                db.execute("PRAGMA journal_mode=WAL")
                # FULL: a write the API acknowledged must survive a power cut, as it would in etcd.
                db.execute("PRAGMA synchronous=FULL")
                db.executescript(_SCHEMA)
                db.executemany("INSERT OR IGNORE INTO meta (name, value) VALUES (?, ?)", _INITIAL_META)
                return cls(db, lock_fd, prefix, publish)
            except BaseException:
                db.close()
                raise
        except BaseException:
            os.close(lock_fd)
            raise

    def close(self) -> None:
        self._db.close()
        os.close(self._lock_fd)  # closing the descriptor releases the flock

    def current_revision(self) -> int:
        return self._revision

    def compacted_revision(self) -> int:
        return self._compacted

    def get(self, key: str, revision: int) -> KeyValue:
        self._check_readable(revision)
        found = self._live(key, revision or self._revision)
        if found is None:
            raise NotFound(key)
        return found

    def current(self, key: str) -> KeyValue | None:
        return self._live(key, self._revision)

    def create(self, key: str, value: bytes) -> KeyValue:
        with self._transaction():
            if self._live(key, self._revision) is not None:
                raise AlreadyExists(key)
            revision = self._append(key, revision=self._revision + 1, create_revision=0, value=value)
        return self._committed(Event(EventType.ADDED, key, value, revision, None), create_revision=revision)

    def put_if(self, key: str, value: bytes, expected_mod_revision: int) -> KeyValue | None:
        """Write `value` if the key's mod_revision is still `expected_mod_revision` (0 = absent).

        Returns None when someone else wrote the key in between, so the caller re-reads and retries.
        """
        with self._transaction():
            live = self._live(key, self._revision)
            if (live.mod_revision if live else 0) != expected_mod_revision:
                return None
            create_revision = live.create_revision if live else 0
            revision = self._append(
                key, revision=self._revision + 1, create_revision=create_revision, value=value
            )
        if live is None:
            return self._committed(
                Event(EventType.ADDED, key, value, revision, None), create_revision=revision
            )
        event = Event(EventType.MODIFIED, key, value, revision, live.value)
        return self._committed(event, create_revision=live.create_revision)

    def delete_if(self, key: str, expected_mod_revision: int) -> KeyValue | None:
        """Delete the key if it is still at `expected_mod_revision`, else None.

        Returns the last value stamped with the delete's revision, as kube's etcd3 store decodes a
        deleted object with the DeleteRange header revision (so the response's resourceVersion is new).
        """
        with self._transaction():
            live = self._live(key, self._revision)
            if live is None or live.mod_revision != expected_mod_revision:
                return None
            revision = self._append(
                key,
                revision=self._revision + 1,
                create_revision=live.create_revision,
                value=live.value,
                deleted=True,
            )
        event = Event(EventType.DELETED, key, live.value, revision, live.value)
        return self._committed(event, create_revision=live.create_revision)

    def list(self, prefix: str, revision: int, start_key: str | None, limit: int) -> ListResult:
        """Keys under the directory `prefix` (ends in "/") at `revision` (0 = now) from `start_key` on."""
        self._check_readable(revision)
        at = revision or self._revision
        low = self._raw(prefix)
        if start_key is not None:
            low = max(low, self._raw(start_key))
        params = {"lo": low, "hi": _prefix_end(self._raw(prefix)), "at": at}
        rows = self._db.execute(_LIST_SQL, {**params, "limit": limit + 1 if limit > 0 else -1}).fetchall()
        items = [KeyValue(self._key(raw), value, create, mod) for raw, create, mod, value in rows]
        if limit <= 0 or len(items) <= limit:
            return ListResult(items=items, revision=at, more=False, remaining=0)
        (total,) = self._db.execute(_COUNT_SQL, params).fetchone()
        return ListResult(items=items[:limit], revision=at, more=True, remaining=total - limit)

    def history(self, prefix: str, after: int, limit: int) -> list[Event]:
        """Up to `limit` events under the directory `prefix` with revision > `after`, oldest first."""
        if after > self._revision:
            raise FutureRevision(after, self._revision)
        if after < self._compacted:
            raise TooOldResourceVersion(after, self._compacted, self._revision)
        raw_prefix = self._raw(prefix)
        params = {"after": after, "lo": raw_prefix, "hi": _prefix_end(raw_prefix), "limit": limit}
        events = []
        rows = self._db.execute(_HISTORY_SQL, params)
        for revision, raw, create_revision, deleted, value, previous in rows:
            key = self._key(raw)
            if deleted:
                events.append(Event(EventType.DELETED, key, value, revision, value))
            elif create_revision == revision:
                events.append(Event(EventType.ADDED, key, value, revision, None))
            else:
                events.append(Event(EventType.MODIFIED, key, value, revision, previous))
        return events

    def compact(self, revision: int) -> int:
        """Drop history at or below `revision`; returns the compacted revision now in force."""
        if revision > self._revision:
            raise FutureRevision(revision, self._revision)
        if revision <= self._compacted:
            return self._compacted
        with self._transaction():
            self._db.execute(_COMPACT_SQL, {"rev": revision})
            self._db.execute("UPDATE meta SET value = ? WHERE name = 'compacted'", (revision,))
        self._compacted = revision
        return revision

    def _check_readable(self, revision: int) -> None:
        if revision > self._revision:
            raise FutureRevision(revision, self._revision)
        if 0 < revision < self._compacted:
            raise TooOldResourceVersion(revision, self._compacted, self._revision)

    def _live(self, key: str, at: int) -> KeyValue | None:
        row = self._db.execute(_LATEST_SQL, (self._raw(key), at)).fetchone()
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
        return revision

    def _committed(self, event: Event, create_revision: int) -> KeyValue:
        """Advance the in-memory revision only after COMMIT succeeded, then tell the watchers."""
        self._revision = event.revision
        self._publish(event)
        return KeyValue(event.key, event.value, create_revision, event.revision)

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        # IMMEDIATE takes the write lock up front, so the read-check-append inside is one atomic step.
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
            self._db.execute("COMMIT")
        except BaseException:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise

    def _meta(self, name: str) -> int:
        (value,) = self._db.execute("SELECT value FROM meta WHERE name = ?", (name,)).fetchone()
        return int(value)

    def _raw(self, key: str) -> bytes:
        return (self._prefix + key).encode("utf-8")

    def _key(self, raw: bytes) -> str:
        return raw.decode("utf-8")[len(self._prefix) :]


def _prefix_end(prefix: bytes) -> bytes:
    """etcd's GetPrefixRangeEnd: the smallest key greater than every key starting with `prefix`."""
    for index in range(len(prefix) - 1, -1, -1):
        if prefix[index] < 0xFF:
            return prefix[:index] + bytes([prefix[index] + 1])
    raise ValueError(f"prefix {prefix!r} has no finite range end")


def _lock(lock_path: Path, db_path: Path) -> int:
    """Hold an exclusive flock for the store's lifetime: SQLite's own locking would let two servers
    interleave writes and hand out the same revision numbers to their separate watch fan-outs."""
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise StorageInUse(
            str(db_path),
            f"embedded storage {db_path} is already in use by another server (lock {lock_path} is held)",
        ) from None
    except BaseException:
        os.close(fd)
        raise
    return fd
