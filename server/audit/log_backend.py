"""The log backend: one line per event to a file (rotated like kube's lumberjack) or to stdout.

All file work (writes, renames, gzip, pruning old backups) runs on one dedicated writer thread
(`ThreadPoolExecutor(max_workers=1)`): the event loop never touches the disk, and a single thread
keeps lines in the order events were processed.

With `--workers N` every worker process appends to the same file (kube's replicas would each have
their own file; one file per server is what a user of one server expects). So that lines never tear
or interleave and rotation neither loses events nor happens twice, each batch is one `write()` on an
O_APPEND descriptor made under an exclusive `flock` of `<path>.lock`, and under that lock the writer
first follows the path to the current file (another worker may have rotated it) and decides on
rotation by the file's real size, which counts every worker's writes.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import gzip
import os
import shutil
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Protocol

import orjson

from server.audit.backend import Event, handle_plugin_error
from server.audit.event import event_string

PLUGIN_NAME = "log"
FORMAT_LEGACY = "legacy"
FORMAT_JSON = "json"
FORMATS = (FORMAT_LEGACY, FORMAT_JSON)

MEGABYTE = 1024 * 1024
# lumberjack's default when MaxSize is 0, which is kube's default for --audit-log-maxsize.
DEFAULT_MAX_SIZE_MB = 100
_BACKUP_TIME_FORMAT = "%Y-%m-%dT%H-%M-%S.%f"  # lumberjack's 2006-01-02T15-04-05.000 (trimmed below)
_COMPRESS_SUFFIX = ".gz"


class Writer(Protocol):
    """A blocking line sink, used only from the writer thread."""

    def write(self, data: bytes) -> None: ...

    def close(self) -> None: ...


class StdoutWriter:
    """--audit-log-path=-"""

    def write(self, data: bytes) -> None:
        # Workers share the descriptor: one batch at a time, whole, even beyond a pipe's PIPE_BUF.
        sys.stdout.flush()
        fd = sys.stdout.fileno()
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            _write_all(fd, data)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)

    def close(self) -> None:
        sys.stdout.buffer.flush()


@dataclass(slots=True)
class RotatingFile:
    """A port of gopkg.in/natefinch/lumberjack.v2's Logger, as kube configures it.

    Rotates before a write that would take the file past `max_bytes`: the file is renamed to
    `<name>-<UTC time>.<ext>` and a new one (mode 0600) started. Then backups beyond `max_backups`
    (0: keep all) or older than `max_age_days` (0: no limit) are removed, and with `compress` the new
    backup is gzipped.
    """

    path: Path
    max_bytes: int = DEFAULT_MAX_SIZE_MB * MEGABYTE
    max_backups: int = 0
    max_age_days: int = 0
    compress: bool = False
    _fd: int | None = field(default=None, init=False, repr=False)
    _lock_fd: int | None = field(default=None, init=False, repr=False)

    def write(self, data: bytes) -> None:
        if len(data) > self.max_bytes:
            raise OSError(f"write length {len(data)} exceeds maximum file size {self.max_bytes}")
        if self._lock_fd is None:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
            self._lock_fd = os.open(f"{self.path}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
        try:
            first = self._fd is None
            size = self._follow()
            # lumberjack's rule: an existing file is rotated on open if this write reaches the limit.
            if size + len(data) > self.max_bytes or (first and size and size + len(data) >= self.max_bytes):
                self._rotate()
            assert self._fd is not None
            _write_all(self._fd, data)
        finally:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)

    def close(self) -> None:
        for fd in (self._fd, self._lock_fd):
            if fd is not None:
                os.close(fd)
        self._fd = self._lock_fd = None

    def backups(self) -> list[Path]:
        """Rotated files, newest first."""
        found: list[tuple[datetime, Path]] = []
        stem, ext = self._split()
        prefix = f"{stem}-"
        with contextlib.suppress(FileNotFoundError):
            for entry in self.path.parent.iterdir():
                name = entry.name
                for suffix in (ext, ext + _COMPRESS_SUFFIX):
                    if name.startswith(prefix) and name.endswith(suffix) and len(name) > len(prefix + suffix):
                        stamp = name[len(prefix) : len(name) - len(suffix)]
                        when = _parse_backup_time(stamp)
                        if when is not None:
                            found.append((when, entry))
                            break
        found.sort(key=lambda item: item[0], reverse=True)
        return [p for _, p in found]

    def _split(self) -> tuple[str, str]:
        name = self.path.name
        ext = os.path.splitext(name)[1]
        return name[: len(name) - len(ext)], ext

    def _follow(self) -> int:
        """Hold the file now at `path` (opening it, or a new one, if ours was rotated away); its size."""
        try:
            current = os.stat(self.path)
        except FileNotFoundError:
            self._open_new()
            return 0
        if self._fd is not None:
            held = os.fstat(self._fd)
            if (held.st_dev, held.st_ino) == (current.st_dev, current.st_ino):
                return held.st_size
            os.close(self._fd)
            self._fd = None
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
        return os.fstat(self._fd).st_size

    def _open_new(self) -> None:
        """Under the lock: the current file (if any) becomes a backup and an empty one takes its place."""
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
        mode = 0o600
        if self.path.exists():
            mode = self.path.stat().st_mode & 0o777
            os.replace(self.path, self._backup_name())
        if self._fd is not None:
            os.close(self._fd)
        flags = os.O_CREAT | os.O_WRONLY | os.O_TRUNC | os.O_APPEND | os.O_CLOEXEC
        self._fd = os.open(self.path, flags, mode)

    def _rotate(self) -> None:
        self._open_new()
        self._mill()

    def _backup_name(self) -> Path:
        stem, ext = self._split()
        when = datetime.now(UTC)
        while True:
            stamp = when.strftime(_BACKUP_TIME_FORMAT)[:-3]  # milliseconds, as lumberjack
            candidate = self.path.with_name(f"{stem}-{stamp}{ext}")
            # lumberjack would overwrite a backup made in the same millisecond; never lose one here.
            if not candidate.exists() and not Path(f"{candidate}{_COMPRESS_SUFFIX}").exists():
                return candidate
            when += timedelta(milliseconds=1)

    def _mill(self) -> None:
        backups = self.backups()
        remove: list[Path] = []
        if self.max_backups > 0 and len(backups) > self.max_backups:
            remove += backups[self.max_backups :]
            backups = backups[: self.max_backups]
        if self.max_age_days > 0:
            cutoff = datetime.now(UTC) - timedelta(days=self.max_age_days)
            old = [p for p in backups if (_backup_time(p, self._split()) or cutoff) < cutoff]
            remove += old
            backups = [p for p in backups if p not in old]
        for path in remove:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        if self.compress:
            for path in backups:
                if not path.name.endswith(_COMPRESS_SUFFIX):
                    _gzip(path)


def _parse_backup_time(stamp: str) -> datetime | None:
    try:
        return datetime.strptime(stamp + "000", _BACKUP_TIME_FORMAT).replace(tzinfo=UTC)
    except ValueError:
        return None


def _backup_time(path: Path, split: tuple[str, str]) -> datetime | None:
    stem, ext = split
    name = path.name.removesuffix(_COMPRESS_SUFFIX)
    return _parse_backup_time(name[len(stem) + 1 : len(name) - len(ext)])


def _write_all(fd: int, data: bytes) -> None:
    """One write() for the whole batch (a regular file takes it whole); loops only on a short write."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _gzip(path: Path) -> None:
    target = Path(f"{path}{_COMPRESS_SUFFIX}")
    with open(path, "rb") as src, gzip.open(target, "wb") as dst:
        shutil.copyfileobj(src, dst)
    os.chmod(target, path.stat().st_mode & 0o777)
    path.unlink()


