"""GET of one object and LIST of a collection, answered from each object's memoized encoding."""

from __future__ import annotations

from aiohttp import web

from server.endpoints.protobuf import negotiate
from server.endpoints.query import list_options
from server.endpoints.render import include_object, list_parts, object_bytes
from server.endpoints.scope import ResourceScope
from server.request_info import RequestInfo

# A list answer larger than this is written in pieces of about this size (kube streams list
# encoding), so a LIST of 10,000 objects never becomes one multi-megabyte string in memory.
STREAM_OVER = 1 << 20


async def get_object(request: web.Request, scope: ResourceScope, info: RequestInfo) -> web.Response:
    output = negotiate(request.headers.get("Accept"), scope, ("Table", "PartialObjectMetadata"))
    obj = await scope.reads.read(
        info.namespace, info.name, resource_version=request.query.get("resourceVersion", "")
    )
    body = object_bytes(
        scope, obj, output, include=include_object(request.query, output), pretty=_pretty(request)
    )
    return web.Response(body=body, headers={"Content-Type": output.content_type})


async def list_objects(request: web.Request, scope: ResourceScope, info: RequestInfo) -> web.StreamResponse:
    output = negotiate(request.headers.get("Accept"), scope, ("Table", "PartialObjectMetadataList"))
    options = list_options(request.query, scope.selectable_fields(), scope.unsupported_field_label)
    result = await scope.reads.read_list(info.namespace, options)
    parts = list_parts(
        scope, result, output, include=include_object(request.query, output), pretty=_pretty(request)
    )
    size = sum(len(part) for part in parts)
    if size <= STREAM_OVER:
        return web.Response(body=b"".join(parts), headers={"Content-Type": output.content_type})
    response = web.StreamResponse(headers={"Content-Type": output.content_type})
    response.content_length = size
    await response.prepare(request)
    batch: list[bytes] = []
    pending = 0
    for part in parts:
        batch.append(part)
        pending += len(part)
        if pending >= STREAM_OVER:
            await response.write(b"".join(batch))
            batch, pending = [], 0
    await response.write_eof(b"".join(batch))
    return response


def _pretty(request: web.Request) -> bool:
    return request.query.get("pretty", "") in ("1", "true", "True")
