"""ObjectMeta validation on create and update, as k8s.io/apimachinery/pkg/api/validation/objectmeta.go.

Custom resources and the sample-apiserver both run ValidateObjectMetaAccessor /
ValidateObjectMetaAccessorUpdate with NameIsDNSSubdomain under the path `metadata`; error order, paths,
types and details follow those functions so a 422 from this server reads like one from kube-apiserver.
Metadata arrives as the JSON dict of the object (already decoded and schema-checked).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from apis.goformat import go_quote
from apis.meta.field import FieldError, Path, forbidden, invalid, required, too_long
from apis.meta.names import NameFn, byte_len, is_qualified_name, is_valid_label_value, name_is_dns_subdomain
from apis.meta.names import validate_namespace_name as _namespace_name

FIELD_IMMUTABLE = "field is immutable"
TOTAL_ANNOTATION_SIZE_LIMIT_B = 256 * (1 << 10)
FIELD_MANAGER_MAX_LENGTH = 128
MAX_SUBRESOURCE_NAME_LENGTH = 256
FINALIZER_ORPHAN_DEPENDENTS = "orphan"
FINALIZER_DELETE_DEPENDENTS = "foregroundDeletion"
# Objects that may never be owners (BannedOwners): core/v1 Event.
_BANNED_OWNERS = {("", "v1", "Event")}

_METADATA = Path("metadata")


def _map(meta: Mapping[str, Any], key: str) -> Mapping[str, str]:
    return meta.get(key) or {}


def _list(meta: Mapping[str, Any], key: str) -> Sequence[Any]:
    return meta.get(key) or []


def validate_labels(labels: Mapping[str, str], path: Path) -> list[FieldError]:
    """v1validation.ValidateLabels: both key and value errors sit on the map's path, not a key path."""
    errs: list[FieldError] = []
    for k, v in labels.items():
        errs.extend(invalid(path, k, msg) for msg in is_qualified_name(k))
        errs.extend(invalid(path, v, msg) for msg in is_valid_label_value(v))
    return errs


def validate_annotations(annotations: Mapping[str, str], path: Path) -> list[FieldError]:
    """Keys are qualified names with case ignored; keys plus values total at most 256 KiB."""
    errs: list[FieldError] = []
    for k in annotations:
        errs.extend(invalid(path, k, msg) for msg in is_qualified_name(k.lower()))
    if sum(byte_len(k) + byte_len(v or "") for k, v in annotations.items()) > TOTAL_ANNOTATION_SIZE_LIMIT_B:
        errs.append(too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT_B))
    return errs


def _group_version(api_version: str) -> tuple[str, str]:
    """schema.FromAPIVersionAndKind's parse: an unparsable apiVersion counts as empty."""
    if not api_version or api_version == "/":
        return "", ""
    if api_version.count("/") == 0:
        return "", api_version
    if api_version.count("/") == 1:
        group, _, version = api_version.partition("/")
        return group, version
    return "", ""


