"""apis/runtime/proto_json.py: JSON objects <-> kube's generated protobuf messages.

Round trips of realistic, kube-shaped JSON (what the API serves: Go's key order, sorted maps, empty
fields left out) through the messages and their bytes; Go's presence rule from its struct
definitions; the special types; and refusals of input that does not fit. The comparison with what
the Go server really sends is tests/apis/test_proto_json_go.py.
"""

from __future__ import annotations

import datetime
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import Message
from hypothesis import given, settings
from hypothesis import strategies as st

from apis.proto.k8s.io.apimachinery.pkg.apis.meta.v1 import generated_pb2 as meta_pb2
from apis.proto.k8s.io.apimachinery.pkg.runtime import generated_pb2 as runtime_pb2
from apis.proto.k8s.io.apimachinery.pkg.runtime.schema import generated_pb2 as schema_pb2
from apis.runtime.proto_json import (
    GO_JSON_ALWAYS,
    GO_JSON_OMITZERO,
    GO_POINTER_FIELDS,
    META_V1,
    ConversionError,
    format_go_duration,
    from_message,
    parse_go_duration,
    to_message,
)
from apis.runtime.protobuf import ProtobufError

APIMACHINERY_GIT = Path("/work/.mirror/kubernetes+apimachinery/repo")

# --- strategies: JSON as the API serves it -------------------------------------------------------

text = st.text(max_size=12)
nonempty = st.text(min_size=1, max_size=12)
int64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
# Whole seconds from year 1 to 9999, written the way Go's metav1.Time writes them.
seconds = st.integers(min_value=-62135596800 + 1, max_value=253402300799)


def rfc3339(value: int) -> str:
    moment = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC) + datetime.timedelta(seconds=value)
    return moment.isoformat().replace("+00:00", "Z")


times = seconds.map(rfc3339)
sorted_maps = st.dictionaries(nonempty, text, max_size=4).map(lambda d: dict(sorted(d.items())))
fields_v1 = st.recursive(
    st.just({}),
    lambda children: st.dictionaries(
        st.text(min_size=1, max_size=8).map(lambda k: f"f:{k}"), children, max_size=3
    ),
    max_leaves=8,
)


def present(**members: Any) -> dict[str, Any]:
    """Keeps what encoding/json writes with omitempty: not None, "", 0, False, [] or {}."""
    return {
        key: value for key, value in members.items() if value not in (None, "", 0, [], {}) or value is False
    }


@st.composite
def owner_references(draw: st.DrawFn) -> dict[str, Any]:
    ref = {"apiVersion": draw(text), "kind": draw(text), "name": draw(text), "uid": draw(text)}
    for pointer in ("controller", "blockOwnerDeletion"):
        value = draw(st.none() | st.booleans())
        if value is not None:
            ref[pointer] = value
    return ref


@st.composite
def managed_fields(draw: st.DrawFn) -> dict[str, Any]:
    entry = present(manager=draw(text), operation=draw(st.sampled_from(["Apply", "Update", ""])))
    entry.update(present(apiVersion=draw(text)))
    time = draw(st.none() | times)
    if time is not None:
        entry["time"] = time
    entry.update(present(fieldsType=draw(st.sampled_from(["FieldsV1", ""]))))
    fields = draw(st.none() | fields_v1)
    if fields is not None:
        entry["fieldsV1"] = fields
    entry.update(present(subresource=draw(st.sampled_from(["", "status", "scale"]))))
    return entry


@st.composite
def object_metas(draw: st.DrawFn) -> dict[str, Any]:
    meta = present(
        name=draw(text),
        generateName=draw(text),
        namespace=draw(text),
        selfLink=draw(text),
        uid=draw(text),
        resourceVersion=draw(st.integers(0, 10**12).map(str) | st.just("")),
        generation=draw(int64),
    )
    created = draw(st.none() | times)
    if created is not None:
        meta["creationTimestamp"] = created
    deleted = draw(st.none() | times)
    if deleted is not None:
        meta["deletionTimestamp"] = deleted
    grace = draw(st.none() | st.integers(0, 2**40))
    if grace is not None:
        meta["deletionGracePeriodSeconds"] = grace
    meta.update(
        present(
            labels=draw(sorted_maps),
            annotations=draw(sorted_maps),
            ownerReferences=draw(st.lists(owner_references(), max_size=3)),
            finalizers=draw(st.lists(nonempty, max_size=3)),
            managedFields=draw(st.lists(managed_fields(), max_size=3)),
        )
    )
    return meta


