"""What a caller asks of the Store, already parsed from the request (server/endpoints/query.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from apis.meta.fields import FieldSelector
from apis.meta.labels import LabelSelector

if TYPE_CHECKING:
    from registry.generic.admission import ValidateObject
    from registry.generic.managed_fields import FieldTracker
    from registry.generic.validation import DecodedObject


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


async def admit_all(new: Any, old: Any | None) -> None:
    """No validating admission: what a caller without an admission chain writes."""
    return None


@dataclass(slots=True)
class WriteOptions:
    """One create or update as the Store sees it: kube's Create/UpdateOptions, the validating admission
    handed to Store.Create/Update, and what the request context carries (the version the client
    wrote, the warnings). The server builds it once per request (server/endpoints/write_request.py)."""

    # The version the client wrote in: the schema and the CEL rules are checked in it ("" = the
    # storage version, for callers that write hub objects directly).
    version: str = ""
    dry_run: bool = False
    # Records who changed what in metadata.managedFields (None: untracked).
    manager: FieldTracker | None = None
    # Validating admission, with (new, None) for a create and (new, old) for an update.
    admission: ValidateObject = admit_all
    # The request's object as it last decoded it (a patch decodes again on every retry): what decoding
    # validated is not validated again, and its schema errors are the ones reported.
    decoded: DecodedObject | None = None
    # Ratcheted rule failures of the last validation, for the response's Warning headers.
    warnings: list[str] = field(default_factory=list)


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
