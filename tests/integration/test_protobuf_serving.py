"""kube protobuf over real HTTPS: objects, lists, errors, request bodies and watch streams.

Answers are decoded with the generated messages (meta.k8s.io/v1 and the groups' own) and compared
with the same question asked in JSON, as a Go client would see them. The `kubernetes` Python
client's raw API is the independent client for one read and one write.
"""

from __future__ import annotations

import asyncio
import struct
from pathlib import Path
from typing import Any

import kubernetes
import orjson
from google.protobuf.message import Message

from apis.proto.k8s.io.apimachinery.pkg.apis.meta.v1 import generated_pb2 as meta_pb2
from apis.restaurant.v1alpha1 import generated_pb2 as restaurant_v1alpha1
from apis.restaurant.v1beta1 import generated_pb2 as restaurant_v1beta1
from apis.runtime import protobuf as wire
from apis.runtime.proto_json import from_message, to_message
from apis.wardle.proto.v1beta1 import generated_pb2 as wardle_v1beta1
from tests.integration.conftest import READ_TIMEOUT, Api

PROTOBUF = "application/vnd.kubernetes.protobuf"
META_LIST_ACCEPT = (
    f"{PROTOBUF};as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,"
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
)
META_ACCEPT = META_LIST_ACCEPT.replace("PartialObjectMetadataList", "PartialObjectMetadata")
FLUNDERS = "/apis/wardle.example.com/v1beta1/namespaces/default/flunders"


def decoded(raw: bytes, cls: type[Message]) -> tuple[wire.Envelope, Any]:
    envelope, message = wire.decode_message(raw, cls)
    return envelope, message


def as_json(raw: bytes, cls: type[Message]) -> dict[str, Any]:
    envelope, message = decoded(raw, cls)
    return from_message(message, api_version=envelope.api_version, kind=envelope.kind)


def without_item_type_meta(obj: dict[str, Any]) -> dict[str, Any]:
    items = [{k: v for k, v in item.items() if k not in ("kind", "apiVersion")} for item in obj["items"]]
    return {**obj, "items": items}


async def test_metadata_client_lists_and_gets_in_protobuf(api: Api) -> None:
    await api.create_toppings("ham", "corn")
    await api.create_pizza("m1", [{"name": "ham"}], labels={"a": "b"})
    await api.create_pizza("m2", [{"name": "corn"}])

    r = await api.get(api.pizzas_path(), headers={"Accept": META_LIST_ACCEPT})
    assert r.status == 200, r
    assert r.headers["Content-Type"] == PROTOBUF  # kube sends no as= parameters back
    envelope, listed = decoded(r.raw, meta_pb2.PartialObjectMetadataList)
    assert (envelope.api_version, envelope.kind) == ("meta.k8s.io/v1", "PartialObjectMetadataList")
    assert [item.metadata.name for item in listed.items] == ["m1", "m2"]
    assert dict(listed.items[0].metadata.labels) == {"a": "b"}
    # The same question in JSON says the same, field for field.
    j = await api.get(api.pizzas_path(), headers={"Accept": META_LIST_ACCEPT.split(",", 1)[1]})
    assert j.headers["Content-Type"].startswith("application/json;as=PartialObjectMetadataList")
    expected = to_message(j.body, meta_pb2.PartialObjectMetadataList)
    assert listed == expected

    r = await api.get(api.pizzas_path(name="m1"), headers={"Accept": META_ACCEPT})
    assert r.status == 200, r
    envelope, partial = decoded(r.raw, meta_pb2.PartialObjectMetadata)
    assert (envelope.api_version, envelope.kind) == ("meta.k8s.io/v1", "PartialObjectMetadata")
    assert partial.metadata.name == "m1"
    assert partial.metadata.resourceVersion == listed.items[0].metadata.resourceVersion


async def test_kinds_in_protobuf_say_what_json_says(api: Api) -> None:
    await api.create_toppings("ham")
    await api.create_pizza("p1", [{"name": "ham", "quantity": 2}])
    await api.create_pizza("p2", [{"name": "ham"}])
    proto = {"Accept": PROTOBUF}
    for version, module in (("v1beta1", restaurant_v1beta1), ("v1alpha1", restaurant_v1alpha1)):
        r = await api.get(api.pizzas_path(version, "p1"), headers=proto)
        assert r.status == 200, r
        assert r.headers["Content-Type"] == PROTOBUF
        assert as_json(r.raw, module.Pizza) == (await api.get(api.pizzas_path(version, "p1"))).body

        r = await api.get(api.pizzas_path(version), headers=proto)
        assert r.status == 200, r
        envelope, _ = decoded(r.raw, module.PizzaList)
        assert envelope.kind == "PizzaList"
        json_list = (await api.get(api.pizzas_path(version))).body
        assert as_json(r.raw, module.PizzaList) == without_item_type_meta(json_list)

    r = await api.get(api.toppings_path("v1beta1", "ham"), headers=proto)
    assert (
        as_json(r.raw, restaurant_v1beta1.Topping)
        == (await api.get(api.toppings_path("v1beta1", "ham"))).body
    )

    flunder = {"apiVersion": "wardle.example.com/v1beta1", "kind": "Flunder", "metadata": {"name": "f"}}
    assert (await api.post(FLUNDERS, flunder)).status == 201
    r = await api.get(f"{FLUNDERS}/f", headers=proto)
    assert r.status == 200, r
    assert as_json(r.raw, wardle_v1beta1.Flunder) == (await api.get(f"{FLUNDERS}/f")).body