@st.composite
def list_metas(draw: st.DrawFn) -> dict[str, Any]:
    meta = present(selfLink=draw(text), resourceVersion=draw(text), **{"continue": draw(text)})
    remaining = draw(st.none() | st.integers(0, 2**40))
    if remaining is not None:
        meta["remainingItemCount"] = remaining
    return meta


@st.composite
def statuses(draw: st.DrawFn) -> dict[str, Any]:
    status = {"metadata": draw(list_metas())}
    status.update(
        present(
            status=draw(st.sampled_from(["", "Success", "Failure"])), message=draw(text), reason=draw(text)
        )
    )
    if draw(st.booleans()):
        causes = draw(
            st.lists(
                st.builds(lambda r, m, f: present(reason=r, message=m, field=f), text, text, text), max_size=3
            )
        )
        details = present(name=draw(text), group=draw(text), kind=draw(text), uid=draw(text), causes=causes)
        details.update(present(retryAfterSeconds=draw(st.integers(0, 2**31 - 1))))
        status["details"] = details
    status.update(present(code=draw(st.integers(0, 599))))
    return status


partial_lists = st.builds(
    lambda meta, items: {"metadata": meta, "items": [{"metadata": item} for item in items]},
    list_metas(),
    st.lists(object_metas(), max_size=3),
)

CASES = [
    (object_metas(), meta_pb2.ObjectMeta),
    (statuses(), meta_pb2.Status),
    (partial_lists, meta_pb2.PartialObjectMetadataList),
]


def same_json(left: Any, right: Any) -> bool:
    """Equal, with the same key order (json.dumps keeps each dict's order)."""
    return json.dumps(left) == json.dumps(right)


# --- round trips --------------------------------------------------------------------------------


@pytest.mark.parametrize(("objects", "cls"), CASES, ids=lambda c: getattr(c, "__name__", ""))
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_json_to_message_to_json_is_lossless(objects: Any, cls: type[Message], data: st.DataObject) -> None:
    obj = data.draw(objects)
    assert same_json(from_message(to_message(obj, cls)), obj)


@pytest.mark.parametrize(("objects", "cls"), CASES, ids=lambda c: getattr(c, "__name__", ""))
@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_bytes_to_message_to_bytes_is_stable(objects: Any, cls: type[Message], data: st.DataObject) -> None:
    encoded = to_message(data.draw(objects), cls).SerializeToString(deterministic=True)
    decoded = cls()
    decoded.ParseFromString(encoded)
    assert decoded.SerializeToString(deterministic=True) == encoded
    assert same_json(from_message(decoded), from_message(to_message(from_message(decoded), cls)))


# --- Go's presence ----------------------------------------------------------------------------------


def test_go_struct_fields_are_present_even_when_the_json_left_them_out() -> None:
    """gogo writes every non-pointer field of a Go struct: an empty ObjectMeta is not an empty message."""
    meta = to_message({"name": "a"}, meta_pb2.ObjectMeta)
    assert [f.name for f, _ in meta.ListFields()] == [
        "name",
        "generateName",
        "namespace",
        "selfLink",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
    ]
    assert meta.creationTimestamp.ByteSize() == 0  # Go's zero time
    assert from_message(meta) == {"name": "a"}  # creationTimestamp is omitzero
    item = to_message({"items": [{}]}, meta_pb2.PartialObjectMetadataList)
    assert item.HasField("metadata") and item.items[0].HasField("metadata")
    assert item.items[0].metadata.HasField("name")


def test_pointer_fields_are_present_exactly_when_set_even_to_zero() -> None:
    meta = to_message({"deletionGracePeriodSeconds": 0}, meta_pb2.ObjectMeta)
    assert meta.HasField("deletionGracePeriodSeconds") and not meta.HasField("deletionTimestamp")
    assert from_message(meta) == {"deletionGracePeriodSeconds": 0}
    ref = to_message({"controller": False}, meta_pb2.OwnerReference)
    assert ref.HasField("controller") and not ref.HasField("blockOwnerDeletion")
    assert from_message(ref) == {"apiVersion": "", "kind": "", "name": "", "uid": "", "controller": False}
    assert not to_message({"deletionTimestamp": None}, meta_pb2.ObjectMeta).HasField("deletionTimestamp")


