"""managedFields across /scale: the parent's entries seen as a Scale's, and back (kube's ScaleHandler).

A /scale write is tracked by a field manager working on the autoscaling/v1 Scale, while ownership is
stored on the parent. k8s.io/apimachinery's managedfields.ScaleHandler bridges the two:

- `to_scale` (ToSubresource): every parent entry that owns the replicas path (in its own version)
  becomes an entry owning `f:spec.f:replicas` at autoscaling/v1; entries that do not own it, or whose
  version has no replicas path or is not served, are left out;
- `to_parent` (ToParent): parent entries without the replicas path are kept; an entry with it is kept
  whole when the Scale still lists it (same manager identifier), else the replicas path is "stolen"
  from it; Scale entries new to the parent become entries owning the replicas path in the parent's
  request version, with the time the parent had for that identifier (none for a new one: kube's
  ScaleHandler takes times from the parent only).

Because an Update identifier includes its apiVersion, an Update entry seen through the Scale never
matches its parent entry: any Scale write leaves the parent's Update owners without replicas, which is
kube's behaviour too. Apply identifiers leave the apiVersion out, so an applier of /scale keeps its
parent entry (and time) when it applies again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from apis.autoscaling import v1 as autoscaling
from apis.runtime.codec import Codec
from apis.runtime.scale import ScaleSubresource
from apis.schema.fieldset import FieldSet, field_element
from registry.generic.managed_fields import Entry, decode_entries, encode_entries

SCALE_REPLICAS: tuple[str, ...] = (field_element("spec"), field_element("replicas"))


def replicas_paths(codec: Codec, scale: ScaleSubresource) -> dict[str, tuple[str, ...] | None]:
    """kube's ResourcePathMappings: per served apiVersion, the replicas path in that version's fields
    (None when the version's schema has no such field, as v1alpha1 keeps it in an annotation)."""
    parts = scale.spec_replicas_path.removeprefix(".").split(".")
    out: dict[str, tuple[str, ...] | None] = {}
    for version, info in codec.kind.versions.items():
        schema: Any = info.schema
        for part in parts:
            schema = (schema.get("properties") or {}).get(part) if isinstance(schema, dict) else None
        out[codec.api_version(version)] = tuple(field_element(p) for p in parts) if schema else None
    return out


class ScaleTypes:
    """VersionedTypes with one version, autoscaling/v1 Scale: what a /scale apply merges in."""

    def schema(self, api_version: str) -> dict[str, Any] | None:
        return autoscaling.SCALE_SCHEMA if api_version == autoscaling.API_VERSION else None

    def convert(self, data: dict[str, Any], source: str, target: str, *, partial: bool) -> dict[str, Any]:
        return data  # only one version is ever asked for


@dataclass(slots=True)
class ScaleFields:
    """One /scale write's ScaleHandler, and the FieldTracker that sets its result on the parent.

    `parent_version` is the apiVersion new Scale owners are recorded in (kube: the request's group
    version; here the one that has the replicas field, see registry/generic/scale.manager_version).
    """

    mappings: dict[str, tuple[str, ...] | None]
    parent_version: str
    entries: list[dict[str, Any]] | None = field(default=None)

    def to_scale(self, parent_entries: Any) -> list[dict[str, Any]]:
        parent = decode_entries(parent_entries) or {}
        out: dict[str, Entry] = {}
        for key, entry in parent.items():
            path = self.mappings.get(entry.api_version)
            if path is None or not entry.fields.has(path):
                continue
            out[key] = Entry(
                entry.manager,
                entry.operation,
                autoscaling.API_VERSION,
                entry.subresource,
                FieldSet.of(SCALE_REPLICAS),
                entry.time,
            )
        return encode_entries(out)

    def to_parent(self, parent_entries: Any, scale_entries: Any) -> list[dict[str, Any]]:
        parent = decode_entries(parent_entries) or {}
        scale = decode_entries(scale_entries) or {}
        out: dict[str, Entry] = {}
        for key, entry in parent.items():
            if entry.api_version not in self.mappings:
                continue  # a version no longer served
            path = self.mappings[entry.api_version]
            if path is None or not entry.fields.has(path):
                out[key] = entry
            elif key not in scale:
                rest = entry.fields.difference(FieldSet.of(path))
                if not rest.empty():
                    out[key] = Entry(
                        entry.manager, entry.operation, entry.api_version, entry.subresource, rest, entry.time
                    )
            else:
                out[key] = entry
                del scale[key]
        target = self.mappings.get(self.parent_version)
        for key, entry in scale.items():
            if target is None or not entry.fields.has(SCALE_REPLICAS):
                continue
            previous = parent.get(key)
            out[key] = Entry(
                entry.manager,
                entry.operation,
                self.parent_version,
                entry.subresource,
                FieldSet.of(target),
                previous.time if previous is not None else None,
            )
        return encode_entries(out)

    def track(self, codec: Codec, live: Any | None, new: Any) -> None:
        if self.entries:
            new.metadata["managedFields"] = self.entries
        else:
            new.metadata.pop("managedFields", None)
