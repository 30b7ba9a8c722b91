"""The scale subresource of a kind, declared as a CustomResourceDefinition's `subresources.scale` is.

A kind that declares a `ScaleSubresource` is served at `<resource>/scale` as an autoscaling/v1 Scale
(`kubectl scale`, the HorizontalPodAutoscaler). The paths are JSON paths without array notation in the
*hub's* shape (the shape of the version the hub is generated from): an older version that lacks the
field still scales, since /scale reads and writes the hub. This module is the projection both ways
and kube's validation of the values at those paths (apiextensions-apiserver registry/customresource
scaleFromCustomResource, ValidateScaleSpec/ValidateScaleStatus); registry/generic/scale.py does the
read → project → write back.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from apis.autoscaling import v1 as autoscaling
from apis.meta.field import FieldError, invalid
from apis.runtime.hub_shape import snake
from apis.runtime.kinds import HubObject

_MISSING = object()


@dataclass(frozen=True, slots=True)
class ScaleSubresource:
    """kube's CustomResourceSubresourceScale: where the replicas and the selector live.

    `spec_replicas_path` is required and must be under `.spec`; `status_replicas_path` (under
    `.status`) and `label_selector_path` are optional.
    """

    spec_replicas_path: str
    status_replicas_path: str = ""
    label_selector_path: str = ""

    def __post_init__(self) -> None:
        for path, prefix in (
            (self.spec_replicas_path, ".spec."),
            (self.status_replicas_path, ".status."),
            (self.label_selector_path, "."),
        ):
            if path and (not path.startswith(prefix) or "[" in path or path.endswith(".")):
                raise ValueError(f"scale path {path!r} must be a JSON path under {prefix!r} without arrays")
        if not self.spec_replicas_path:
            raise ValueError("a scale subresource needs spec_replicas_path")


def _parts(path: str) -> list[str]:
    return path.removeprefix(".").split(".")


def read_path(obj: Any, path: str) -> Any:
    """The value at a JSON path of a hub object (attributes are the JSON names in snake_case, maps
    stay dicts), or `_MISSING`."""
    value = obj
    for part in _parts(path):
        if isinstance(value, dict):
            value = value.get(part, _MISSING)
        elif dataclasses.is_dataclass(value):
            value = getattr(value, snake(part), _MISSING)
        else:
            return _MISSING
        if value is _MISSING or value is None:
            return _MISSING
    return value


def write_path(obj: Any, path: str, value: Any) -> None:
    """Set the value at a JSON path of a hub object; the objects on the way exist in a hub (structs
    are always there), maps on the way are created."""
    *parents, last = _parts(path)
    target = obj
    for part in parents:
        target = target.setdefault(part, {}) if isinstance(target, dict) else getattr(target, snake(part))
    if isinstance(target, dict):
        target[last] = value
    else:
        setattr(target, snake(last), value)


def _int64(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def spec_replicas(obj: HubObject, scale: ScaleSubresource) -> int | None:
    """The replicas the object asks for, None when unset (kube: NestedInt64 not found)."""
    found = read_path(obj, scale.spec_replicas_path)
    return None if found is _MISSING else _int64(found)


def scale_of(obj: HubObject, scale: ScaleSubresource) -> dict[str, Any]:
    """kube's scaleFromCustomResource: the autoscaling/v1 Scale of an object; a missing replicas
    value reads as 0 (callers that must tell the difference ask `spec_replicas`)."""
    status = read_path(obj, scale.status_replicas_path) if scale.status_replicas_path else _MISSING
    selector = read_path(obj, scale.label_selector_path) if scale.label_selector_path else _MISSING
    meta = obj.metadata
    metadata: dict[str, Any] = {"name": meta.get("name", "")}
    for key in ("namespace", "uid", "resourceVersion"):
        if meta.get(key):
            metadata[key] = meta[key]
    metadata["creationTimestamp"] = meta.get("creationTimestamp")
    return autoscaling.scale(
        metadata,
        spec_replicas(obj, scale) or 0,
        (_int64(status) if status is not _MISSING else 0) or 0,
        selector if isinstance(selector, str) else "",
    )


def _replicas_errors(obj: HubObject, path: str) -> list[FieldError]:
    value = read_path(obj, path)
    if value is _MISSING:
        return []
    if _int64(value) is None:
        return [invalid(path, value, f"{value!r} accessor error: expected int64")]
    if value < 0:
        return [invalid(path, value, "should be a non-negative integer")]
    if value > autoscaling.MAX_INT32:
        return [invalid(path, value, f"should be less than or equal to {autoscaling.MAX_INT32}")]
    return []


def validate_scale_spec(obj: HubObject, scale: ScaleSubresource) -> list[FieldError]:
    """kube's ValidateScaleSpec; like kube the field path keeps the declared leading dot."""
    return _replicas_errors(obj, scale.spec_replicas_path)


def validate_scale_status(obj: HubObject, scale: ScaleSubresource) -> list[FieldError]:
    """kube's ValidateScaleStatus: status replicas in int32 range, the selector a string."""
    errs = _replicas_errors(obj, scale.status_replicas_path) if scale.status_replicas_path else []
    if scale.label_selector_path:
        selector = read_path(obj, scale.label_selector_path)
        if selector is not _MISSING and not isinstance(selector, str):
            errs.append(invalid(scale.label_selector_path, selector, "accessor error: expected string"))
    return errs