def test_type_meta_keys_belong_to_the_envelope() -> None:
    obj = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": {"name": "a"}}
    message = to_message(obj, meta_pb2.PartialObjectMetadata)
    assert from_message(message, api_version="meta.k8s.io/v1", kind="PartialObjectMetadata") == obj


def test_status_json_keeps_go_key_order_and_always_written_fields() -> None:
    status = to_message({"code": 404, "reason": "NotFound", "status": "Failure"}, meta_pb2.Status)
    out = from_message(status, api_version="v1", kind="Status")
    assert list(out) == ["kind", "apiVersion", "metadata", "status", "reason", "code"]
    assert out["metadata"] == {}


def go_structs() -> dict[str, dict[str, tuple[str, str, list[str]]]]:
    """Per Go struct of meta/v1: proto name -> (Go type, JSON name, JSON options), from the source."""
    git = ["git", f"--git-dir={APIMACHINERY_GIT}"]
    structs: dict[str, dict[str, tuple[str, str, list[str]]]] = {}
    for name in ("types.go", "watch.go", "group_version.go", "time_proto.go"):
        source = subprocess.run(
            [*git, "show", f"HEAD:pkg/apis/meta/v1/{name}"], capture_output=True, text=True, check=True
        ).stdout
        for match in re.finditer(r"^type (\w+) struct \{\n(.*?)^\}", source, re.M | re.S):
            fields = {}
            for line in match[2].splitlines():
                field = re.match(r'\s*(?:\w+\s+)?(\*?[\w.\[\]]+)\s+`json:"([^"]*)" protobuf:"([^"]*)"', line)
                if field is None:
                    continue
                json_name, *options = field[2].split(",")
                proto_name = re.search(r"name=(\w+)", field[3])
                assert proto_name is not None, line
                fields[proto_name[1]] = (field[1], json_name, options)
            if fields:
                structs[match[1]] = fields
    return structs


@pytest.mark.skipif(
    not APIMACHINERY_GIT.is_dir(), reason="needs the kubernetes/apimachinery mirror (fetch tool)"
)
def test_presence_tables_match_the_go_structs() -> None:
    """GO_POINTER_FIELDS / GO_JSON_ALWAYS / GO_JSON_OMITZERO are apimachinery's types.go, as data."""
    structs = go_structs()
    assert {
        "ObjectMeta",
        "ListMeta",
        "Status",
        "StatusDetails",
        "StatusCause",
        "WatchEvent",
    } <= structs.keys()
    pointers, always, omitzero = {}, {}, {}
    for struct, fields in structs.items():
        descriptor = meta_pb2.DESCRIPTOR.message_types_by_name[struct]
        for proto_name, (go_type, json_name, options) in fields.items():
            assert proto_name in descriptor.fields_by_name, f"{struct}.{proto_name}"
            assert json_name in (proto_name, "", "-"), f"{struct}.{proto_name}: JSON {json_name}"
            if go_type.startswith("*"):
                pointers.setdefault(META_V1 + struct, set()).add(proto_name)
            if "omitempty" not in options and json_name not in ("", "-"):
                always.setdefault(META_V1 + struct, set()).add(proto_name)
            if "omitzero" in options:
                omitzero.setdefault(META_V1 + struct, set()).add(proto_name)
    assert pointers == {k: set(v) for k, v in GO_POINTER_FIELDS.items()}
    assert always == {k: set(v) for k, v in GO_JSON_ALWAYS.items()}
    assert omitzero == {k: set(v) for k, v in GO_JSON_OMITZERO.items()}


# --- special types ------------------------------------------------------------------------------------


def test_time_keeps_whole_seconds_and_writes_go_zero_time_as_empty() -> None:
    entry = to_message({"time": "2026-11-28T13:00:12.75+01:00"}, meta_pb2.ManagedFieldsEntry)
    assert (entry.time.seconds, entry.time.HasField("nanos"), entry.time.nanos) == (1795867212, True, 0)
    assert from_message(entry)["time"] == "2026-11-28T12:00:12Z"
    zero = to_message({"creationTimestamp": "0001-01-01T00:00:00Z"}, meta_pb2.ObjectMeta)
    assert zero.HasField("creationTimestamp") and zero.creationTimestamp.ByteSize() == 0
    go_zero = meta_pb2.Condition(lastTransitionTime=meta_pb2.Time(seconds=-62135596800, nanos=0))
    assert from_message(go_zero)["lastTransitionTime"] is None
    assert from_message(meta_pb2.Condition())["lastTransitionTime"] is None  # no omitempty: null


