"""Our server answers the Go sample-apiserver's protobuf questions with the same message structure.

tests/apis/fixtures/go_protobuf/ holds what sample-apiserver 1.36.2 answered to a script of writes
and questions (its record.py). The same script runs here against our server, which serves the same
wardle kinds: every answer must have Go's status and Content-Type, and decoded with the same
generated messages, the same fields present at every depth (values differ: uids, timestamps and
resourceVersions are each server's own). Watches are compared event by event the same way.
"""

from __future__ import annotations

import asyncio
import json
import struct
from pathlib import Path
from typing import Any

import pytest
from google.protobuf.message import Message

from apis.proto.k8s.io.apimachinery.pkg.apis.meta.v1 import generated_pb2 as meta_pb2
from apis.runtime import protobuf
from apis.wardle.proto.v1alpha1 import generated_pb2 as wardle_pb2
from tests.apis.fixtures.go_protobuf import record
from tests.fixtures.server import RunningServer

GO = Path(record.__file__).parent
MESSAGES: dict[str, type[Message]] = {
    "PartialObjectMetadata": meta_pb2.PartialObjectMetadata,
    "PartialObjectMetadataList": meta_pb2.PartialObjectMetadataList,
    "Status": meta_pb2.Status,
    "Flunder": wardle_pb2.Flunder,
}
# sample-apiserver has no protobuf for its kinds (406); ours has. A watch from resourceVersion 1 is
# a 410 only where history was compacted, which depends on each server's storage, not on the format.
DIFFERENT_ON_PURPOSE = {"get-flunder.protobuf", "watch-expired.protobuf"}


def shape(message: Message) -> list[tuple[str, Any]]:
    """The fields present, recursively, without their values; map fields with their keys."""
    out: list[tuple[str, Any]] = []
    for descriptor, value in message.ListFields():
        if descriptor.message_type is not None and descriptor.message_type.GetOptions().map_entry:
            out.append((descriptor.name, sorted(value)))
        elif descriptor.message_type is not None and descriptor.is_repeated:
            out.append((descriptor.name, [shape(item) for item in value]))
        elif descriptor.message_type is not None:
            out.append((descriptor.name, shape(value)))
        else:
            out.append((descriptor.name, len(value) if descriptor.is_repeated else None))
    return out


def decoded(body: bytes) -> tuple[str, str, list[tuple[str, Any]]]:
    envelope = protobuf.decode(body)
    message = MESSAGES[envelope.kind]()
    message.ParseFromString(envelope.raw)
    return envelope.api_version, envelope.kind, shape(message)


def events(body: bytes) -> list[tuple[str, tuple[str, str, list[tuple[str, Any]]]]]:
    """A protobuf watch stream: each frame's event type and its object's structure.

    Progress bookmarks (those not marking the end of the initial events) are left out: both servers
    send one two seconds before the deadline, but Go's cacher dispatches them on a jittered
    one-second tick from one-second buckets, so within these few-second watches it may or may not."""
    out = []
    while body:
        (size,) = struct.unpack(">I", body[:4])
        event = meta_pb2.WatchEvent.FromString(body[4 : 4 + size])
        body = body[4 + size :]
        if event.type == "BOOKMARK" and "k8s.io/initial-events-end" not in _annotations(event.object.raw):
            continue
        out.append((event.type, decoded(event.object.raw)))
    return out


def _annotations(raw: bytes) -> dict[str, str]:
    envelope = protobuf.decode(raw)
    message = MESSAGES[envelope.kind]()
    message.ParseFromString(envelope.raw)
    return dict(message.metadata.annotations)  # type: ignore[attr-defined]


def answers(directory: Path) -> dict[str, dict[str, Any]]:
    return {answer["name"]: answer for answer in json.loads((directory / "index.json").read_text())}


@pytest.fixture
async def ours(embedded_server: RunningServer, tmp_path: Path) -> Path:
    """The recording script's answers from our server, in a directory of their own."""
    port = int(embedded_server.url.rsplit(":", 1)[1])
    certs = embedded_server.cert_dir
    client = record.Client(port, str(certs / "admin.crt"), str(certs / "admin.key"))
    out = tmp_path / "ours"
    out.mkdir()
    await asyncio.to_thread(record.record, client, out)
    return out


async def test_every_protobuf_answer_has_go_structure(ours: Path) -> None:
    go, mine = answers(GO), answers(ours)
    assert mine.keys() == go.keys()
    compared = 0
    for name, theirs in go.items():
        if not name.endswith(".protobuf") or name in DIFFERENT_ON_PURPOSE:
            continue
        answer = mine[name]
        assert (answer["status"], answer["contentType"]) == (theirs["status"], theirs["contentType"]), name
        ours_body, go_body = (ours / answer["file"]).read_bytes(), (GO / theirs["file"]).read_bytes()
        if theirs["contentType"].endswith(";stream=watch"):
            assert events(ours_body) == events(go_body), name
        else:
            assert decoded(ours_body) == decoded(go_body), name
        compared += 1
    assert compared == 9


async def test_our_flunder_in_protobuf_where_go_answers_406(ours: Path) -> None:
    answer = answers(ours)["get-flunder.protobuf"]
    assert (answer["status"], answer["contentType"]) == (200, protobuf.CONTENT_TYPE)
    envelope = protobuf.decode((ours / answer["file"]).read_bytes())
    flunder = wardle_pb2.Flunder.FromString(envelope.raw)
    assert (envelope.kind, flunder.metadata.name, flunder.spec.reference) == (
        "Flunder",
        "pepperoni",
        "margherita",
    )
    go = answers(GO)["get-flunder.protobuf"]
    assert go["status"] == 406


async def test_a_metadata_watch_bookmark_is_partial_object_metadata_in_json_too(ours: Path) -> None:
    """kube's watch encoder transforms every event's object, a bookmark's too (Go's recording shows it)."""

    def bookmarks(directory: Path) -> list[tuple[str, str]]:
        lines = (directory / "watch-initial.json").read_text().splitlines()
        objects = [json.loads(line)["object"] for line in lines if json.loads(line)["type"] == "BOOKMARK"]
        return [(obj["apiVersion"], obj["kind"]) for obj in objects]

    assert bookmarks(GO) == [("meta.k8s.io/v1", "PartialObjectMetadata")]
    assert set(bookmarks(ours)) == {("meta.k8s.io/v1", "PartialObjectMetadata")}
