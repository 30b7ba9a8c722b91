"""kube's protobuf envelope (apis/runtime/protobuf.py) with the generated meta.k8s.io/v1 messages.

The known-good bytes are written out by hand from the field numbers of apimachinery's generated.proto
and from what Go's serializer writes (Unknown.NestedMarshalTo: every envelope field, even empty; map
entries sorted by key), not produced by the code under test.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apis.proto.k8s.io.apimachinery.pkg.apis.meta.v1 import generated_pb2 as meta_pb2
from apis.runtime import protobuf
from apis.runtime.protobuf import Envelope, MalformedProtobufError, NotProtobufError

META_V1 = "meta.k8s.io/v1"
LIST_KIND = "PartialObjectMetadataList"

# ObjectMeta{name: margherita, namespace: default, creationTimestamp: 1700000000s, labels: a=1, b=2}
OBJECT_META = (
    b"\x0a\x0amargherita"  # 1 name
    b"\x1a\x07default"  # 3 namespace
    b"\x42\x06\x08\x80\xe2\xcf\xaa\x06"  # 8 creationTimestamp: Time{1 seconds: 1700000000}
    b"\x5a\x06\x0a\x01a\x12\x011"  # 11 labels entry {1 key: a, 2 value: 1}
    b"\x5a\x06\x0a\x01b\x12\x012"  # 11 labels entry {b: 2}, after a
)
assert len(OBJECT_META) == 0x2D
# PartialObjectMetadataList{metadata: ListMeta{resourceVersion: 7}, items: [{metadata: OBJECT_META}]}
LIST = (
    b"\x0a\x03\x12\x017"  # 1 metadata: ListMeta{2 resourceVersion: 7}
    b"\x12\x2f\x0a\x2d" + OBJECT_META  # 2 items: PartialObjectMetadata{1 metadata}
)
assert len(LIST) == 0x36
TYPE_META = b"\x0a\x0e" + META_V1.encode() + b"\x12\x19" + LIST_KIND.encode()
assert len(TYPE_META) == 0x2B
ENCODED_LIST = b"".join(
    [
        b"k8s\x00",
        b"\x0a\x2b" + TYPE_META,  # 1 typeMeta
        b"\x12\x36" + LIST,  # 2 raw
        b"\x1a\x00",  # 3 contentEncoding, empty
        b"\x22\x00",  # 4 contentType, empty
    ]
)
RAW_START = 4 + 2 + len(TYPE_META)


def _object_meta() -> meta_pb2.ObjectMeta:
    meta = meta_pb2.ObjectMeta(name="margherita", namespace="default")
    meta.creationTimestamp.seconds = 1700000000
    meta.labels["b"] = "2"  # inserted out of order: the encoding sorts them as Go does
    meta.labels["a"] = "1"
    return meta


def _list() -> meta_pb2.PartialObjectMetadataList:
    items = meta_pb2.PartialObjectMetadataList()
    items.metadata.resourceVersion = "7"
    items.items.add().metadata.CopyFrom(_object_meta())
    return items


def test_a_list_encodes_to_the_bytes_go_writes() -> None:
    assert protobuf.encode_message(META_V1, LIST_KIND, _list()) == ENCODED_LIST


def test_the_known_bytes_decode_to_the_list() -> None:
    envelope, decoded = protobuf.decode_message(ENCODED_LIST, meta_pb2.PartialObjectMetadataList)
    assert envelope == Envelope(api_version=META_V1, kind=LIST_KIND, raw=LIST)
    assert decoded == _list()
    assert dict(decoded.items[0].metadata.labels) == {"a": "1", "b": "2"}


def test_object_meta_round_trips_through_the_envelope() -> None:
    data = protobuf.encode_message(META_V1, "ObjectMeta", _object_meta())
    assert protobuf.recognizes(data)
    envelope, decoded = protobuf.decode_message(data, meta_pb2.ObjectMeta)
    assert (envelope.api_version, envelope.kind, envelope.raw) == (META_V1, "ObjectMeta", OBJECT_META)
    assert decoded == _object_meta()


def test_an_envelope_keeps_every_field() -> None:
    envelope = Envelope(
        api_version="restaurant.programming-kubernetes.info/v1beta1",
        kind="Pizza",
        raw=b"\x0a\x00",
        content_encoding="gzip",
        content_type="application/vnd.kubernetes.protobuf",
    )
    assert protobuf.decode(protobuf.encode(envelope)) == envelope


_names = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=40)


@settings(max_examples=60, deadline=None)
@given(
    names=st.lists(_names, max_size=5),
    labels=st.dictionaries(_names, _names, max_size=5),
    resource_version=_names,
    remaining=st.integers(min_value=-(2**63), max_value=2**63 - 1),
)
def test_partial_object_metadata_lists_round_trip(
    names: list[str], labels: dict[str, str], resource_version: str, remaining: int
) -> None:
    items = meta_pb2.PartialObjectMetadataList()
    items.metadata.resourceVersion = resource_version
    items.metadata.remainingItemCount = remaining
    for name in names:
        item = items.items.add()
        item.metadata.name = name
        item.metadata.labels.update(labels)
    data = protobuf.encode_message(META_V1, LIST_KIND, items)
    envelope, decoded = protobuf.decode_message(data, meta_pb2.PartialObjectMetadataList)
    assert (envelope.api_version, envelope.kind) == (META_V1, LIST_KIND)
    assert decoded == items
    # Deterministic: the same list is the same bytes, whatever order its labels were set in.
    assert protobuf.encode_message(META_V1, LIST_KIND, decoded) == data


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "empty data"),
        (b"k8s", "does not appear to be a protobuf message"),
        (b"k8s\x01" + ENCODED_LIST[4:], "does not appear to be a protobuf message"),
        (b'{"apiVersion":"meta.k8s.io/v1","kind":"PartialObjectMetadataList"}', "does not appear"),
        (b"k8s\x00", "empty body"),
    ],
    ids=["empty", "shorter-than-magic", "wrong-magic", "json-body", "magic-only"],
)
def test_bytes_without_the_envelope_are_not_protobuf(data: bytes, message: str) -> None:
    assert not protobuf.recognizes(data) or data == b"k8s\x00"
    with pytest.raises(NotProtobufError, match=message):
        protobuf.decode(data)


@pytest.mark.parametrize(
    "cut",
    [*range(5, RAW_START), *range(RAW_START + 1, RAW_START + 2 + len(LIST))],
)
def test_an_envelope_cut_inside_a_field_is_malformed(cut: int) -> None:
    with pytest.raises(MalformedProtobufError, match="unable to decode the protobuf envelope"):
        protobuf.decode(ENCODED_LIST[:cut])


@pytest.mark.parametrize(
    "data",
    [
        b"k8s\x00\xff\xff\xff\xff",  # a varint tag that never ends
        b"k8s\x00\x0f",  # wire type 7 does not exist
        b"k8s\x00\x0a\x05\x0a\x01",  # typeMeta longer than the body
        b"k8s\x00\x0a\x03\x12\x01\xff",  # kind not UTF-8
    ],
    ids=["endless-varint", "bad-wire-type", "overlong-length", "kind-not-utf8"],
)
def test_garbage_after_the_magic_is_malformed(data: bytes) -> None:
    with pytest.raises(MalformedProtobufError):
        protobuf.decode(data)


def test_a_payload_that_is_not_the_message_is_malformed() -> None:
    data = protobuf.encode(Envelope(api_version=META_V1, kind=LIST_KIND, raw=b"\x0a\x09\x12"))
    assert protobuf.decode(data).kind == LIST_KIND
    with pytest.raises(MalformedProtobufError, match=f"{META_V1} {LIST_KIND}"):
        protobuf.decode_message(data, meta_pb2.PartialObjectMetadataList)
