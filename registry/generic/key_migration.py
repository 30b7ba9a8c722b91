"""Moves objects written under the key layout of earlier releases to the current one, once, at start.

Earlier releases keyed objects as `<prefix>/<resource>/...` (no group), which is what the default
prefix `/registry/restaurant.programming-kubernetes.info` turned into kube's layout for that one
group. With the group in every key (registry/generic/keys.py) and `/registry` as the default prefix,
that default install keeps its keys unchanged; a custom `--etcd-prefix` install has its objects moved
here. Each move is create-new then delete-old, so an interrupted start leaves both copies and the next
start finishes the job (the new key wins, AlreadyExists is fine).
"""

from __future__ import annotations

import contextlib
import logging
from typing import TYPE_CHECKING

from registry.generic.keys import legacy_resource_prefix
from storage import interface as st

if TYPE_CHECKING:
    from registry.generic.store import Store

logger = logging.getLogger(__name__)

# Keys read per storage list while moving; bounds memory on a large store.
PAGE = 500


async def move_legacy_keys(store: Store) -> int:
    """Move every object of `store`'s resource from the legacy layout; returns how many moved."""
    old_prefix = legacy_resource_prefix(store.codec.kind.resource)
    new_prefix = store.prefix("")
    moved = 0
    start: str | None = None
    while True:
        page = await store.storage.list(old_prefix, start_key=start, limit=PAGE)
        for kv in page.items:
            new_key = new_prefix + kv.key.removeprefix(old_prefix)
            # An earlier, interrupted start may have copied it already: the copy under the new key wins.
            with contextlib.suppress(st.AlreadyExists):
                await store.storage.create(new_key, kv.value)
            with contextlib.suppress(st.NotFound):  # another server moved it at the same time
                await store.storage.delete(kv.key)
            moved += 1
        if not page.more or not page.items:
            break
        start = page.items[-1].key + "\x00"
    if moved:
        logger.info("moved %d %s from %s to %s", moved, store.resource, old_prefix, new_prefix)
    return moved
