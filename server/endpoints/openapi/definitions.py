"""The definitions a group version contributes to either OpenAPI document: its kinds and their lists.

v2 and v3 share the naming and the GVK tagging here and differ only in how a schema is written (the
publisher they pass), so a kind is named the same in both documents and kube-aggregator, kubectl explain
and client generators resolve it the same way.
"""

from __future__ import annotations

from typing import Any

from apis.runtime.kinds import GroupInfo
from registry.generic.custom_subresources import CustomSubresources, Getter
from server.endpoints.openapi import autoscaling, meta
from server.endpoints.openapi.operations import definition_name

# info.title of both documents, as k8s.io/apiserver's generic server sets it.
DEFAULT_TITLE = "Generic API Server"


def kind_definitions(
    group: GroupInfo, version: str, published: Any, meta_ref: str, custom: CustomSubresources | None = None
) -> dict[str, dict[str, Any]]:
    """The <Kind> and <Kind>List definitions of one group version, tagged with their GVK, and the kinds
    the group's getters answer (`custom`: a Bill has no storage, but clients still read its schema).

    `published(schema, meta_ref)` is the per-kind publisher for the OpenAPI version at hand, so v2 and
    v3 share the naming and tagging and differ only in how a schema is written.
    """
    out: dict[str, dict[str, Any]] = {}
    for kind in group.kinds:
        if version not in kind.versions:
            continue
        name = definition_name(group.group, version, kind.kind)
        gvk = {"group": group.group, "version": version, "kind": kind.kind}
        out[name] = published(kind.versions[version].schema, meta_ref, gvk)
        list_name = definition_name(group.group, version, kind.list_kind)
        out[list_name] = meta.list_schema(
            group.group, version, kind.kind, kind.list_kind, kind.resource, name
        )
        if kind.scale is not None:
            out.update(autoscaling.definitions())
        for sub in (custom or {}).get(kind.resource, {}).values():
            if isinstance(sub, Getter):
                gvk = {"group": group.group, "version": version, "kind": sub.kind}
                out[definition_name(group.group, version, sub.kind)] = published(sub.schema, meta_ref, gvk)
    return out
