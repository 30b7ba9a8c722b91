"""The meta.k8s.io definitions the published OpenAPI refers to, named and described as kube names them.

They are written once in OpenAPI v2 form ("#/definitions/..." refs); v3.py rewrites the refs.
Clients resolve kinds by these names (kubectl explain, client generators, kube-aggregator merging
identical definitions across servers), so names and shapes follow the kube-openapi output.
"""

from __future__ import annotations

import copy
from typing import Any

META = "io.k8s.apimachinery.pkg.apis.meta.v1."
OBJECT_META = META + "ObjectMeta"
LIST_META = META + "ListMeta"
STATUS = META + "Status"
DELETE_OPTIONS = META + "DeleteOptions"
WATCH_EVENT = META + "WatchEvent"
PATCH = META + "Patch"
RAW_EXTENSION = "io.k8s.apimachinery.pkg.runtime.RawExtension"

V2_PREFIX = "#/definitions/"

_CONVENTIONS = "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md"
API_VERSION_DESCRIPTION = (
    "APIVersion defines the versioned schema of this representation of an object. Servers should convert "
    "recognized schemas to the latest internal value, and may reject unrecognized values. More info: "
    f"{_CONVENTIONS}#resources"
)
KIND_DESCRIPTION = (
    "Kind is a string value representing the REST resource this object represents. Servers may infer this "
    "from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: "
    f"{_CONVENTIONS}#types-kinds"
)
OBJECT_META_NAME_DESCRIPTION = (
    "Name must be unique within a namespace. Is required when creating resources, although some resources "
    "may allow a client to request the generation of an appropriate name automatically. Name is primarily "
    "intended for creation idempotence and configuration definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
)
CREATION_TIMESTAMP_DESCRIPTION = (
    "CreationTimestamp is a timestamp representing the server time when this object was created. It is "
    "not guaranteed to be set in happens-before order across separate operations. Clients may not set "
    "this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. "
    f"Null for lists. More info: {_CONVENTIONS}#metadata"
)


def ref(name: str) -> dict[str, Any]:
    return {"$ref": V2_PREFIX + name}


