"""POST (create), PUT (update) and PATCH.

Each write begins as every write does (write_request.py: output, options, user, admission), decodes
the body in its own version (pruning + defaults), runs mutating admission (`admit`) and hands the hub
object to the Store, which prepares, validates (ObjectMeta, schema, CEL rules, the strategy), runs
validating admission and persists. Patches are applied to the current object in the URL's version,
inside the Store's retry loop, so a concurrent write never loses a patch.

Every write names a field manager (the `fieldManager` parameter, else the User-Agent's product, as
kube's managerOrUserAgent does); the Store records what it changed in metadata.managedFields.
"""

from __future__ import annotations

import copy

from aiohttp import web

from apis.meta import errors
from apis.runtime.kinds import HubObject
from server.endpoints import body as bodies
from server.endpoints import protobuf
from server.endpoints.decode import Decoded
from server.endpoints.negotiation import JSON, PROTOBUF, YAML, body_media_type
from server.endpoints.patch import apply_patch, patch_document
from server.endpoints.scope import JSON_PATCH, ResourceScope
from server.endpoints.write_request import WriteRequest
from server.request_info import RequestInfo


async def _read_object(request: web.Request, write: WriteRequest) -> Decoded:
    media = body_media_type(request.headers.get("Content-Type"), (JSON, YAML, PROTOBUF))
    if media == PROTOBUF and protobuf.kind_messages(write.scope) is None:
        raise errors.unsupported_media_type(f"{JSON}, {YAML}")
    raw = await bodies.read_body(request)
    if media == PROTOBUF:
        # No duplicate fields in protobuf: a repeated singular field is the last one, as in Go.
        return write.decode(protobuf.decode_body(write.scope, raw))
    data, duplicates = bodies.decode(raw, media, track_duplicates=write.field_validation != "Ignore")
    return write.decode(data, duplicates=duplicates)


async def create_object(request: web.Request, scope: ResourceScope, info: RequestInfo) -> web.Response:
    write = WriteRequest.begin(request, scope, info, "CreateOptions")
    decoded = await _read_object(request, write)
    obj = decoded.hub
    write.set_namespace(obj)
    obj = await write.admit(obj, None)
    created = await scope.store.create(obj, write.store)
    return write.respond(created, 201, decoded.warnings)


async def update_object(request: web.Request, scope: ResourceScope, info: RequestInfo) -> web.Response:
    write = WriteRequest.begin(request, scope, info, "UpdateOptions")
    decoded = await _read_object(request, write)
    obj = decoded.hub
    write.set_namespace(obj)

    async def updated(old: HubObject | None) -> HubObject:
        return await write.admit(copy.deepcopy(obj), old)

    result, created = await scope.store.update(
        info.namespace, info.name, updated, write.store, strategy=scope.subresources.get(info.subresource)
    )
    return write.respond(result, 201 if created else 200, decoded.warnings)


async def patch_object(request: web.Request, scope: ResourceScope, info: RequestInfo) -> web.Response:
    patch_type = (request.headers.get("Content-Type") or "").split(";", 1)[0].strip().lower()
    if patch_type not in scope.patch_types:
        raise errors.unsupported_media_type(", ".join(scope.patch_types))
    write = WriteRequest.begin(request, scope, info, "PatchOptions")
    raw = await bodies.read_body(request)
    document, duplicates = patch_document(
        raw, patch_type, track_duplicates=write.field_validation != "Ignore"
    )
    dups = duplicates if patch_type != JSON_PATCH else []
    schema = scope.kind.versions[scope.version].schema
    warnings: list[str] = []

    async def updated(old: HubObject | None) -> HubObject:
        nonlocal warnings
        if old is None:
            raise errors.not_found(scope.resource, info.name)
        current = scope.codec.to_version(old, scope.version)
        patched, cause = apply_patch(patch_type, current, document, schema)
        decoded = write.decode(patched, duplicates=dups, patch=cause)  # again on a retry
        warnings = decoded.warnings
        write.set_namespace(decoded.hub)  # kube's rest.BeforeUpdate applies to patches too
        return await write.admit(decoded.hub, old)

    result, _ = await scope.store.update(
        info.namespace, info.name, updated, write.store, strategy=scope.subresources.get(info.subresource)
    )
    return write.respond(result, 200, warnings)
