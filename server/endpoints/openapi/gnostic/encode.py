"""JSON OpenAPI documents → gnostic `openapi.v2.Document` / `openapi.v3.Document` bytes.

gnostic's Go compiler walks the YAML node tree with generated code per message; here one walk is
driven by the message descriptors, with gnostic's conventions: JSON names are the fields' camelCase
names (`$ref` is `_ref`), `x-` keys go to `vendor_extension` as NamedAny, a JSON map becomes a message
of repeated Named{name, value} entries, free-form values (defaults, enums, examples, extensions) are
an `Any` holding their YAML text (JSON is YAML), and messages that are a oneof pick their branch as
gnostic's compiler does (`$ref` → the reference; a parameter by its `in`; a file schema by its type).
"""

from __future__ import annotations

import re
from typing import Any

import orjson
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from server.endpoints.openapi.gnostic import openapiv2_pb2, openapiv3_pb2

_NON_BODY_BRANCH = {
    "header": "header_parameter_sub_schema",
    "formData": "form_data_parameter_sub_schema",
    "query": "query_parameter_sub_schema",
    "path": "path_parameter_sub_schema",
}


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def _is_oneof(message: Message) -> bool:
    """A message that is nothing but one oneof (gnostic's "X or Y" messages)."""
    descriptor = message.DESCRIPTOR
    return bool(descriptor.oneofs) and len(descriptor.oneofs[0].fields) == len(descriptor.fields)


def _oneof_branch(message: Message, value: Any) -> str | None:
    """gnostic's choice among a oneof message's branches for a JSON value."""
    name = message.DESCRIPTOR.name
    fields = message.DESCRIPTOR.fields_by_name
    if isinstance(value, bool) and "boolean" in fields:
        return "boolean"
    if isinstance(value, dict) and "$ref" in value:
        for ref_branch in ("reference", "json_reference"):
            if ref_branch in fields:
                return ref_branch
    if name == "Parameter":
        return "body_parameter" if value.get("in") == "body" else "non_body_parameter"
    if name == "NonBodyParameter":
        return _NON_BODY_BRANCH.get(value.get("in", ""))
    if name == "SchemaItem":
        return "file_schema" if value.get("type") == "file" else "schema"
    if name == "DefaultType":
        if isinstance(value, str):
            return "string"
        return "number" if isinstance(value, int | float) else None
    # The first branch that is not a reference (Parameter, Response, SchemaOrReference's schema...).
    for f in message.DESCRIPTOR.oneofs[0].fields:
        if f.name not in ("reference", "json_reference", "boolean"):
            return f.name
    return None


def _set_any(message: Message, value: Any) -> None:
    message.yaml = orjson.dumps(value).decode() + "\n"


def _scalar(field: FieldDescriptor, value: Any) -> Any:
    if field.type in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        return float(value)
    if field.type in (FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_INT32):
        return int(value)
    return value


def _named_entries(message: Message) -> FieldDescriptor | None:
    """The repeated Named* field of a message that stands for a JSON map (additional_properties,
    Paths.path, Callback.path), if it is one."""
    for f in message.DESCRIPTOR.fields:
        if (
            f.is_repeated
            and f.message_type is not None
            and f.message_type.name.startswith("Named")
            and f.name != "vendor_extension"
        ):
            return f
    return None


def fill(message: Message, value: Any) -> None:
    """Fill `message` from a JSON value, as gnostic's compiler would from the same YAML."""
    descriptor = message.DESCRIPTOR
    fields = descriptor.fields_by_name
    if descriptor.name == "Any" and "yaml" in fields:
        _set_any(message, value)
        return
    if _is_oneof(message):
        branch = _oneof_branch(message, value)
        if branch is None:
            return
        _set_field(message, fields[branch], value)
        return
    if descriptor.name in ("TypeItem", "StringArray"):
        message.value.extend(value if isinstance(value, list) else [value])
        return
    if descriptor.name == "ItemsItem":
        _set_field(message, descriptor.fields[0], value if isinstance(value, list) else [value])
        return
    if not isinstance(value, dict):
        return
    named = _named_entries(message)
    if named is not None:
        # A JSON map; a key that is one of the message's own fields (v3 Responses' `default`) is that.
        for key, item in value.items():
            if key.startswith("x-") and "vendor_extension" in fields:
                _vendor_extension(message, key, item)
                continue
            own = fields.get(key)
            if own is not None and own is not named and own.name != "vendor_extension":
                _set_field(message, own, item)
                continue
            entry = getattr(message, named.name).add()
            entry.name = key
            _set_field(entry, entry.DESCRIPTOR.fields_by_name["value"], item)
        return
    for key, item in value.items():
        if key.startswith("x-"):
            if "vendor_extension" in fields:
                _vendor_extension(message, key, item)
            continue
        field = fields.get("_ref" if key == "$ref" else _snake(key))
        if field is not None:
            _set_field(message, field, item)


def _vendor_extension(message: Message, key: str, value: Any) -> None:
    entry = message.vendor_extension.add()
    entry.name = key
    _set_any(entry.value, value)


def _set_field(message: Message, field: FieldDescriptor, value: Any) -> None:
    if value is None:
        return
    repeated = field.is_repeated
    if field.message_type is None:
        if repeated:
            getattr(message, field.name).extend(_scalar(field, v) for v in value)
        elif field.type == FieldDescriptor.TYPE_STRING and not isinstance(value, str):
            return
        else:
            setattr(message, field.name, _scalar(field, value))
        return
    if repeated:
        target = getattr(message, field.name)
        for item in value if isinstance(value, list) else [value]:
            fill(target.add(), item)
        return
    child = getattr(message, field.name)
    if _is_oneof(child) and _oneof_branch(child, value) is None:
        return  # no branch holds it (an object as v3's DefaultType): gnostic has no place for it
    child.SetInParent()  # present even when empty (`properties: {}`), as gnostic's compiler leaves it
    fill(child, value)


def encode_v2(document: dict[str, Any]) -> bytes:
    """A Swagger 2.0 document as gnostic's openapi.v2.Document (what kubectl's validation parses)."""
    message = openapiv2_pb2.Document()
    fill(message, document)
    return message.SerializeToString(deterministic=True)


def encode_v3(document: dict[str, Any]) -> bytes:
    """An OpenAPI 3.0 document as gnostic's openapi.v3.Document."""
    message = openapiv3_pb2.Document()
    fill(message, document)
    return message.SerializeToString(deterministic=True)
