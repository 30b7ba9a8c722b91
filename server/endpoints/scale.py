"""GET, PUT and PATCH of `<resource>/scale`: an autoscaling/v1 Scale over the object's replicas.

The handlers decode and check the Scale the client wrote (a typed body, as kube decodes
autoscaling/v1 Scale: apiVersion and kind may be left out, a wrong one is a 400, unknown fields
follow `fieldValidation`) and hand the change to registry/generic/scale.py, which reads the
object, projects it to a Scale and writes spec.replicas back through the kind's main strategy.

Admission sees the parent object with subresource "scale" (kube hands admission the Scale; the
plugins here read hub objects, as they do for /status). Server-side apply on /scale is
scale_apply.py, through the same `update_scale`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aiohttp import web

from apis.autoscaling import v1 as autoscaling
from apis.meta import errors
from apis.meta.errors import GroupKind, StatusError
from apis.meta.field import invalid
from apis.schema.prune import prune
from apis.schema.validate import validate
from registry.generic.scale import ScaleChange, manager_version, read_scale, update_scale
from registry.generic.scale_fields import ScaleFields
from server.endpoints import body as bodies
from server.endpoints.negotiation import JSON, YAML, body_media_type, negotiate_output
from server.endpoints.patch import apply_patch, patch_document
from server.endpoints.scope import APPLY_PATCH, JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, ResourceScope
from server.endpoints.write_request import WriteRequest, write_output
from server.request_info import RequestInfo
from server.responses import add_warning, object_response

# What kube's patch handler accepts for a Scale besides apply (built-in types take strategic merge).
SCALE_PATCH_TYPES: tuple[str, ...] = (JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH)


def scale_patch_types(scope: ResourceScope) -> tuple[str, ...]:
    """The Scale's patch types, and apply wherever the server serves it (scale_apply.py)."""
    return SCALE_PATCH_TYPES + ((APPLY_PATCH,) if APPLY_PATCH in scope.patch_types else ())


def _pretty(request: web.Request) -> bool:
    return request.query.get("pretty", "") in ("1", "true", "True")


def respond(request: web.Request, scale: dict[str, Any], warnings: Sequence[str] = ()) -> web.Response:
    output = negotiate_output(request.headers.get("Accept"), allow_transforms=())
    response = object_response(scale, content_type=output.content_type, pretty=_pretty(request))
    for text in warnings:
        add_warning(response, text)
    return response


def decode_scale(
    data: Any, info: RequestInfo, validation: str, duplicates: list[str]
) -> tuple[dict, list[str]]:
    """A Scale body as kube's typed decoder reads it: missing apiVersion/kind default to
    autoscaling/v1 Scale, another one is a 400, unknown fields per `fieldValidation`, a wrong type a
    400 decoding error; the name and namespace must be the URL's."""
    if not isinstance(data, dict):
        raise errors.bad_request(f"the body of the request must be a JSON object, got {type(data).__name__}")
    api_version = data.setdefault("apiVersion", autoscaling.API_VERSION) or autoscaling.API_VERSION
    kind = data.setdefault("kind", autoscaling.KIND) or autoscaling.KIND
    if api_version != autoscaling.API_VERSION:
        raise errors.bad_request(
            f"the API version in the data ({api_version}) does not match the expected API version "
            f"({autoscaling.API_VERSION})"
        )
    if kind != autoscaling.KIND:
        raise errors.bad_request(f"the kind in the data ({kind}) does not match the expected kind (Scale)")
    unknown = prune(data, autoscaling.SCALE_SCHEMA)
    warnings: list[str] = []
    if unknown or duplicates:
        found = [f'unknown field "{f}"' for f in unknown] + [f'duplicate field "{f}"' for f in duplicates]
        if validation == "Strict":
            raise errors.bad_request("strict decoding error: " + ", ".join(found))
        if validation == "Warn":
            warnings = found
    type_errors = validate(data, autoscaling.SCALE_SCHEMA)
    spec = data.get("spec") or {}
    replicas = spec.get("replicas", 0)
    if isinstance(replicas, float) and replicas.is_integer():  # 2.0 is the integer 2 in JSON
        replicas = spec["replicas"] = int(replicas)
    if not type_errors and not -(2**31) <= replicas <= autoscaling.MAX_INT32:
        type_errors = [invalid("spec.replicas", replicas, "value out of range for int32")]
    if type_errors:
        raise errors.bad_request(
            f'Scale in version "v1" cannot be handled as a Scale: {"; ".join(str(e) for e in type_errors)}'
        )
    metadata = data.get("metadata") or {}
    if metadata.get("name") != info.name:
        raise errors.bad_request(
            f"the name of the object ({metadata.get('name', '')}) does not match the name on the URL "
            f"({info.name})"
        )
    if metadata.get("namespace") and metadata["namespace"] != info.namespace:
        raise errors.bad_request(
            "the namespace of the provided object does not match the namespace sent on the request"
        )
    return data, warnings


