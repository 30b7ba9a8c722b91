"""Structural schemas of the meta.k8s.io/v1 pieces every object carries.

ObjectMeta is given a full schema (rather than "preserve unknown fields") so that pruning drops
unknown metadata fields and `fieldValidation=Strict` names them, as kube-apiserver does.
"""

from __future__ import annotations

import copy
from typing import Any

_STRING: dict[str, Any] = {"type": "string"}
_STRING_MAP: dict[str, Any] = {"type": "object", "additionalProperties": {"type": "string"}}
_TIME: dict[str, Any] = {"type": "string", "format": "date-time"}

OWNER_REFERENCE: dict[str, Any] = {
    "type": "object",
    "required": ["apiVersion", "kind", "name", "uid"],
    "properties": {
        "apiVersion": _STRING,
        "kind": _STRING,
        "name": _STRING,
        "uid": _STRING,
        "controller": {"type": "boolean"},
        "blockOwnerDeletion": {"type": "boolean"},
    },
    "x-kubernetes-map-type": "atomic",
}

MANAGED_FIELDS_ENTRY: dict[str, Any] = {
    "type": "object",
    "properties": {
        "apiVersion": _STRING,
        "fieldsType": _STRING,
        "fieldsV1": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        "manager": _STRING,
        "operation": _STRING,
        "subresource": _STRING,
        "time": _TIME,
    },
}

OBJECT_META: dict[str, Any] = {
    "type": "object",
    "description": "Standard object's metadata.",
    "properties": {
        "name": _STRING,
        "generateName": _STRING,
        "namespace": _STRING,
        "selfLink": _STRING,
        "uid": _STRING,
        "resourceVersion": _STRING,
        "generation": {"type": "integer", "format": "int64"},
        "creationTimestamp": _TIME,
        "deletionTimestamp": _TIME,
        "deletionGracePeriodSeconds": {"type": "integer", "format": "int64"},
        "labels": _STRING_MAP,
        "annotations": _STRING_MAP,
        "ownerReferences": {
            "type": "array",
            "items": OWNER_REFERENCE,
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["uid"],
            "x-kubernetes-patch-merge-key": "uid",
            "x-kubernetes-patch-strategy": "merge",
        },
        "finalizers": {
            "type": "array",
            "items": _STRING,
            "x-kubernetes-list-type": "set",
            "x-kubernetes-patch-strategy": "merge",
        },
        "managedFields": {"type": "array", "items": MANAGED_FIELDS_ENTRY},
    },
}


def object_schema(
    description: str, properties: dict[str, Any], required: list[str] | None = None
) -> dict[str, Any]:
    """The structural schema of a whole object: apiVersion, kind, metadata plus `properties`."""
    schema: dict[str, Any] = {
        "type": "object",
        "description": description,
        "properties": {
            "apiVersion": {
                "type": "string",
                "description": "APIVersion defines the versioned schema of this representation of an object.",
            },
            "kind": {
                "type": "string",
                "description": "Kind is a string value representing the REST resource.",
            },
            "metadata": copy.deepcopy(OBJECT_META),
            **copy.deepcopy(properties),
        },
    }
    if required:
        schema["required"] = list(required)
    return schema
