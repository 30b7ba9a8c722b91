"""The system-owned parts of ObjectMeta, set the way k8s.io/apiserver's rest.BeforeCreate/BeforeUpdate do.

Kept apart from the Store so the rules a client can observe (which fields the server overwrites,
which it keeps from the old object) are readable in one place.
"""

from __future__ import annotations

import secrets
import time
from typing import Any

from apis.meta.uuids import new_uuid

# kube's names.SimpleNameGenerator: 5 random characters from this alphabet.
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
GENERATED_SUFFIX_LENGTH = 5
MAX_GENERATED_NAME_LENGTH = 63 - GENERATED_SUFFIX_LENGTH


# The last second formatted: every write stamps a time (creationTimestamp, managedFields), and
# formatting it through datetime was ~2% of a create.
_formatted: tuple[int, str] = (-1, "")


def now_rfc3339() -> str:
    """Now, in whole seconds (metav1.Time's JSON form)."""
    global _formatted
    second = int(time.time())
    if _formatted[0] != second:
        _formatted = (second, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(second)))
    return _formatted[1]


def generate_name(base: str) -> str:
    if len(base) > MAX_GENERATED_NAME_LENGTH:
        base = base[:MAX_GENERATED_NAME_LENGTH]
    return base + "".join(secrets.choice(_NAME_ALPHABET) for _ in range(GENERATED_SUFFIX_LENGTH))


# ObjectMeta fields Go serializes with omitempty: an empty value reads back as absent in kube.
_OMIT_EMPTY = ("labels", "annotations", "finalizers", "ownerReferences", "generateName")


def drop_empty(meta: dict[str, Any]) -> None:
    """`kubectl label x k-` leaves `labels: {}`; kube stores and answers without the field."""
    for field in _OMIT_EMPTY:
        if field in meta and not meta[field]:
            del meta[field]


def fill_for_create(meta: dict[str, Any]) -> None:
    """Fields a client may not choose on create (kube: FillObjectMetaSystemFields + BeforeCreate)."""
    meta["uid"] = new_uuid()
    meta["creationTimestamp"] = now_rfc3339()
    for system_owned in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"):
        meta.pop(system_owned, None)
    drop_empty(meta)


def keep_for_update(meta: dict[str, Any], old: dict[str, Any]) -> None:
    """An update can never move uid, creationTimestamp or a deletion already under way."""
    if not meta.get("uid"):
        meta["uid"] = old.get("uid")
    if old.get("creationTimestamp"):
        meta["creationTimestamp"] = old["creationTimestamp"]
    for field in ("deletionTimestamp", "deletionGracePeriodSeconds"):
        if old.get(field) is not None:
            meta[field] = old[field]
        else:
            meta.pop(field, None)
    meta.pop("selfLink", None)
    drop_empty(meta)
