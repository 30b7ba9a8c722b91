"""The embedded store's SQL: one table of revisions (an etcd-like MVCC log) plus its metadata.

Kept apart from storage/embedded_sqlite.py, which runs it, so the queries can be read (and their
plans checked) in one place. Every query that reads "the state at :at" takes the newest row per key at
or below :at, which is what makes a read at a retained revision exact.
"""

SCHEMA = """
CREATE TABLE IF NOT EXISTS revisions (
    revision INTEGER PRIMARY KEY,
    key BLOB NOT NULL,
    create_revision INTEGER NOT NULL,
    deleted INTEGER NOT NULL,
    value BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS revisions_by_key ON revisions (key, revision);
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS feed_members (name TEXT PRIMARY KEY);
"""

# Like a fresh etcd, an empty store is at revision 1 and the first write gets revision 2.
# `members` changes whenever feed_members does, so writers reload the member list only then.
INITIAL_META = (("revision", 1), ("compacted", 0), ("members", 0))
INIT_META_SQL = "INSERT OR IGNORE INTO meta (name, value) VALUES (?, ?)"
LATEST_SQL = (
    "SELECT revision, create_revision, deleted, value FROM revisions"
    " WHERE key = ? AND revision <= ? ORDER BY revision DESC LIMIT 1"
)
# The newest row per key at :at, in [lo, hi); tombstones mean "absent at :at".
SNAPSHOT = (
    "FROM revisions AS r JOIN (SELECT MAX(revision) AS revision FROM revisions"
    " WHERE key >= :lo AND key < :hi AND revision <= :at GROUP BY key) AS latest"
    " ON r.revision = latest.revision WHERE r.deleted = 0"
)
LIST_SQL = f"SELECT r.key, r.create_revision, r.revision, r.value {SNAPSHOT} ORDER BY r.key LIMIT :limit"
COUNT_SQL = f"SELECT COUNT(*) {SNAPSHOT}"
HISTORY_SQL = (
    "SELECT r.revision, r.key, r.create_revision, r.deleted, r.value,"
    " (SELECT p.value FROM revisions AS p WHERE p.key = r.key AND p.revision < r.revision"
    "  ORDER BY p.revision DESC LIMIT 1)"
    " FROM revisions AS r WHERE r.revision > :after AND r.key >= :lo AND r.key < :hi"
    " ORDER BY r.revision LIMIT :limit"
)
# A row is history once a newer row of its key exists at or below :rev; a tombstone at or below :rev
# is history too. The newest row per key at :rev survives, so reads at :rev stay exact.
COMPACT_SQL = (
    "DELETE FROM revisions WHERE revision <= :rev AND (deleted = 1 OR EXISTS ("
    " SELECT 1 FROM revisions AS n WHERE n.key = revisions.key"
    " AND n.revision > revisions.revision AND n.revision <= :rev))"
)
