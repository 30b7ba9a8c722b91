"""Per-resource behaviour the generic Store consults, like k8s.io/apiserver's RESTCreateStrategy & co.

A resource's folder (registry/<group>/<resource>/) builds one `Strategy`; the Store does everything
else. `SpecStatusStrategy` covers the common case of an object split into spec and status (what
apiextensions does for every custom resource), so a resource usually only supplies validators.
`PlainStrategy` is what k8s.io/sample-apiserver's strategies are: nothing prepared, names checked only
as URL path segments, validators if any. Neither assumes a kind has a spec or a status.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from apis.meta.field import FieldError
from apis.meta.names import NameFn, name_is_dns_subdomain, name_is_path_segment
from apis.runtime.kinds import HubObject, set_spec, set_status, spec_of, status_of
from registry.generic.graceful_deletion import GracefulDeletion

Validator = Callable[[Any], list[FieldError]]
UpdateValidator = Callable[[Any, Any], list[FieldError]]
FieldAttributes = Callable[[Any], dict[str, str]]


class Strategy(Protocol):
    # Read-only members: strategies are frozen dataclasses.
    @property
    def namespaced(self) -> bool: ...

    # PUT on a missing object creates it (kube: AllowCreateOnUpdate).
    @property
    def allow_create_on_update(self) -> bool: ...

    # PUT without metadata.resourceVersion is accepted (kube: AllowUnconditionalUpdate).
    @property
    def allow_unconditional_update(self) -> bool: ...

    # Extra field selector names `field_attributes` provides (beyond metadata.name/namespace).
    @property
    def field_names(self) -> tuple[str, ...]: ...

    # metadata.name/generateName rule (kube passes it to ValidateObjectMeta): DNS subdomain for
    # custom-resource-like kinds, a path segment for sample-apiserver's.
    @property
    def validate_name(self) -> NameFn: ...

    # kube's GetResetFields: top-level fields this endpoint never writes (the strategy restores them),
    # so nobody owns them through it and server-side apply ignores them in conflicts.
    @property
    def reset_fields(self) -> tuple[str, ...]: ...

    # The versioned object is checked against its version's OpenAPI schema and CEL rules on every
    # write, before the strategy's own checks (registry/generic/validation.py).
    @property
    def validate_schema(self) -> bool: ...

    # kube's RESTGracefulDeleteStrategy: DELETE with a grace period marks the object and something
    # removes it later (registry/generic/graceful_deletion.py); None deletes at once.
    @property
    def graceful_deletion(self) -> GracefulDeletion | None: ...

    def prepare_for_create(self, obj: HubObject) -> None: ...
    def prepare_for_update(self, obj: HubObject, old: HubObject) -> None: ...
    def validate(self, obj: HubObject) -> list[FieldError]: ...
    def validate_update(self, obj: HubObject, old: HubObject) -> list[FieldError]: ...
    def canonicalize(self, obj: HubObject) -> None: ...
    def field_attributes(self, obj: HubObject) -> dict[str, str]: ...


def _no_errors(*_: Any) -> list[FieldError]:
    return []


def _no_fields(_: Any) -> dict[str, str]:
    return {}


@dataclass(frozen=True)
class SpecStatusStrategy:
    """The main resource endpoint: users own spec and metadata; status changes only via /status.

    Mirrors apiextensions' customResourceStrategy when the status subresource is enabled: status is
    reset on create and kept from the old object on update, and metadata.generation moves only when
    spec changes (seed: "Subresources for CustomResources").
    """

    namespaced: bool
    validate_fn: Validator = _no_errors
    validate_update_fn: UpdateValidator = _no_errors
    extra_fields: FieldAttributes = _no_fields
    field_names: tuple[str, ...] = ()
    has_status: bool = True
    allow_create_on_update: bool = False
    allow_unconditional_update: bool = False
    # The status a created object starts with (None: its status type, empty).
    empty_status: Callable[[], Any] | None = None
    validate_name: NameFn = name_is_dns_subdomain
    # apiextensions validates every custom resource against its version's schema and rules.
    validate_schema: bool = True
    # Custom resources have no graceful deletion; a group declares it for kinds that need it.
    graceful_deletion: GracefulDeletion | None = None

    @property
    def reset_fields(self) -> tuple[str, ...]:
        return ("status",) if self.has_status else ()

    def prepare_for_create(self, obj: HubObject) -> None:
        # apiextensions drops a status sent on create. Without `empty_status` the kind's own status
        # type, empty, is the reset value: a group declares nothing more for it.
        status = status_of(obj)
        if self.has_status and status is not None:
            set_status(obj, self.empty_status() if self.empty_status is not None else type(status)())
        obj.metadata["generation"] = 1

    def prepare_for_update(self, obj: HubObject, old: HubObject) -> None:
        old_status = status_of(old)
        if self.has_status and old_status is not None:
            set_status(obj, copy.deepcopy(old_status))
        generation = int(old.metadata.get("generation") or 0)
        # A kind without spec compares None with None: its generation stays, as for a metadata change.
        changed = spec_of(obj) != spec_of(old)
        obj.metadata["generation"] = generation + 1 if changed else max(generation, 1)

    def validate(self, obj: HubObject) -> list[FieldError]:
        return self.validate_fn(obj)

    def validate_update(self, obj: HubObject, old: HubObject) -> list[FieldError]:
        return self.validate_update_fn(obj, old)

    def canonicalize(self, obj: HubObject) -> None:
        return None

    def field_attributes(self, obj: HubObject) -> dict[str, str]:
        return self.extra_fields(obj)


@dataclass(frozen=True)
class StatusStrategy:
    """The /status subresource: only status changes; spec and most metadata come from the old object.

    Like kube's status strategies, labels/annotations/finalizers/ownerReferences are not changed through
    /status (apiextensions resets metadata except for a few fields; we keep the old metadata whole apart
    from resourceVersion, which carries the precondition).
    """

    main: SpecStatusStrategy
    validate_status_fn: UpdateValidator = _no_errors

    @property
    def namespaced(self) -> bool:
        return self.main.namespaced

    allow_create_on_update: bool = False
    allow_unconditional_update: bool = False
    # apiextensions' statusStrategy.GetResetFields.
    reset_fields: tuple[str, ...] = ("metadata", "spec")

    def prepare_for_create(self, obj: HubObject) -> None:
        return None

    def prepare_for_update(self, obj: HubObject, old: HubObject) -> None:
        old_spec = spec_of(old)
        if old_spec is not None:
            set_spec(obj, copy.deepcopy(old_spec))
        rv = obj.metadata.get("resourceVersion")
        obj.metadata = copy.deepcopy(old.metadata)
        if rv is not None:
            obj.metadata["resourceVersion"] = rv

    def validate(self, obj: HubObject) -> list[FieldError]:
        return []

    def validate_update(self, obj: HubObject, old: HubObject) -> list[FieldError]:
        return self.validate_status_fn(obj, old)

    def canonicalize(self, obj: HubObject) -> None:
        return None

    @property
    def field_names(self) -> tuple[str, ...]:
        return self.main.field_names

    @property
    def validate_name(self) -> NameFn:
        return self.main.validate_name

    @property
    def validate_schema(self) -> bool:
        return self.main.validate_schema

    @property
    def graceful_deletion(self) -> GracefulDeletion | None:
        return self.main.graceful_deletion

    def field_attributes(self, obj: HubObject) -> dict[str, str]:
        return self.main.field_attributes(obj)


@dataclass(frozen=True)
class PlainStrategy:
    """k8s.io/sample-apiserver's strategies: PrepareForCreate/Update do nothing (no generation, no
    status reset), names are checked as path segments only (the generic registry's
    ValidatePathSegmentName), and only the given validators run. For kinds with or without spec."""

    namespaced: bool
    validate_fn: Validator = _no_errors
    validate_update_fn: UpdateValidator = _no_errors
    field_names: tuple[str, ...] = ()
    allow_create_on_update: bool = False
    allow_unconditional_update: bool = False
    validate_name: NameFn = name_is_path_segment
    reset_fields: tuple[str, ...] = ()
    # sample-apiserver's typed decoding refuses what its Go types cannot hold; here the published
    # schema is that check, so it runs on every write as for custom resources.
    validate_schema: bool = True
    graceful_deletion: GracefulDeletion | None = None

    def prepare_for_create(self, obj: HubObject) -> None:
        return None

    def prepare_for_update(self, obj: HubObject, old: HubObject) -> None:
        return None

    def validate(self, obj: HubObject) -> list[FieldError]:
        return self.validate_fn(obj)

    def validate_update(self, obj: HubObject, old: HubObject) -> list[FieldError]:
        return self.validate_update_fn(obj, old)

    def canonicalize(self, obj: HubObject) -> None:
        return None

    def field_attributes(self, obj: HubObject) -> dict[str, str]:
        return {}
