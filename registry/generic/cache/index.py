"""The objects of one resource in key order (kube's btree store), and their state at an older revision.

A dict finds one key; a sorted list of keys gives etcd's order for lists, namespace prefixes and
continue tokens by bisection. Python's str order is code-point order, which for the UTF-8 keys etcd
and the embedded store compare bytewise is the same order.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Iterable, Iterator

from registry.generic.cache.stored import StoredObject
from registry.generic.cache.window import CacheEvent


class ObjectIndex:
    def __init__(self, objects: Iterable[StoredObject] = ()) -> None:
        self._by_key: dict[str, StoredObject] = {o.key: o for o in objects}
        self._keys: list[str] = sorted(self._by_key)

    def __len__(self) -> int:
        return len(self._keys)

    def get(self, key: str) -> StoredObject | None:
        return self._by_key.get(key)

    def put(self, obj: StoredObject) -> StoredObject | None:
        """Store `obj` under its key; returns what was there."""
        previous = self._by_key.get(obj.key)
        self._by_key[obj.key] = obj
        if previous is None:
            bisect.insort(self._keys, obj.key)
        return previous

    def remove(self, key: str) -> StoredObject | None:
        previous = self._by_key.pop(key, None)
        if previous is not None:
            del self._keys[bisect.bisect_left(self._keys, key)]
        return previous

    def scan(self, prefix: str, start: str = "") -> Iterator[StoredObject]:
        """Objects whose key starts with `prefix`, from key `start` (inclusive) on, in key order."""
        keys, by_key = self._keys, self._by_key
        for i in range(bisect.bisect_left(keys, max(prefix, start)), len(keys)):
            key = keys[i]
            if not key.startswith(prefix):
                return
            yield by_key[key]

    def count(self, prefix: str, start: str = "") -> int:
        """How many objects `scan(prefix, start)` yields, by bisection: a page's remainingItemCount
        must not cost a walk over the rest of the collection."""
        keys = self._keys
        lo = bisect.bisect_left(keys, max(prefix, start))
        hi = bisect.bisect_left(keys, _past(prefix)) if prefix else len(keys)
        return max(0, hi - lo)

    def count_at(self, prefix: str, start: str, undone: list[CacheEvent]) -> int:
        """How many objects `scan_at(prefix, start, undone)` yields: the current count, corrected
        for each key the undone events created or deleted (one pass over the events, not the keys)."""
        count = self.count(prefix, start)
        lo = max(prefix, start)
        for key, before in _undo(undone).items():
            if key >= lo and key.startswith(prefix):
                now = key in self._by_key
                if before is None and now:
                    count -= 1
                elif before is not None and not now:
                    count += 1
        return count

    def scan_at(self, prefix: str, start: str, undone: list[CacheEvent]) -> Iterator[StoredObject]:
        """Like `scan`, but as the state was before the `undone` events (oldest first).

        Undoing newest first leaves, per key, the state before its oldest undone event: that event's
        `prev` (None when it created the key). Keys changed since then are overlaid on the current
        order; keys deleted since then come back in their place.
        """
        overlay = _undo(undone)
        lo = max(prefix, start)
        returning = sorted(
            k for k, o in overlay.items() if o is not None and k >= lo and k.startswith(prefix)
        )
        current = (o.key for o in self.scan(prefix, start))
        last = None
        for key in heapq.merge(current, returning):
            if key == last:
                continue
            last = key
            obj = overlay[key] if key in overlay else self._by_key[key]
            if obj is not None:
                yield obj


def _undo(undone: list[CacheEvent]) -> dict[str, StoredObject | None]:
    """Per key, its state before the oldest of the `undone` events (None: it did not exist)."""
    overlay: dict[str, StoredObject | None] = {}
    for event in reversed(undone):
        overlay[event.key] = event.prev
    return overlay


def _past(prefix: str) -> str:
    """The smallest string above every string that starts with `prefix` (non-empty)."""
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)
