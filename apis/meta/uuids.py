"""Random (version 4) UUIDs in their text form, made cheaply: Audit-IDs and objects' metadata.uid.

Every response carries an Audit-ID and every create a uid, so one is made per request.
``str(uuid.uuid4())`` reads the OS's random source once per call and builds a ``UUID`` object only
to print it; it was ~4% of a GET at 8 connections and ~1.5% of a create. Here the randomness is
read ``_BATCH`` IDs at a time and formatted directly: the same distribution of IDs as ``uuid4``
(122 random bits, version and variant bits set), so they stay unique and unguessable, at a fraction
of the cost. A forked child drops the inherited batch, so two worker processes never hand out the
same IDs.
"""

from __future__ import annotations

import os

_BATCH = 256  # IDs per read of the random source: 4 KiB
_ID_BYTES = 16


class _Pool:
    """Random bytes for the next IDs; one per process, used from the event loop's thread only."""

    __slots__ = ("hex", "offset")

    def __init__(self) -> None:
        self.hex = ""
        self.offset = 0

    def refill(self) -> None:
        self.hex = os.urandom(_BATCH * _ID_BYTES).hex()
        self.offset = 0


_pool = _Pool()
# The RFC 4122 variant keeps the top two bits 10: map each random hex digit to 8 + (digit & 3).
_VARIANT = {f"{d:x}": f"{8 + (d & 3):x}" for d in range(16)}


def _forget_inherited_ids() -> None:
    """In a forked child: the parent hands out the rest of this batch, so never use it here."""
    _pool.hex, _pool.offset = "", 0


os.register_at_fork(after_in_child=_forget_inherited_ids)


def new_uuid() -> str:
    """A fresh random UUID as text (8-4-4-4-12 lower-case hex), like ``str(uuid.uuid4())``."""
    pool = _pool
    start = pool.offset
    if start >= len(pool.hex):
        pool.refill()
        start = 0
    pool.offset = start + 2 * _ID_BYTES
    h = pool.hex
    # Version 4 in the 13th hex digit; variant 10xx in the 17th (one of 8, 9, a, b).
    return (
        f"{h[start : start + 8]}-{h[start + 8 : start + 12]}-4{h[start + 13 : start + 16]}-"
        f"{_VARIANT[h[start + 16]]}{h[start + 17 : start + 20]}-{h[start + 20 : start + 32]}"
    )
