"""The admission contract: what a plugin sees and how it says no (k8s.io/apiserver pkg/admission).

It lives beside the Store (not in server/) because resource-specific plugins live with their
resources in registry/<group>/ and must not import the server. server/admission composes the chain.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from apis.meta import errors
from apis.meta.errors import GroupResource, StatusError
from apis.meta.user import UserInfo
from apis.runtime.codec import Codec
from apis.runtime.kinds import HubObject


class Operation(enum.StrEnum):
    CREATE = "CREATE"
    UPDATE = "UPDATE"
    DELETE = "DELETE"
    CONNECT = "CONNECT"


@dataclass(slots=True)
class Attributes:
    operation: Operation
    group: str
    version: str
    resource: str
    subresource: str
    kind: str
    namespace: str
    name: str
    # Hub objects. For DELETE, `object` is None and `old_object` the object being deleted.
    object: Any
    old_object: Any
    user: UserInfo
    dry_run: bool
    # Converts the hub objects to any served version: webhooks see the version they asked for.
    codec: Codec | None = None
    # The request's sinks, shared by every plugin call of one request: audit annotations
    # (kube's Attributes.AddAnnotation) and warnings that become `Warning` headers.
    annotations: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    # The options object of the call as kube sends it to webhooks (CreateOptions, UpdateOptions, ...).
    options: dict[str, Any] | None = None
    # A webhook's patch replaced the object: it was decoded again from JSON, and decoding defaults
    # (KEP-575), so the write re-applies its version's defaults. In-process plugins change the hub
    # object itself, which kube does not default again either.
    patched: bool = False

    @property
    def group_resource(self) -> GroupResource:
        return GroupResource(self.group, self.resource)


def deny(attrs: Attributes, why: str) -> StatusError:
    """kube's admission.NewForbidden: 403 `<resource> "<name>" is forbidden: <why>`."""
    return errors.forbidden(attrs.group_resource, attrs.name, why)


class MutatingPlugin(Protocol):
    @property
    def name(self) -> str: ...

    def handles(self, operation: Operation) -> bool: ...

    async def admit(self, attrs: Attributes) -> None:
        """May change attrs.object in place; raises StatusError to deny."""
        ...


class ValidatingPlugin(Protocol):
    @property
    def name(self) -> str: ...

    def handles(self, operation: Operation) -> bool: ...

    async def validate(self, attrs: Attributes) -> None:
        """Raises StatusError to deny; never changes the object."""
        ...


# Validating admission as the Store runs it inside a write, called with (new, old); raises
# StatusError to deny. The server builds it from the chain for each request.
ValidateObject = Callable[[HubObject, HubObject | None], Awaitable[None]]
