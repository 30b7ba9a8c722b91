"""POST (create), PUT (update) and PATCH.

Each write decodes the body in its own version (pruning + defaults), runs mutating admission and
re-applies defaults, then hands the hub object to the Store, which prepares, validates, runs
validating admission and persists. Patches are applied to the current object in the URL's version,
inside the Store's retry loop, so a concurrent write never loses a patch.

Every write names a field manager (the `fieldManager` parameter, else the User-Agent's product, as
kube's managerOrUserAgent does); the Store records what it changed in metadata.managedFields.
"""

from __future__ import annotations

import copy

from aiohttp import web

from apis.meta import errors
from apis.meta.user import ANONYMOUS
from apis.runtime.kinds import HubObject
from registry.generic.admission import Attributes, Operation, ValidateObject
from server.admission.sinks import admission_options, request_sinks
from server.endpoints import body as bodies
from server.endpoints.decode import Decoded, decode_write
from server.endpoints.field_manager import field_manager
from server.endpoints.negotiation import JSON, YAML, Output, body_media_type, negotiate_output
from server.endpoints.patch import apply_patch, patch_document
from server.endpoints.query import dry_run, field_validation
from server.endpoints.render import render_object
from server.endpoints.schema_check import SchemaCheck
from server.endpoints.scope import JSON_PATCH, ResourceScope
from server.request_info import RequestInfo
from server.request_state import USER
from server.responses import add_warning, object_response


async def _read_object(request: web.Request, scope: ResourceScope, validation: str) -> Decoded:
    media = body_media_type(request.headers.get("Content-Type"), (JSON, YAML))
    raw = await bodies.read_body(request)
    data, duplicates = bodies.decode(raw, media, track_duplicates=validation != "Ignore")
    return decode_write(scope, data, field_validation=validation, duplicates=duplicates)


def _set_namespace(scope: ResourceScope, obj: HubObject, info: RequestInfo) -> None:
    """kube's rest.BeforeCreate: the URL's namespace wins, a different one in the body is a 400."""
    if not scope.kind.namespaced:
        obj.metadata.pop("namespace", None)
        return
    body_ns = obj.metadata.get("namespace")
    if body_ns and body_ns != info.namespace:
        raise errors.bad_request(
            "the namespace of the provided object does not match the namespace sent on the request"
        )
    obj.metadata["namespace"] = info.namespace


async def _admit(scope: ResourceScope, attrs: Attributes) -> HubObject:
    """Mutating admission, then the request version's defaults again if a webhook patched the
    object (KEP-575: a patched object is decoded again, and decoding defaults)."""
    if not any(p.handles(attrs.operation) for p in scope.admission.mutating):
        return attrs.object
    await scope.admission.admit(attrs)
    if not attrs.patched:
        return attrs.object
    return scope.codec.redefault(attrs.object, scope.version)


def _validator(
    scope: ResourceScope, request: web.Request, info: RequestInfo, *, dry: bool, options_kind: str
) -> ValidateObject:
    user = request.get(USER, ANONYMOUS)
    sinks = request_sinks(request)

    async def validate(obj: HubObject, old: HubObject | None) -> None:
        operation = Operation.CREATE if old is None else Operation.UPDATE
        kind = "CreateOptions" if old is None else options_kind
        options = admission_options(kind, dry_run=dry)
        attrs = scope.attributes(info, user, operation, obj, old, dry_run=dry, sinks=sinks, options=options)
        await scope.admission.validate(attrs)

    return validate


def _output(request: web.Request) -> Output:
    """kube negotiates the response type before anything else: a 406 must never follow a write."""
    return negotiate_output(request.headers.get("Accept"), allow_transforms=())


def _respond(
    output: Output, scope: ResourceScope, obj: HubObject, status: int, warnings: list[str]
) -> web.Response:
    response = object_response(
        render_object(scope, obj, output), status=status, content_type=output.content_type
    )
    for text in warnings:
        add_warning(response, text)
    return response


