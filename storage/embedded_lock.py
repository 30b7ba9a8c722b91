"""Who may open the embedded store, and the two things its processes share besides the SQLite file.

One *server* owns a store at a time: the owner takes an exclusive `flock` on `<db>.lock` and keeps it
for its lifetime (StorageInUse for anyone else). A server with several worker processes takes that
lock once, in its supervisor, and hands the locked descriptor to every worker (a StoreLock pickles as
an inherited descriptor under multiprocessing). A flock belongs to the open file description, so
every worker then holds the very same lock: a second server is still refused, the lock outlives a
crashed supervisor until its last worker is gone, and a worker can prove it was handed the lock (a
non-blocking `flock` on its descriptor succeeds, where any other open of the file would fail).

The lock file also carries, per process through its own open file description:

- the *writer lock*: an OFD byte-range lock (fcntl F_OFD_SETLKW, independent of the flock above) held
  around every write transaction, so revisions are allocated, committed and published one writer at a
  time across processes, and a waiting writer wakes the moment the lock is free (SQLite's own busy
  handler would sleep 1, 2, 5, 10... ms between tries);
- the *revision counter*: 8 bytes mmap'd at offset 0, the newest committed revision, stored while the
  writer lock is still held after COMMIT. Any process reads it from memory, with no executor hop and
  no SQLite call, and it is at least the revision of every write any process has acknowledged.

Nothing here runs on the event loop except RevisionCounter.read (a load from shared memory).
"""

from __future__ import annotations

import ctypes
import fcntl
import mmap
import os
import struct
from multiprocessing import reduction
from pathlib import Path

from storage.interface import StorageError

_COUNTER_SIZE = mmap.PAGESIZE
# The writer lock's byte range lies past the counter page, so it never overlaps anything readable.
_WRITER_RANGE = (mmap.PAGESIZE, 1)


class StorageInUse(StorageError):
    """Another server (or another open in this one) holds the store's lock file."""


def lock_path(db_path: Path) -> Path:
    return db_path.with_name(db_path.name + ".lock")


class StoreLock:
    """The exclusive right of one server to a store file, shareable with that server's workers."""

    __slots__ = ("db_path", "fd")

    def __init__(self, db_path: Path, fd: int) -> None:
        self.db_path = db_path
        self.fd = fd

    @classmethod
    def claim(cls, db_path: Path) -> StoreLock:
        """Take the lock (creating the directory and the lock file); StorageInUse when it is held."""
        db_path.parent.mkdir(parents=True, exist_ok=True)
        path = lock_path(db_path)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise StorageInUse(
                str(db_path),
                f"embedded storage {db_path} is already in use by another server (lock {path} is held)",
            ) from None
        except BaseException:
            os.close(fd)
            raise
        return cls(db_path, fd)

    def verify(self) -> None:
        """Raise StorageInUse unless this descriptor really holds the lock of this store's lock file.

        Re-locking through the same open file description is a no-op that succeeds; through any other
        description it would block, so LOCK_NB failing means the descriptor is not the owner's.
        """
        try:
            same_file = os.path.samestat(os.fstat(self.fd), os.stat(lock_path(self.db_path)))
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except (BlockingIOError, FileNotFoundError):
            same_file = False
        if not same_file:
            raise StorageInUse(
                str(self.db_path), f"the lock handed over for {self.db_path} is not its owner's"
            )

    def release(self) -> None:
        """Close this process's descriptor; the lock is gone once every process sharing it closed it."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __reduce__(self) -> tuple[object, tuple[str, object]]:
        # Under a spawning multiprocessing context DupFd passes the descriptor itself to the child.
        return (_rebuild, (str(self.db_path), reduction.DupFd(self.fd)))


def _rebuild(db_path: str, dup: object) -> StoreLock:
    return StoreLock(Path(db_path), dup.detach())  # type: ignore[attr-defined]


# Locks this process was handed by its supervisor, by store path: open_embedded shares them.
_inherited: dict[Path, StoreLock] = {}


def inherit(lock: StoreLock) -> None:
    """Record that this process is a worker of the server holding `lock` (call before opening)."""
    _inherited[lock.db_path.resolve()] = lock


def inherited(db_path: Path) -> StoreLock | None:
    return _inherited.get(db_path.resolve())


class SharedFile:
    """This process's own open of the lock file: the writer lock and the revision counter."""

    def __init__(self, db_path: Path) -> None:
        self._fd = os.open(lock_path(db_path), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            if os.fstat(self._fd).st_size < _COUNTER_SIZE:
                os.ftruncate(self._fd, _COUNTER_SIZE)  # zero-filled; only ever grows
            self._map = mmap.mmap(self._fd, _COUNTER_SIZE)
        except BaseException:
            os.close(self._fd)
            raise
        # An aligned 8-byte word: ctypes stores and loads it with one machine instruction on the
        # 64-bit platforms we run on, so a reader never sees half of an update.
        self._counter: ctypes.c_int64 | None = ctypes.c_int64.from_buffer(self._map)
        self._last = 0

    def read_revision(self) -> int:
        if self._counter is None:
            return self._last  # closed: what it was
        return self._counter.value

    def store_revision(self, revision: int) -> None:
        """Only with the writer lock held, after COMMIT (so the counter never runs ahead of data)."""
        if self._counter is not None:
            self._counter.value = revision

    def lock_writer(self) -> None:
        self._ofd_lock(fcntl.F_WRLCK)

    def unlock_writer(self) -> None:
        self._ofd_lock(fcntl.F_UNLCK)

    def close(self) -> None:
        if self._counter is None:
            return
        self._last = self._counter.value
        self._counter = None  # release the buffer export before unmapping
        self._map.close()
        os.close(self._fd)  # also drops the writer lock if a failure left it held

    def _ofd_lock(self, kind: int) -> None:
        start, length = _WRITER_RANGE
        # struct flock: l_type, l_whence, l_start, l_len, l_pid (0, as OFD locks require).
        request = struct.pack("hhqqi", kind, os.SEEK_SET, start, length, 0)
        fcntl.fcntl(self._fd, fcntl.F_OFD_SETLKW, request)