def _prop(type_: str, description: str, fmt: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {"description": description, "type": type_}
    if fmt:
        out["format"] = fmt
    return out


def _ref_prop(name: str, description: str) -> dict[str, Any]:
    return {"$ref": V2_PREFIX + name, "description": description}


_STRING_LIST = {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "atomic"}
_STRING_MAP = {"type": "object", "additionalProperties": {"type": "string"}}

_OBJECT_META: dict[str, Any] = {
    "description": "ObjectMeta is metadata that all persisted resources must have, which includes all "
    "objects users must create.",
    "type": "object",
    "properties": {
        "annotations": {
            **_STRING_MAP,
            "description": "Annotations is an unstructured key value map stored with a resource that may "
            "be set by external tools to store and retrieve arbitrary metadata. They are not "
            "queryable and should be preserved when modifying objects.",
        },
        "creationTimestamp": _ref_prop(META + "Time", CREATION_TIMESTAMP_DESCRIPTION),
        "deletionGracePeriodSeconds": _prop(
            "integer",
            "Number of seconds allowed for this object to gracefully terminate before it will be removed "
            "from the system. Only set when deletionTimestamp is also set. May only be shortened. "
            "Read-only.",
            "int64",
        ),
        "deletionTimestamp": _ref_prop(
            META + "Time",
            "DeletionTimestamp is RFC 3339 date and time at which this resource will be deleted. This "
            "field is set by the server when a graceful deletion is requested by the user, and is not "
            "directly settable by a client.",
        ),
        "finalizers": {
            "description": "Must be empty before the object is deleted from the registry. Each entry is "
            "an identifier for the responsible component that will remove the entry from the list.",
            "type": "array",
            "items": {"type": "string"},
            "x-kubernetes-list-type": "set",
            "x-kubernetes-patch-strategy": "merge",
        },
        "generateName": _prop(
            "string",
            "GenerateName is an optional prefix, used by the server, to generate a unique name ONLY IF "
            "the Name field has not been provided.",
        ),
        "generation": _prop(
            "integer",
            "A sequence number representing a specific generation of the desired state. Populated by the "
            "system. Read-only.",
            "int64",
        ),
        "labels": {
            **_STRING_MAP,
            "description": "Map of string keys and values that can be used to organize and categorize "
            "(scope and select) objects.",
        },
        "managedFields": {
            "description": "ManagedFields maps workflow-id and version to the set of fields that are "
            "managed by that workflow.",
            "type": "array",
            "items": ref(META + "ManagedFieldsEntry"),
            "x-kubernetes-list-type": "atomic",
        },
        "name": _prop("string", OBJECT_META_NAME_DESCRIPTION),
        "namespace": _prop(
            "string",
            "Namespace defines the space within which each name must be unique. Must be a DNS_LABEL. "
            "Cannot be updated.",
        ),
        "ownerReferences": {
            "description": "List of objects depended by this object. If ALL objects in the list have been "
            "deleted, this object will be garbage collected.",
            "type": "array",
            "items": ref(META + "OwnerReference"),
            "x-kubernetes-list-map-keys": ["uid"],
            "x-kubernetes-list-type": "map",
            "x-kubernetes-patch-merge-key": "uid",
            "x-kubernetes-patch-strategy": "merge",
        },
        "resourceVersion": _prop(
            "string",
            "An opaque value that represents the internal version of this object that can be used by "
            "clients to determine when objects have changed. Populated by the system. Read-only.",
        ),
        "selfLink": _prop(
            "string",
            "Deprecated: selfLink is a legacy read-only field that is no longer populated by the system.",
        ),
        "uid": _prop(
            "string",
            "UID is the unique in time and space value for this object. Populated by the system. Read-only.",
        ),
    },
}

_LIST_META: dict[str, Any] = {
    "description": "ListMeta describes metadata that synthetic resources must have, including lists and "
    "various status objects. A resource may have only one of {ObjectMeta, ListMeta}.",
    "type": "object",
    "properties": {
        "continue": _prop(
            "string",
            "continue may be set if the user set a limit on the number of items returned, and indicates "
            "that the server has more data available.",
        ),
        "remainingItemCount": _prop(
            "integer",
            "remainingItemCount is the number of subsequent items in the list which are not included in "
            "this list response.",
            "int64",
        ),
        "resourceVersion": _prop(
            "string",
            "String that identifies the server's internal version of this object that can be used by "
            "clients to determine when objects have changed. Populated by the system. Read-only.",
        ),
        "selfLink": _prop(
            "string",
            "Deprecated: selfLink is a legacy read-only field that is no longer populated by the system.",
        ),
    },
}

_OWNER_REFERENCE: dict[str, Any] = {
    "description": "OwnerReference contains enough information to let you identify an owning object. An "
    "owning object must be in the same namespace as the dependent, or be cluster-scoped, so there is "
    "no namespace field.",
    "type": "object",
    "required": ["apiVersion", "kind", "name", "uid"],
    "properties": {
        "apiVersion": _prop("string", "API version of the referent."),
        "blockOwnerDeletion": _prop(
            "boolean",
            'If true, AND if the owner has the "foregroundDeletion" finalizer, then the owner cannot be '
            "deleted from the key-value store until this reference is removed.",
        ),
        "controller": _prop("boolean", "If true, this reference points to the managing controller."),
        "kind": _prop("string", "Kind of the referent."),
        "name": _prop("string", "Name of the referent."),
        "uid": _prop("string", "UID of the referent."),
    },
    "x-kubernetes-map-type": "atomic",
}

_MANAGED_FIELDS_ENTRY: dict[str, Any] = {
    "description": "ManagedFieldsEntry is a workflow-id, a FieldSet and the group version of the resource "
    "that the fieldset applies to.",
    "type": "object",
    "properties": {
        "apiVersion": _prop(
            "string", "APIVersion defines the version of this resource that this field set applies to."
        ),
        "fieldsType": _prop(
            "string",
            "FieldsType is the discriminator for the different fields format and version. There is "
            'currently only one possible value: "FieldsV1"',
        ),
        "fieldsV1": _ref_prop(
            META + "FieldsV1",
            'FieldsV1 holds the first JSON version format as described in the "FieldsV1" type.',
        ),
        "manager": _prop("string", "Manager is an identifier of the workflow managing these fields."),
        "operation": _prop(
            "string",
            "Operation is the type of operation which lead to this ManagedFieldsEntry being created. The "
            "only valid values for this field are 'Apply' and 'Update'.",
        ),
        "subresource": _prop(
            "string",
            "Subresource is the name of the subresource used to update that object, or empty string if "
            "the object was updated through the main resource.",
        ),
        "time": _ref_prop(META + "Time", "Time is the timestamp of when the ManagedFields entry was added."),
    },
}

_STATUS: dict[str, Any] = {
    "description": "Status is a return value for calls that don't return other objects.",
    "type": "object",
    "properties": {
        "apiVersion": _prop("string", API_VERSION_DESCRIPTION),
        "code": _prop("integer", "Suggested HTTP return code for this status, 0 if not set.", "int32"),
        "details": _ref_prop(
            META + "StatusDetails",
            "Extended data associated with the reason.  Each reason may define its own extended details.",
        ),
        "kind": _prop("string", KIND_DESCRIPTION),
        "message": _prop("string", "A human-readable description of the status of this operation."),
        "metadata": _ref_prop(LIST_META, f"Standard list metadata. More info: {_CONVENTIONS}#types-kinds"),
        "reason": _prop(
            "string",
            'A machine-readable description of why this operation is in the "Failure" status. If this '
            "value is empty there is no information available.",
        ),
        "status": _prop("string", 'Status of the operation. One of: "Success" or "Failure".'),
    },
    "x-kubernetes-group-version-kind": [{"group": "", "kind": "Status", "version": "v1"}],
}

_STATUS_DETAILS: dict[str, Any] = {
    "description": "StatusDetails is a set of additional properties that MAY be set by the server to "
    "provide additional information about a response.",
    "type": "object",
    "properties": {
        "causes": {
            "description": "The Causes array includes more details associated with the StatusReason failure.",
            "type": "array",
            "items": ref(META + "StatusCause"),
            "x-kubernetes-list-type": "atomic",
        },
        "group": _prop(
            "string", "The group attribute of the resource associated with the status StatusReason."
        ),
        "kind": _prop(
            "string", "The kind attribute of the resource associated with the status StatusReason."
        ),
        "name": _prop(
            "string", "The name attribute of the resource associated with the status StatusReason."
        ),
        "retryAfterSeconds": _prop(
            "integer", "If specified, the time in seconds before the operation should be retried.", "int32"
        ),
        "uid": _prop(
            "string", "UID of the resource. (when there is a single resource which can be described)."
        ),
    },
}

_STATUS_CAUSE: dict[str, Any] = {
    "description": "StatusCause provides more information about an api.Status failure, including cases "
    "when multiple errors are encountered.",
    "type": "object",
    "properties": {
        "field": _prop(
            "string",
            "The field of the resource that has caused this error, as named by its JSON serialization.",
        ),
        "message": _prop("string", "A human-readable description of the cause of the error."),
        "reason": _prop("string", "A machine-readable description of the cause of the error."),
    },
}

_DELETE_OPTIONS: dict[str, Any] = {
    "description": "DeleteOptions may be provided when deleting an API object.",
    "type": "object",
    "properties": {
        "apiVersion": _prop("string", API_VERSION_DESCRIPTION),
        "dryRun": {
            **_STRING_LIST,
            "description": "When present, indicates that modifications should not be persisted.",
        },
        "gracePeriodSeconds": _prop(
            "integer", "The duration in seconds before the object should be deleted.", "int64"
        ),
        "kind": _prop("string", KIND_DESCRIPTION),
        "orphanDependents": _prop(
            "boolean",
            "Deprecated: please use the PropagationPolicy. Should the dependent objects be orphaned.",
        ),
        "preconditions": _ref_prop(
            META + "Preconditions",
            "Must be fulfilled before a deletion is carried out. If not possible, a 409 Conflict status "
            "will be returned.",
        ),
        "propagationPolicy": _prop(
            "string",
            "Whether and how garbage collection will be performed: 'Orphan', 'Background' or 'Foreground'.",
        ),
    },
}

_PRECONDITIONS: dict[str, Any] = {
    "description": "Preconditions must be fulfilled before an operation (update, delete, etc.) is carried "
    "out.",
    "type": "object",
    "properties": {
        "resourceVersion": _prop("string", "Specifies the target ResourceVersion"),
        "uid": _prop("string", "Specifies the target UID."),
    },
}

_WATCH_EVENT: dict[str, Any] = {
    "description": "Event represents a single event to a watched resource.",
    "type": "object",
    "required": ["type", "object"],
    "properties": {
        "object": _ref_prop(
            RAW_EXTENSION,
            "Object is:\n * If Type is Added or Modified: the new state of the object.\n * If Type is "
            "Deleted: the state of the object immediately before deletion.\n * If Type is Error: *Status "
            "is recommended; other types may make sense\n   depending on context.",
        ),
        "type": {"type": "string"},
    },
}

_SIMPLE: dict[str, dict[str, Any]] = {
    META + "Time": {
        "description": "Time is a wrapper around time.Time which supports correct marshaling to YAML and "
        "JSON.",
        "type": "string",
        "format": "date-time",
    },
    META + "FieldsV1": {
        "description": "FieldsV1 stores a set of fields in a data structure like a Trie, in JSON format.",
        "type": "object",
    },
    PATCH: {
        "description": "Patch is provided to give a concrete name and type to the Kubernetes PATCH "
        "request body.",
        "type": "object",
    },
    RAW_EXTENSION: {
        "description": "RawExtension is used to hold extensions in external versions.",
        "type": "object",
    },
}


def meta_definitions(gvks_per_group_version: list[tuple[str, str]]) -> dict[str, dict[str, Any]]:
    """Every meta definition (v2 form), DeleteOptions and WatchEvent tagged for each group version.

    kube registers DeleteOptions and WatchEvent in every installed group version plus the legacy
    "" v1 (metav1.AddToGroupVersion), and the definition namer lists all of them sorted.
    """
    tagged = sorted({("", "v1"), *gvks_per_group_version})

    def with_gvks(schema: dict[str, Any], kind: str) -> dict[str, Any]:
        out = copy.deepcopy(schema)
        out["x-kubernetes-group-version-kind"] = [{"group": g, "kind": kind, "version": v} for g, v in tagged]
        return out

    definitions = {
        OBJECT_META: _OBJECT_META,
        LIST_META: _LIST_META,
        META + "OwnerReference": _OWNER_REFERENCE,
        META + "ManagedFieldsEntry": _MANAGED_FIELDS_ENTRY,
        STATUS: _STATUS,
        META + "StatusDetails": _STATUS_DETAILS,
        META + "StatusCause": _STATUS_CAUSE,
        META + "Preconditions": _PRECONDITIONS,
        **_SIMPLE,
    }
    out = {name: copy.deepcopy(schema) for name, schema in definitions.items()}
    out[DELETE_OPTIONS] = with_gvks(_DELETE_OPTIONS, "DeleteOptions")
    out[WATCH_EVENT] = with_gvks(_WATCH_EVENT, "WatchEvent")
    return dict(sorted(out.items()))


def list_schema(
    group: str, version: str, kind: str, list_kind: str, plural: str, item_definition: str
) -> dict[str, Any]:
    """The <Kind>List definition, built as the CRD OpenAPI builder builds it (buildListSchema)."""
    return {
        "description": f"{list_kind} is a list of {kind}",
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": _prop("string", API_VERSION_DESCRIPTION),
            "items": {
                "description": f"List of {plural}. More info: "
                "https://git.k8s.io/community/contributors/devel/api-conventions.md",
                "type": "array",
                "items": ref(item_definition),
            },
            "kind": _prop("string", KIND_DESCRIPTION),
            "metadata": _ref_prop(
                LIST_META, f"Standard list metadata. More info: {_CONVENTIONS}#types-kinds"
            ),
        },
        "x-kubernetes-group-version-kind": [{"group": group, "kind": list_kind, "version": version}],
    }
