"""proto_json against the Go sample-apiserver 1.36.2's own answers (tests/apis/fixtures/go_protobuf/).

Each question was asked of the Go server twice, in protobuf (client-go's metadata-client Accept) and
in JSON, against the same state (record.py there re-records them). Go's protobuf bytes are decoded
with our generated messages; Go's JSON answer is converted with `to_message`; the two must be the
same message field for field, presence included, and re-encode to Go's exact bytes (envelope, frames
and all). Back the other way, `from_message` of Go's message must give Go's JSON, key order included.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest
from google.protobuf.message import Message

from apis.proto.k8s.io.apimachinery.pkg.apis.meta.v1 import generated_pb2 as meta_pb2
from apis.proto.k8s.io.apimachinery.pkg.runtime import generated_pb2 as runtime_pb2
from apis.runtime import protobuf
from apis.runtime.proto_json import from_message, to_message

FIXTURES = Path(__file__).parent / "fixtures" / "go_protobuf"
INDEX = {answer["name"]: answer for answer in json.loads((FIXTURES / "index.json").read_text())}
MESSAGES: dict[str, type[Message]] = {
    "PartialObjectMetadata": meta_pb2.PartialObjectMetadata,
    "PartialObjectMetadataList": meta_pb2.PartialObjectMetadataList,
    "Status": meta_pb2.Status,
}
PROTOBUF_WATCH = "application/vnd.kubernetes.protobuf;stream=watch"
SINGLE = ["list", "list-limit", "list-fischers", "get", "get-plain", "get-fischer", "get-missing"]
WATCHES = ["watch", "watch-initial", "watch-expired"]


def body(name: str) -> bytes:
    return (FIXTURES / INDEX[name]["file"]).read_bytes()


def fields(message: Message) -> list[tuple[str, Any]]:
    """The set fields, recursively, in field order: equal exactly when presence and values are."""
    out: list[tuple[str, Any]] = []
    for descriptor, value in message.ListFields():
        if descriptor.message_type is not None and descriptor.message_type.GetOptions().map_entry:
            out.append((descriptor.name, sorted(value.items()) if not isinstance(value, Message) else value))
        elif descriptor.message_type is not None and descriptor.is_repeated:
            out.append((descriptor.name, [fields(item) for item in value]))
        elif descriptor.message_type is not None:
            out.append((descriptor.name, fields(value)))
        else:
            out.append((descriptor.name, list(value) if descriptor.is_repeated else value))
    return out


def without_item_type_meta(obj: dict[str, Any]) -> dict[str, Any]:
    """A list as a Go client re-encodes it from protobuf: the items' TypeMeta is not in the message."""
    if "items" not in obj:
        return obj
    items = [{k: v for k, v in item.items() if k not in ("kind", "apiVersion")} for item in obj["items"]]
    return {**obj, "items": items}


def assert_same_json(ours: Any, go: Any) -> None:
    """Equal values with the same key order everywhere (json.dumps keeps each dict's order)."""
    assert json.dumps(ours) == json.dumps(go)


@pytest.mark.parametrize("name", SINGLE)
def test_go_protobuf_answer_equals_our_message_of_its_json(name: str) -> None:
    proto, js = INDEX[f"{name}.protobuf"], INDEX[f"{name}.json"]
    assert proto["contentType"] == protobuf.CONTENT_TYPE
    assert proto["status"] == js["status"]
    go_bytes = body(f"{name}.protobuf")
    envelope = protobuf.decode(go_bytes)
    go_message = MESSAGES[envelope.kind]()
    go_message.ParseFromString(envelope.raw)
    go_json = json.loads(body(f"{name}.json"))
    assert (go_json["apiVersion"], go_json["kind"]) == (envelope.api_version, envelope.kind)

    ours = to_message(go_json, MESSAGES[envelope.kind])

    assert fields(ours) == fields(go_message)
    assert ours.SerializeToString(deterministic=True) == envelope.raw
    assert protobuf.encode_message(envelope.api_version, envelope.kind, ours) == go_bytes
    assert_same_json(
        from_message(go_message, api_version=envelope.api_version, kind=envelope.kind),
        without_item_type_meta(go_json),
    )


