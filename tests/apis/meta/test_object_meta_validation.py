"""ObjectMeta create/update validation: each rule with its field path, type and rendered message."""

from __future__ import annotations

from typing import Any

import pytest

from apis.meta.errors import GroupKind, invalid
from apis.meta.field import ErrorType
from apis.meta.names import name_is_dns_label
from apis.meta.validation import validate_object_meta, validate_object_meta_update

SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation "
    "is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
KEY_NAME_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


def messages(meta: dict[str, Any], namespaced: bool = True) -> list[str]:
    return [str(e) for e in validate_object_meta(meta, namespaced=namespaced)]


def ok_meta(**extra: Any) -> dict[str, Any]:
    return {"name": "margherita", "namespace": "default", **extra}


def test_valid_metadata_has_no_errors() -> None:
    meta = ok_meta(
        labels={"app": "pizza", "example.com/tier": ""},
        annotations={"Example.com/Note": "anything at all, even spaces"},
        finalizers=["restaurant.programming-kubernetes.info/cleanup"],
        ownerReferences=[
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "uid": "u1", "controller": True}
        ],
        generation=3,
        managedFields=[{"manager": "kubectl", "operation": "Apply", "fieldsType": "FieldsV1"}],
    )
    assert validate_object_meta(meta, namespaced=True) == []
    assert validate_object_meta({"name": "pepperoni"}, namespaced=False) == []


@pytest.mark.parametrize(
    ("meta", "namespaced", "expected"),
    [
        ({"namespace": "default"}, True, ["metadata.name: Required value: name or generateName is required"]),
        ({"name": "margherita"}, True, ["metadata.namespace: Required value"]),
        (
            {"name": "pepperoni", "namespace": "default"},
            False,
            ["metadata.namespace: Forbidden: not allowed on this type"],
        ),
        (ok_meta(name="Margherita"), True, [f'metadata.name: Invalid value: "Margherita": {SUBDOMAIN_MSG}']),
        (
            ok_meta(name="a" * 254),
            True,
            [f'metadata.name: Invalid value: "{"a" * 254}": must be no more than 253 characters'],
        ),
        (ok_meta(name="with.dots"), True, []),
        (
            ok_meta(namespace="my.ns"),
            True,
            ['metadata.namespace: Invalid value: "my.ns": must not contain dots'],
        ),
        (
            ok_meta(generateName="Pizza-"),
            True,
            [f'metadata.generateName: Invalid value: "Pizza-": {SUBDOMAIN_MSG}'],
        ),
        (ok_meta(generateName="pizza-"), True, []),
        (
            ok_meta(generation=-1),
            True,
            ["metadata.generation: Invalid value: -1: must be greater than or equal to 0"],
        ),
    ],
)
def test_create_rules(meta: dict[str, Any], namespaced: bool, expected: list[str]) -> None:
    assert messages(meta, namespaced) == expected


def test_error_types_and_paths() -> None:
    errs = validate_object_meta({"namespace": "x"}, namespaced=False)
    assert [(e.type, e.field) for e in errs] == [
        (ErrorType.REQUIRED, "metadata.name"),
        (ErrorType.FORBIDDEN, "metadata.namespace"),
    ]


def test_custom_name_fn() -> None:
    errs = validate_object_meta(ok_meta(name="a.b"), namespaced=True, name_fn=name_is_dns_label)
    assert [str(e) for e in errs] == ['metadata.name: Invalid value: "a.b": must not contain dots']


def test_labels_report_key_and_value_on_the_map_path() -> None:
    assert messages(ok_meta(labels={"bad key": "ok", "good": "-bad"})) == [
        f'metadata.labels: Invalid value: "bad key": {KEY_NAME_MSG}',
        'metadata.labels: Invalid value: "-bad": a valid label must be an empty string or consist of '
        "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character "
        "(e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
        "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
    ]
    assert messages(ok_meta(labels={"a": "v" * 64})) == [
        f'metadata.labels: Invalid value: "{"v" * 64}": must be no more than 63 bytes'
    ]


def test_annotation_keys_ignore_case_but_not_shape() -> None:
    assert messages(ok_meta(annotations={"Example.COM/Key": "v"})) == []
    assert messages(ok_meta(annotations={"a b": "v"})) == [
        f'metadata.annotations: Invalid value: "a b": {KEY_NAME_MSG}'
    ]


