"""DELETE of one object and of a collection (deletecollection).

Admission runs inside the Store against the object actually deleted (write_request.RequestAdmission:
mutating plugins, which may not change anything, then validating ones, with DeleteOptions); deleting
itself is registry/generic/deletion.py.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from apis.meta.errors import success_status
from server.endpoints import body as bodies
from server.endpoints import protobuf
from server.endpoints.negotiation import JSON, PROTOBUF
from server.endpoints.query import delete_options, list_options
from server.endpoints.render import answer_list, answer_object
from server.endpoints.scope import ResourceScope
from server.endpoints.write_request import request_admission, write_output
from server.request_info import RequestInfo
from server.responses import object_response


async def _options_body(request: web.Request) -> dict[str, Any] | None:
    raw = await bodies.read_body(request)
    if not raw.strip():
        return None
    value, _ = bodies.decode(raw, JSON)
    return value if isinstance(value, dict) else None


async def delete_object(request: web.Request, scope: ResourceScope, info: RequestInfo) -> web.Response:
    output = write_output(request, scope)  # a 406 must never follow a deletion
    options = delete_options(request.query, await _options_body(request))
    admission = request_admission(request, scope, info, dry_run=options.dry_run, deleting=True)
    obj, deleted_now = await scope.store.delete(
        info.namespace, info.name, options, validate=admission.validate
    )
    if deleted_now:
        details = {
            "name": info.name,
            "group": scope.group.group,
            "kind": scope.kind.resource,
            "uid": obj.metadata.get("uid"),
        }
        if output.media == PROTOBUF:
            return object_response(protobuf.status_body(success_status(details)), content_type=PROTOBUF)
        return object_response(success_status(details))
    # kube answers 202 only when the client explicitly asked for cascading deletion the old way.
    status = 202 if options.orphan_dependents is False else 200
    return object_response(answer_object(scope, obj, output), status=status, content_type=output.content_type)


async def delete_collection(request: web.Request, scope: ResourceScope, info: RequestInfo) -> web.Response:
    output = write_output(request, scope)
    options = delete_options(request.query, await _options_body(request), query_overrides_body=True)
    listed = list_options(request.query, scope.selectable_fields(), scope.unsupported_field_label)
    admission = request_admission(request, scope, info, dry_run=options.dry_run, deleting=True)
    result = await scope.store.delete_collection(info.namespace, listed, options, validate=admission.validate)
    return object_response(answer_list(scope, result, output), content_type=output.content_type)
