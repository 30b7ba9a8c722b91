"""Server-side apply: merge an applied configuration into the live object and move field ownership.

k8s.io/apimachinery's managedfields stack as NewDefaultFieldManager layers it for Apply, over
structured-merge-diff's Updater.Apply:

- lastAppliedUpdater / lastAppliedManager (manager "kubectl" only): conflicts that all lie on fields
  the client-side `last-applied-configuration` annotation holds with the live value are forced, and
  an existing annotation is rewritten to the new config — the upgrade path from client-side apply;
- skipNonApplied: an object nobody owns anything of gets its fields recorded as the Update manager
  `before-first-apply` first, so they are not pruned nor taken silently;
- Updater.Apply: merged = live ⊕ config (apis/schema/apply_merge.py); the applier's set becomes the
  config's fields minus the strategy's reset fields; fields it applied last time and dropped now are
  removed unless someone (itself included) still owns them; every other manager's fields that the
  merge added or changed are conflicts (409) unless `force`, which takes them away; removed fields
  leave every set;
- stripMeta, managedFieldsUpdater (an Apply entry's time moves only when the object changed),
  capManagers and the entries' order are shared with Update (registry/generic/managed_fields.py).

Everything here works on versioned JSON through `VersionedTypes`, never on a kind's hub type, so a
subresource that projects its parent (a `/scale` serving autoscaling/v1 Scale) applies with the
same code by supplying its own `VersionedTypes` and mapping the resulting entries back.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson

from apis.goformat import go_quote
from apis.meta.errors import StatusError
from apis.runtime.codec import Codec
from apis.schema.apply_merge import merge, path_string, remove_items, with_named_fields
from apis.schema.fieldset import Comparison, FieldSet, compare, element_order, to_field_set, values_equal
from apis.schema.prune import prune
from registry.generic.managed_fields import (
    APPLY,
    STRIPPED,
    UPDATE,
    Entry,
    decode_entries,
    encode_entries,
)

BEFORE_FIRST_APPLY = "before-first-apply"
KUBECTL = "kubectl"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


class VersionedTypes(Protocol):
    """The schemas of the versions entries may be written in, and conversion between them."""

    def schema(self, api_version: str) -> dict[str, Any] | None:
        """None when `api_version` is not served (its entries are dropped, as SMD does)."""
        ...

    def convert(self, data: dict[str, Any], source: str, target: str, *, partial: bool) -> dict[str, Any]:
        """`partial`: `data` is a pruned fragment, not a whole object (see CodecTypes)."""
        ...


@dataclass(frozen=True, slots=True)
class CodecTypes:
    """VersionedTypes of one kind, converting through its hub.

    Conversions are written for whole objects and fill in what a version always has (an empty list, an
    empty status); converting a fragment left by pruning would then re-grow fields just removed, so
    for fragments every empty container the source did not have at the same field path is dropped.
    """

    codec: Codec

    def schema(self, api_version: str) -> dict[str, Any] | None:
        version = self.codec.version_of(api_version)
        return None if version is None else self.codec.kind.versions[version].schema

    def convert(self, data: dict[str, Any], source: str, target: str, *, partial: bool) -> dict[str, Any]:
        if source == target:
            return data
        codec = self.codec
        hub = codec.from_version(copy.deepcopy(data), codec.version_of(source) or "")
        out = codec.to_version(hub, codec.version_of(target) or "")
        return _drop_grown(out, data) if partial else out


def _drop_grown(out: Any, source: Any) -> Any:
    if not isinstance(out, dict):
        return out
    result: dict[str, Any] = {}
    for key, value in out.items():
        had = isinstance(source, dict) and key in source
        if not had and isinstance(value, dict | list) and not value:
            continue
        result[key] = _drop_grown(value, source.get(key) if isinstance(source, dict) else None)
    return result


@dataclass(frozen=True, slots=True)
class ApplyRequest:
    manager: str
    api_version: str  # the config's (the URL's) group/version
    subresource: str = ""
    force: bool = False
    # Paths the strategy resets for this endpoint (status on the main resource, spec and metadata on
    # /status): nobody owns them through it, and changes to them never conflict.
    reset: FieldSet = field(default_factory=FieldSet)


@dataclass(slots=True)
class Applied:
    object: dict[str, Any]  # versioned, without managedFields
    changed: bool
    managed_fields: list[dict[str, Any]]


@dataclass(slots=True)
class AppliedFields:
    """The FieldTracker of an apply: the entries computed before admission, set after the strategy."""

    entries: list[dict[str, Any]] | None = None

    def track(self, codec: Codec, live: Any | None, new: Any) -> None:
        if self.entries:
            new.metadata["managedFields"] = self.entries
        else:
            new.metadata.pop("managedFields", None)


class ApplyConflicts(Exception):
    """merge.Conflicts: (manager identifier entry, path) pairs."""

    def __init__(self, conflicts: list[tuple[Entry, tuple[str, ...]]]) -> None:
        super().__init__(len(conflicts))
        self.conflicts = conflicts

    def status(self) -> StatusError:
        """NewConflictError: 409 Conflict, one FieldManagerConflict cause per path."""
        causes = [
            {
                "reason": "FieldManagerConflict",
                "message": f"conflict with {_print(e)}",
                "field": path_string(p),
            }
            for e, p in self.conflicts
        ]
        return StatusError(409, "Conflict", self._message(), {"causes": causes})

    def _message(self) -> str:
        if len(self.conflicts) == 1:
            entry, path = self.conflicts[0]
            return f"Apply failed with 1 conflict: conflict with {_print(entry)}: {path_string(path)}"
        by_manager: dict[str, list[str]] = {}
        for entry, path in self.conflicts:
            by_manager.setdefault(_print(entry), []).append(path_string(path))
        lines: list[str] = []
        for printed in sorted(by_manager):
            lines.append(f"conflicts with {printed}:")
            lines += [f"- {p}" for p in by_manager[printed]]
        return f"Apply failed with {len(self.conflicts)} conflicts: " + "\n".join(lines)


def _print(entry: Entry) -> str:
    """printManager (the identifier has no time, so no "at …")."""
    out = go_quote(entry.manager)
    if entry.subresource:
        out += f" with subresource {go_quote(entry.subresource)}"
    if entry.operation == UPDATE:
        out += f" using {entry.api_version}"
    return out


def smd_paths(fields: FieldSet, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Set.Iterate's order: a node's members (sorted), then its children's paths."""
    out = [(*prefix, m) for m in sorted(fields.members, key=element_order)]
    for element in sorted(fields.children, key=element_order):
        out += smd_paths(fields.children[element], (*prefix, element))
    return out