def test_duration_spelling() -> None:
    assert format_go_duration(0) == "0s"
    assert format_go_duration(1_500) == "1.5µs"
    assert format_go_duration(90 * 10**9) == "1m30s"
    assert format_go_duration(-3_723_000_000_001) == "-1h2m3.000000001s"
    assert parse_go_duration("1h2m3.5s") == 3_723_500_000_000
    assert parse_go_duration("-1.5ms") == -1_500_000
    with pytest.raises(ConversionError, match="invalid duration"):
        parse_go_duration("1d")


def test_fields_v1_raw_is_the_json_text_in_its_own_key_order() -> None:
    fields = {"f:metadata": {"f:labels": {".": {}, "f:<a&b>": {}}}, "f:spec": {}}
    entry = to_message({"fieldsV1": fields}, meta_pb2.ManagedFieldsEntry)
    assert (
        entry.fieldsV1.Raw
        == b'{"f:metadata":{"f:labels":{".":{},"f:\\u003ca\\u0026b\\u003e":{}}},"f:spec":{}}'
    )
    assert same_json(from_message(entry)["fieldsV1"], fields)


def test_watch_event_object_is_raw_json() -> None:
    event = to_message({"type": "ADDED", "object": {"kind": "X", "a": [1, 2.5]}}, meta_pb2.WatchEvent)
    assert event.object.raw == b'{"kind":"X","a":[1,2.5]}'
    assert from_message(event) == {"type": "ADDED", "object": {"kind": "X", "a": [1, 2.5]}}
    protobuf_inside = meta_pb2.WatchEvent(type="ADDED", object=runtime_pb2.RawExtension(raw=b"k8s\x00..."))
    with pytest.raises(ConversionError, match="decode_message"):
        from_message(protobuf_inside)


def _message_class(pool: descriptor_pool.DescriptorPool, name: str) -> type[Message]:
    cls: type[Message] = message_factory.GetMessageClass(pool.FindMessageTypeByName(name))
    return cls


