"""How an API group describes itself to the generic machinery.

An API group (apis/<group>/install.py) builds one `GroupInfo`. Everything generic (codec, discovery,
OpenAPI, endpoints, registry) reads only these values, which is what lets a new group be added
without touching server/, registry/generic/ or storage/.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from apis.autoscaling import v1 as autoscaling
from apis.runtime.lifecycle import Lifecycle
from apis.schema.cel_rules import RuleNode

if TYPE_CHECKING:  # scale.py reads hub objects, which are declared here
    from apis.runtime.scale import ScaleSubresource


@runtime_checkable
class HubObject(Protocol):
    """An internal (hub) object: a dataclass whose metadata is kept as a kube ObjectMeta dict.

    That is all the generic code may rely on. `spec` and `status` are optional: a kind may have
    neither (wardle's Fischer keeps `disallowedFlunders` at the top level), so generic code reads them
    with `spec_of`/`status_of` and writes them with `set_spec`/`set_status`, never as attributes;
    mypy holds it to that wherever an object is typed HubObject.
    """

    metadata: dict[str, Any]


def spec_of(obj: HubObject) -> Any:
    """The object's spec, or None for a kind without one."""
    return getattr(obj, "spec", None)


def status_of(obj: HubObject) -> Any:
    """The object's status, or None for a kind without one."""
    return getattr(obj, "status", None)


def set_spec(obj: HubObject, spec: Any) -> None:
    """Replace the spec of an object whose kind has one (the caller checked with `spec_of`): spelt
    out, because the protocol has no `spec` for the type checker to allow an assignment to."""
    setattr(obj, "spec", spec)  # noqa: B010


def set_status(obj: HubObject, status: Any) -> None:
    """Replace the status of an object whose kind has one (the caller checked with `status_of`)."""
    setattr(obj, "status", status)  # noqa: B010


@dataclass(frozen=True, slots=True)
class VersionedKind:
    """One served version of a kind: its structural schema and its conversions to and from the hub.

    `schema` is the OpenAPI v3 structural schema of the whole object (apiVersion, kind, metadata,
    spec, status) including declarative `default`s; it drives pruning, defaulting, validation and
    the published OpenAPI, so what the server enforces and what it documents cannot drift apart.

    `to_hub` receives a pruned and defaulted versioned dict and returns a new hub object;
    `from_hub` returns a new versioned dict *without* apiVersion/kind (the codec sets them).
    Neither may mutate its input.

    `lifecycle` (kube's prerelease-lifecycle tags) makes every request to this version carry kube's
    deprecation warning once the server's release reaches the deprecation.
    """

    version: str
    schema: dict[str, Any]
    to_hub: Callable[[dict[str, Any]], HubObject]
    # Any, not HubObject: each kind's from_hub takes its own hub type (parameters are contravariant).
    from_hub: Callable[[Any], dict[str, Any]]
    lifecycle: Lifecycle | None = None
    # The schema's x-kubernetes-validations, compiled when the kind is declared (None: no rules).
    rules: RuleNode | None = None
    # from_hub sharing the hub's values, for readers that only read (Codec.view); None: from_hub.
    from_hub_view: Callable[[Any], dict[str, Any]] | None = None


# kube's verbs of a resource, sorted as its installer sorts them: every verb of a stored resource,
# and those of a resource served by a class of the group's own that only reads (metrics-server's).
ALL_VERBS: tuple[str, ...] = (
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
)
READ_VERBS: tuple[str, ...] = ("get", "list", "watch")


@dataclass(frozen=True, slots=True)
class Column:
    """A Table column (meta.k8s.io/v1 TableColumnDefinition) read from the *hub* object."""

    name: str
    type: str  # string | integer | number | boolean | date
    description: str
    cell: Callable[[Any], Any]
    format: str = ""
    priority: int = 0


@dataclass(frozen=True, slots=True)
class KindInfo:
    kind: str
    list_kind: str
    resource: str  # plural, lower case
    singular: str
    namespaced: bool
    versions: dict[str, VersionedKind]
    storage_version: str
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    # Table columns after Name (kubectl get), as a CRD's printer columns: Name first, Age last. None
    # means the kind has no convertor of its own and gets k8s.io/apiserver's DefaultTableConvertor
    # (Name, "Created At"), as sample-apiserver's kinds do.
    columns: tuple[Column, ...] | None = None
    # Subresources served for this kind (e.g. "status", "scale").
    subresources: tuple[str, ...] = ()
    # Where the scale subresource finds replicas and selector (a CRD's subresources.scale).
    scale: ScaleSubresource | None = None
    # The verbs served (discovery, OpenAPI paths, dispatch); any other is 405, as kube answers a verb
    # its installer registered no route for.
    verbs: tuple[str, ...] = ALL_VERBS
    # False for a kind the group serves from a class of its own (GroupInstallation.resources):
    # nothing of it is in storage, so discovery gives it no storageVersionHash, as kube gives none
    # to a storage that is not a StorageVersionProvider.
    stored: bool = True
    # Names of nested object types by property path (declare_kind's `names`, e.g. {"spec.toppings":
    # "PizzaTopping"}): the hub's classes and the kind's protobuf messages (proto_schema.py).
    type_names: dict[str, str] = field(default_factory=dict)

    def subresource_kind(self, group: str, version: str, subresource: str) -> tuple[str, str, str]:
        """(group, version, kind) a subresource speaks: the kind's own, but autoscaling/v1 Scale for
        /scale, as discovery and OpenAPI report it."""
        if subresource == "scale":
            return autoscaling.GROUP, autoscaling.VERSION, autoscaling.KIND
        return group, version, self.kind


@dataclass(frozen=True, slots=True)
class SchemeTypes:
    """How a group's kinds are served when they are Go types of a scheme, as kube's built-in kinds
    and an aggregated server's own (sample-apiserver's wardle) are, rather than custom resources.

    k8s.io/apiserver's typed handlers word some answers differently from apiextensions-apiserver's:
    a body that does not decode is "<Kind> in version "<v>" cannot be handled as a <Kind>: ..." (400),
    a body of another kind of the group fails conversion into the URL's kind (400, not a 422 on
    `kind`), and a field selector on anything but metadata is refused by the scheme's default
    conversion (`"<label>" is not a known field selector: only "metadata.name", "metadata.namespace"`).
    `internal_package` is the Go package of the internal (hub) types, which conversion errors name:
    "converting (v1alpha1.Fischer) to (wardle.Flunder)".
    """

    internal_package: str


@dataclass(frozen=True, slots=True)
class GroupInfo:
    group: str
    # Served versions in priority order: the first is the preferred version.
    versions: tuple[str, ...]
    kinds: tuple[KindInfo, ...] = field(default_factory=tuple)
    # None: the kinds are served as kube serves custom resources (apiextensions-apiserver's words).
    scheme_types: SchemeTypes | None = None
    # The Python package holding the kinds' protobuf messages, `<package>.<version>.generated_pb2` for
    # every served version, written from the schemas by `python -m apis.proto.generate`
    # (apis/runtime/proto_kinds.py); None: the kinds are served in JSON only.
    protobuf: str | None = None

    def kind_for_resource(self, resource: str) -> KindInfo | None:
        return next((k for k in self.kinds if k.resource == resource), None)

    def kind_named(self, kind: str) -> KindInfo | None:
        return next((k for k in self.kinds if k.kind == kind), None)