# --- the apply --------------------------------------------------------------------------------


def apply_config(
    types: VersionedTypes,
    live: dict[str, Any] | None,
    config: dict[str, Any],
    request: ApplyRequest,
    *,
    now: str,
) -> Applied:
    """Apply `config` over `live` (both in request.api_version; `live` None on create-by-apply).

    `live` may carry its managedFields; `config` must not (the handler refuses it). Raises
    ApplyConflicts when other managers own what the config changes and `force` is off.
    """
    live_obj = copy.deepcopy(live) if live is not None else _empty(config)
    raw_entries = live_obj.get("metadata", {}).pop("managedFields", None) if live is not None else None
    managed = decode_entries(raw_entries) or {}
    if not managed and live is not None:
        managed = _before_first_apply(types, live_obj, request, now)
    try:
        return _apply(types, live_obj, config, managed, request, request.force, now)
    except ApplyConflicts as e:
        if request.manager != KUBECTL or live is None:
            raise
        allowed = _allowed_by_last_applied(types, live_obj, request)
        rest = [(entry, path) for entry, path in e.conflicts if not allowed.has(path)]
        if rest:
            raise ApplyConflicts(rest) from None
        managed = decode_entries(raw_entries) or {}
        if not managed:
            managed = _before_first_apply(types, live_obj, request, now)
        return _apply(types, live_obj, config, managed, request, True, now)


