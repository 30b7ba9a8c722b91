"""What a caller asks of the Store, already parsed from the request (server/endpoints/query.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from apis.meta.fields import FieldSelector
from apis.meta.labels import LabelSelector


@dataclass(frozen=True, slots=True)
class Predicate:
    """Label and field selectors; an object matches when both do."""

    labels: LabelSelector | None = None
    fields: FieldSelector | None = None

    @property
    def empty(self) -> bool:
        return (self.labels is None or self.labels.empty) and (self.fields is None or self.fields.empty)

    def matches(self, labels: Mapping[str, str], fields: Mapping[str, str]) -> bool:
        if self.labels is not None and not self.labels.matches(labels):
            return False
        return self.fields is None or self.fields.matches(fields)


@dataclass(frozen=True, slots=True)
class ListOptions:
    predicate: Predicate = field(default_factory=Predicate)
    limit: int = 0
    continue_token: str = ""
    resource_version: str = ""
    resource_version_match: str = ""


@dataclass(frozen=True, slots=True)
class WatchOptions:
    predicate: Predicate = field(default_factory=Predicate)
    resource_version: str = ""
    resource_version_match: str = ""
    send_initial_events: bool | None = None
    allow_bookmarks: bool = False


@dataclass(frozen=True, slots=True)
class DeleteOptions:
    uid: str | None = None
    resource_version: str | None = None
    grace_period_seconds: int | None = None
    propagation_policy: str | None = None
    orphan_dependents: bool | None = None
    dry_run: bool = False


@dataclass(frozen=True, slots=True)
class ObjectList:
    items: list[Any]
    resource_version: str
    continue_token: str = ""
    remaining_item_count: int | None = None


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """ADDED/MODIFIED/DELETED carry the object (a StoredObject); BOOKMARK only the revision reached."""

    type: str
    object: Any
    revision: int
    initial_events_end: bool = False
    # Encodings of this very event shared by every watcher it goes to (None: not shared), so a
    # fan-out to a thousand watchers builds each wire form once.
    encodings: dict[str, bytes] | None = None
