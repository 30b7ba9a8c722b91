"""The scale subresource over a Store: read the object → project it to a Scale → write back.

apiextensions-apiserver's ScaleREST for any kind that declares a `ScaleSubresource`: the Scale shares
the object's resourceVersion (a stale one is a 409, as for the object), only spec.replicas is
written, and the write goes through the *main* strategy and validation (status kept, generation
bumped, the kind's bounds enforced: 422 naming the object's field).

`update_scale` takes the change as a function of the current Scale, so every way of writing a Scale
(PUT, the patch types, server-side apply) shares one read-project-write loop, retried by the Store
on conflicts. Apply also moves field ownership across the projection (registry/generic/scale_fields).
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable
from typing import Any

from apis.meta import errors
from apis.runtime.kinds import HubObject, KindInfo
from apis.runtime.scale import ScaleSubresource, scale_of, spec_replicas, write_path
from registry.generic.options import WriteOptions
from registry.generic.scale_fields import ScaleFields
from registry.generic.store import Store

# kube's invalidSpecReplicas: the smallest int32 marks "the object has no replicas" in the Scale a
# change is computed from, so a change that leaves it there is refused rather than written.
UNSET_REPLICAS = -(2**31)

# Current Scale (JSON) → the Scale to write (JSON, already decoded and checked as a Scale).
ScaleChange = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
# Mutating admission of the parent object after the replicas went in: (new, old) → new.
AdmitParent = Callable[[HubObject, HubObject], Awaitable[HubObject]]


def declaration(store: Store) -> ScaleSubresource:
    scale = store.codec.kind.scale
    if scale is None:
        raise errors.internal_error(f"{store.codec.kind.kind} declares no scale subresource")
    return scale


def manager_version(kind: KindInfo, version: str) -> str:
    """The version whose fields a /scale write is recorded in: the URL's when it has the replicas
    field (kube records the parent's version), else the storage version's (an older version carries
    replicas in an annotation, which is not what the manager changed)."""
    scale = kind.scale
    assert scale is not None
    schema: Any = kind.versions[version].schema
    for part in scale.spec_replicas_path.removeprefix(".").split("."):
        schema = (schema.get("properties") or {}).get(part) if isinstance(schema, dict) else None
    return version if schema is not None else kind.storage_version


async def read_scale(
    store: Store, namespace: str, name: str, *, resource_version: str = ""
) -> dict[str, Any]:
    """GET: the Scale of the object; an object without replicas has no Scale (kube: 500)."""
    scale = declaration(store)
    obj = (await store.read(namespace, name, resource_version=resource_version)).hub()
    if spec_replicas(obj, scale) is None:
        raise errors.internal_error(f'the spec replicas field "{scale.spec_replicas_path}" does not exist')
    return scale_of(obj, scale)


async def update_scale(
    store: Store,
    namespace: str,
    name: str,
    change: ScaleChange,
    write: WriteOptions,
    *,
    admit: AdmitParent | None = None,
    fields: ScaleFields | None = None,
) -> dict[str, Any]:
    """kube's ScaleREST.Update: the object's current Scale → `change` → spec.replicas (and the
    resourceVersion precondition, when the new Scale carries one) written back into the object,
    which the Store then prepares and validates through the main strategy as any update.

    With `fields` (server-side apply), ownership is computed on the Scale as kube's
    scaleUpdatedObjectInfo does: the current Scale carries the parent's entries seen as a Scale's,
    the managedFields of the Scale `change` returns go back to the parent through `fields`, which
    is then the write's manager and sets them on what is stored."""
    scale = declaration(store)

    async def updated(obj: HubObject | None) -> HubObject:
        # The Store hands over its own copy of the stored object: it is ours to change.
        if obj is None:
            raise errors.not_found(store.resource, name)
        old = copy.deepcopy(obj) if admit is not None else obj
        current = scale_of(obj, scale)
        if spec_replicas(obj, scale) is None:
            current["spec"]["replicas"] = UNSET_REPLICAS
        parent_entries = obj.metadata.get("managedFields")
        if fields is not None:
            current["metadata"]["managedFields"] = fields.to_scale(parent_entries)
        new_scale = await change(current)
        if fields is not None:
            scale_entries = (new_scale.get("metadata") or {}).pop("managedFields", None)
            fields.entries = fields.to_parent(parent_entries, scale_entries)
        replicas = (new_scale.get("spec") or {}).get("replicas", 0)
        if replicas == UNSET_REPLICAS:
            raise errors.bad_request(f'the spec replicas field "{scale.spec_replicas_path}" cannot be empty')
        write_path(obj, scale.spec_replicas_path, replicas)
        resource_version = (new_scale.get("metadata") or {}).get("resourceVersion")
        if resource_version:
            obj.metadata["resourceVersion"] = resource_version
        return await admit(obj, old) if admit is not None else obj

    if fields is not None:
        write.manager = fields
    result, _ = await store.update(namespace, name, updated, write)
    return scale_of(result, scale)