def test_annotation_total_size_limit_counts_keys_and_values_in_bytes() -> None:
    limit = 256 * 1024
    assert messages(ok_meta(annotations={"k": "v" * (limit - 1)})) == []
    over = messages(ok_meta(annotations={"k": "v" * limit}))
    assert over == ["metadata.annotations: Too long: may not be more than 262144 bytes"]
    # 2-byte characters: half as many characters already exceed the byte limit.
    assert len(messages(ok_meta(annotations={"k": "é" * (limit // 2)}))) == 1
    errs = validate_object_meta(ok_meta(annotations={"k": "v" * limit}), namespaced=True)
    assert errs[0].type is ErrorType.TOO_LONG


def test_finalizers() -> None:
    assert messages(ok_meta(finalizers=["bad finalizer"])) == [
        f'metadata.finalizers: Invalid value: "bad finalizer": {KEY_NAME_MSG}'
    ]
    assert messages(ok_meta(finalizers=["orphan", "foregroundDeletion"])) == [
        'metadata.finalizers: Invalid value: ["orphan","foregroundDeletion"]: '
        "finalizer orphan and foregroundDeletion cannot be both set"
    ]
    assert messages(ok_meta(finalizers=["orphan"])) == []


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        ({"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u"}, []),
        ({"apiVersion": "apps/v1", "kind": "Deployment", "name": "d", "uid": "u"}, []),
        (
            {"apiVersion": "apps/", "kind": "Deployment", "name": "d", "uid": "u"},
            ['metadata.ownerReferences.apiVersion: Invalid value: "apps/": version must not be empty'],
        ),
        (
            {"apiVersion": "a/b/c", "kind": "K", "name": "d", "uid": "u"},
            ['metadata.ownerReferences.apiVersion: Invalid value: "a/b/c": version must not be empty'],
        ),
        (
            {},
            [
                'metadata.ownerReferences.apiVersion: Invalid value: "": version must not be empty',
                'metadata.ownerReferences.kind: Invalid value: "": must not be empty',
                'metadata.ownerReferences.name: Invalid value: "": must not be empty',
                'metadata.ownerReferences.uid: Invalid value: "": must not be empty',
            ],
        ),
    ],
)
def test_owner_reference_fields(ref: dict[str, Any], expected: list[str]) -> None:
    assert messages(ok_meta(ownerReferences=[ref])) == expected


def test_event_may_not_own() -> None:
    (msg,) = messages(
        ok_meta(ownerReferences=[{"apiVersion": "v1", "kind": "Event", "name": "e", "uid": "u"}])
    )
    assert msg.startswith("metadata.ownerReferences: Invalid value: ")
    assert msg.endswith(": /v1, Kind=Event is disallowed from being an owner")


def test_only_one_controller_owner() -> None:
    refs = [
        {"apiVersion": "v1", "kind": "A", "name": "a", "uid": "1", "controller": True},
        {"apiVersion": "v1", "kind": "B", "name": "b", "uid": "2", "controller": False},
        {"apiVersion": "v1", "kind": "C", "name": "c", "uid": "3", "controller": True},
    ]
    (msg,) = messages(ok_meta(ownerReferences=refs))
    assert msg.startswith("metadata.ownerReferences: Invalid value: [")
    assert msg.endswith(
        ': Only one reference can have Controller set to true. Found "true" in references for A/a and C/c'
    )


def test_managed_fields() -> None:
    entries = [
        {"manager": "ok", "operation": "Apply"},
        {"manager": "m" * 129, "operation": "Patch", "fieldsType": "FieldsV2"},
        {"manager": "bad\x07", "operation": "Update", "subresource": "s" * 257},
    ]
    msgs = messages(ok_meta(managedFields=entries))
    assert msgs == [
        'metadata.managedFields[1].operation: Invalid value: "Patch": must be `Apply` or `Update`',
        'metadata.managedFields[1].fieldsType: Invalid value: "FieldsV2": must be `FieldsV1`',
        "metadata.managedFields[1].manager: Too long: may not be more than 128 bytes",
        # (the bad value's quoting is field.format_value's business; the detail is what matters here)
        msgs[3],
        "metadata.managedFields[2].subresource: Too long: may not be more than 256 bytes",
    ]
    assert msgs[3].startswith("metadata.managedFields[2].manager: Invalid value: ")
    assert msgs[3].endswith(": invalid character U+0007 (at position 3)")


def test_create_error_order_follows_kube() -> None:
    meta = {
        "generateName": "Xy-",
        "namespace": "N",
        "generation": -2,
        "labels": {"-": "v"},
        "annotations": {"-": "v"},
        "ownerReferences": [{"apiVersion": "v1", "kind": "K", "name": "n"}],
        "finalizers": ["-"],
    }
    fields = [e.field for e in validate_object_meta(meta, namespaced=True)]
    assert fields == [
        "metadata.generateName",
        "metadata.name",
        "metadata.namespace",
        "metadata.generation",
        "metadata.labels",
        "metadata.annotations",
        "metadata.ownerReferences.uid",
        "metadata.finalizers",
    ]


def test_errors_render_into_a_422_like_kube() -> None:
    err = invalid(
        GroupKind("restaurant.programming-kubernetes.info", "Pizza"),
        "",
        validate_object_meta({}, namespaced=True),
    )
    assert err.code == 422
    assert err.message == (
        'Pizza.restaurant.programming-kubernetes.info "" is invalid: '
        "[metadata.name: Required value: name or generateName is required, "
        "metadata.namespace: Required value]"
    )
    assert err.details is not None
    assert err.details["causes"][1] == {
        "reason": "FieldValueRequired",
        "message": "Required value",
        "field": "metadata.namespace",
    }


# ---- update ----------------------------------------------------------------------------------------


def stored(**extra: Any) -> dict[str, Any]:
    return {
        "name": "margherita",
        "namespace": "default",
        "uid": "11111111-2222-3333-4444-555555555555",
        "resourceVersion": "7",
        "generation": 2,
        "creationTimestamp": "2024-05-01T10:00:00Z",
        **extra,
    }


def update_messages(new: dict[str, Any], old: dict[str, Any]) -> list[str]:
    return [str(e) for e in validate_object_meta_update(new, old)]


def test_unchanged_update_is_valid() -> None:
    assert validate_object_meta_update(stored(), stored()) == []
    # the same instant spelled differently is the same timestamp (Semantic.DeepEqual on metav1.Time)
    assert update_messages(stored(creationTimestamp="2024-05-01T12:00:00+02:00"), stored()) == []


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"name": "other"}, ['metadata.name: Invalid value: "other": field is immutable']),
        ({"namespace": "other"}, ['metadata.namespace: Invalid value: "other": field is immutable']),
        ({"uid": "x"}, ['metadata.uid: Invalid value: "x": field is immutable']),
        (
            {"creationTimestamp": "2025-01-01T00:00:00Z"},
            ['metadata.creationTimestamp: Invalid value: "2025-01-01T00:00:00Z": field is immutable'],
        ),
        (
            {"deletionTimestamp": "2025-01-01T00:00:00Z"},
            ['metadata.deletionTimestamp: Invalid value: "2025-01-01T00:00:00Z": field is immutable'],
        ),
        (
            {"deletionGracePeriodSeconds": 30},
            ["metadata.deletionGracePeriodSeconds: Invalid value: 30: field is immutable"],
        ),
        ({"generation": 1}, ["metadata.generation: Invalid value: 1: must not be decremented"]),
        ({"generation": 3}, []),
        (
            {"resourceVersion": ""},
            ['metadata.resourceVersion: Invalid value: "": must be specified for an update'],
        ),
        ({"generateName": "changed-"}, []),  # generateName is not immutable
        ({"finalizers": ["not valid"]}, []),  # kube does not re-check finalizer names on update
    ],
)
def test_update_rules(change: dict[str, Any], expected: list[str]) -> None:
    assert update_messages(stored(**change), stored()) == expected