async def create_object(request: web.Request, scope: ResourceScope, info: RequestInfo) -> web.Response:
    output = _output(request)
    manager = field_manager(request, info, "CreateOptions", scope.version)
    dry = dry_run(request.query, "CreateOptions")
    validation = field_validation(request.query, "CreateOptions")
    decoded = await _read_object(request, scope, validation)
    obj = decoded.hub
    _set_namespace(scope, obj, info)
    user = request.get(USER, ANONYMOUS)
    sinks = request_sinks(request)
    options = admission_options(
        "CreateOptions", dry_run=dry, field_manager=request.query.get("fieldManager", "")
    )
    attrs = scope.attributes(
        info, user, Operation.CREATE, obj, None, dry_run=dry, sinks=sinks, options=options
    )
    obj = await _admit(scope, attrs)
    validate = _validator(scope, request, info, dry=dry, options_kind="UpdateOptions")
    check = SchemaCheck(scope, decoded)
    created = await scope.store.create(obj, validate=validate, dry_run=dry, manager=manager, check=check)
    return _respond(output, scope, created, 201, decoded.warnings + check.warnings)


async def update_object(request: web.Request, scope: ResourceScope, info: RequestInfo) -> web.Response:
    output = _output(request)
    manager = field_manager(request, info, "UpdateOptions", scope.version)
    dry = dry_run(request.query, "UpdateOptions")
    validation = field_validation(request.query, "UpdateOptions")
    decoded = await _read_object(request, scope, validation)
    obj = decoded.hub
    _set_namespace(scope, obj, info)
    user = request.get(USER, ANONYMOUS)
    sinks = request_sinks(request)
    check = SchemaCheck(scope, decoded)

    async def updated(old: HubObject | None) -> HubObject:
        new = copy.deepcopy(obj)
        operation = Operation.CREATE if old is None else Operation.UPDATE
        kind = "CreateOptions" if old is None else "UpdateOptions"
        options = admission_options(kind, dry_run=dry, field_manager=request.query.get("fieldManager", ""))
        attrs = scope.attributes(info, user, operation, new, old, dry_run=dry, sinks=sinks, options=options)
        return await _admit(scope, attrs)

    result, created = await scope.store.update(
        info.namespace,
        info.name,
        updated,
        validate_create=_validator(scope, request, info, dry=dry, options_kind="UpdateOptions"),
        validate_update=_validator(scope, request, info, dry=dry, options_kind="UpdateOptions"),
        dry_run=dry,
        strategy=scope.subresources.get(info.subresource),
        manager=manager,
        check=check,
    )
    return _respond(output, scope, result, 201 if created else 200, decoded.warnings + check.warnings)


async def patch_object(request: web.Request, scope: ResourceScope, info: RequestInfo) -> web.Response:
    patch_type = (request.headers.get("Content-Type") or "").split(";", 1)[0].strip().lower()
    if patch_type not in scope.patch_types:
        raise errors.unsupported_media_type(", ".join(scope.patch_types))
    output = _output(request)
    manager = field_manager(request, info, "PatchOptions", scope.version)
    dry = dry_run(request.query, "PatchOptions")
    validation = field_validation(request.query, "PatchOptions")
    raw = await bodies.read_body(request)
    document, duplicates = patch_document(raw, patch_type, track_duplicates=validation != "Ignore")
    user = request.get(USER, ANONYMOUS)
    sinks = request_sinks(request)
    # kube sends a patch's options to webhooks as UpdateOptions.
    options = admission_options(
        "UpdateOptions", dry_run=dry, field_manager=request.query.get("fieldManager", "")
    )
    warnings: list[str] = []
    check = SchemaCheck(scope)

    async def updated(old: HubObject | None) -> HubObject:
        nonlocal warnings
        if old is None:
            raise errors.not_found(scope.resource, info.name)
        current = scope.codec.to_version(old, scope.version)
        dups = duplicates if patch_type != JSON_PATCH else []
        schema = scope.kind.versions[scope.version].schema
        patched, cause = apply_patch(patch_type, current, document, schema)
        decoded = decode_write(scope, patched, field_validation=validation, duplicates=dups, patch=cause)
        obj, warnings = decoded.hub, decoded.warnings
        check.decoded = decoded  # a retry after a conflict decodes again
        check.warnings.clear()
        _set_namespace(scope, obj, info)  # kube's rest.BeforeUpdate applies to patches too
        attrs = scope.attributes(
            info, user, Operation.UPDATE, obj, old, dry_run=dry, sinks=sinks, options=options
        )
        return await _admit(scope, attrs)

    result, _ = await scope.store.update(
        info.namespace,
        info.name,
        updated,
        validate_update=_validator(scope, request, info, dry=dry, options_kind="UpdateOptions"),
        dry_run=dry,
        strategy=scope.subresources.get(info.subresource),
        manager=manager,
        check=check,
    )
    return _respond(output, scope, result, 200, warnings + check.warnings)
