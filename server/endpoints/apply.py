"""PATCH with `application/apply-patch+yaml`: server-side apply, as k8s.io/apiserver's applyPatcher.

The request part lives here (options, the body, kube's checks and their messages); the merge and the
ownership bookkeeping are registry/generic/server_side_apply.py, generic over any kind and version.
Order of checks, as kube's handler and field manager stack run them:

1. PatchOptions: `fieldManager` is required (422 PatchOptions), `force` is allowed.
2. The body is YAML (so JSON too): 400 `error decoding patch: …`.
3. Inside the Store's retry loop, per attempt: the config's group/version/kind must be the
   endpoint's (400 `invalid object type: g/v, Kind=K`), `metadata.managedFields` must be absent or
   null (400), a field the schema does not declare is a 400 whatever `fieldValidation` says (SMD
   cannot type the config), duplicate YAML keys follow `fieldValidation`; then
   the apply (409 with FieldManagerConflict causes), and a missing object is created (a `uid` in
   the config is then a 409 `uid mismatch`).
4. The merged object goes the way of every patch: decode (defaults, validation), mutating admission,
   the strategy, validating admission, the store with the resourceVersion precondition (the config's
   resourceVersion, if it sets one, wins the merge, so a stale one is a 409).

Ownership is computed before admission, as kube's field manager runs before it: what webhooks and
plugins change is owned by nobody.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from apis.meta import errors
from apis.meta.errors import GroupKind, StatusError
from apis.meta.field import ErrorType
from apis.runtime.kinds import HubObject
from apis.schema.apply_merge import undeclared_fields
from apis.schema.fieldset import FieldSet, field_element
from apis.schema.prune import prune
from apis.schema.validate import validate
from registry.generic.metadata import now_rfc3339
from registry.generic.server_side_apply import (
    AppliedFields,
    ApplyConflicts,
    ApplyRequest,
    CodecTypes,
    apply_config,
)
from server.endpoints import body as bodies
from server.endpoints.field_manager import apply_manager
from server.endpoints.query import force
from server.endpoints.scope import ResourceScope
from server.endpoints.write_request import WriteRequest, write_output
from server.request_info import RequestInfo


def _apply_request(request: web.Request, scope: ResourceScope, info: RequestInfo) -> ApplyRequest:
    name = apply_manager(request)
    strategy = scope.subresources.get(info.subresource) or scope.store.strategy
    reset = FieldSet.of(*((field_element(f),) for f in strategy.reset_fields))
    return ApplyRequest(
        manager=name,
        api_version=scope.api_version,
        subresource=info.subresource,
        force=force(request.query),
        reset=reset,
    )


@dataclass(frozen=True, slots=True)
class ConfigType:
    """What an endpoint applies: the config's apiVersion and kind, and the schema that types it."""

    api_version: str
    kind: str
    schema: dict[str, Any]
    group_kind: GroupKind


def scope_config_type(scope: ResourceScope) -> ConfigType:
    return ConfigType(
        scope.api_version, scope.kind.kind, scope.kind.versions[scope.version].schema, scope.group_kind
    )


def check_config(
    expected: ConfigType, document: Any, validation: str, duplicates: list[str]
) -> tuple[dict[str, Any], list[str]]:
    """versionCheckManager and structuredMergeManager's checks, then the schema's view of the config."""
    data = document if isinstance(document, dict) else {}
    meta = data.get("metadata")
    api_version, kind = str(data.get("apiVersion") or ""), str(data.get("kind") or "")
    if api_version != expected.api_version or kind != expected.kind:
        group, _, version = api_version.rpartition("/")
        raise errors.bad_request(f"invalid object type: {group}/{version}, Kind={kind}")
    if isinstance(meta, dict) and meta.get("managedFields") is not None:
        raise errors.bad_request("metadata.managedFields must be nil")
    schema = expected.schema
    # SMD types the config before anything else and refuses what the schema does not declare,
    # whatever fieldValidation says (kube answers 500 here, kubernetes#139253; 400 is the fix's code).
    undeclared = undeclared_fields(data, schema)
    if undeclared:
        raise typed_patch_error(data, [f"{path}: field not declared in schema" for path in undeclared])
    prune(data, schema)  # nothing undeclared is left; this only normalises what the schema keeps
    warnings: list[str] = []
    if validation == "Strict" and duplicates:
        raise errors.bad_request(
            "error strict decoding patch: " + ", ".join(f'duplicate field "{d}"' for d in duplicates)
        )
    if validation == "Warn":
        warnings += [f'duplicate field "{d}"' for d in duplicates]
    # SMD types the config against the schema before merging: a wrongly typed value is refused.
    type_errors = [e for e in validate(data, schema) if e.type is ErrorType.TYPE_INVALID]
    if type_errors:
        name = meta.get("name", "") if isinstance(meta, dict) else ""
        raise errors.invalid(expected.group_kind, str(name), type_errors)
    return data, warnings


