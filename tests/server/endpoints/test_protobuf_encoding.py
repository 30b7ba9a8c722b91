"""Protobuf answers built from memoized parts: a LIST equals the whole list message, and a watch
event fanned out to many watchers is encoded once per version and format.

Built over the real restaurant installation on an embedded store, as server/config.py builds it.
"""

from __future__ import annotations

import orjson
import pytest

from apis.proto.k8s.io.apimachinery.pkg.apis.meta.v1 import generated_pb2 as meta_pb2
from apis.restaurant.v1beta1 import generated_pb2 as restaurant_v1beta1
from apis.runtime import protobuf as wire
from apis.runtime.proto_json import to_message
from registry.generic.cache import stored
from registry.generic.cache.stored import StoredObject
from registry.generic.options import ObjectList, WatchEvent
from server.api_groups import ApiGroupsOptions
from server.endpoints import protobuf
from server.endpoints.negotiation import PROTOBUF, Output
from server.endpoints.registry import build_registry
from server.endpoints.render import list_meta
from server.endpoints.scope import ResourceScope
from server.endpoints.table import partial_object_metadata_list
from server.endpoints.watch import _Encoder
from storage.embedded import EmbeddedStorage

GROUP = "restaurant.programming-kubernetes.info"
PARTIAL = Output(PROTOBUF, "PartialObjectMetadata", "v1")
PARTIAL_LIST = Output(PROTOBUF, "PartialObjectMetadataList", "v1")


@pytest.fixture
def pizzas(embedded_storage: EmbeddedStorage) -> ResourceScope:
    installations = ApiGroupsOptions(api_groups=[GROUP]).install(embedded_storage)
    scope = build_registry(installations).lookup(GROUP, "v1beta1", "pizzas")
    assert scope is not None
    return scope


def pizza(scope: ResourceScope, name: str, revision: int) -> StoredObject:
    data = {
        "apiVersion": f"{GROUP}/v1beta1",
        "kind": "Pizza",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": f"uid-{name}",
            "labels": {"b": "2", "a": "1"},
            "annotations": {"z": "last", "m": "middle"},
            "creationTimestamp": "2026-11-28T10:00:00Z",
        },
        "spec": {"toppings": [{"name": "ham", "quantity": revision}]},
    }
    hub = scope.codec.decode(orjson.dumps(data), revision)
    fields = {"metadata.name": name, "metadata.namespace": "default"}
    return StoredObject.from_hub(scope.codec, f"/pizzas/default/{name}", hub, fields, keep_hub=False)


def test_a_list_is_the_whole_list_message_byte_for_byte(pizzas: ResourceScope) -> None:
    objects = [pizza(pizzas, f"p{i}", 10 + i) for i in range(5)]
    result = ObjectList(items=objects, resource_version="42", continue_token="next")
    meta = list_meta(result)

    joined = b"".join(protobuf.list_parts(pizzas, result, meta, Output(PROTOBUF)))
    whole = {"metadata": meta, "items": [obj.versioned("v1beta1") for obj in objects]}
    expected = wire.encode_message(
        f"{GROUP}/v1beta1", "PizzaList", to_message(whole, restaurant_v1beta1.PizzaList)
    )
    assert joined == expected

    joined = b"".join(protobuf.list_parts(pizzas, result, meta, PARTIAL_LIST))
    partial = partial_object_metadata_list(whole["items"], meta, "meta.k8s.io/v1")
    expected = wire.encode_message(
        "meta.k8s.io/v1", "PartialObjectMetadataList", to_message(partial, meta_pb2.PartialObjectMetadataList)
    )
    assert joined == expected

    empty = ObjectList(items=[], resource_version="42")
    assert b"".join(
        protobuf.list_parts(pizzas, empty, list_meta(empty), Output(PROTOBUF))
    ) == wire.encode_message(
        f"{GROUP}/v1beta1",
        "PizzaList",
        to_message({"metadata": list_meta(empty)}, restaurant_v1beta1.PizzaList),
    )


def test_a_json_client_makes_no_other_encoding(pizzas: ResourceScope) -> None:
    obj = pizza(pizzas, "json-only", 3)
    before = stored.encodings_made()
    obj.json("v1beta1")
    obj.json("v1alpha1")
    assert stored.encodings_made() == before
    assert obj._encoded is None  # no memory spent on formats nobody asked for


def test_watch_fan_out_encodes_once_per_version_and_format(pizzas: ResourceScope) -> None:
    obj = pizza(pizzas, "fan", 7)
    event = WatchEvent("ADDED", obj, 7, encodings={})
    kinds = [_Encoder(pizzas, Output(PROTOBUF), "Metadata") for _ in range(1000)]
    metas = [_Encoder(pizzas, PARTIAL, "Metadata") for _ in range(1000)]
    before = stored.encodings_made()

    frames = {encoder.event(event) for encoder in kinds}
    partial_frames = {encoder.event(event) for encoder in metas}

    # One message encoding per form (the kind in v1beta1, its metadata only), one frame each.
    assert stored.encodings_made() - before == 2
    assert len(frames) == 1 and len(partial_frames) == 1
    # A later GET (or LIST) of the object reuses the same message bytes.
    protobuf.object_body(pizzas, obj, Output(PROTOBUF))
    assert stored.encodings_made() - before == 2

    [frame] = frames
    assert int.from_bytes(frame[:4], "big") == len(frame) - 4
    watch_event = meta_pb2.WatchEvent()
    watch_event.ParseFromString(frame[4:])
    assert watch_event.type == "ADDED"
    assert watch_event.object.raw == protobuf.object_body(pizzas, obj, Output(PROTOBUF))
    envelope, message = wire.decode_message(watch_event.object.raw, restaurant_v1beta1.Pizza)
    assert (envelope.api_version, envelope.kind) == (f"{GROUP}/v1beta1", "Pizza")
    assert message.spec.toppings[0].quantity == 7


def test_bookmark_frames_carry_only_the_revision(pizzas: ResourceScope) -> None:
    frame = _Encoder(pizzas, PARTIAL, "Metadata").event(
        WatchEvent("BOOKMARK", None, 99, initial_events_end=True)
    )
    event = meta_pb2.WatchEvent()
    event.ParseFromString(frame[4:])
    envelope, partial = wire.decode_message(event.object.raw, meta_pb2.PartialObjectMetadata)
    assert (event.type, envelope.kind) == ("BOOKMARK", "PartialObjectMetadata")
    assert partial.metadata.resourceVersion == "99"
    assert dict(partial.metadata.annotations) == {"k8s.io/initial-events-end": "true"}
    # As gogo writes a Go struct: the non-pointer fields are there, empty.
    assert partial.metadata.HasField("name") and partial.metadata.name == ""
