"""/openapi/v2: one Swagger 2.0 document for every installed group version.

kube-aggregator merges this document into the cluster's, and kubectl falls back to it for
client-side validation and for deciding whether PATCH accepts `fieldValidation`, so it carries the
same operations, extensions and definition names kube-apiserver publishes.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from apis.runtime.kinds import GroupInfo
from apis.schema.openapi import published_v2
from registry.generic.custom_subresources import CustomSubresources
from server.endpoints.openapi import meta
from server.endpoints.openapi.definitions import DEFAULT_TITLE, kind_definitions
from server.endpoints.openapi.operations import Operation, Param, group_version_paths


def _param(p: Param) -> dict[str, Any]:
    out: dict[str, Any] = {"uniqueItems": True, "type": p.type, "description": p.description}
    out["name"], out["in"] = p.name, p.location
    if p.required:
        out["required"] = True
    return out


def _operation(op: Operation) -> dict[str, Any]:
    params = [_param(p) for p in op.params]
    if op.body is not None:
        body: dict[str, Any] = {"name": "body", "in": "body", "schema": meta.ref(op.body)}
        if op.body_required:
            body["required"] = True
        params.insert(0, body)
    responses: dict[str, Any] = {}
    for r in op.responses:
        responses[str(r.code)] = {"description": r.description}
        if r.schema is not None:
            responses[str(r.code)]["schema"] = meta.ref(r.schema)
        elif r.type:
            responses[str(r.code)]["schema"] = {"type": r.type}
    out: dict[str, Any] = {
        "description": op.description,
        "consumes": list(op.consumes),
        "produces": list(op.produces),
        "schemes": ["https"],
        "tags": [op.tag],
        "operationId": op.operation_id,
    }
    if params:
        out["parameters"] = params
    out["responses"] = responses
    out["x-kubernetes-action"] = op.action
    out["x-kubernetes-group-version-kind"] = dict(zip(("group", "version", "kind"), op.gvk, strict=True))
    return out


def _share_parameters(paths: dict[str, Any]) -> dict[str, Any]:
    """Replace every parameter by a $ref into a shared "parameters" section, as kube-openapi does.

    Names are "<param>-<8 chars of sha224 of the parameter>", so equal parameters collapse into one
    entry and different ones (e.g. the two fieldManager texts) never collide.
    """
    shared: dict[str, Any] = {}

    def share(p: dict[str, Any]) -> dict[str, Any]:
        encoded = orjson.dumps(p, option=orjson.OPT_SORT_KEYS)
        suffix = base64.urlsafe_b64encode(hashlib.sha224(encoded).digest()[:6]).decode("ascii")
        name = f"{p.get('name') or 'param'}-{suffix}"
        shared.setdefault(name, p)
        return {"$ref": f"#/parameters/{name}"}

    for item in paths.values():
        for key, value in item.items():
            if key == "parameters":
                item[key] = [share(p) for p in value]
            elif "parameters" in value:
                value["parameters"] = [share(p) for p in value["parameters"]]
    return dict(sorted(shared.items()))


def openapi_v2(
    groups: Iterable[GroupInfo],
    *,
    patch_types: tuple[str, ...],
    version_info: Mapping[str, Any] | None = None,
    title: str = DEFAULT_TITLE,
    custom: Mapping[str, CustomSubresources] | None = None,
) -> dict[str, Any]:
    """The Swagger 2.0 document; `version_info` is the /version document (its gitVersion is info.version);
    `custom` the groups' custom subresources by group name."""
    groups = list(groups)
    custom = custom or {}
    paths: dict[str, Any] = {}
    definitions: dict[str, Any] = {}
    object_meta_ref = meta.V2_PREFIX + meta.OBJECT_META
    for group in groups:
        for version in group.versions:
            for item in group_version_paths(group, version, patch_types, custom.get(group.group)):
                rendered: dict[str, Any] = {op.method: _operation(op) for op in item.operations}
                if item.common:
                    rendered["parameters"] = [_param(p) for p in item.common]
                paths[item.path] = rendered
            definitions.update(
                kind_definitions(group, version, published_v2, object_meta_ref, custom.get(group.group))
            )
    definitions.update(meta.meta_definitions([(g.group, v) for g in groups for v in g.versions]))
    parameters = _share_parameters(paths)
    info = {"title": title, "version": str((version_info or {}).get("gitVersion") or "unversioned")}
    return {
        "swagger": "2.0",
        "info": info,
        "paths": dict(sorted(paths.items())),
        "definitions": dict(sorted(definitions.items())),
        "parameters": parameters,
    }
