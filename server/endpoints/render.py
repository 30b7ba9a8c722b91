"""Hub objects → what the client asked for: the URL's version, a Table, or metadata only."""

from __future__ import annotations

from typing import Any

import orjson

from apis.meta import errors
from apis.meta.field import not_supported
from registry.generic.cache.stored import StoredObject
from registry.generic.options import ObjectList
from server.endpoints import protobuf
from server.endpoints.negotiation import JSON, PROTOBUF, YAML, Output
from server.endpoints.scope import ResourceScope
from server.endpoints.table import partial_object_metadata, partial_object_metadata_list, table
from server.responses import encode

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


def render_stored(
    scope: ResourceScope, obj: StoredObject, output: Output, *, include: str = "Metadata"
) -> dict[str, Any]:
    """A StoredObject as a dict in the negotiated form (for YAML, pretty JSON and transforms)."""
    if output.transform == "Table":
        return table(
            scope.kind,
            [(obj.hub(), obj.versioned(scope.version))],
            include_object=include,
            table_version=output.transform_version,
            list_meta=None,
        )
    versioned = obj.versioned(scope.version)
    if output.transform == "PartialObjectMetadata":
        return partial_object_metadata(versioned, f"meta.k8s.io/{output.transform_version}")
    return versioned


def is_plain_json(output: Output, pretty: bool) -> bool:
    """The common answer, which is served from each object's memoized bytes without a dict in between."""
    return output.media == JSON and not output.transform and not pretty


def object_bytes(
    scope: ResourceScope, obj: StoredObject, output: Output, *, include: str, pretty: bool
) -> bytes:
    if is_plain_json(output, pretty):
        return obj.json(scope.version)
    if output.media == PROTOBUF:
        return protobuf.object_body(scope, obj, output)
    media = YAML if output.media == YAML else JSON
    return encode(render_stored(scope, obj, output, include=include), media, pretty=pretty)


def list_parts(
    scope: ResourceScope, result: ObjectList, output: Output, *, include: str, pretty: bool
) -> list[bytes]:
    """The encoded list as parts to send in order; plain JSON joins the items' memoized bytes (kube's
    streaming list encoding), the same bytes orjson would give for the whole list as a dict."""
    if output.media == PROTOBUF:
        return protobuf.list_parts(scope, result, list_meta(result), output)
    if not is_plain_json(output, pretty):
        media = YAML if output.media == YAML else JSON
        return [encode(render_list(scope, result, output, include=include), media, pretty=pretty)]
    head = orjson.dumps(
        {"apiVersion": scope.api_version, "kind": scope.kind.list_kind, "metadata": list_meta(result)}
    )
    version = scope.version
    parts = [head[:-1] + b',"items":[']
    for i, obj in enumerate(result.items):
        if i:
            parts.append(b",")
        parts.append(obj.json(version))
    parts.append(b"]}")
    return parts


def render_list(
    scope: ResourceScope, result: ObjectList, output: Output, *, include: str = "Metadata"
) -> dict[str, Any]:
    """`result` holds StoredObjects."""
    meta = list_meta(result)
    versioned = [obj.versioned(scope.version) for obj in result.items]
    if output.transform == "Table":
        pairs = [(obj.hub(), v) for obj, v in zip(result.items, versioned, strict=True)]
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


def answer_object(scope: ResourceScope, hub: Any, output: Output) -> dict[str, Any] | bytes:
    """A write's answer for object_response: the object as a dict to encode, or in protobuf its
    bytes already (only here is its message known)."""
    body = render_object(scope, hub, output)
    return protobuf.dict_body(scope, body, output) if output.media == PROTOBUF else body


def answer_list(scope: ResourceScope, result: ObjectList, output: Output) -> dict[str, Any] | bytes:
    """A deletecollection's answer for object_response, as `answer_object`'s."""
    body = render_list(scope, result, output)
    return protobuf.dict_body(scope, body, output, listed=True) if output.media == PROTOBUF else body
