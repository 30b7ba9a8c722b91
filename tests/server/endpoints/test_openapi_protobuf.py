"""The protobuf OpenAPI documents decode, with gnostic's own message definitions, into the JSON ones."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from google.protobuf.message import Message

from apis.restaurant.install import GROUP
from apis.wardle.install import GROUP as WARDLE
from server.endpoints.openapi import openapi_v2, openapi_v3_group_version
from server.endpoints.openapi.gnostic import openapiv2_pb2, openapiv3_pb2
from server.endpoints.openapi.gnostic.encode import encode_v2, encode_v3
from server.endpoints.scope import PATCH_TYPES


def _named(message: Message) -> Any:
    for f in message.DESCRIPTOR.fields:
        named = f.is_repeated and f.message_type is not None and f.message_type.name.startswith("Named")
        if named and f.name != "vendor_extension":
            return f
    return None


def to_json(message: Message) -> Any:
    """gnostic's message → the JSON it stands for (the inverse of the encoder's conventions, written
    independently from the descriptors)."""
    d = message.DESCRIPTOR
    if d.name == "Any":
        return orjson.loads(message.yaml)
    if d.oneofs and len(d.oneofs[0].fields) == len(d.fields):
        branch = message.WhichOneof(d.oneofs[0].name)
        value = getattr(message, branch)
        return to_json(value) if isinstance(value, Message) else value
    if d.name in ("TypeItem", "StringArray"):
        values = list(message.value)
        return values[0] if d.name == "TypeItem" and len(values) == 1 else values
    if d.name == "ItemsItem":
        items = [to_json(m) for m in getattr(message, d.fields[0].name)]
        return items[0] if len(items) == 1 else items
    out: dict[str, Any] = {}
    named = _named(message)
    for field, value in message.ListFields():
        if field.name == "vendor_extension":
            out.update({e.name: to_json(e.value) for e in value})
        elif named is not None and field is named:
            out.update({e.name: to_json(e.value) if isinstance(e.value, Message) else e.value for e in value})
        else:
            key = "$ref" if field.name == "_ref" else field.json_name
            if field.is_repeated:
                out[key] = [to_json(v) if isinstance(v, Message) else v for v in value]
            else:
                out[key] = to_json(value) if isinstance(value, Message) else value
    return out


def _drop_object_defaults(value: Any) -> Any:
    """gnostic's v3 Schema.default is a DefaultType (number, boolean or string): object and array
    defaults have no place in the message."""
    if isinstance(value, list):
        return [_drop_object_defaults(v) for v in value]
    if not isinstance(value, dict):
        return value
    return {
        k: _drop_object_defaults(v)
        for k, v in value.items()
        if not (k == "default" and isinstance(v, dict | list) and "description" not in v)
    }


def _drop_zero_numbers(value: Any) -> Any:
    """A proto3 number has no presence: `minimum: 0` is 0.0, which is not encoded (as in gnostic's Go)."""
    if isinstance(value, list):
        return [_drop_zero_numbers(v) for v in value]
    if not isinstance(value, dict):
        return value
    return {
        k: _drop_zero_numbers(v)
        for k, v in value.items()
        if not (k in ("minimum", "maximum", "multipleOf") and v == 0)
    }


@pytest.mark.parametrize("groups", [[GROUP], [GROUP, WARDLE]], ids=["restaurant", "both"])
def test_v2_protobuf_decodes_to_the_json_document(groups) -> None:
    doc = openapi_v2(groups, patch_types=PATCH_TYPES, version_info={"gitVersion": "v1.2.3"})
    message = openapiv2_pb2.Document()
    message.ParseFromString(encode_v2(doc))
    assert to_json(message) == _drop_zero_numbers(doc)


@pytest.mark.parametrize("version", GROUP.versions)
def test_v3_protobuf_decodes_to_the_json_document(version: str) -> None:
    doc = openapi_v3_group_version(GROUP, version, patch_types=PATCH_TYPES)
    message = openapiv3_pb2.Document()
    message.ParseFromString(encode_v3(doc))
    assert to_json(message) == _drop_zero_numbers(_drop_object_defaults(doc))