def _empty(config: dict[str, Any]) -> dict[str, Any]:
    """The new object an apply creates into: only its type."""
    return {k: config[k] for k in ("apiVersion", "kind") if k in config}


def _before_first_apply(
    types: VersionedTypes, live: dict[str, Any], request: ApplyRequest, now: str
) -> dict[str, Entry]:
    """skipNonAppliedManager.Apply: what exists now was written by someone, so it is recorded."""
    schema = types.schema(request.api_version) or {}
    changes = compare(_empty(live), live, schema).exclude(request.reset)
    fields = changes.added.union(changes.modified).difference(STRIPPED)
    if fields.empty():
        return {}
    entry = Entry(BEFORE_FIRST_APPLY, UPDATE, request.api_version, request.subresource, fields, now)
    return {entry.identifier: entry}


def _apply(
    types: VersionedTypes,
    live: dict[str, Any],
    config: dict[str, Any],
    managed: dict[str, Entry],
    request: ApplyRequest,
    force: bool,
    now: str,
) -> Applied:
    managed = {
        k: Entry(e.manager, e.operation, e.api_version, e.subresource, e.fields, e.time)
        for k, e in managed.items()
    }
    schema = types.schema(request.api_version) or {}
    merged = merge(live, config, schema)
    mine = Entry(request.manager, APPLY, request.api_version, request.subresource, FieldSet(), None)
    last = managed.get(mine.identifier)
    mine.fields = to_field_set(config, schema).recursive_difference(request.reset)
    mine.time = last.time if last is not None else None
    managed[mine.identifier] = mine
    merged = _prune(types, merged, managed, mine, last)
    _take_over(types, live, merged, managed, mine, request, force)
    changed = not values_equal(live, merged)
    # stripMeta, then managedFieldsUpdater's time.
    mine.fields = mine.fields.difference(STRIPPED)
    if mine.fields.empty():
        managed.pop(mine.identifier, None)
    elif changed:
        mine.time = now
    if request.manager == KUBECTL and _has_last_applied(live):
        merged = _with_last_applied(merged if changed else copy.deepcopy(live), config)
        changed = not values_equal(live, merged)
    return Applied(merged if changed else live, changed, encode_entries(managed))


def _prune(
    types: VersionedTypes,
    merged: dict[str, Any],
    managed: dict[str, Entry],
    mine: Entry,
    last: Entry | None,
) -> dict[str, Any]:
    """Updater.prune: drop what the applier applied last time and no longer does, unless owned."""
    if last is None or last.fields.empty():
        return merged
    last_version = last.api_version
    last_schema = types.schema(last_version)
    if last_schema is None:
        return merged
    merged_last = types.convert(merged, mine.api_version, last_version, partial=False)
    pruned = remove_items(merged_last, with_named_fields(last.fields, last_schema), last_schema)
    # addBackOwnedItems: per version, the pruned version's first.
    owned: dict[str, FieldSet] = {}
    for entry in managed.values():
        owned[entry.api_version] = owned.get(entry.api_version, FieldSet()).union(entry.fields)
    order = [v for v in (last_version, *owned) if v in owned]
    cur_merged, cur_pruned, cur_version = merged_last, pruned, last_version
    for version in dict.fromkeys(order):
        schema = types.schema(version)
        if schema is None:
            continue
        cur_merged = types.convert(cur_merged, cur_version, version, partial=False)
        cur_pruned = types.convert(cur_pruned, cur_version, version, partial=True)
        cur_version = version
        merged_set = with_named_fields(to_field_set(cur_merged, schema), schema)
        pruned_set = with_named_fields(to_field_set(cur_pruned, schema), schema)
        keep = pruned_set.union(with_named_fields(owned[version], schema))
        cur_pruned = remove_items(cur_merged, merged_set.difference(keep), schema)
    # addBackDanglingItems
    pruned_last = types.convert(cur_pruned, cur_version, last_version, partial=True)
    pruned_set = with_named_fields(to_field_set(pruned_last, last_schema), last_schema)
    merged_set = with_named_fields(to_field_set(merged_last, last_schema), last_schema)
    dangling = merged_set.difference(pruned_set).intersection(with_named_fields(last.fields, last_schema))
    result = remove_items(merged_last, dangling, last_schema)
    return types.convert(result, last_version, mine.api_version, partial=True)


