"""The Kubernetes library's object types (`kubernetes.Quantity`, `net.IP`, …) as protobuf messages.

cel-go carries them as opaque Go values; our engine's Python binding cannot return an opaque value
from a function ("Unimplemented type"), but it does return protobuf messages, types them by their
full name in the checker, and compares them with `==` field by field. So each kube type is a message
of the same name, built here at import time from a descriptor (no generated code, no protoc), whose
fields hold exactly what kube's `Equal` compares: a quantity's normalized value, a semver without its
build metadata, a URL's parts. Equal values therefore have equal messages, and `==` holds as in kube.

To the engine a message's fields can be read (`quantity('1').value`) and a message can be built
with `kubernetes.Quantity{value: '1'}`; both are refused at compile time (apis/cel/opaque.py and
engine.py), with the messages of kube's checker, for which these types are opaque. The one field
read is `authorizer.requestResource`, a variable of its own in kube (library_authz).
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_F = descriptor_pb2.FieldDescriptorProto

# full name → [(field, proto type)], or (field, proto type, message type, repeated)
_MESSAGES: dict[str, list[tuple[Any, ...]]] = {
    "kubernetes.Quantity": [("value", _F.TYPE_STRING)],
    "kubernetes.URL": [
        ("scheme", _F.TYPE_STRING),
        ("opaque", _F.TYPE_STRING),
        ("user", _F.TYPE_STRING),
        ("host", _F.TYPE_STRING),
        ("path", _F.TYPE_STRING),
        ("raw_query", _F.TYPE_STRING),
        ("fragment", _F.TYPE_STRING),
    ],
    "net.IP": [("addr", _F.TYPE_STRING)],
    "net.CIDR": [("addr", _F.TYPE_STRING), ("bits", _F.TYPE_INT64)],
    "kubernetes.Semver": [
        ("major", _F.TYPE_UINT64),
        ("minor", _F.TYPE_UINT64),
        ("patch", _F.TYPE_UINT64),
        ("pre", _F.TYPE_STRING),
    ],
    "kubernetes.NamedFormat": [("name", _F.TYPE_STRING)],
    # The authorizer library (library_authz): each check carries what kube's value carries, plus the
    # service account it checks for (empty: the requesting user); the variable carries its
    # `requestResource` as a field.
    "kubernetes.authorization.ResourceCheck": [
        ("group", _F.TYPE_STRING),
        ("resource", _F.TYPE_STRING),
        ("subresource", _F.TYPE_STRING),
        ("namespace", _F.TYPE_STRING),
        ("name", _F.TYPE_STRING),
        ("field_selector", _F.TYPE_STRING),
        ("label_selector", _F.TYPE_STRING),
        ("sa_namespace", _F.TYPE_STRING),
        ("sa_name", _F.TYPE_STRING),
    ],
    "kubernetes.authorization.Authorizer": [
        ("sa_namespace", _F.TYPE_STRING),
        ("sa_name", _F.TYPE_STRING),
        ("requestResource", _F.TYPE_MESSAGE, ".kubernetes.authorization.ResourceCheck", False),
    ],
    "kubernetes.authorization.PathCheck": [
        ("path", _F.TYPE_STRING),
        ("sa_namespace", _F.TYPE_STRING),
        ("sa_name", _F.TYPE_STRING),
    ],
    "kubernetes.authorization.GroupCheck": [
        ("group", _F.TYPE_STRING),
        ("sa_namespace", _F.TYPE_STRING),
        ("sa_name", _F.TYPE_STRING),
    ],
    "kubernetes.authorization.Decision": [
        ("allowed", _F.TYPE_BOOL),
        ("reason", _F.TYPE_STRING),
        ("error", _F.TYPE_STRING),
    ],
}

QUANTITY, URL, IP, CIDR, SEMVER, NAMED_FORMAT = list(_MESSAGES)[:6]


def _build_pool() -> descriptor_pool.DescriptorPool:
    pool = descriptor_pool.DescriptorPool()
    packages: dict[str, descriptor_pb2.FileDescriptorProto] = {}
    for full, fields in _MESSAGES.items():
        package, _, name = full.rpartition(".")
        fdp = packages.setdefault(
            package,
            descriptor_pb2.FileDescriptorProto(
                name=f"k8s_cel_{package}.proto", package=package, syntax="proto3"
            ),
        )
        msg = fdp.message_type.add(name=name)
        for number, (field, kind, *rest) in enumerate(fields, start=1):
            type_name, repeated = rest if rest else ("", False)
            label = _F.LABEL_REPEATED if repeated else _F.LABEL_OPTIONAL
            msg.field.add(name=field, number=number, type=kind, label=label, type_name=type_name or None)
    for fdp in packages.values():
        pool.Add(fdp)
    return pool


POOL = _build_pool()
_CLASSES = {name: message_factory.GetMessageClass(POOL.FindMessageTypeByName(name)) for name in _MESSAGES}


def is_object_type(name: str) -> bool:
    return name in _MESSAGES


def new(type_name: str, **fields: Any) -> Any:
    """A value of one of the library's types, ready to be returned to the engine."""
    return _CLASSES[type_name](**fields)


def type_of(value: Any) -> str | None:
    """The library type of a value the engine hands back, or None for any other value."""
    descriptor = getattr(value, "DESCRIPTOR", None)
    return getattr(descriptor, "full_name", None)