async def write_scale(
    write: WriteRequest, change: ScaleChange, *, fields: ScaleFields | None = None
) -> dict[str, Any]:
    """Every write to /scale (PUT, patch, apply): the read → change → write loop with the parent's
    admission (as an update of the object, UpdateOptions); returns the Scale written."""
    info = write.info
    return await update_scale(
        write.scope.store, info.namespace, info.name, change, write.store, admit=write.admit, fields=fields
    )


def begin(request: web.Request, scope: ResourceScope, info: RequestInfo, options_kind: str) -> WriteRequest:
    """A write to /scale records its manager in the version that has the replicas field."""
    version = manager_version(scope.kind, scope.version)
    output = write_output(request)  # a Scale is served in JSON only
    return WriteRequest.begin(request, scope, info, options_kind, output=output, manager_version=version)


async def get_scale(request: web.Request, scope: ResourceScope, info: RequestInfo) -> web.Response:
    negotiate_output(request.headers.get("Accept"), allow_transforms=())
    scale = await read_scale(
        scope.store, info.namespace, info.name, resource_version=request.query.get("resourceVersion", "")
    )
    return respond(request, scale)


async def replace_scale(request: web.Request, scope: ResourceScope, info: RequestInfo) -> web.Response:
    write = begin(request, scope, info, "UpdateOptions")
    validation = write.field_validation
    media = body_media_type(request.headers.get("Content-Type"), (JSON, YAML))
    raw = await bodies.read_body(request)
    data, duplicates = bodies.decode(raw, media, track_duplicates=validation != "Ignore")
    scale, warnings = decode_scale(data, info, validation, duplicates)

    async def change(_current: dict[str, Any]) -> dict[str, Any]:
        return scale

    result = await write_scale(write, change)
    return respond(request, result, [*warnings, *write.store.warnings])


async def patch_scale(request: web.Request, scope: ResourceScope, info: RequestInfo) -> web.Response:
    patch_type = (request.headers.get("Content-Type") or "").split(";", 1)[0].strip().lower()
    if patch_type not in scale_patch_types(scope):
        raise errors.unsupported_media_type(", ".join(scale_patch_types(scope)))
    write = begin(request, scope, info, "PatchOptions")
    validation = write.field_validation
    raw = await bodies.read_body(request)
    document, duplicates = patch_document(raw, patch_type, track_duplicates=validation != "Ignore")
    warnings: list[str] = []

    async def change(current: dict[str, Any]) -> dict[str, Any]:
        nonlocal warnings
        patched, cause = apply_patch(patch_type, current, document, autoscaling.SCALE_SCHEMA)
        try:
            scale, warnings = decode_scale(
                patched, info, validation, duplicates if patch_type != JSON_PATCH else []
            )
        except StatusError as e:
            # kube's patch handler: a patched object that does not decode is a 422 on `patch`.
            if e.code != 400:
                raise
            raise errors.invalid(GroupKind("", ""), "", [invalid("patch", cause, e.message)]) from None
        return scale

    result = await write_scale(write, change)
    return respond(request, result, [*warnings, *write.store.warnings])