async def test_table_is_json_only(api: Api) -> None:
    r = await api.get(
        api.pizzas_path(),
        headers={
            "Accept": f"{PROTOBUF};as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1;g=meta.k8s.io"
        },
    )
    assert r.status == 200, r
    assert r.body["kind"] == "Table"
    r = await api.get(api.pizzas_path(), headers={"Accept": f"{PROTOBUF};as=Table;v=v1;g=meta.k8s.io"})
    assert r.status == 406, r
    assert r.headers["Content-Type"] == "application/json"  # an error is never transformed


async def test_errors_are_protobuf_status_when_protobuf_was_asked(api: Api) -> None:
    await api.create_toppings("ham")
    r = await api.get(api.pizzas_path(name="missing"), headers={"Accept": PROTOBUF})
    assert r.status == 404, r
    assert r.headers["Content-Type"] == PROTOBUF
    envelope, status = decoded(r.raw, meta_pb2.Status)
    assert (envelope.api_version, envelope.kind) == ("v1", "Status")
    assert (status.code, status.reason, status.details.name) == (404, "NotFound", "missing")
    json_status = (await api.get(api.pizzas_path(name="missing"))).body
    assert from_message(status, api_version="v1", kind="Status") == json_status

    # client-go's metadata client: no plain protobuf entry, so its errors are JSON (kube's ErrorNegotiated).
    r = await api.get(api.pizzas_path(name="missing"), headers={"Accept": META_ACCEPT})
    assert (r.status, r.headers["Content-Type"]) == (404, "application/json")

    dup = {"Accept": PROTOBUF}
    r = await api.post(api.toppings_path(), api.topping("ham", 1), headers=dup)
    assert r.status == 409, r
    assert decoded(r.raw, meta_pb2.Status)[1].reason == "AlreadyExists"

    bad = api.pizza("bad", [{"name": "ham", "quantity": -1}])
    r = await api.post(api.pizzas_path(), bad, headers=dup)
    assert r.status == 422, r
    status = decoded(r.raw, meta_pb2.Status)[1]
    assert status.reason == "Invalid"
    assert status.details.causes[0].field.startswith("spec.toppings")


async def test_create_and_update_with_protobuf_bodies(api: Api) -> None:
    await api.create_toppings("ham", "corn")
    pizza = api.pizza("pb", [{"name": "ham", "quantity": 2}], labels={"x": "y"})
    body = wire.encode_message(pizza["apiVersion"], "Pizza", to_message(pizza, restaurant_v1beta1.Pizza))
    proto = {"Content-Type": PROTOBUF, "Accept": PROTOBUF}
    r = await api.request("POST", api.pizzas_path(), data=body, headers=proto)
    assert r.status == 201, r
    created = as_json(r.raw, restaurant_v1beta1.Pizza)
    assert created == (await api.get(api.pizzas_path(name="pb"))).body
    assert created["spec"]["toppings"] == [{"name": "ham", "quantity": 2}]
    assert created["metadata"]["labels"] == {"x": "y"}

    # An envelope with empty typeMeta is the URL's kind and version (kube's decoder defaults them).
    created["spec"]["toppings"] = [{"name": "corn", "quantity": 1}]
    body = wire.encode_message("", "", to_message(created, restaurant_v1beta1.Pizza))
    r = await api.request("PUT", api.pizzas_path(name="pb"), data=body, headers={"Content-Type": PROTOBUF})
    assert r.status == 200, r
    assert r.headers["Content-Type"] == "application/json"
    assert r.body["spec"]["toppings"] == [{"name": "corn", "quantity": 1}]

    # v1alpha1 and the defaults of the version still apply to a protobuf body.
    alpha = {
        "apiVersion": "restaurant.programming-kubernetes.info/v1alpha1",
        "kind": "Pizza",
        "metadata": {"name": "alpha"},
        "spec": {"toppings": ["ham"]},
    }
    body = wire.encode_message(alpha["apiVersion"], "Pizza", to_message(alpha, restaurant_v1alpha1.Pizza))
    r = await api.request("POST", api.pizzas_path("v1alpha1"), data=body, headers={"Content-Type": PROTOBUF})
    assert r.status == 201, r
    assert r.body["spec"]["toppings"] == ["ham"]