def _take_over(
    types: VersionedTypes,
    live: dict[str, Any],
    merged: dict[str, Any],
    managed: dict[str, Entry],
    mine: Entry,
    request: ApplyRequest,
    force: bool,
) -> None:
    """Updater.update for an applier: conflicts, then removed paths leave every other set."""
    comparisons: dict[str, Comparison] = {}
    conflicts: list[tuple[Entry, tuple[str, ...]]] = []
    removed: dict[str, FieldSet] = {}
    taken: dict[str, FieldSet] = {}
    for key, entry in list(managed.items()):
        if key == mine.identifier:
            continue
        changes = comparisons.get(entry.api_version)
        if changes is None:
            schema = types.schema(entry.api_version)
            if schema is None:
                del managed[key]
                continue
            old = types.convert(live, request.api_version, entry.api_version, partial=False)
            new = types.convert(merged, request.api_version, entry.api_version, partial=False)
            changes = compare(_without_managed(old), _without_managed(new), schema).exclude(request.reset)
            comparisons[entry.api_version] = changes
        conflict = entry.fields.intersection(changes.modified.union(changes.added))
        if not conflict.empty():
            taken[key] = conflict
            conflicts += [(entry, path) for path in smd_paths(conflict)]
        if not changes.removed.empty():
            removed[key] = changes.removed
    if conflicts and not force:
        conflicts.sort(key=lambda c: c[0].identifier)
        raise ApplyConflicts(conflicts)
    for key, fields in taken.items():
        managed[key].fields = managed[key].fields.difference(fields)
    for key, fields in removed.items():
        managed[key].fields = managed[key].fields.difference(fields)
    for key in [k for k, e in managed.items() if k != mine.identifier and e.fields.empty()]:
        del managed[key]


def _without_managed(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        obj = {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}
    return obj


# --- client-side apply upgrade ------------------------------------------------------------------


def _has_last_applied(obj: dict[str, Any]) -> bool:
    return bool(((obj.get("metadata") or {}).get("annotations") or {}).get(LAST_APPLIED))


def _with_last_applied(obj: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    """lastAppliedUpdater: the annotation becomes the config (without the annotation itself)."""
    value = copy.deepcopy(config)
    annotations = (value.get("metadata") or {}).get("annotations")
    if isinstance(annotations, dict):
        annotations.pop(LAST_APPLIED, None)
        if not annotations:
            value["metadata"].pop("annotations")
    obj = copy.deepcopy(obj)
    obj.setdefault("metadata", {}).setdefault("annotations", {})[LAST_APPLIED] = orjson.dumps(
        value, option=orjson.OPT_SORT_KEYS
    ).decode()
    return obj


def _allowed_by_last_applied(types: VersionedTypes, live: dict[str, Any], request: ApplyRequest) -> FieldSet:
    """allowedConflictsFromLastApplied: last-applied fields whose value the live object still has."""
    text = ((live.get("metadata") or {}).get("annotations") or {}).get(LAST_APPLIED)
    schema = types.schema(request.api_version)
    if not text or schema is None:
        return FieldSet()
    try:
        last = json.loads(text)
    except ValueError:
        return FieldSet()
    if not isinstance(last, dict) or last.get("apiVersion") != request.api_version:
        return FieldSet()
    if prune(last, schema):
        return FieldSet()  # kube cannot type it either
    changes = compare(last, _without_managed(live), schema)
    return (
        to_field_set(last, schema)
        .difference(changes.modified)
        .difference(changes.added)
        .difference(changes.removed)
    )
