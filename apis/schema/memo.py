"""Facts derived from a schema node, computed once per node instead of on every object walked.

Schemas are long-lived dicts (declared at import, or published once), while pruning, defaulting and
validation walk every object of every write and read through them; deriving the same facts from the
same node each time was a measurable part of a create. Nodes are unhashable dicts, so the memo is
keyed by identity and keeps the node alive, so that its id cannot be reused by another dict.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

# Schemas built per call (tests, one-off validations) must not grow a memo forever.
MEMO_LIMIT = 4096


def per_schema(derive: Callable[[dict[str, Any]], T]) -> Callable[[dict[str, Any]], T]:
    """Memoize `derive(schema)` by the node's identity; the node must not change afterwards."""
    memo: dict[int, tuple[dict[str, Any], T]] = {}

    @functools.wraps(derive)
    def derived(schema: dict[str, Any]) -> T:
        entry = memo.get(id(schema))
        if entry is None or entry[0] is not schema:
            if len(memo) >= MEMO_LIMIT:
                memo.clear()
            entry = (schema, derive(schema))
            memo[id(schema)] = entry
        return entry[1]

    return derived
