"""GET of one object and LIST of a collection."""

from __future__ import annotations

from aiohttp import web

from server.endpoints.negotiation import negotiate_output
from server.endpoints.query import list_options
from server.endpoints.render import include_object, render_list, render_object
from server.endpoints.scope import ResourceScope
from server.request_info import RequestInfo
from server.responses import object_response


async def get_object(request: web.Request, scope: ResourceScope, info: RequestInfo) -> web.Response:
    output = negotiate_output(
        request.headers.get("Accept"), allow_transforms=("Table", "PartialObjectMetadata")
    )
    hub = await scope.store.get(
        info.namespace, info.name, resource_version=request.query.get("resourceVersion", "")
    )
    body = render_object(scope, hub, output, include=include_object(request.query, output))
    return object_response(body, content_type=output.content_type, pretty=_pretty(request))


async def list_objects(request: web.Request, scope: ResourceScope, info: RequestInfo) -> web.Response:
    output = negotiate_output(
        request.headers.get("Accept"), allow_transforms=("Table", "PartialObjectMetadataList")
    )
    options = list_options(request.query, scope.selectable_fields())
    result = await scope.store.list(info.namespace, options)
    body = render_list(scope, result, output, include=include_object(request.query, output))
    return object_response(body, content_type=output.content_type, pretty=_pretty(request))


def _pretty(request: web.Request) -> bool:
    return request.query.get("pretty", "") in ("1", "true", "True")
