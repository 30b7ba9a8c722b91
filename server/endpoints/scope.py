"""What a handler needs to serve one resource in one version, looked up from the request path.

Built once at start for every installed (group, version, resource); handlers stay plain functions
of (request, scope). What one write request adds to it (options, user, admission) is write_request.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from apis.meta import errors
from apis.meta.errors import GroupKind, GroupResource
from apis.meta.fields import custom_resource_label_error, default_label_error
from apis.runtime.codec import Codec
from apis.runtime.kinds import ALL_VERBS, GroupInfo, KindInfo
from registry.generic.custom_subresources import CustomSubresource, CustomSubresources
from registry.generic.rest import ResourceStorage
from registry.generic.store import Store
from registry.generic.strategy import Strategy
from server.admission.chain import AdmissionChain

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
# Listing SMP here also lists it in the OpenAPI `consumes` of every PATCH, which is what makes
# client-side `kubectl apply` send strategic merge patches (built from the schema's patch metadata).
PATCH_TYPES: tuple[str, ...] = (JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, APPLY_PATCH)


@dataclass(frozen=True)
class ResourceScope:
    group: GroupInfo
    kind: KindInfo
    version: str
    # What GET, LIST and WATCH read: the resource's Store, or the group's own class for it.
    reads: ResourceStorage
    admission: AdmissionChain
    # Strategies of subresources served for this kind, by name ("status").
    subresources: dict[str, Strategy] = field(default_factory=dict)
    # The group's getters and connecters for this kind, by name ("bill").
    custom_subresources: Mapping[str, CustomSubresource] = field(default_factory=dict)
    patch_types: tuple[str, ...] = PATCH_TYPES
    # Warnings every response of this version carries (kube's deprecation warning), see deprecation.py.
    warnings: tuple[str, ...] = ()
    # The verbs served (the kind's); the dispatcher answers 405 for any other.
    verbs: frozenset[str] = frozenset(ALL_VERBS)

    @property
    def store(self) -> Store:
        """The Store the write verbs and subresources go through. Only a stored resource serves
        them (the dispatcher refuses the others' before a handler runs), so this never fails."""
        reads = self.reads
        if isinstance(reads, Store):
            return reads
        raise errors.internal_error(f"{self.resource} is not served by a Store")

    @property
    def codec(self) -> Codec:
        return self.reads.codec

    @property
    def resource(self) -> GroupResource:
        return GroupResource(self.group.group, self.kind.resource)

    @property
    def group_kind(self) -> GroupKind:
        return GroupKind(self.group.group, self.kind.kind)

    @property
    def api_version(self) -> str:
        return f"{self.group.group}/{self.version}"

    def selectable_fields(self) -> list[str]:
        """Field selector names this resource supports: metadata.name, metadata.namespace when the kind
        is namespaced (a custom resource's) or always (a scheme's default conversion), and the
        strategy's."""
        fields = ["metadata.name"]
        if self.kind.namespaced or self.group.scheme_types is not None:
            fields.append("metadata.namespace")
        return fields + list(self.reads.field_names)

    def unsupported_field_label(self, label: str) -> str:
        """kube's message for a field selector on a label this resource does not support."""
        if self.group.scheme_types is None:
            return custom_resource_label_error(label)
        return default_label_error(label)


@dataclass(frozen=True)
class APIRegistry:
    """Every installed resource scope, by (group, version, resource)."""

    groups: tuple[GroupInfo, ...]
    scopes: dict[tuple[str, str, str], ResourceScope]
    # Each group's custom subresources (by group name), for discovery and OpenAPI.
    custom_subresources: Mapping[str, CustomSubresources] = field(default_factory=dict)

    def lookup(self, group: str, version: str, resource: str) -> ResourceScope | None:
        return self.scopes.get((group, version, resource))