def test_int_or_string_and_a_groups_own_kind() -> None:
    """A kind's message (not a Go struct) holds exactly what its JSON had; IntOrString by full name."""
    file = descriptor_pb2.FileDescriptorProto(name="test/kind.proto", package="test.v1", syntax="proto2")
    file.dependency.append(meta_pb2.DESCRIPTOR.name)
    intstr = descriptor_pb2.FileDescriptorProto(
        name="test/intstr.proto", package="k8s.io.apimachinery.pkg.util.intstr", syntax="proto2"
    )
    value = intstr.message_type.add(name="IntOrString")
    F = descriptor_pb2.FieldDescriptorProto
    for number, (name, kind) in enumerate(
        [("type", F.TYPE_INT64), ("intVal", F.TYPE_INT32), ("strVal", F.TYPE_STRING)], 1
    ):
        value.field.add(name=name, number=number, type=kind, label=F.LABEL_OPTIONAL)
    file.dependency.append(intstr.name)
    kind = file.message_type.add(name="Pizza")
    kind.field.add(
        name="metadata",
        number=1,
        type=F.TYPE_MESSAGE,
        label=F.LABEL_OPTIONAL,
        type_name=f".{META_V1}ObjectMeta",
    )
    kind.field.add(name="size", number=2, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    kind.field.add(name="count", number=3, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL)
    kind.field.add(
        name="port",
        number=4,
        type=F.TYPE_MESSAGE,
        label=F.LABEL_OPTIONAL,
        type_name=".k8s.io.apimachinery.pkg.util.intstr.IntOrString",
    )
    kind.field.add(name="toppings", number=5, type=F.TYPE_STRING, label=F.LABEL_REPEATED)
    kind.field.add(name="data", number=6, type=F.TYPE_BYTES, label=F.LABEL_OPTIONAL)
    for number, (name, type_name) in enumerate([("at", "MicroTime"), ("every", "Duration")], 7):
        kind.field.add(
            name=name,
            number=number,
            type=F.TYPE_MESSAGE,
            label=F.LABEL_OPTIONAL,
            type_name=f".{META_V1}{type_name}",
        )
    pool = descriptor_pool.DescriptorPool()
    for module in (schema_pb2, runtime_pb2, meta_pb2):
        pool.AddSerializedFile(module.DESCRIPTOR.serialized_pb)
    pool.Add(intstr)
    pool.Add(file)
    pizza = _message_class(pool, "test.v1.Pizza")

    obj = {"apiVersion": "test/v1", "kind": "Pizza", "metadata": {"name": "p"}, "count": 0, "port": "http"}
    message = to_message(obj, pizza)
    assert [f.name for f, _ in message.ListFields()] == ["metadata", "count", "port"]
    assert (message.port.type, message.port.strVal) == (1, "http")
    assert from_message(message, api_version="test/v1", kind="Pizza") == obj
    numbered = to_message({"port": 8080, "data": "AAE=", "toppings": ["a"], "size": ""}, pizza)
    assert (numbered.port.type, numbered.port.intVal, numbered.data) == (0, 8080, b"\x00\x01")
    assert from_message(numbered) == {"size": "", "port": 8080, "toppings": ["a"], "data": "AAE="}
    timed = to_message({"at": "2026-11-28T13:00:12.1234567+00:00", "every": "1m30s"}, pizza)
    assert (timed.at.seconds, timed.at.nanos, timed.every.duration) == (1795870812, 123456000, 90 * 10**9)
    assert from_message(timed) == {"at": "2026-11-28T13:00:12.123456Z", "every": "1m30s"}
    with pytest.raises(ConversionError, match="port: expected an int32 or a string"):
        to_message({"port": 2**31}, pizza)
    with pytest.raises(ConversionError, match="data: illegal base64"):
        to_message({"data": "not base64!"}, pizza)


# --- refusals ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("obj", "cls", "error"),
    [
        ({"name": 5}, meta_pb2.ObjectMeta, "name: expected a string, got number"),
        ({"generation": "1"}, meta_pb2.ObjectMeta, "generation: expected an integer, got string"),
        ({"generation": True}, meta_pb2.ObjectMeta, "generation: expected an integer, got boolean"),
        ({"generation": 1.5}, meta_pb2.ObjectMeta, "generation: expected an integer, got number"),
        ({"generation": 2**63}, meta_pb2.ObjectMeta, "generation: 9223372036854775808 is out of range"),
        ({"labels": {"a": 1}}, meta_pb2.ObjectMeta, r"labels\[a\]: expected a string, got number"),
        ({"labels": ["a"]}, meta_pb2.ObjectMeta, "labels: expected an object, got array"),
        ({"finalizers": "a"}, meta_pb2.ObjectMeta, "finalizers: expected an array, got string"),
        ({"creationTimestamp": "yesterday"}, meta_pb2.ObjectMeta, "creationTimestamp: parsing time"),
        ({"creationTimestamp": "2026-02-30T00:00:00Z"}, meta_pb2.ObjectMeta, "day out of range"),
        ({"creationTimestamp": 5}, meta_pb2.ObjectMeta, "expected an RFC 3339 time string, got number"),
        (
            {"ownerReferences": [{"controller": "yes"}]},
            meta_pb2.ObjectMeta,
            r"ownerReferences\[0\].controller",
        ),
        ({"ownerReferences": ["x"]}, meta_pb2.ObjectMeta, r"ownerReferences\[0\]: expected an object"),
        ({"nmae": "typo"}, meta_pb2.ObjectMeta, 'unknown field "nmae"'),
        ({"metadata": []}, meta_pb2.Status, "metadata: expected an object, got array"),
        ({"code": 2**31}, meta_pb2.Status, "code: 2147483648 is out of range"),
        ({"items": [{"metadata": {"uid": None, "name": []}}]}, meta_pb2.PartialObjectMetadataList, "items"),
        ([], meta_pb2.ObjectMeta, "expected an object, got array"),
    ],
)
def test_bad_input_is_a_protobuf_error_naming_the_field(obj: Any, cls: type[Message], error: str) -> None:
    with pytest.raises(ConversionError, match=error) as raised:
        to_message(obj, cls)
    assert isinstance(raised.value, ProtobufError)
