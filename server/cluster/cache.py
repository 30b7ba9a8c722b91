"""The cache in front of the cluster's answers (TokenReview, SubjectAccessReview): LRU with a TTL per entry.

A port of k8s.io/utils' LRUExpireCache: bounded, least recently used evicted first, each entry with its
own expiry (allowed and denied answers live for different times). Single-threaded asyncio needs no lock.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

V = TypeVar("V")


class ExpiringLRU(Generic[V]):
    __slots__ = ("_clock", "_entries", "_max_size")

    def __init__(self, max_size: int, *, clock: Callable[[], float] = time.monotonic) -> None:
        if max_size <= 0:
            raise ValueError("max_size must be positive")
        self._max_size = max_size
        self._clock = clock
        self._entries: OrderedDict[str, tuple[float, V]] = OrderedDict()

    def get(self, key: str) -> V | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        expires, value = entry
        if self._clock() >= expires:
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return value

    def add(self, key: str, value: V, ttl: float) -> None:
        """A ttl <= 0 caches nothing, as kube's caches treat a zero TTL."""
        if ttl <= 0:
            return
        self._entries[key] = (self._clock() + ttl, value)
        self._entries.move_to_end(key)
        while len(self._entries) > self._max_size:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)
