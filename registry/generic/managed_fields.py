"""metadata.managedFields for create, update and non-apply patch: who last set which field.

k8s.io/apimachinery/pkg/util/managedfields/internal as NewDefaultFieldManager layers it, for the
Update operation:

- decodeLiveOrNew: the request's own managedFields are honoured when they decode and are not empty;
  `[]` or `[{}]` resets them; anything else (missing, undecodable) keeps the live object's. A
  subresource request never sets them.
- skipNonAppliedManager: an update of an object that has no managedFields left is not tracked.
- structured-merge-diff's Updater.Update with the "current-operation" trick: fields that changed
  (compared on the objects *in the request's version*, through its schema) move to the requester;
  every other manager loses what changed or went away (compared in *its* version); managers left
  with nothing disappear; a manager whose version is no longer served is dropped.
- stripMeta: apiVersion, kind and the system-owned metadata fields are never owned.
- managedFieldsUpdater: the requester's entry gets a new time only when it took something.
- capManagers: at most 10 Update entries; older ones merge into "ancient-changes" per version.
- buildManagerInfo: one entry per (manager, operation, apiVersion, subresource); an empty manager
  is "unknown". Entries are sorted as encodeManagedFields sorts them.

The Store calls this after the strategy has prepared the object, so what is compared is what will
be stored (status changes through the main resource, spec changes through /status are already
undone). The status of a kind with a status subresource is never owned through the main resource
(the strategy's reset fields).
"""

from __future__ import annotations

import functools
import json
import unicodedata
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from apis.runtime.codec import Codec
from apis.schema.fieldset import FieldSet, FieldsV1Error, compare, created_fields, field_element
from registry.generic.metadata import now_rfc3339

FIELD_MANAGER_MAX_LENGTH = 128
MAX_UPDATE_MANAGERS = 10
ANCIENT_CHANGES = "ancient-changes"
UNKNOWN_MANAGER = "unknown"
UPDATE, APPLY = "Update", "Apply"

STRIPPED = FieldSet.of(
    (field_element("apiVersion"),),
    (field_element("kind"),),
    (field_element("metadata"),),
    *(
        (field_element("metadata"), field_element(name))
        for name in (
            "name",
            "namespace",
            "creationTimestamp",
            "selfLink",
            "uid",
            "clusterName",
            "generation",
            "managedFields",
            "resourceVersion",
        )
    ),
)


class FieldTracker(Protocol):
    """What the Store calls once the strategy has prepared the object to write (kube's fieldmanager
    runs on what will be stored): an Update manager computes ownership here, an apply has computed
    it before admission and only sets it (registry/generic/server_side_apply.py)."""

    def track(self, codec: Codec, live: Any | None, new: Any) -> None: ...


@dataclass(frozen=True, slots=True)
class FieldManager:
    """Who writes, in which served version, through which subresource ("" for the resource)."""

    manager: str
    version: str
    subresource: str = ""

    def track(self, codec: Codec, live: Any | None, new: Any) -> None:
        update_managed_fields(codec, live, new, self)


def manager_from_user_agent(user_agent: str) -> str:
    """prefixFromUserAgent: what precedes the first "/", printable characters only, ≤ 128 bytes."""
    out = ""
    for ch in user_agent.split("/", 1)[0]:
        if not _printable(ch):
            continue
        if len((out + ch).encode()) > FIELD_MANAGER_MAX_LENGTH:
            break
        out += ch
    return out


def _printable(ch: str) -> bool:
    """unicode.IsPrint: letters, marks, numbers, punctuation, symbols and the ASCII space."""
    return ch == " " or unicodedata.category(ch)[0] in "LMNPS"


@functools.lru_cache(maxsize=1024)
def _identifier(manager: str, operation: str, version: str, subresource: str) -> str:
    """Every write names its manager's entries; the few managers of a server repeat endlessly."""
    return json.dumps([manager, operation, version, subresource])