def encode_line(event: Event, fmt: str) -> bytes:
    if fmt == FORMAT_LEGACY:
        return event_string(event).encode() + b"\n"
    return orjson.dumps(event) + b"\n"


class LogBackend:
    """Events as lines (`json`: one audit.k8s.io/v1 Event per line; `legacy`: kube's text line)."""

    def __init__(self, writer: Writer, fmt: str = FORMAT_JSON) -> None:
        self.writer, self.format = writer, fmt
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="audit-log")
        self._closed = False

    async def start(self) -> None:
        return None

    async def process(self, events: Sequence[Event]) -> bool:
        if self._closed:
            handle_plugin_error(PLUGIN_NAME, "audit log closed", events)
            return False
        data = b"".join(encode_line(e, self.format) for e in events)
        loop = asyncio.get_running_loop()
        try:
            await loop.run_in_executor(self._executor, self.writer.write, data)
        except Exception as err:
            handle_plugin_error(PLUGIN_NAME, err, events)
            return False
        return True

    async def shutdown(self) -> None:
        if self._closed:
            return
        self._closed = True
        loop = asyncio.get_running_loop()
        # Queued writes run first: the executor is FIFO on its single thread.
        await loop.run_in_executor(self._executor, self.writer.close)
        self._executor.shutdown(wait=False)
