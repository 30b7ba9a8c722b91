"""The schema as /openapi/v3 and /openapi/v2 publish it for a custom resource."""

from __future__ import annotations

import copy
from typing import Any

from apis.meta.schemas import object_schema
from apis.schema.openapi import (
    METADATA_DESCRIPTION,
    V2_OBJECT_META_REF,
    V3_OBJECT_META_REF,
    published_v2,
    published_v3,
)

STR = {"type": "string"}
GVK = {"group": "restaurant.example", "version": "v1", "kind": "Pizza"}

SCHEMA = object_schema(
    "A pizza.",
    {
        "spec": {
            "type": "object",
            "default": {},
            "required": ["toppings", "note"],
            "properties": {
                "toppings": {
                    "type": "array",
                    "default": [],
                    "items": {
                        "type": "object",
                        "properties": {
                            "name": STR,
                            "quantity": {"type": "integer", "default": 1, "minimum": 1},
                        },
                    },
                },
                "note": {"type": "string", "nullable": True, "default": "none"},
                "port": {"x-kubernetes-int-or-string": True},
                "extra": {
                    "type": "object",
                    "x-kubernetes-preserve-unknown-fields": True,
                    "properties": {"a": STR},
                },
                "raw": {"type": "array", "x-kubernetes-preserve-unknown-fields": True, "items": STR},
                "nested": {
                    "type": "object",
                    "nullable": True,
                    "properties": {"x": STR},
                    "required": ["x"],
                },
                "default": {"type": "string", "description": "a property that happens to be called default"},
                "template": {
                    "type": "object",
                    "x-kubernetes-embedded-resource": True,
                    "required": ["spec"],
                    "properties": {"spec": {"type": "object", "properties": {"a": STR}}},
                },
            },
        },
    },
)


def test_v3_replaces_type_meta_and_wraps_the_metadata_ref() -> None:
    out = published_v3(SCHEMA, V3_OBJECT_META_REF, GVK)
    props = out["properties"]
    assert props["metadata"] == {"description": METADATA_DESCRIPTION, "allOf": [{"$ref": V3_OBJECT_META_REF}]}
    assert props["apiVersion"]["type"] == "string"
    assert props["apiVersion"]["description"].startswith("APIVersion defines the versioned schema")
    assert props["kind"]["description"].startswith("Kind is a string value representing the REST resource")
    assert out["x-kubernetes-group-version-kind"] == [GVK]
    assert out["description"] == "A pizza."


def test_v3_keeps_defaults_nullable_and_value_validation() -> None:
    spec = published_v3(SCHEMA)["properties"]["spec"]
    assert spec["default"] == {}
    assert spec["properties"]["toppings"]["items"]["properties"]["quantity"] == {
        "type": "integer",
        "default": 1,
        "minimum": 1,
    }
    assert spec["properties"]["note"] == {"type": "string", "nullable": True, "default": "none"}
    assert spec["required"] == ["toppings", "note"]


def test_v3_unfolds_int_or_string() -> None:
    port = published_v3(SCHEMA)["properties"]["spec"]["properties"]["port"]
    assert port == {
        "x-kubernetes-int-or-string": True,
        "anyOf": [{"type": "integer"}, {"type": "string"}],
    }
    custom = {
        "type": "object",
        "properties": {"p": {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}]}},
    }
    p = published_v3(custom)["properties"]["p"]
    assert p["allOf"] == [{"anyOf": [{"type": "integer"}, {"type": "string"}]}]
    assert p["anyOf"] == [{"type": "integer"}]


def test_embedded_resources_get_type_meta_and_metadata() -> None:
    v3 = published_v3(SCHEMA)["properties"]["spec"]["properties"]["template"]
    assert set(v3["properties"]) == {"apiVersion", "kind", "metadata", "spec"}
    assert v3["properties"]["kind"]["description"].startswith("kind is a string value representing the type")
    assert v3["properties"]["metadata"]["allOf"] == [{"$ref": V3_OBJECT_META_REF}]
    assert v3["required"] == ["spec", "kind", "apiVersion"]
    v2 = published_v2(SCHEMA)["properties"]["spec"]["properties"]["template"]
    assert v2["properties"]["metadata"] == {"description": METADATA_DESCRIPTION, "$ref": V2_OBJECT_META_REF}


def test_v2_metadata_is_a_plain_ref() -> None:
    out = published_v2(SCHEMA, V2_OBJECT_META_REF, GVK)
    assert out["properties"]["metadata"] == {"description": METADATA_DESCRIPTION, "$ref": V2_OBJECT_META_REF}
    assert out["x-kubernetes-group-version-kind"] == [GVK]


def test_v2_prunes_every_default_but_not_a_property_called_default() -> None:
    spec = published_v2(SCHEMA)["properties"]["spec"]
    assert "default" not in spec
    assert "default" not in spec["properties"]["toppings"]
    assert spec["properties"]["toppings"]["items"]["properties"]["quantity"] == {
        "type": "integer",
        "minimum": 1,
    }
    assert spec["properties"]["default"]["type"] == "string"


def test_v2_strips_what_kubectl_cannot_read() -> None:
    props = published_v2(SCHEMA)["properties"]["spec"]["properties"]
    # nullable: no type, properties or items; and no longer required by the parent
    assert props["note"] == {}
    assert props["nested"] == {"required": ["x"]}
    assert published_v2(SCHEMA)["properties"]["spec"]["required"] == ["toppings"]
    # preserve-unknown-fields: no properties/items, and object/array types left empty are dropped
    assert props["extra"] == {"x-kubernetes-preserve-unknown-fields": True}
    assert props["raw"] == {"x-kubernetes-preserve-unknown-fields": True}
    # int-or-string keeps its marker but not the anyOf
    assert props["port"] == {"x-kubernetes-int-or-string": True}


def test_v2_nullable_map_values_drop_required() -> None:
    schema = {
        "type": "object",
        "properties": {
            "m": {
                "type": "object",
                "required": ["a"],
                "additionalProperties": {"type": "string", "nullable": True},
            }
        },
    }
    assert published_v2(schema)["properties"]["m"] == {"type": "object", "additionalProperties": {}}


def test_v2_root_that_preserves_unknown_fields_is_a_bare_object() -> None:
    schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True, "properties": {"a": STR}}
    assert published_v2(schema, gvk=GVK) == {"type": "object", "x-kubernetes-group-version-kind": [GVK]}
    assert published_v3(schema)["properties"]["a"] == STR


def test_publishing_never_mutates_the_schema() -> None:
    before = copy.deepcopy(SCHEMA)
    v3: dict[str, Any] = published_v3(SCHEMA, gvk=GVK)
    v2: dict[str, Any] = published_v2(SCHEMA, gvk=GVK)
    assert before == SCHEMA
    v3["properties"]["spec"]["properties"]["toppings"]["items"]["properties"].clear()
    v2["properties"]["spec"]["properties"].clear()
    assert before == SCHEMA
