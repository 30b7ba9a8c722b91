"""Telling that a polled file changed: a cheap "stamp" of it, compared with the one seen last.

The serving certificate and the CA bundle files are re-read when their stamp changes. Polling stands in
for kube's file events (fsnotify): a few stat() calls a second are cheap, and kube re-reads every minute
anyway. Every function here touches the disk: call it through `asyncio.to_thread`, never on the loop.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

DEFAULT_CHECK_INTERVAL = 1.0  # seconds between checks; kube reacts to file events at once

FileStamp = tuple[int, int, int] | None  # (mtime_ns, size, inode); None when the file is missing


def stamp(path: Path) -> FileStamp:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    # The inode catches an atomic rename that happens to keep size and a coarse mtime.
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def stamp_all(paths: Sequence[Path]) -> tuple[FileStamp, ...]:
    return tuple(stamp(p) for p in paths)


def read_stamped(path: Path) -> tuple[FileStamp, bytes]:
    """The stamp taken before reading: a write racing the read shows as a change on the next check."""
    return stamp(path), path.read_bytes()
