"""NamespaceLifecycle, as k8s.io/apiserver pkg/admission/plugin/namespace/lifecycle does it.

Nothing may be created in a namespace the cluster does not have (404 `namespaces "x" not found`) or
one being deleted (403 with kube's message and its NamespaceTerminating cause). The namespaces come
from a shared informer; a CREATE that misses it waits 50 ms and looks again, then asks the cluster
directly (a namespace created a moment ago may not have reached the cache). A namespace DELETE seen
here makes lookups of that namespace live for 30 s. UPDATE and DELETE of content are always allowed.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from apis.meta import errors
from apis.meta.errors import GroupResource, StatusError
from registry.generic.admission import Attributes, Operation, deny
from server.cluster.cache import ExpiringLRU
from server.cluster.client import ClusterClient, ClusterError
from server.cluster.informer import Informer

PLUGIN_NAME = "NamespaceLifecycle"
NAMESPACES_PATH = "/api/v1/namespaces"
NAMESPACES = GroupResource("", "namespaces")
IMMORTAL_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})
MISSING_NAMESPACE_WAIT = 0.05
FORCE_LIVE_LOOKUP_TTL = 30.0
READY_WAIT = 10.0  # kube's admission.Handler WaitForReady timeout
_ACCESS_REVIEWS = frozenset({GroupResource("authorization.k8s.io", "localsubjectaccessreviews")})


def not_ready(attrs: Attributes) -> StatusError:
    return deny(attrs, "not yet ready to handle request")


async def live_namespace(client: ClusterClient, name: str) -> dict[str, Any]:
    """GET the namespace from the cluster: 404 as kube's NotFound, anything else a 500."""
    try:
        return await client.get(f"{NAMESPACES_PATH}/{name}")
    except ClusterError as err:
        if err.status == 404:
            raise errors.not_found(NAMESPACES, name) from None
        raise errors.internal_error(str(err)) from None


@dataclass
class NamespaceLifecycle:
    namespaces: Informer
    client: ClusterClient
    immortal: frozenset[str] = IMMORTAL_NAMESPACES
    name: str = PLUGIN_NAME
    _force_live: ExpiringLRU[bool] = field(default_factory=lambda: ExpiringLRU(100))

    def handles(self, operation: Operation) -> bool:
        return operation in (Operation.CREATE, Operation.UPDATE, Operation.DELETE)

    async def admit(self, attrs: Attributes) -> None:
        is_namespace = attrs.group == "" and attrs.kind == "Namespace"
        if attrs.operation == Operation.DELETE and is_namespace and attrs.name in self.immortal:
            raise errors.forbidden(attrs.group_resource, attrs.name, "this namespace may not be deleted")
        if not attrs.namespace and not is_namespace:
            return
        if is_namespace:
            if attrs.operation == Operation.DELETE:
                self._force_live.add(attrs.name, True, FORCE_LIVE_LOOKUP_TTL)
            return
        if attrs.operation in (Operation.DELETE, Operation.UPDATE):
            return
        if attrs.group_resource in _ACCESS_REVIEWS:
            return
        if not await self.namespaces.wait_synced(READY_WAIT):
            raise not_ready(attrs)
        namespace = self.namespaces.get(attrs.namespace)
        if namespace is None and attrs.operation == Operation.CREATE:
            await asyncio.sleep(MISSING_NAMESPACE_WAIT)
            namespace = self.namespaces.get(attrs.namespace)
        force_live = False
        if self._force_live.get(attrs.namespace):
            force_live = namespace is not None and _phase(namespace) == "Active"
        if namespace is None or force_live:
            namespace = await live_namespace(self.client, attrs.namespace)
        if attrs.operation == Operation.CREATE and _phase(namespace) == "Terminating":
            err = deny(
                attrs,
                f"unable to create new content in namespace {attrs.namespace} because it is being terminated",
            )
            details = err.details if err.details is not None else {}
            details.setdefault("causes", []).append(
                {
                    "reason": "NamespaceTerminating",
                    "message": f"namespace {attrs.namespace} is being terminated",
                    "field": "metadata.namespace",
                }
            )
            err.details = details
            raise err


def _phase(namespace: dict[str, Any]) -> str:
    return str((namespace.get("status") or {}).get("phase") or "Active")
