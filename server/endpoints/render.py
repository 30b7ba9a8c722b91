"""Hub objects → what the client asked for: the URL's version, a Table, or metadata only."""

from __future__ import annotations

from typing import Any

from apis.meta import errors
from apis.meta.field import not_supported
from registry.generic.options import ObjectList
from server.endpoints.negotiation import Output
from server.endpoints.scope import ResourceScope
from server.endpoints.table import partial_object_metadata, partial_object_metadata_list, table

INCLUDE_OBJECT = ("None", "Metadata", "Object")


def include_object(query: Any, output: Output) -> str:
    """kube decodes and validates TableOptions only when the answer is a Table (optionsForTransform)."""
    if output.transform != "Table":
        return "Metadata"
    value = query.get("includeObject", "") or "Metadata"
    if value not in INCLUDE_OBJECT:
        error = not_supported("includeObject", value, sorted(INCLUDE_OBJECT))
        raise errors.bad_request(f"Unable to convert to Table as requested: {error}")
    return value


def list_meta(result: ObjectList) -> dict[str, Any]:
    meta: dict[str, Any] = {"resourceVersion": result.resource_version}
    if result.continue_token:
        meta["continue"] = result.continue_token
    if result.remaining_item_count is not None:
        meta["remainingItemCount"] = result.remaining_item_count
    return meta


def render_object(
    scope: ResourceScope, hub: Any, output: Output, *, include: str = "Metadata"
) -> dict[str, Any]:
    versioned = scope.codec.to_version(hub, scope.version)
    if output.transform == "Table":
        return table(
            scope.kind,
            [(hub, versioned)],
            include_object=include,
            table_version=output.transform_version,
            list_meta=None,
        )
    if output.transform == "PartialObjectMetadata":
        return partial_object_metadata(versioned, f"meta.k8s.io/{output.transform_version}")
    return versioned


def render_list(
    scope: ResourceScope, result: ObjectList, output: Output, *, include: str = "Metadata"
) -> dict[str, Any]:
    meta = list_meta(result)
    versioned = [scope.codec.to_version(hub, scope.version) for hub in result.items]
    if output.transform == "Table":
        pairs = list(zip(result.items, versioned, strict=True))
        return table(
            scope.kind, pairs, include_object=include, table_version=output.transform_version, list_meta=meta
        )
    if output.transform == "PartialObjectMetadataList":
        return partial_object_metadata_list(versioned, meta, f"meta.k8s.io/{output.transform_version}")
    return {
        "apiVersion": scope.api_version,
        "kind": scope.kind.list_kind,
        "metadata": meta,
        "items": versioned,
    }