@dataclass(slots=True)
class Entry:
    manager: str
    operation: str
    api_version: str
    subresource: str
    fields: FieldSet
    time: str | None

    @property
    def identifier(self) -> str:
        """BuildManagerIdentifier: an applier keeps its entry across versions."""
        version = "" if self.operation == APPLY else self.api_version
        return _identifier(self.manager, self.operation, version, self.subresource)

    def encode(self) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "manager": self.manager,
            "operation": self.operation,
            "apiVersion": self.api_version,
        }
        if self.time:
            entry["time"] = self.time
        entry["fieldsType"] = "FieldsV1"
        entry["fieldsV1"] = self.fields.to_fields_v1()
        if self.subresource:
            entry["subresource"] = self.subresource
        return entry


def decode_entries(entries: Any) -> dict[str, Entry] | None:
    """DecodeManagedFields; None when any entry is invalid."""
    if not isinstance(entries, list):
        return None if entries is not None else {}
    out: dict[str, Entry] = {}
    for raw in entries:
        if not isinstance(raw, dict) or raw.get("operation") not in (APPLY, UPDATE):
            return None
        if not raw.get("apiVersion") or raw.get("fieldsType") != "FieldsV1":
            return None
        try:
            fields = FieldSet.from_fields_v1(raw.get("fieldsV1") or {})
        except FieldsV1Error:
            return None
        entry = Entry(
            str(raw.get("manager") or ""),
            raw["operation"],
            str(raw["apiVersion"]),
            str(raw.get("subresource") or ""),
            fields,
            raw.get("time"),
        )
        out[entry.identifier] = entry
    return out


def _is_reset(entries: Any) -> bool:
    """isResetManagedFields: an empty list, or a list of one entry with nothing set (`[{}]`)."""
    if not isinstance(entries, list) or len(entries) > 1:
        return False
    return not entries or (isinstance(entries[0], dict) and all(v in (None, "") for v in entries[0].values()))


def _managed(live: Any | None, new: Any, subresource: str) -> dict[str, Entry]:
    live_entries = decode_entries(live.metadata.get("managedFields")) if live is not None else {}
    if subresource:
        return live_entries or {}
    sent = new.metadata.get("managedFields")
    if _is_reset(sent):
        return {}
    decoded = decode_entries(sent)
    return decoded if decoded else (live_entries or {})


