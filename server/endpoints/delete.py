"""DELETE of one object and of a collection (deletecollection)."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from apis.meta.errors import success_status
from apis.meta.user import ANONYMOUS
from registry.generic.admission import Operation, ValidateObject
from server.admission.sinks import admission_options, request_sinks
from server.endpoints import body as bodies
from server.endpoints.negotiation import JSON, negotiate_output
from server.endpoints.query import delete_options, list_options
from server.endpoints.render import render_list, render_object
from server.endpoints.scope import ResourceScope
from server.request_info import RequestInfo
from server.request_state import USER
from server.responses import object_response


async def _options_body(request: web.Request) -> dict[str, Any] | None:
    raw = await bodies.read_body(request)
    if not raw.strip():
        return None
    value, _ = bodies.decode(raw, JSON)
    return value if isinstance(value, dict) else None


def _validator(scope: ResourceScope, request: web.Request, info: RequestInfo, dry: bool) -> ValidateObject:
    """kube's AdmissionToValidateObjectDeleteFunc: mutating plugins (which may not change anything on a
    DELETE) and then validating plugins, against the object actually being deleted."""
    user = request.get(USER, ANONYMOUS)
    sinks = request_sinks(request)
    options = admission_options("DeleteOptions", dry_run=dry)

    async def validate(obj: Any, old: Any | None) -> None:
        attrs = scope.attributes(
            info, user, Operation.DELETE, None, old, dry_run=dry, sinks=sinks, options=options
        )
        attrs.name = old.metadata.get("name", "") if old is not None else info.name
        await scope.admission.admit(attrs)
        await scope.admission.validate(attrs)

    return validate


async def delete_object(request: web.Request, scope: ResourceScope, info: RequestInfo) -> web.Response:
    # Negotiated first, as kube does: a 406 must never follow a deletion.
    output = negotiate_output(request.headers.get("Accept"), allow_transforms=())
    options = delete_options(request.query, await _options_body(request))
    obj, deleted_now = await scope.store.delete(
        info.namespace, info.name, options, validate=_validator(scope, request, info, options.dry_run)
    )
    if deleted_now:
        details = {
            "name": info.name,
            "group": scope.group.group,
            "kind": scope.kind.resource,
            "uid": obj.metadata.get("uid"),
        }
        return object_response(success_status(details))
    # kube answers 202 only when the client explicitly asked for cascading deletion the old way.
    status = 202 if options.orphan_dependents is False else 200
    return object_response(render_object(scope, obj, output), status=status, content_type=output.content_type)


async def delete_collection(request: web.Request, scope: ResourceScope, info: RequestInfo) -> web.Response:
    output = negotiate_output(request.headers.get("Accept"), allow_transforms=())
    options = delete_options(request.query, await _options_body(request), query_overrides_body=True)
    listed = list_options(request.query, scope.selectable_fields(), scope.unsupported_field_label)
    result = await scope.store.delete_collection(
        info.namespace, listed, options, validate=_validator(scope, request, info, options.dry_run)
    )
    return object_response(render_list(scope, result, output), content_type=output.content_type)
