"""Custom subresources: kube's rest.Getter and rest.Connecter for one `resource/subresource`.

What a CRD cannot have: `pods/log`, `pods/exec`, `pizzas/bill`. A group declares one by giving an
instance of a subclass in its GroupInstallation (`custom_subresources={"pizzas": {"bill": Bill(...)}}`);
the server routes, authorizes (`pizzas/bill` is a resource of its own for RBAC), audits, meters and
publishes it (discovery, OpenAPI) from the class attributes alone, so the class only computes answers.

Both kinds know nothing of HTTP: a Getter returns an object, a Connecter an async generator of bytes,
which the server writes as a chunked response or, on a WebSocket upgrade, as kube's channel protocol
(server/endpoints/custom_subresource.py). That is why one `oven` serves `curl`, `kubectl get --raw` and
a WebSocket client alike.
"""

from __future__ import annotations

import abc
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from apis.runtime.kinds import Column


@dataclass(frozen=True, slots=True)
class SubresourceRequest:
    """What a custom subresource is asked: the parent object's coordinates and the query."""

    group: str
    # The URL's version: the answer's apiVersion is the group/version the client asked for.
    version: str
    namespace: str
    name: str
    query: Mapping[str, str]

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"


@dataclass(frozen=True, slots=True)
class QueryParameter:
    """A query parameter a Connecter reads (its connect options), as OpenAPI documents it."""

    name: str
    type: str  # string | integer | boolean
    description: str


class Getter(abc.ABC):
    """kube's rest.Getter on a subresource: GET answers one object of `kind`, computed per request.

    `get` returns the object without apiVersion and kind (the server sets the URL's group/version and
    `kind`); a 404 for a missing parent is the subclass's to raise (a StatusError). `schema` is the
    OpenAPI v3 structural schema of the object, published as the kind's definition; `columns` (read
    from the returned dict) make its Table, None gives kube's default Name and Created At.
    """

    kind: ClassVar[str]
    schema: ClassVar[dict[str, Any]]
    columns: ClassVar[tuple[Column, ...] | None] = None
    verbs: ClassVar[tuple[str, ...]] = ("get",)

    @abc.abstractmethod
    async def get(self, request: SubresourceRequest) -> dict[str, Any]:
        """The object for this request (see the class docstring)."""


class Connecter(abc.ABC):
    """kube's rest.Connecter answering GET with a stream (what pods/log and pods/exec are).

    `connect` validates the query and checks the parent exists *before* returning (its StatusErrors
    become 4xx answers), then the server writes what the generator yields: chunked `content_type`, or
    channel 1 of a `v5.channel.k8s.io` WebSocket. The server closes the generator when the client
    leaves, so a `finally` in it is where storage watches are closed. `kind` is the connect
    options' kind (pods/exec: PodExecOptions), which discovery lists; `parameters` are those options.
    A long-running connecter is exempt from the request timeout and the in-flight limit, as watches are.
    """

    kind: ClassVar[str]
    parameters: ClassVar[tuple[QueryParameter, ...]] = ()
    content_type: ClassVar[str] = "text/plain"
    long_running: ClassVar[bool] = True
    # kube's ConnectMethods; discovery lists them as verbs (GET → get).
    verbs: ClassVar[tuple[str, ...]] = ("get",)

    @abc.abstractmethod
    async def connect(self, request: SubresourceRequest) -> AsyncGenerator[bytes, None]:
        """Checks the request, then returns the stream's async generator (see the class docstring)."""


CustomSubresource = Getter | Connecter
# A group's declaration: resource → subresource → implementation.
CustomSubresources = Mapping[str, Mapping[str, CustomSubresource]]


def long_running_subresources(declared: CustomSubresources) -> frozenset[str]:
    """The names of the declared subresources that stream for as long as the client stays."""
    return frozenset(
        name
        for subresources in declared.values()
        for name, sub in subresources.items()
        if isinstance(sub, Connecter) and sub.long_running
    )
