"""Repairing allocated numbers (kube's pkg/registry/core/service/ipallocator/controller/repair.go).

A number key is written and deleted only in its object's transaction (registry/generic/allocation.py),
so leaks need something from outside: a direct write into storage, an object written by a tool that
knows nothing of numbers, a restore from a backup taken between two keys. A pass lists the objects and
the number keys at one revision and:

- frees a number key no object holds, once it was seen so in `LEAK_PASSES` passes in a row at the same
  mod revision (kube's numRepairsBeforeLeakCleanup: a key written a moment ago for an object whose
  create is still being listed is not a leak), with a compare-and-delete on that mod revision;
- writes the missing number key of an object holding a number (create: absent only, so a key another
  server wrote meanwhile stays);
- logs numbers held by several objects, or outside the range.

Every worker and server runs it (at start, then every --allocation-repair-interval): each step is a
compare-and-swap, so concurrent passes cannot undo each other's or a create's work.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from registry.generic.allocation import Allocator, is_number, number_in_key, owner_value
from registry.generic.keys import resource_prefix
from registry.generic.store import Store
from storage import interface as st

logger = logging.getLogger(__name__)

LEAK_PASSES = 3
# Objects decoded between two yields to the event loop.
_DECODE_BATCH = 200
_PAGE = 500


class _Changed(Exception):
    """The number key changed since the pass listed it: it is not the leak that was seen."""


@dataclass(slots=True)
class RepairOutcome:
    freed: list[int] = field(default_factory=list)
    restored: list[int] = field(default_factory=list)
    duplicates: dict[int, list[str]] = field(default_factory=dict)


@dataclass(eq=False)
class AllocationRepair:
    """The repair of one resource's numbers; `resource_prefix` is the directory of its objects."""

    allocator: Allocator
    resource_prefix: str
    # number key → (the mod revision it was seen leaked at, in how many passes in a row)
    _suspects: dict[str, tuple[int, int]] = field(default_factory=dict)

    async def run_once(self) -> RepairOutcome:
        storage = self.allocator.storage
        prefix = self.allocator.allocation.key_prefix
        holders, revision = await self._holders()
        keys = await _list_all(storage, prefix, revision)
        outcome = RepairOutcome()
        present: set[int] = set()
        for kv in keys:
            number = number_in_key(kv.key, prefix)
            if number is None:
                continue
            present.add(number)
            if number in holders:
                self._suspects.pop(kv.key, None)
                continue
            seen_at, passes = self._suspects.get(kv.key, (kv.mod_revision, 0))
            passes = passes + 1 if seen_at == kv.mod_revision else 1
            if passes < LEAK_PASSES:
                self._suspects[kv.key] = (kv.mod_revision, passes)
                continue
            self._suspects.pop(kv.key, None)
            if await _delete_if_unchanged(storage, kv):
                logger.warning("allocation repair: freed %s %d, held by no object", self._noun, number)
                outcome.freed.append(number)
        listed = {kv.key for kv in keys}
        for key in [k for k in self._suspects if k not in listed]:
            del self._suspects[key]
        for number, owners in holders.items():
            if len(owners) > 1:
                names = sorted(key for key, _ in owners)
                logger.error(
                    "allocation repair: %s %d is held by several objects: %s", self._noun, number, names
                )
                outcome.duplicates[number] = names
            if number not in self.allocator.allocation.range:
                logger.warning(
                    "allocation repair: %s %d of %s is outside the range %s",
                    self._noun,
                    number,
                    owners[0][0],
                    self.allocator.allocation.range,
                )
            if number not in present:
                key, uid = owners[0]
                try:
                    await storage.create(self.allocator.number_key(number), owner_value(key, uid))
                except st.AlreadyExists:
                    continue
                logger.warning(
                    "allocation repair: restored the key of %s %d held by %s", self._noun, number, key
                )
                outcome.restored.append(number)
        return outcome

    @property
    def _noun(self) -> str:
        return self.allocator.allocation.noun

    async def _holders(self) -> tuple[dict[int, list[tuple[str, str]]], int]:
        """number → [(object key, uid)] of every stored object, and the revision they were read at."""
        storage, allocator = self.allocator.storage, self.allocator
        holders: dict[int, list[tuple[str, str]]] = defaultdict(list)
        revision, start = 0, None
        decoded = 0
        while True:
            page = await storage.list(self.resource_prefix, revision=revision, start_key=start, limit=_PAGE)
            revision = page.revision
            for kv in page.items:
                number, uid = allocator.stored_number(kv)
                if is_number(number):
                    holders[number].append((kv.key, uid))
                decoded += 1
                if decoded % _DECODE_BATCH == 0:
                    await asyncio.sleep(0)
            if not page.more or not page.items:
                return holders, revision
            start = page.items[-1].key + "\x00"


async def _list_all(storage: st.Interface, prefix: str, revision: int) -> list[st.KeyValue]:
    items: list[st.KeyValue] = []
    start = None
    while True:
        page = await storage.list(prefix, revision=revision, start_key=start, limit=_PAGE)
        items += page.items
        if not page.more or not page.items:
            return items
        start = page.items[-1].key + "\x00"


async def _delete_if_unchanged(storage: st.Interface, seen: st.KeyValue) -> bool:
    """Delete the key only while it is still at the mod revision it was seen leaked at."""

    async def unchanged(current: st.KeyValue) -> None:
        if current.mod_revision != seen.mod_revision:
            raise _Changed

    try:
        await storage.delete(seen.key, check=unchanged, cached=seen)
    except (_Changed, st.NotFound):
        return False
    return True


def repairs_for(stores: Iterable[Store]) -> list[AllocationRepair]:
    """One repair per store that allocates."""
    return [
        AllocationRepair(store.allocator, resource_prefix(store.codec.group, store.codec.kind.resource))
        for store in stores
        if store.allocator is not None
    ]


async def repair_every(repairs: list[AllocationRepair], interval: float) -> None:
    """Every repair at once now, then every `interval` seconds, until cancelled; a failed pass is
    logged and the next one runs on time."""
    while True:
        for repair in repairs:
            try:
                await repair.run_once()
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.exception("allocation repair of %s failed", repair.resource_prefix)
        await asyncio.sleep(interval)