async def test_malformed_protobuf_bodies_are_4xx_and_write_nothing(api: Api) -> None:
    await api.create_toppings("ham")
    pizza = api.pizza("bad", [{"name": "ham"}])
    good = wire.encode_message(pizza["apiVersion"], "Pizza", to_message(pizza, restaurant_v1beta1.Pizza))
    other_kind = wire.encode_message(
        pizza["apiVersion"], "Topping", to_message(pizza, restaurant_v1beta1.Pizza)
    )
    other_version = wire.encode_message(
        "restaurant.programming-kubernetes.info/v1alpha1",
        "Pizza",
        to_message(pizza, restaurant_v1beta1.Pizza),
    )
    cases = {
        "wrong magic": b"k8x\x00" + good[4:],
        "truncated envelope": good[:12],
        "truncated object": good[:-9],
        "json as protobuf": orjson.dumps(pizza),
        "empty": b"",
        "other kind": other_kind,
        "other version": other_version,
    }
    for name, body in cases.items():
        r = await api.request("POST", api.pizzas_path(), data=body, headers={"Content-Type": PROTOBUF})
        assert r.status == 400, (name, r)
        assert r.body["kind"] == "Status" and r.body["reason"] == "BadRequest", (name, r)
    r = await api.request("POST", api.pizzas_path(), data=b"{}", headers={"Content-Type": PROTOBUF})
    assert "the object provided is unrecognized (must be of type Pizza)" in r.body["message"], r
    assert "provided data does not appear to be a protobuf message" in r.body["message"], r
    assert (await api.get(api.pizzas_path(name="bad"))).status == 404

    # Patches stay JSON, as in kube: 415.
    r = await api.patch(api.pizzas_path(name="bad"), good, PROTOBUF)
    assert r.status == 415, r


async def test_watch_in_protobuf_frames(api: Api) -> None:
    await api.create_toppings("ham")
    listed = await api.get(api.pizzas_path())
    since = listed.body["metadata"]["resourceVersion"]
    params = {"watch": "1", "resourceVersion": since, "allowWatchBookmarks": "true", "timeoutSeconds": "5"}
    for accept, cls in ((PROTOBUF, restaurant_v1beta1.Pizza), (META_ACCEPT, meta_pb2.PartialObjectMetadata)):
        async with api.session.get(api.pizzas_path(), params=params, headers={"Accept": accept}) as response:
            assert response.status == 200
            assert response.headers["Content-Type"] == f"{PROTOBUF};stream=watch"
            if cls is restaurant_v1beta1.Pizza:
                await api.create_pizza("w1", [{"name": "ham"}])
            frames = await read_frames(response, 1)
        event = frames[0]
        assert event.type == "ADDED"
        envelope, obj = decoded(event.object.raw, cls)
        assert obj.metadata.name == "w1"
        get = await api.get(api.pizzas_path(name="w1"), headers={"Accept": accept})
        assert event.object.raw == get.raw  # the object is the same envelope a GET answers

    # A resourceVersion the store has not reached: one ERROR frame carrying a protobuf Status.
    params = {"watch": "1", "resourceVersion": "999999", "timeoutSeconds": "5"}
    async with api.session.get(api.pizzas_path(), params=params, headers={"Accept": PROTOBUF}) as response:
        frames = await read_frames(response, 2)
    assert [frame.type for frame in frames] == ["ERROR"]
    envelope, status = decoded(frames[0].object.raw, meta_pb2.Status)
    assert (envelope.api_version, envelope.kind, status.code) == ("v1", "Status", 504)
    assert status.message.startswith("Too large resource version: 999999")


async def read_frames(response: Any, count: int) -> list[Any]:
    """Up to `count` length-prefixed WatchEvents (fewer when the stream ends), bounded in time."""
    events: list[Any] = []
    async with asyncio.timeout(READ_TIMEOUT):
        while len(events) < count:
            try:
                head = await response.content.readexactly(4)
            except asyncio.IncompleteReadError:
                break
            data = await response.content.readexactly(struct.unpack(">I", head)[0])
            event = meta_pb2.WatchEvent()
            event.ParseFromString(data)
            events.append(event)
    return events


def _python_client(kubeconfig: Path, path: str) -> tuple[bytes, bytes]:
    """One write and one read through the `kubernetes` client's raw API, in protobuf."""
    client = kubernetes.config.new_client_from_config(config_file=str(kubeconfig))
    try:
        pizza = Api.pizza("py", [{"name": "ham"}])
        body = wire.encode_message(pizza["apiVersion"], "Pizza", to_message(pizza, restaurant_v1beta1.Pizza))
        headers = {"Accept": PROTOBUF, "Content-Type": PROTOBUF}
        request = client.param_serialize(
            "POST", path, header_params=headers, body=body, auth_settings=["BearerToken"]
        )
        created = client.call_api(*request, _request_timeout=READ_TIMEOUT)
        created.read()
        request = client.param_serialize(
            "GET", f"{path}/py", header_params=headers, auth_settings=["BearerToken"]
        )
        read = client.call_api(*request, _request_timeout=READ_TIMEOUT)
        read.read()
        assert (created.status, read.status) == (201, 200)
        return created.data, read.data
    finally:
        client.close()


async def test_python_kubernetes_client_reads_and_writes_protobuf(api: Api) -> None:
    await api.create_toppings("ham")
    created, read = await asyncio.to_thread(_python_client, api.server.kubeconfig, api.pizzas_path())
    assert as_json(created, restaurant_v1beta1.Pizza)["metadata"]["name"] == "py"
    assert as_json(read, restaurant_v1beta1.Pizza) == (await api.get(api.pizzas_path(name="py"))).body
