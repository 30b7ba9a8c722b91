"""/openapi/v3: an OpenAPI 3.0 document per group version, and the index that points at them.

`kubectl explain` and kubectl's server-side-validation check read these: they look for the PATCH
operation carrying the kind's x-kubernetes-group-version-kind and for `fieldValidation` among that
operation's own parameters (cli-runtime query_param_verifier_v3.go), so parameters stay inline here.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from apis.runtime.kinds import GroupInfo
from apis.schema.openapi import published_v3
from registry.generic.custom_subresources import CustomSubresources
from server.endpoints.openapi import meta
from server.endpoints.openapi.definitions import DEFAULT_TITLE, kind_definitions
from server.endpoints.openapi.operations import Operation, Param, group_version_paths

V3_PREFIX = "#/components/schemas/"


def to_v3(schema: Any) -> Any:
    """Rewrite a v2-form schema for OpenAPI 3: refs point into components and a $ref with siblings
    becomes allOf (a sibling of $ref is ignored in 3.0), as kube-openapi's builder3 WrapRefs does."""
    if isinstance(schema, list):
        return [to_v3(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: to_v3(value) for key, value in schema.items()}
    target = out.get("$ref")
    if isinstance(target, str):
        target = target.replace(meta.V2_PREFIX, V3_PREFIX, 1)
        if len(out) == 1:
            return {"$ref": target}
        del out["$ref"]
        return {"allOf": [{"$ref": target}], **out}
    return out


def _ref(name: str) -> dict[str, str]:
    return {"$ref": V3_PREFIX + name}


def _param(p: Param) -> dict[str, Any]:
    out: dict[str, Any] = {"name": p.name, "in": p.location, "description": p.description}
    if p.required:
        out["required"] = True
    out["schema"] = {"type": p.type, "uniqueItems": True}
    return out


def _operation(op: Operation) -> dict[str, Any]:
    out: dict[str, Any] = {"tags": [op.tag], "description": op.description, "operationId": op.operation_id}
    if op.params:
        out["parameters"] = [_param(p) for p in op.params]
    if op.body is not None:
        body: dict[str, Any] = {"content": {t: {"schema": _ref(op.body)} for t in op.consumes}}
        if op.body_required:
            body["required"] = True
        out["requestBody"] = body
    responses: dict[str, Any] = {}
    for r in op.responses:
        response: dict[str, Any] = {"description": r.description}
        if r.schema is not None:
            response["content"] = {t: {"schema": _ref(r.schema)} for t in op.produces}
        elif r.type:
            response["content"] = {t: {"schema": {"type": r.type}} for t in op.produces}
        responses[str(r.code)] = response
    out["responses"] = responses
    out["x-kubernetes-action"] = op.action
    out["x-kubernetes-group-version-kind"] = dict(zip(("group", "version", "kind"), op.gvk, strict=True))
    return out


def openapi_v3_group_version(
    group: GroupInfo,
    version: str,
    *,
    patch_types: tuple[str, ...],
    title: str = DEFAULT_TITLE,
    custom: CustomSubresources | None = None,
) -> dict[str, Any]:
    """The OpenAPI 3.0 document served at /openapi/v3/apis/{group}/{version}; `custom` is the group's
    custom subresources."""
    if version not in group.versions:
        raise ValueError(f"{group.group} does not serve {version}")
    paths: dict[str, Any] = {}
    for item in group_version_paths(group, version, patch_types, custom):
        rendered: dict[str, Any] = {op.method: _operation(op) for op in item.operations}
        if item.common:
            rendered["parameters"] = [_param(p) for p in item.common]
        paths[item.path] = rendered
    schemas: dict[str, Any] = {
        name: to_v3(schema)
        for name, schema in meta.meta_definitions([(group.group, v) for v in group.versions]).items()
    }
    # The kinds come from the v3 publisher; to_v3 leaves v3-form schemas as they are and rewrites the
    # v2-form list schemas.
    definitions = kind_definitions(group, version, published_v3, V3_PREFIX + meta.OBJECT_META, custom)
    for name, schema in definitions.items():
        schemas[name] = to_v3(schema)
    return {
        "openapi": "3.0.0",
        "info": {"title": title, "version": "unversioned"},
        "paths": paths,
        "components": {"schemas": dict(sorted(schemas.items()))},
    }


def encode_document(doc: dict[str, Any]) -> bytes:
    """The exact bytes to serve for a v3 document: the index's hash is computed over them, and a
    client that fetched `?hash=X` caches the body forever, so both must come from this function."""
    return orjson.dumps(doc)


def document_hash(doc: dict[str, Any]) -> str:
    """kube-openapi handler3 computeETag: upper-case hex sha512 of the served bytes."""
    return hashlib.sha512(encode_document(doc)).hexdigest().upper()


def openapi_v3_index(
    groups: Iterable[GroupInfo],
    *,
    patch_types: tuple[str, ...],
    title: str = DEFAULT_TITLE,
    custom: Mapping[str, CustomSubresources] | None = None,
) -> dict[str, Any]:
    """The /openapi/v3 discovery document: {"paths": {"apis/g/v": {"serverRelativeURL": ...}}}."""
    paths: dict[str, Any] = {}
    for group in groups:
        for version in group.versions:
            doc = openapi_v3_group_version(
                group, version, patch_types=patch_types, title=title, custom=(custom or {}).get(group.group)
            )
            gv = f"apis/{group.group}/{version}"
            paths[gv] = {"serverRelativeURL": f"/openapi/v3/{gv}?hash={document_hash(doc)}"}
    return {"paths": dict(sorted(paths.items()))}
