"""Webhook `service` clientConfigs resolved to an endpoint IP (kube's ``--enable-aggregator-routing``).

Why: by default a service hook is dialled at ``<name>.<namespace>.svc`` through DNS, as every
k8s.io/apiserver-based server does (``webhook.NewDefaultServiceResolver``). That needs the cluster's
DNS, which a server outside the cluster (or a test) does not have. kube-apiserver's
``--enable-aggregator-routing`` resolves a service through the cluster's objects instead
(``aggregatorapiserver.NewEndpointServiceResolver`` → ``k8s.io/apiserver/pkg/util/proxy.ResolveEndpoint``);
this is that resolver, over informer caches of ``services`` and ``discovery.k8s.io/v1``
``endpointslices``: read the service, find its port by number, then in the service's EndpointSlices
(label ``kubernetes.io/service-name``) the port of that port's *name*, and a ready endpoint
(``ready`` unset counts as ready), chosen at random as kube does. The errors are kube's texts.
The TLS server name stays ``<name>.<namespace>.svc`` (the caller's business, ``calls.py``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from server.cluster.informer import Informer

SERVICES_PATH = "/api/v1/services"
ENDPOINT_SLICES_PATH = "/apis/discovery.k8s.io/v1/endpointslices"
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
_ROUTABLE_TYPES = ("ClusterIP", "LoadBalancer", "NodePort")


class ResolutionError(Exception):
    """The service cannot be routed to; the message is kube's (it ends up in the webhook's error)."""


@dataclass(frozen=True, slots=True)
class Endpoint:
    host: str
    port: int

    @property
    def netloc(self) -> str:
        """``host:port`` as Go's net.JoinHostPort writes it (IPv6 in brackets)."""
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


class EndpointServiceResolver:
    """ResolveEndpoint over the caches; the slices are indexed by (namespace, service) on first use
    after each change, since a webhook call must not scan every slice of the cluster."""

    def __init__(self, services: Informer, slices: Informer) -> None:
        self._services = services
        self._slices = slices
        self._index: dict[tuple[str, str], list[dict[str, Any]]] | None = None
        slices.on_change(self._invalidate)

    async def wait_synced(self, timeout: float) -> bool:
        return await self._services.wait_synced(timeout) and await self._slices.wait_synced(timeout)

    def resolve(self, namespace: str, name: str, port: int) -> Endpoint:
        service = self._services.get(f"{namespace}/{name}")
        if service is None:
            raise ResolutionError(f'service "{name}" not found')  # the lister's NotFound
        spec = service.get("spec") or {}
        service_type = str(spec.get("type") or "ClusterIP")  # the API server defaults it
        if service_type not in _ROUTABLE_TYPES:
            raise ResolutionError(f'unsupported service type "{service_type}"')
        port_name = _service_port_name(spec, port)
        if port_name is None:
            raise ResolutionError(f'no service port {port} found for service "{name}"')
        families = spec.get("ipFamilies") or []
        preferred = str(families[0]) if families else ""
        endpoint = _random_endpoint(self._slices_of(namespace, name), port_name, preferred)
        if endpoint is None:
            raise ResolutionError(f'no endpoints available for service "{name}"')
        return endpoint

    def _slices_of(self, namespace: str, name: str) -> list[dict[str, Any]]:
        if self._index is None:
            index: dict[tuple[str, str], list[dict[str, Any]]] = {}
            for item in self._slices.items():
                metadata = item.get("metadata") or {}
                service = (metadata.get("labels") or {}).get(SERVICE_NAME_LABEL)
                if service is not None:
                    index.setdefault((str(metadata.get("namespace", "")), str(service)), []).append(item)
            self._index = index
        return self._index.get((namespace, name), [])

    def _invalidate(self) -> None:
        self._index = None


def _service_port_name(spec: dict[str, Any], port: int) -> str | None:
    """findServicePort: the service port with this number; its name ("" when unnamed)."""
    for service_port in spec.get("ports") or []:
        if isinstance(service_port, dict) and service_port.get("port") == port:
            return str(service_port.get("name") or "")
    return None


def _random_endpoint(slices: list[dict[str, Any]], port_name: str, preferred_family: str) -> Endpoint | None:
    """RandomEndpoint: slices of the service's primary IP family first, each in random order; the
    first slice port with the service port's name; from a random offset, the first ready endpoint."""
    order = list(slices)
    random.shuffle(order)
    order.sort(key=lambda s: s.get("addressType") != preferred_family)  # stable: random within a family
    for endpoint_slice in order:
        endpoints = [e for e in endpoint_slice.get("endpoints") or [] if isinstance(e, dict)]
        for slice_port in endpoint_slice.get("ports") or []:
            # kube compares names as pointers: an unnamed slice port (name unset) never matches.
            if not isinstance(slice_port, dict) or slice_port.get("name") != port_name:
                continue
            if slice_port.get("port") is None or not endpoints:
                continue
            offset = random.randrange(len(endpoints))
            for i in range(len(endpoints)):
                candidate = endpoints[(i + offset) % len(endpoints)]
                if (candidate.get("conditions") or {}).get("ready") is False:
                    continue
                addresses = candidate.get("addresses") or []
                if addresses:
                    return Endpoint(str(addresses[0]), int(slice_port["port"]))
    return None
