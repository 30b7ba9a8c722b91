"""meta.k8s.io Table and PartialObjectMetadata[List] renderings of objects (as=Table / as=Partial...).

kubectl get asks for a Table and prints its cells verbatim, so the cells are already what a user
reads: ages as "5m12s" (metatable.ConvertToHumanReadableDateType), typed cells as the CRD table
convertor types them (tableconvertor.go cellForJSONValue), and rows' `object` shaped per
includeObject exactly as handlers/response.go asTable does.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, Protocol

from apis.meta import errors
from apis.runtime.kinds import Column
from server.endpoints.openapi.meta import CREATION_TIMESTAMP_DESCRIPTION, OBJECT_META_NAME_DESCRIPTION

META_GROUP = "meta.k8s.io"
TABLE_VERSIONS = ("v1", "v1beta1")
INCLUDE_OBJECT = ("None", "Metadata", "Object")


class Columned(Protocol):
    """What a Table is made from: a kind's columns, or a custom subresource's (None: kube's default)."""

    @property
    def columns(self) -> tuple[Column, ...] | None: ...


def _meta_api_version(version: str) -> str:
    """Accept "v1" or "meta.k8s.io/v1" (and v1beta1); anything else has no Table/partial kinds."""
    api_version = version if "/" in version else f"{META_GROUP}/{version}"
    if api_version not in {f"{META_GROUP}/{v}" for v in TABLE_VERSIONS}:
        raise errors.not_acceptable(f"no Table exists in group version {api_version}")
    return api_version


def human_duration(seconds: float) -> str:
    """k8s.io/apimachinery util/duration.HumanDuration: ~2-3 significant figures, e.g. 5m12s, 3h, 4d7h."""
    whole = math.trunc(seconds)
    if whole < -1:
        return "<invalid>"
    if whole < 0:
        return "0s"
    if whole < 60 * 2:
        return f"{whole}s"
    minutes = whole // 60
    if minutes < 10:
        s = whole % 60
        return f"{minutes}m" if s == 0 else f"{minutes}m{s}s"
    if minutes < 60 * 3:
        return f"{minutes}m"
    hours = whole // 3600
    if hours < 8:
        m = minutes % 60
        return f"{hours}h" if m == 0 else f"{hours}h{m}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        h = hours % 24
        return f"{hours // 24}d" if h == 0 else f"{hours // 24}d{h}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        dy = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if dy == 0 else f"{hours // 24 // 365}y{dy}d"
    return f"{hours // 24 // 365}y"


def _parse_time(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            return None
        # RFC 3339 requires an offset; Go rejects a bare local time.
        return parsed if parsed.tzinfo else None
    return None


def age(timestamp: Any, now: datetime) -> str:
    """ConvertToHumanReadableDateType: "<unknown>" without a timestamp, else the age at `now`."""
    if timestamp in (None, ""):
        return "<unknown>"
    parsed = _parse_time(timestamp)
    if parsed is None:
        return "<invalid>"
    return human_duration((now - parsed).total_seconds())


def _jsonpath_text(value: Any) -> str:
    # How kube's JSONPath printer renders a non-string value into a string column.
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    if isinstance(value, int | float):
        return repr(value)
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


def cell_value(column: Column, value: Any, now: datetime) -> Any:
    """A column's cell typed as the column declares it; a value of the wrong type becomes None (<none>)."""
    if value is None:
        return None
    is_number = isinstance(value, int | float) and not isinstance(value, bool)
    match column.type:
        case "string":
            return value if isinstance(value, str) else _jsonpath_text(value)
        case "integer":
            return (int(value) if math.isfinite(value) else None) if is_number else None
        case "number":
            return value if is_number else None
        case "boolean":
            return value if isinstance(value, bool) else None
        case "date":
            return age(value, now) if isinstance(value, str | datetime) else None
    return None


def column_definitions(kind: Columned) -> list[dict[str, Any]]:
    """Name first (as every kube convertor does), the kind's own columns, then Age; or, for a kind
    without columns, rest.DefaultTableConvertor's Name and Created At."""

    def definition(name: str, type_: str, fmt: str, description: str, priority: int) -> dict[str, Any]:
        return {"name": name, "type": type_, "format": fmt, "description": description, "priority": priority}

    if kind.columns is None:
        return [
            definition("Name", "string", "name", OBJECT_META_NAME_DESCRIPTION, 0),
            definition("Created At", "date", "", CREATION_TIMESTAMP_DESCRIPTION, 0),
        ]
    return [
        definition("Name", "string", "name", OBJECT_META_NAME_DESCRIPTION, 0),
        *(definition(c.name, c.type, c.format, c.description, c.priority) for c in kind.columns),
        definition("Age", "date", "", CREATION_TIMESTAMP_DESCRIPTION, 0),
    ]


def _list_meta(list_meta: dict[str, Any] | None) -> dict[str, Any]:
    source = list_meta or {}
    return {k: source[k] for k in ("resourceVersion", "continue", "remainingItemCount") if source.get(k)}


def partial_object_metadata(versioned: dict[str, Any], api_version: str) -> dict[str, Any]:
    """PartialObjectMetadata (meta.AsPartialObjectMetadata): the whole ObjectMeta and nothing else."""
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": _meta_api_version(api_version),
        "metadata": copy.deepcopy(versioned.get("metadata") or {}),
    }


def partial_object_metadata_list(
    items: Iterable[dict[str, Any]], list_meta: dict[str, Any] | None, api_version: str
) -> dict[str, Any]:
    """PartialObjectMetadataList; every item carries its own kind/apiVersion, as kube sets them."""
    api_version = _meta_api_version(api_version)
    return {
        "kind": "PartialObjectMetadataList",
        "apiVersion": api_version,
        "metadata": _list_meta(list_meta),
        "items": [partial_object_metadata(item, api_version) for item in items],
    }


def table(
    kind: Columned,
    objects: Sequence[tuple[Any, dict[str, Any]]],
    *,
    include_object: str = "Metadata",
    table_version: str = "v1",
    list_meta: dict[str, Any] | None = None,
    no_headers: bool = False,
    now: datetime | None = None,
) -> dict[str, Any]:
    """A meta.k8s.io Table of (hub, versioned dict) pairs.

    `list_meta` is the list's metadata for a list request; for a single object (list_meta None) the
    table carries that object's resourceVersion, as the convertors do. `no_headers` drops the column
    definitions (watch events after the first). includeObject "" means Metadata (kube's default); an
    unknown value is a 400, as in kube. A row without an object carries "object": null, which is
    what Go's RawExtension encodes to.
    """
    api_version = _meta_api_version(table_version)
    if include_object == "":
        include_object = "Metadata"
    if include_object not in INCLUDE_OBJECT:
        raise errors.bad_request(f"unrecognized includeObject value: {json.dumps(include_object)}")
    now = now or datetime.now(UTC)
    rows = []
    for hub, versioned in objects:
        metadata = versioned.get("metadata") or {}
        cells = [metadata.get("name", "")]
        if kind.columns is None:
            # DefaultTableConvertor: the timestamp itself (RFC 3339, UTC), which kubectl shows as is.
            cells.append(metadata.get("creationTimestamp"))
        else:
            cells += [cell_value(column, column.cell(hub), now) for column in kind.columns]
            cells.append(age(metadata.get("creationTimestamp"), now))
        match include_object:
            case "Object":
                obj: dict[str, Any] | None = copy.deepcopy(versioned)
            case "Metadata":
                obj = partial_object_metadata(versioned, api_version)
            case _:
                obj = None
        rows.append({"cells": cells, "object": obj})
    if list_meta is not None:
        metadata_out = _list_meta(list_meta)
    elif len(objects) == 1:
        metadata_out = _list_meta(
            {"resourceVersion": (objects[0][1].get("metadata") or {}).get("resourceVersion")}
        )
    else:
        metadata_out = {}
    return {
        "kind": "Table",
        "apiVersion": api_version,
        "metadata": metadata_out,
        "columnDefinitions": None if no_headers else column_definitions(kind),
        "rows": rows,
    }
