"""Routes a resource request to its handler using the RequestInfo the filter chain already resolved.

One route (`/apis/{tail}`) and this table replace a route per resource and verb: the request-info
filter parses paths exactly like kube's RequestInfoFactory, so authorization, metrics and dispatch
all agree on what a request is.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web

from apis.meta import errors
from apis.meta.errors import StatusError
from server.endpoints.apply import apply_object
from server.endpoints.custom_subresource import custom_handler
from server.endpoints.delete import delete_collection, delete_object
from server.endpoints.read import get_object, list_objects
from server.endpoints.scale import get_scale, patch_scale, replace_scale
from server.endpoints.scale_apply import apply_scale
from server.endpoints.scope import APPLY_PATCH, APIRegistry, ResourceScope
from server.endpoints.watch import watch_objects
from server.endpoints.write import create_object, patch_object, update_object
from server.request_info import RequestInfo
from server.request_state import REQUEST_INFO

Handler = Callable[[web.Request, ResourceScope, RequestInfo], Awaitable[web.StreamResponse]]


async def patch_or_apply(request: web.Request, scope: ResourceScope, info: RequestInfo) -> web.StreamResponse:
    """One verb, two mechanisms: server-side apply is a PATCH with its own content type."""
    content_type = (request.headers.get("Content-Type") or "").split(";", 1)[0].strip().lower()
    if content_type == APPLY_PATCH and APPLY_PATCH in scope.patch_types:
        return await apply_object(request, scope, info)
    return await patch_object(request, scope, info)


async def patch_or_apply_scale(
    request: web.Request, scope: ResourceScope, info: RequestInfo
) -> web.StreamResponse:
    """The same split on /scale, where apply merges an autoscaling/v1 Scale (scale_apply.py)."""
    content_type = (request.headers.get("Content-Type") or "").split(";", 1)[0].strip().lower()
    if content_type == APPLY_PATCH and APPLY_PATCH in scope.patch_types:
        return await apply_scale(request, scope, info)
    return await patch_scale(request, scope, info)


_COLLECTION: dict[str, Handler] = {
    "list": list_objects,
    "watch": watch_objects,
    "create": create_object,
    "deletecollection": delete_collection,
}
_OBJECT: dict[str, Handler] = {
    "get": get_object,
    "watch": watch_objects,
    "update": update_object,
    "patch": patch_or_apply,
    "delete": delete_object,
}
_SUBRESOURCE: dict[str, Handler] = {"get": get_object, "update": update_object, "patch": patch_or_apply}
# /scale speaks autoscaling/v1 Scale, not the kind (a kind declares it: KindInfo.scale).
_SCALE: dict[str, Handler] = {"get": get_scale, "update": replace_scale, "patch": patch_or_apply_scale}

API_REGISTRY = web.AppKey("api_registry", APIRegistry)


def path_not_found() -> StatusError:
    return StatusError(404, "NotFound", "the server could not find the requested resource", {})


def _handler_for(scope: ResourceScope, info: RequestInfo) -> Handler:
    namespaced = scope.kind.namespaced
    if info.namespace and not namespaced:
        raise path_not_found()
    if info.subresource == "scale" and scope.kind.scale is not None:
        table = _SCALE
    elif info.subresource:
        custom = scope.custom_subresources.get(info.subresource)
        if custom is not None:
            if namespaced and not info.namespace:
                raise path_not_found()
            return custom_handler(custom, scope, info)
        if info.subresource not in scope.subresources:
            raise path_not_found()
        table = _SUBRESOURCE
    elif info.path_name:
        if namespaced and not info.namespace:
            raise path_not_found()
        table = _OBJECT
    else:
        table = _COLLECTION
        if namespaced and not info.namespace and info.verb not in ("list", "watch"):
            raise errors.method_not_supported(scope.resource, info.verb)
    handler = table.get(info.verb)
    if handler is None:
        raise errors.method_not_supported(scope.resource, info.verb)
    if info.verb not in scope.verbs and not info.subresource:
        raise _not_served(scope, info.verb)
    return handler


def _not_served(scope: ResourceScope, verb: str) -> StatusError:
    """kube registers no route for a verb the storage does not serve: go-restful's 405 for the
    method, except a watch, which the list route refuses as not supported (handlers/get.go)."""
    if verb == "watch":
        return errors.method_not_supported(scope.resource, verb)
    return errors.method_not_allowed()


async def serve_resource(request: web.Request) -> web.StreamResponse:
    info: RequestInfo = request[REQUEST_INFO]
    registry = request.app[API_REGISTRY]
    if not info.is_resource_request:
        raise path_not_found()
    scope = registry.lookup(info.api_group, info.api_version, info.resource)
    if scope is None:
        raise path_not_found()
    return await _handler_for(scope, info)(request, scope, info)