def typed_patch_error(config: dict[str, Any], problems: list[str]) -> StatusError:
    """structuredMergeManager: `failed to create typed patch object (<ns>/<name>; <gvk>): <errors>`,
    the errors joined as SMD's ValidationErrors are."""
    found = config.get("metadata")
    meta: dict[str, Any] = found if isinstance(found, dict) else {}
    group, _, version = str(config.get("apiVersion") or "").rpartition("/")
    gvk = f"{group}/{version}, Kind={config.get('kind') or ''}"
    where = f"{meta.get('namespace') or ''}/{meta.get('name') or ''}; {gvk}"
    detail = problems[0] if len(problems) == 1 else "\n".join(["errors:", *(f"  {p}" for p in problems)])
    return errors.bad_request(f"failed to create typed patch object ({where}): {detail}")


def _drop_nulls(value: Any) -> Any:
    """apiextensions prunes nulls of non-nullable fields before defaulting; none of ours are nullable."""
    if isinstance(value, dict):
        return {k: _drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_nulls(v) for v in value]
    return value


async def read_apply_patch(request: web.Request, validation: str) -> tuple[Any, list[str]]:
    """The body is YAML (so JSON too): 400 `error decoding patch: …`; duplicates per `validation`."""
    raw = await bodies.read_body(request)
    try:
        document, duplicates = bodies.decode(raw, bodies.YAML_TYPE, track_duplicates=validation != "Ignore")
    except StatusError as e:
        raise errors.bad_request(
            e.message.replace("error decoding body:", "error decoding patch:", 1)
        ) from None
    return document, duplicates


async def apply_object(request: web.Request, scope: ResourceScope, info: RequestInfo) -> web.Response:
    output = write_output(request, scope)
    apply = _apply_request(request, scope, info)
    tracker = AppliedFields()
    write = WriteRequest.begin(request, scope, info, "PatchOptions", output=output, manager=tracker)
    validation = write.field_validation
    document, duplicates = await read_apply_patch(request, validation)
    types = CodecTypes(scope.codec)
    expected = scope_config_type(scope)
    warnings: list[str] = []

    async def updated(old: HubObject | None) -> HubObject:
        nonlocal warnings
        config, warnings = check_config(expected, copy.deepcopy(document), validation, duplicates)
        live = scope.codec.to_version(old, scope.version) if old is not None else None
        try:
            result = apply_config(types, live, config, apply, now=now_rfc3339())
        except ApplyConflicts as e:
            raise e.status() from None
        except ValueError as e:  # a config SMD cannot type (e.g. two map-list items with one key)
            raise typed_patch_error(config, [str(e)]) from None
        tracker.entries = result.managed_fields
        merged = _drop_nulls(result.object)
        merged.get("metadata", {}).pop("managedFields", None)
        if old is None and (merged.get("metadata") or {}).get("uid"):
            raise errors.conflict(
                scope.resource,
                info.name,
                f"uid mismatch: the provided object specified uid {merged['metadata']['uid']}, "
                "and no existing object was found",
            )
        obj = write.decode(merged, field_validation="Ignore").hub  # again on a retry
        write.set_namespace(obj)
        # kube's patcher hands webhooks CreateOptions or UpdateOptions, whichever the apply became.
        return await write.admit(obj, old)

    result, created = await scope.store.update(
        info.namespace,
        info.name,
        updated,
        write.store,
        strategy=scope.subresources.get(info.subresource),
        force_allow_create=not info.subresource,
    )
    return write.respond(result, 201 if created else 200, warnings)