def frames(data: bytes) -> list[bytes]:
    """The length-prefixed frames of a protobuf watch stream (4 bytes big-endian, then the event)."""
    out = []
    while data:
        (size,) = struct.unpack(">I", data[:4])
        out.append(data[4 : 4 + size])
        assert len(out[-1]) == size, "truncated frame"
        data = data[4 + size :]
    return out


@pytest.mark.parametrize("name", WATCHES)
def test_go_protobuf_watch_equals_our_events_of_its_json(name: str) -> None:
    assert INDEX[f"{name}.protobuf"]["contentType"] == PROTOBUF_WATCH
    assert INDEX[f"{name}.json"]["contentType"] == "application/json"
    go_frames = frames(body(f"{name}.protobuf"))
    go_events = [json.loads(line) for line in body(f"{name}.json").splitlines()]
    assert go_frames and len(go_frames) == len(go_events)
    for frame, event in zip(go_frames, go_events, strict=True):
        # The frame is a bare WatchEvent (no magic, no Unknown); its object is a full envelope.
        assert not frame.startswith(protobuf.MAGIC)
        go_event = meta_pb2.WatchEvent()
        go_event.ParseFromString(frame)
        assert go_event.type == event["type"]
        envelope = protobuf.decode(go_event.object.raw)
        assert (envelope.api_version, envelope.kind) == (
            event["object"]["apiVersion"],
            event["object"]["kind"],
        )
        assert envelope.content_type == "" and envelope.content_encoding == ""

        ours = to_message(event["object"], MESSAGES[envelope.kind])
        go_object = MESSAGES[envelope.kind]()
        go_object.ParseFromString(envelope.raw)
        assert fields(ours) == fields(go_object)
        ours_event = meta_pb2.WatchEvent(
            type=event["type"],
            object=runtime_pb2.RawExtension(
                raw=protobuf.encode_message(envelope.api_version, envelope.kind, ours)
            ),
        )
        assert ours_event.SerializeToString(deterministic=True) == frame
        assert_same_json(
            from_message(go_object, api_version=envelope.api_version, kind=envelope.kind), event["object"]
        )


def test_go_watch_event_types_recorded() -> None:
    """The fixtures hold what the serving side must reproduce: changes, a bookmark, an error."""
    types = {
        name: [json.loads(line)["type"] for line in body(f"{name}.json").splitlines()] for name in WATCHES
    }
    assert types["watch"] == ["MODIFIED", "MODIFIED"]
    assert types["watch-initial"] == ["ADDED", "ADDED", "BOOKMARK"]
    assert types["watch-expired"] == ["ERROR"]
    bookmark = json.loads(body("watch-initial.json").splitlines()[-1])["object"]
    assert bookmark["metadata"] == {
        "resourceVersion": bookmark["metadata"]["resourceVersion"],
        "annotations": {"k8s.io/initial-events-end": "true"},
    }


def test_go_answers_406_in_protobuf_for_a_kind_without_protobuf() -> None:
    """sample-apiserver's Flunder has no generated protobuf: Go answers a protobuf Status 406."""
    answer = INDEX["get-flunder.protobuf"]
    assert (answer["status"], answer["contentType"]) == (406, protobuf.CONTENT_TYPE)
    envelope, status = protobuf.decode_message(body("get-flunder.protobuf"), meta_pb2.Status)
    assert (envelope.api_version, envelope.kind) == ("v1", "Status")
    assert from_message(status) == {
        "metadata": {},
        "status": "Failure",
        "message": "object *v1alpha1.Flunder does not implement the protobuf marshalling interface and "
        "cannot be encoded to a protobuf message",
        "reason": "NotAcceptable",
        "code": 406,
    }
    ours = to_message(from_message(status), meta_pb2.Status)
    assert protobuf.encode_message("v1", "Status", ours) == body("get-flunder.protobuf")