def _seconds(time: str | None) -> float:
    if not time:
        return 0
    try:
        return datetime.fromisoformat(time.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0


class _Versions:
    """The old and new object in each version a manager's fields are expressed in."""

    def __init__(self, codec: Codec, live: Any | None, new: Any, ignored: FieldSet) -> None:
        self._codec, self._live, self._new, self._ignored = codec, live, new, ignored
        self._cache: dict[str, Any] = {}

    def compare(self, api_version: str) -> Any:
        """The Comparison in `api_version`, or None when that version is not served any more."""
        if api_version not in self._cache:
            version = self._codec.version_of(api_version)
            if version is None:
                self._cache[api_version] = None
            else:
                schema = self._codec.kind.versions[version].schema
                old = None if self._live is None else self._versioned(self._live, version)
                result = compare(old, self._versioned(self._new, version), schema)
                self._cache[api_version] = result.exclude(self._ignored)
        return self._cache[api_version]

    def _versioned(self, hub: Any, version: str) -> dict[str, Any]:
        data = self._codec.to_version(hub, version)
        data.get("metadata", {}).pop("managedFields", None)
        return data


def reset_fields(codec: Codec, subresource: str) -> FieldSet:
    """The strategy's reset fields: the main resource of a kind with /status never sets status."""
    if not subresource and "status" in codec.kind.subresources:
        return FieldSet.of((field_element("status"),))
    return FieldSet()


def update_managed_fields(
    codec: Codec, live: Any | None, new: Any, request: FieldManager, *, now: str | None = None
) -> None:
    """Set `new.metadata.managedFields` for writing `new` over `live` (None on create)."""
    managed = _managed(live, new, request.subresource)
    new.metadata.pop("managedFields", None)
    if not managed and live is not None:
        return  # skipNonAppliedManager: nothing is tracked for this object any more
    if live is None and not managed:
        _record_create(codec, new, request, now)
        return
    versions = _Versions(codec, live, new, reset_fields(codec, request.subresource))
    api_version = codec.api_version(request.version)
    for key in list(managed):
        entry = managed[key]
        changes = versions.compare(entry.api_version)
        if changes is None:
            del managed[key]
            continue
        taken = entry.fields.intersection(changes.modified.union(changes.added))
        entry.fields = entry.fields.difference(taken).difference(changes.removed)
        if entry.fields.empty():
            del managed[key]
    changes = versions.compare(api_version)
    own = changes.modified.union(changes.added).difference(changes.removed).difference(STRIPPED)
    if not own.empty():
        mine = Entry(request.manager or UNKNOWN_MANAGER, UPDATE, api_version, request.subresource, own, None)
        previous = managed.get(mine.identifier)
        if previous is not None:
            mine.fields = own.union(previous.fields)
        mine.time = now or now_rfc3339()
        managed[mine.identifier] = mine
    encoded = encode_entries(managed)
    if encoded:
        new.metadata["managedFields"] = encoded


def encode_entries(managed: dict[str, Entry]) -> list[dict[str, Any]]:
    """capManagers, then EncodeObjectManagedFields' order: Apply before Update, then time, manager…"""
    _cap_update_managers(managed)
    entries = sorted(
        managed.values(),
        key=lambda e: (e.operation, int(_seconds(e.time)), e.manager, e.api_version, e.subresource),
    )
    return [e.encode() for e in entries]


def _record_create(codec: Codec, new: Any, request: FieldManager, now: str | None) -> None:
    """The common create: nobody owns anything yet, so the creator owns all it set (stripped of
    system metadata and the reset fields) and no comparison is needed."""
    version = request.version
    data = codec.view(new, version)  # only read (metadata is its own copy)
    data.get("metadata", {}).pop("managedFields", None)
    skip = (
        frozenset(("status",))
        if not request.subresource and "status" in codec.kind.subresources
        else frozenset()
    )
    own = created_fields(data, codec.kind.versions[version].schema, skip).difference(STRIPPED)
    if own.empty():
        return
    api_version = codec.api_version(version)
    entry = Entry(
        request.manager or UNKNOWN_MANAGER,
        UPDATE,
        api_version,
        request.subresource,
        own,
        now or now_rfc3339(),
    )
    new.metadata["managedFields"] = [entry.encode()]


def _cap_update_managers(managed: dict[str, Entry]) -> None:
    """capUpdateManagers: fold the oldest Update entries into one "ancient-changes" per version."""
    updaters = [k for k, e in managed.items() if e.operation == UPDATE]
    if len(updaters) <= MAX_UPDATE_MANAGERS:
        return
    updaters.sort(key=lambda k: (int(_seconds(managed[k].time)), k))
    first_by_version: dict[str, str] = {}
    remaining = len(updaters)
    for key in updaters:
        if remaining <= MAX_UPDATE_MANAGERS:
            break
        entry = managed[key]
        bucket = Entry(ANCIENT_CHANGES, UPDATE, entry.api_version, "", FieldSet(), entry.time)
        first = first_by_version.get(entry.api_version)
        if first is None:
            first_by_version[entry.api_version] = key
            continue
        if key == bucket.identifier:
            continue  # the bucket itself is never folded into itself (kube would drop it here)
        if bucket.identifier not in managed:
            bucket.fields = managed.pop(first).fields
            managed[bucket.identifier] = bucket
        target = managed[bucket.identifier]
        target.fields = entry.fields.union(target.fields)
        target.time = entry.time
        del managed[key]
        remaining -= 1
