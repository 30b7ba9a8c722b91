"""PATCH `<resource>/scale` with `application/apply-patch+yaml`: server-side apply of a Scale.

kube's ScaleREST with scaleUpdatedObjectInfo and the Scale's own field manager: the applied
configuration is an autoscaling/v1 Scale, merged into the object's current Scale (whose managedFields
are the parent's owners of the replicas path, seen as `f:spec.f:replicas` at autoscaling/v1), so a
manager that owns the replicas through the object, `kubectl scale`, or another applier is a 409
FieldManagerConflict unless `force`. The merged Scale's replicas go back into the object through
registry/generic/scale.update_scale, and its entries back onto the object with `subresource: scale`
(registry/generic/scale_fields). The object is never created: a missing one is a 404, as in kube.
"""

from __future__ import annotations

import copy
from typing import Any

from aiohttp import web

from apis.autoscaling import v1 as autoscaling
from apis.meta.errors import GroupKind
from registry.generic.metadata import now_rfc3339
from registry.generic.scale import declaration, manager_version
from registry.generic.scale_fields import ScaleFields, ScaleTypes, replicas_paths
from registry.generic.server_side_apply import ApplyConflicts, ApplyRequest, apply_config
from server.endpoints.apply import ConfigType, check_config, read_apply_patch, typed_patch_error
from server.endpoints.field_manager import apply_manager
from server.endpoints.query import force
from server.endpoints.scale import decode_scale, respond, write_scale
from server.endpoints.scope import ResourceScope
from server.endpoints.write_request import WriteRequest, write_output
from server.request_info import RequestInfo

SCALE_CONFIG = ConfigType(
    autoscaling.API_VERSION, autoscaling.KIND, autoscaling.SCALE_SCHEMA, GroupKind(autoscaling.GROUP, "Scale")
)


async def apply_scale(request: web.Request, scope: ResourceScope, info: RequestInfo) -> web.Response:
    output = write_output(request)
    apply = ApplyRequest(
        manager=apply_manager(request),
        api_version=autoscaling.API_VERSION,
        subresource=info.subresource,
        force=force(request.query),
    )
    codec = scope.codec
    fields = ScaleFields(
        replicas_paths(codec, declaration(scope.store)),
        codec.api_version(manager_version(scope.kind, scope.version)),
    )
    write = WriteRequest.begin(request, scope, info, "PatchOptions", output=output, manager=fields)
    validation = write.field_validation
    document, duplicates = await read_apply_patch(request, validation)
    warnings: list[str] = []

    async def change(current: dict[str, Any]) -> dict[str, Any]:
        nonlocal warnings
        config, warnings = check_config(SCALE_CONFIG, copy.deepcopy(document), validation, duplicates)
        try:
            result = apply_config(ScaleTypes(), current, config, apply, now=now_rfc3339())
        except ApplyConflicts as e:
            raise e.status() from None
        except ValueError as e:  # not reachable with the Scale schema (no keyed lists); kept as apply.py
            raise typed_patch_error(config, [str(e)]) from None
        merged = result.object
        merged.setdefault("metadata", {}).pop("managedFields", None)
        scale, _ = decode_scale(merged, info, "Ignore", [])
        scale["metadata"]["managedFields"] = result.managed_fields
        return scale

    result = await write_scale(write, change, fields=fields)
    return respond(request, result, [*warnings, *write.store.warnings])