def _validate_owner_reference(ref: Mapping[str, Any], path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    api_version, kind = ref.get("apiVersion") or "", ref.get("kind") or ""
    group, version = _group_version(api_version)
    if not version:
        errs.append(invalid(path.child("apiVersion"), api_version, "version must not be empty"))
    if not kind:
        errs.append(invalid(path.child("kind"), kind, "must not be empty"))
    for key in ("name", "uid"):
        if not ref.get(key):
            errs.append(invalid(path.child(key), ref.get(key) or "", "must not be empty"))
    if (group, version, kind) in _BANNED_OWNERS:
        errs.append(
            invalid(path, dict(ref), f"{group}/{version}, Kind={kind} is disallowed from being an owner")
        )
    return errs


def validate_owner_references(refs: Sequence[Mapping[str, Any]], path: Path) -> list[FieldError]:
    """Each reference needs apiVersion (with a version), kind, name and uid; one controller at most."""
    errs: list[FieldError] = []
    first_controller = ""
    for ref in refs:
        errs.extend(_validate_owner_reference(ref, path))
        if ref.get("controller") is True:
            current = f"{ref.get('kind') or ''}/{ref.get('name') or ''}"
            if first_controller:
                detail = (
                    'Only one reference can have Controller set to true. Found "true" in references for '
                    f"{first_controller} and {current}"
                )
                errs.append(invalid(path, [dict(r) for r in refs], detail))
            else:
                first_controller = current
    return errs


def validate_finalizers(finalizers: Sequence[str], path: Path) -> list[FieldError]:
    """Qualified names (reported on the list's path), and not both orphan and foregroundDeletion."""
    errs: list[FieldError] = []
    for f in finalizers:
        errs.extend(invalid(path, f, msg) for msg in is_qualified_name(f))
    if FINALIZER_ORPHAN_DEPENDENTS in finalizers and FINALIZER_DELETE_DEPENDENTS in finalizers:
        detail = (
            f"finalizer {FINALIZER_ORPHAN_DEPENDENTS} and {FINALIZER_DELETE_DEPENDENTS} cannot be both set"
        )
        errs.append(invalid(path, list(finalizers), detail))
    return errs


def validate_field_manager(manager: str, path: Path) -> list[FieldError]:
    """At most 128 bytes, printable characters only (positions are byte offsets, as in Go)."""
    errs: list[FieldError] = []
    if byte_len(manager) > FIELD_MANAGER_MAX_LENGTH:
        errs.append(too_long(path, FIELD_MANAGER_MAX_LENGTH))
    offset = 0
    for ch in manager:
        if not ch.isprintable():
            errs.append(invalid(path, manager, f"invalid character U+{ord(ch):04X} (at position {offset})"))
        offset += byte_len(ch)
    return errs


def validate_managed_fields(entries: Sequence[Mapping[str, Any]], path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, entry in enumerate(entries):
        p = path.index(i)
        operation = entry.get("operation") or ""
        if operation not in ("Apply", "Update"):
            errs.append(invalid(p.child("operation"), operation, "must be `Apply` or `Update`"))
        fields_type = entry.get("fieldsType") or ""
        if fields_type and fields_type != "FieldsV1":
            errs.append(invalid(p.child("fieldsType"), fields_type, "must be `FieldsV1`"))
        errs.extend(validate_field_manager(entry.get("manager") or "", p.child("manager")))
        if byte_len(entry.get("subresource") or "") > MAX_SUBRESOURCE_NAME_LENGTH:
            errs.append(too_long(p.child("subresource"), MAX_SUBRESOURCE_NAME_LENGTH))
    return errs


def validate_object_meta(
    meta: Mapping[str, Any], *, namespaced: bool, name_fn: NameFn = name_is_dns_subdomain
) -> list[FieldError]:
    """ValidateObjectMetaAccessor: run after name generation, so an empty name is an error here."""
    errs: list[FieldError] = []
    generate_name = meta.get("generateName") or ""
    if generate_name:
        errs.extend(
            invalid(_METADATA.child("generateName"), generate_name, m) for m in name_fn(generate_name, True)
        )
    name = meta.get("name") or ""
    if not name:
        errs.append(required(_METADATA.child("name"), "name or generateName is required"))
    else:
        errs.extend(invalid(_METADATA.child("name"), name, m) for m in name_fn(name, False))
    namespace = meta.get("namespace") or ""
    if namespaced:
        if not namespace:
            errs.append(required(_METADATA.child("namespace")))
        else:
            errs.extend(
                invalid(_METADATA.child("namespace"), namespace, m) for m in _namespace_name(namespace, False)
            )
    elif namespace:
        errs.append(forbidden(_METADATA.child("namespace"), "not allowed on this type"))
    generation = meta.get("generation") or 0
    if generation < 0:
        errs.append(invalid(_METADATA.child("generation"), generation, "must be greater than or equal to 0"))
    errs.extend(_common(meta))
    errs.extend(validate_finalizers(_list(meta, "finalizers"), _METADATA.child("finalizers")))
    errs.extend(validate_managed_fields(_list(meta, "managedFields"), _METADATA.child("managedFields")))
    return errs


def _common(meta: Mapping[str, Any]) -> list[FieldError]:
    return [
        *validate_labels(_map(meta, "labels"), _METADATA.child("labels")),
        *validate_annotations(_map(meta, "annotations"), _METADATA.child("annotations")),
        *validate_owner_references(_list(meta, "ownerReferences"), _METADATA.child("ownerReferences")),
    ]


def _instant(value: Any) -> Any:
    """Semantic equality for timestamps compares instants, not spellings; unset is None."""
    if value in (None, ""):
        return None
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value)
        except ValueError:
            return value
    return value


def validate_no_new_finalizers(new: Sequence[str], old: Sequence[str], path: Path) -> list[FieldError]:
    extra = sorted(set(new) - set(old))
    if not extra:
        return []
    # Go prints the sorted set with %#v: []string{"a", "b"}.
    found = "[]string{" + ", ".join(go_quote(f) for f in extra) + "}"
    return [
        forbidden(
            path,
            f"no new finalizers can be added if the object is being deleted, found new finalizers {found}",
        )
    ]


def validate_object_meta_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
    """ValidateObjectMetaAccessorUpdate: identity and timestamps are fixed; finalizers only shrink
    once deletion has begun; labels, annotations, owner references and managed fields revalidated."""
    errs: list[FieldError] = []
    if old.get("deletionTimestamp"):
        errs.extend(
            validate_no_new_finalizers(
                _list(new, "finalizers"), _list(old, "finalizers"), _METADATA.child("finalizers")
            )
        )
    resource_version = new.get("resourceVersion") or ""
    if not resource_version:
        errs.append(
            invalid(_METADATA.child("resourceVersion"), resource_version, "must be specified for an update")
        )
    new_generation, old_generation = new.get("generation") or 0, old.get("generation") or 0
    if new_generation < old_generation:
        errs.append(invalid(_METADATA.child("generation"), new_generation, "must not be decremented"))
    for key in ("name", "namespace", "uid"):
        if (new.get(key) or "") != (old.get(key) or ""):
            errs.append(invalid(_METADATA.child(key), new.get(key) or "", FIELD_IMMUTABLE))
    for key in ("creationTimestamp", "deletionTimestamp"):
        if _instant(new.get(key)) != _instant(old.get(key)):
            errs.append(invalid(_METADATA.child(key), new.get(key), FIELD_IMMUTABLE))
    if new.get("deletionGracePeriodSeconds") != old.get("deletionGracePeriodSeconds"):
        key = "deletionGracePeriodSeconds"
        errs.append(invalid(_METADATA.child(key), new.get(key), FIELD_IMMUTABLE))
    errs.extend(_common(new))
    errs.extend(validate_managed_fields(_list(new, "managedFields"), _METADATA.child("managedFields")))
    return errs
