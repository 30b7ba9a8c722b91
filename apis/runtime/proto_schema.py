"""A version's `.proto`, written from its kinds' structural schemas, with field numbers that never change.

kube's own kinds get their messages from go-to-protobuf over the Go types; a group declared here has no
Go types, only structural schemas (apis/runtime/declare.py), so the messages are derived from those the
way go-to-protobuf would derive them from the equivalent Go types:

- a message per kind (`metadata` is meta/v1 ObjectMeta, number 1; TypeMeta is not a field: the
  `runtime.Unknown` envelope carries it) and a `<Kind>List` (`metadata` ListMeta = 1, `items` = 2);
- a message per nested object with properties, named as hub_shape names the hub's classes (the
  parent's name and the property: `PizzaSpec`; array items `...Item`; the kind's declared `names`
  override by property path: `spec.toppings` → `PizzaTopping`);
- field names are the JSON names (go-to-protobuf's convention, so JSON ↔ message needs no renaming);
  string, int64 (int32 for `format: int32`), double, bool, meta/v1 Time for `format: date-time`,
  `repeated` for arrays, `map<string, T>` for additionalProperties;
- what a message cannot hold without loss is `runtime.RawExtension` whose raw bytes are the JSON value:
  `x-kubernetes-preserve-unknown-fields` (unknown fields would be dropped by a message),
  `x-kubernetes-int-or-string`, arrays of arrays and maps of arrays or maps (no nested `repeated` in
  protobuf). RawExtension rather than a wrapper message or util/intstr's IntOrString: it is already
  generated (apis/proto), and JSON ↔ message conversion (apis/runtime/proto_json.py) knows its raw
  bytes are JSON, so these values round-trip exactly with nothing the converter must learn.

Field numbers are the wire format: a number, once given to a field, means that field for every client
and every stored byte. So the checked-in `.proto` is the record: rendering reads the previous text,
keeps each field's number, gives a new field the next number above any ever used in that message, and
writes a removed field's number and name as `reserved` (a re-added name gets a new number: its old one
stays reserved). A field whose type changes is a new field under the same name: a new number, the old
one reserved. Messages are written in name order and fields in number order, so the text is stable.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from apis.runtime.kinds import GroupInfo

COMMAND = "python -m apis.proto.generate"
META = "k8s.io.apimachinery.pkg.apis.meta.v1"
META_IMPORT = "k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto"
RAW = "k8s.io.apimachinery.pkg.runtime.RawExtension"
RAW_IMPORT = "k8s.io/apimachinery/pkg/runtime/generated.proto"
TIME = f"{META}.Time"

_TYPE_META = ("apiVersion", "kind")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_WIDTH = 100


class ProtoSchemaError(ValueError):
    """A schema that has no protobuf message: a property name that is no protobuf identifier, or two
    objects that would get the same message name."""


@dataclass(frozen=True, slots=True)
class ProtoKind:
    """What the `.proto` of one version needs of a kind: its names, that version's schema and the
    nested message names the kind declares by property path (declare_kind's `names`)."""

    kind: str
    list_kind: str
    schema: dict[str, Any]
    names: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class _Field:
    name: str
    label: str  # "optional", "repeated" or "" (a map)
    type: str
    description: str = ""
    number: int | None = None  # fixed by kube's convention (metadata, items), whatever the record says

    @property
    def signature(self) -> str:
        return f"{self.label} {self.type}".strip()


@dataclass(slots=True)
class _Message:
    name: str
    description: str
    fields: list[_Field]


@dataclass(slots=True)
class Recorded:
    """One message as the checked-in `.proto` has it: every field's number and type, and what is reserved."""

    numbers: dict[str, int] = field(default_factory=dict)
    signatures: dict[str, str] = field(default_factory=dict)
    reserved_numbers: set[int] = field(default_factory=set)
    reserved_names: set[str] = field(default_factory=set)


def proto_package(group: str, version: str) -> str:
    """The protobuf package of a group's version: the group's name with every part made an
    identifier, then the version (`restaurant.programming_kubernetes.info.v1beta1`)."""
    return ".".join(_identifier(part) for part in [*group.split("."), version])


def _identifier(part: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_]", "_", part)
    return f"_{name}" if name[:1].isdigit() else name


def kinds_of_version(group: GroupInfo, version: str) -> list[ProtoKind]:
    """Every kind of the group served in `version`, stored or not (a read-only kind is still read)."""
    return [
        ProtoKind(k.kind, k.list_kind, k.versions[version].schema, k.type_names)
        for k in group.kinds
        if version in k.versions
    ]


def render_version(group: GroupInfo, version: str, existing: str | None = None) -> str:
    """The `.proto` text of `version` of `group`, keeping the numbers recorded in `existing`."""
    return render(group.group, version, kinds_of_version(group, version), existing)


def render(group: str, version: str, kinds: Sequence[ProtoKind], existing: str | None = None) -> str:
    """The `.proto` text for `kinds` in `group`/`version`, keeping the numbers recorded in `existing`
    (the previous text of the same file; None for a new file)."""
    messages: dict[str, _Message] = {}
    for kind in kinds:
        _kind_messages(kind, messages)
    record = parse(existing) if existing else {}
    body = [_render_message(messages[name], record.get(name)) for name in sorted(messages)]
    types = {f.type for m in messages.values() for f in m.fields}
    imports = [META_IMPORT] + ([RAW_IMPORT] if any(RAW in t for t in types) else [])
    header = [
        f"// Generated by `{COMMAND}` from the structural schemas of",
        f"// {group}/{version}.",
        "// Do not edit: change the schema and run the command. Field numbers are kept from this file as it",
        "// was: a new field takes the next free number, a removed field's number and name are reserved.",
        "",
        'syntax = "proto2";',
        "",
        f"package {proto_package(group, version)};",
        "",
        *(f'import "{path}";' for path in sorted(imports)),
        "",
    ]
    return "\n".join(header) + "\n" + "\n\n".join(body) + "\n"


def _kind_messages(kind: ProtoKind, messages: dict[str, _Message]) -> None:
    context = _Context(kind.names, messages)
    fields = [_Field("metadata", "optional", f"{META}.ObjectMeta", _description(kind.schema, "metadata"), 1)]
    fields += context.fields(kind.kind, kind.schema, "", skip=("metadata", *_TYPE_META))
    context.add(_Message(kind.kind, kind.schema.get("description", ""), fields))
    list_fields = [
        _Field("metadata", "optional", f"{META}.ListMeta", "Standard list metadata.", 1),
        _Field("items", "repeated", kind.kind, f"items is the list of {kind.kind} objects.", 2),
    ]
    context.add(_Message(kind.list_kind, f"{kind.list_kind} is a list of {kind.kind} objects.", list_fields))


def _description(schema: dict[str, Any], prop: str) -> str:
    return str(schema.get("properties", {}).get(prop, {}).get("description", ""))


@dataclass(slots=True)
class _Context:
    names: dict[str, str]
    messages: dict[str, _Message]

    def add(self, message: _Message) -> None:
        if message.name in self.messages:
            raise ProtoSchemaError(f"two objects would both be the protobuf message {message.name}")
        self.messages[message.name] = message

    def fields(self, owner: str, schema: dict[str, Any], path: str, skip: Iterable[str] = ()) -> list[_Field]:
        out = []
        for prop, sub in schema.get("properties", {}).items():
            if prop in skip:
                continue
            if not _IDENTIFIER.match(prop):
                raise ProtoSchemaError(f"{owner}: property {prop!r} cannot be a protobuf field name")
            at = f"{path}.{prop}".lstrip(".")
            nested = owner + prop[0].upper() + prop[1:]
            label, type_ = self.type_of(sub, nested, at)
            out.append(_Field(prop, label, type_, sub.get("description", "")))
        return out

    def type_of(self, schema: dict[str, Any], nested: str, at: str) -> tuple[str, str]:
        """(label, type) of a property whose object, if it is one, is named `nested` by default."""
        if _raw(schema):
            return "optional", RAW
        kind = schema.get("type")
        if kind == "array":
            items = schema.get("items") or {}
            if _raw(items) or items.get("type") == "array" or _is_map(items):
                return "optional", RAW
            _, item_type = self.type_of(items, nested + "Item", at)
            return "repeated", item_type
        if kind == "object" and _is_map(schema):
            value = schema["additionalProperties"]
            if _raw(value) or value.get("type") == "array" or _is_map(value):
                return "optional", RAW
            _, value_type = self.type_of(value, nested + "Value", at)
            return "", f"map<string, {value_type}>"
        if kind == "object":
            name = self.names.get(at, nested)
            self.add(_Message(name, schema.get("description", ""), self.fields(name, schema, at)))
            return "optional", name
        return "optional", _scalar(schema)


def _raw(schema: Any) -> bool:
    """Whether a value is kept as JSON in a RawExtension: free-form, int-or-string, or untyped."""
    if not isinstance(schema, dict):
        return True  # additionalProperties: true
    return bool(
        schema.get("x-kubernetes-preserve-unknown-fields")
        or schema.get("x-kubernetes-int-or-string")
        or "type" not in schema
    )


def _is_map(schema: dict[str, Any]) -> bool:
    extra = schema.get("additionalProperties")
    return schema.get("type") == "object" and extra not in (None, False) and not schema.get("properties")


def _scalar(schema: dict[str, Any]) -> str:
    kind, fmt = schema.get("type"), schema.get("format")
    if kind == "string":
        return TIME if fmt == "date-time" else "string"
    if kind == "integer":
        return "int32" if fmt == "int32" else "int64"
    if kind == "number":
        return "double"
    if kind == "boolean":
        return "bool"
    raise ProtoSchemaError(f"no protobuf type for a schema of type {kind!r}")


def _render_message(message: _Message, recorded: Recorded | None) -> str:
    numbered, reserved_numbers, reserved_names = number_fields(message.fields, recorded)
    reserved = []
    if reserved_numbers:
        reserved.append(f"  reserved {', '.join(str(n) for n in sorted(reserved_numbers))};")
    if reserved_names:
        quoted = ", ".join('"' + name + '"' for name in sorted(reserved_names))
        reserved.append(f"  reserved {quoted};")
    blocks = ["\n".join(reserved)] if reserved else []
    for f, number in sorted(numbered, key=lambda pair: pair[1]):
        declaration = f"{f.label} {f.type}".strip()
        blocks.append("\n".join([*_comment(f.description, "  "), f"  {declaration} {f.name} = {number};"]))
    opening = "\n".join([*_comment(message.description, ""), f"message {message.name} {{"])
    return opening + "\n" + "\n\n".join(blocks) + ("\n" if blocks else "") + "}"


def _comment(text: str, indent: str) -> list[str]:
    if not text:
        return []
    wrapped = textwrap.wrap(text, _WIDTH - len(indent) - 3, break_long_words=False, break_on_hyphens=False)
    return [f"{indent}// {line}" for line in wrapped]


def number_fields(
    fields: Sequence[_Field], recorded: Recorded | None
) -> tuple[list[tuple[_Field, int]], set[int], set[str]]:
    """Each field with its number, and the reserved numbers and names, following the record."""
    recorded = recorded or Recorded()
    ever_used = set(recorded.numbers.values()) | recorded.reserved_numbers
    ever_used |= {f.number for f in fields if f.number is not None}
    next_number = max(ever_used, default=0) + 1
    reserved_numbers = set(recorded.reserved_numbers)
    numbered = []
    for f in fields:
        old = recorded.numbers.get(f.name)
        if f.number is not None:
            number = f.number
        elif old is not None and recorded.signatures[f.name] == f.signature:
            number = old
        else:
            number, next_number = next_number, next_number + 1
        if old is not None and old != number:
            reserved_numbers.add(old)  # the same name with another type: a new field
        numbered.append((f, number))
    names = {f.name for f in fields}
    removed = {name: n for name, n in recorded.numbers.items() if name not in names}
    reserved_numbers |= set(removed.values())
    reserved_names = (recorded.reserved_names | set(removed)) - names
    return numbered, reserved_numbers, reserved_names


_MESSAGE = re.compile(r"message\s+(\w+)\s*\{")
_FIELD = re.compile(r"(?:(optional|repeated|required)\s+)?(map<[^>]*>|[\w.]+)\s+(\w+)\s*=\s*(\d+)\s*;")
_RESERVED = re.compile(r"reserved\s+(.*);")


def parse(text: str) -> dict[str, Recorded]:
    """The numbers and reservations of every message of a `.proto` this module wrote."""
    messages: dict[str, Recorded] = {}
    current: Recorded | None = None
    for raw in text.splitlines():
        line = raw.split("//", 1)[0].strip()
        if not line:
            continue
        if (opened := _MESSAGE.match(line)) is not None:
            current = messages.setdefault(opened.group(1), Recorded())
        elif line == "}":
            current = None
        elif current is not None and (reserved := _RESERVED.match(line)) is not None:
            for item in (part.strip() for part in reserved.group(1).split(",")):
                if item.startswith('"'):
                    current.reserved_names.add(item.strip('"'))
                else:
                    current.reserved_numbers.add(int(item))
        elif current is not None and (declared := _FIELD.match(line)) is not None:
            label, type_, name, number = declared.groups()
            current.numbers[name] = int(number)
            current.signatures[name] = f"{label or ''} {type_}".strip()
    return messages
