"""The log backend: one line per event to a file (rotated like kube's lumberjack) or to stdout.

All file work (writes, renames, gzip, pruning old backups) runs on one dedicated writer thread
(`ThreadPoolExecutor(max_workers=1)`): the event loop never touches the disk, and a single thread
keeps lines in the order events were processed.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import os
import shutil
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

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
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()

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
    _file: Any = field(default=None, init=False, repr=False)
    _size: int = field(default=0, init=False, repr=False)

    def write(self, data: bytes) -> None:
        if len(data) > self.max_bytes:
            raise OSError(f"write length {len(data)} exceeds maximum file size {self.max_bytes}")
        if self._file is None:
            self._open_existing_or_new(len(data))
        elif self._size + len(data) > self.max_bytes:
            self._rotate()
        assert self._file is not None
        self._file.write(data)
        self._file.flush()
        self._size += len(data)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

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

    def _open_existing_or_new(self, write_len: int) -> None:
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            self._open_new()
            return
        if size + write_len >= self.max_bytes:
            self._rotate()
            return
        self._file = open(self.path, "ab")  # noqa: SIM115 - kept open across writes
        self._size = size

    def _open_new(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
        mode = 0o600
        if self.path.exists():
            mode = self.path.stat().st_mode & 0o777
            os.replace(self.path, self._backup_name())
        fd = os.open(self.path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, mode)
        self._file = os.fdopen(fd, "wb")
        self._size = 0

    def _rotate(self) -> None:
        self.close()
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