def test_update_revalidates_labels_annotations_owners_and_managed_fields() -> None:
    new = stored(
        labels={"a": "-"},
        annotations={"b c": ""},
        ownerReferences=[{"apiVersion": "v1", "kind": "K", "name": "n"}],
        managedFields=[{"manager": "m", "operation": "Nope"}],
    )
    assert [e.field for e in validate_object_meta_update(new, stored())] == [
        "metadata.labels",
        "metadata.annotations",
        "metadata.ownerReferences.uid",
        "metadata.managedFields[0].operation",
    ]


def test_no_new_finalizers_once_deleting() -> None:
    old = stored(deletionTimestamp="2025-01-01T00:00:00Z", finalizers=["a"])
    new = stored(deletionTimestamp="2025-01-01T00:00:00Z", finalizers=["a", "z", "b"])
    errs = validate_object_meta_update(new, old)
    assert [str(e) for e in errs] == [
        "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, "
        'found new finalizers []string{"b", "z"}'
    ]
    assert errs[0].type is ErrorType.FORBIDDEN
    # removing finalizers while deleting is fine, and adding them before deletion is fine
    assert validate_object_meta_update(stored(deletionTimestamp="2025-01-01T00:00:00Z"), old) == []
    assert validate_object_meta_update(stored(finalizers=["a", "b"]), stored(finalizers=["a"])) == []


def test_update_error_order_follows_kube() -> None:
    old = stored(deletionTimestamp="2025-01-01T00:00:00Z")
    new = stored(
        name="n2",
        uid="u2",
        resourceVersion="",
        generation=0,
        finalizers=["f"],
        annotations={" ": ""},
        deletionTimestamp="2025-01-01T00:00:00Z",
    )
    assert [e.field for e in validate_object_meta_update(new, old)] == [
        "metadata.finalizers",
        "metadata.resourceVersion",
        "metadata.generation",
        "metadata.name",
        "metadata.uid",
        "metadata.annotations",
    ]
