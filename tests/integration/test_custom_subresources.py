"""Custom subresources of pizzas over HTTPS: the `bill` getter and the `oven` streaming connecter.

The bill is computed per request from the toppings' current prices; the oven log is replayed from the
storage history of the pizza's key (both backends, compaction included) and followed until deletion,
as chunked text or over kube's v5.channel.k8s.io WebSocket protocol.
"""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import pytest

from tests.integration.conftest import READ_TIMEOUT

GROUP = "restaurant.programming-kubernetes.info"
MERGE = "application/merge-patch+json"


def bill_path(api: Any, name: str, version: str = "v1beta1", namespace: str = "default") -> str:
    return api.pizzas_path(version, name, namespace) + "/bill"


def oven_path(api: Any, name: str, namespace: str = "default") -> str:
    return api.pizzas_path("v1beta1", name, namespace) + "/oven"


async def _pizza(api: Any, name: str, toppings: list[tuple[str, int]], replicas: int | None = None) -> Any:
    body = api.pizza(name, [{"name": t, "quantity": q} for t, q in toppings])
    if replicas is not None:
        body["spec"]["replicas"] = replicas
    r = await api.post(api.pizzas_path(), body)
    assert r.status == 201, r
    return r.body


async def test_bill_lines_and_total_follow_current_prices(api) -> None:
    await api.create_toppings("ham", cost=2)
    await api.create_toppings("cheese", cost=1.5)
    await _pizza(api, "hawaii", [("ham", 2), ("cheese", 1)])

    r = await api.get(bill_path(api, "hawaii"))
    assert r.status == 200, r
    assert r.body == {
        "apiVersion": f"{GROUP}/v1beta1",
        "kind": "Bill",
        "metadata": {"name": "hawaii", "namespace": "default"},
        "lines": [
            {"topping": "ham", "quantity": 2, "unitCost": 2, "cost": 4},
            {"topping": "cheese", "quantity": 1, "unitCost": 1.5, "cost": 1.5},
        ],
        "total": 5.5,
        "complete": True,
    }
    assert b'"cost":4}' in r.raw  # an int price times an int quantity stays an int
    # The URL's version names the answer.
    r = await api.get(bill_path(api, "hawaii", "v1alpha1"))
    assert r.status == 200, r
    assert r.body["apiVersion"] == f"{GROUP}/v1alpha1"

    # A price change shows in the very next bill.
    r = await api.patch(api.toppings_path(name="ham"), {"spec": {"cost": 3}}, MERGE)
    assert r.status == 200, r
    r = await api.get(bill_path(api, "hawaii"))
    assert r.body["lines"][0] == {"topping": "ham", "quantity": 2, "unitCost": 3, "cost": 6}
    assert r.body["total"] == 7.5

    # A topping that is gone has no price: the bill says it is incomplete.
    r = await api.delete(api.toppings_path(name="cheese"))
    assert r.status == 200, r
    r = await api.get(bill_path(api, "hawaii"))
    assert r.body["lines"] == [
        {"topping": "ham", "quantity": 2, "unitCost": 3, "cost": 6},
        {"topping": "cheese", "quantity": 1},
    ]
    assert (r.body["total"], r.body["complete"]) == (6, False)


async def test_bill_table(api) -> None:
    await api.create_toppings("ham", cost=2)
    await _pizza(api, "hawaii", [("ham", 3)])
    r = await api.get(bill_path(api, "hawaii"), headers={"Accept": api.TABLE_ACCEPT})
    assert r.status == 200, r
    assert r.headers["Content-Type"] == "application/json;as=Table;v=v1;g=meta.k8s.io"
    table = r.body
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Lines", "Total", "Age"]
    assert [row["cells"][:3] for row in table["rows"]] == [["hawaii", 1, 6]]
    assert table["rows"][0]["object"]["kind"] == "PartialObjectMetadata"
    r = await api.get(bill_path(api, "hawaii"), headers={"Accept": "application/yaml"})
    assert r.status == 200, r
    assert "kind: Bill" in r.text


async def test_bill_and_oven_bad_requests(api) -> None:
    await api.create_toppings("ham")
    # The pizza missing: the pizzas' 404.
    for path in (bill_path(api, "nope"), oven_path(api, "nope")):
        r = await api.get(path)
        assert r.status == 404, r
        assert r.body["reason"] == "NotFound"
        assert r.body["details"] == {"name": "nope", "group": GROUP, "kind": "pizzas"}
    await _pizza(api, "p", [("ham", 1)])
    # A verb the subresource does not serve: kube's 405 MethodNotAllowed Status, nothing written.
    for method in ("PUT", "POST", "PATCH", "DELETE"):
        for path in (bill_path(api, "p"), oven_path(api, "p")):
            r = await api.request(method, path, json={}, headers={"Content-Type": MERGE})
            assert r.status == 405, (method, path, r)
            assert (r.body["kind"], r.body["reason"]) == ("Status", "MethodNotAllowed")
    r = await api.get(api.pizzas_path(name="p"))
    assert r.status == 200 and r.body["metadata"]["generation"] == 1, r
    # An unknown subresource, a custom one of another resource, and the namespace left out: 404.
    for path in (
        api.pizzas_path(name="p") + "/receipt",
        api.toppings_path(name="ham") + "/bill",
        f"/apis/{GROUP}/v1beta1/pizzas/p/bill",
    ):
        r = await api.get(path)
        assert r.status == 404, (path, r)
    # Oven options that do not decode are a 400, decoded but out of range a 422 (as pods/log).
    for query, code, message in (
        ({"tailLines": "x"}, 400, 'strconv.ParseInt: parsing "x": invalid syntax'),
        ({"sinceSeconds": "1.5"}, 400, 'strconv.ParseInt: parsing "1.5": invalid syntax'),
        ({"sinceTime": "yesterday"}, 400, 'parsing time "yesterday"'),
        ({"tailLines": "-1"}, 422, "tailLines: Invalid value: -1: must be greater than or equal to 0"),
        ({"sinceSeconds": "0"}, 422, "sinceSeconds: Invalid value: 0: must be greater than 0"),
        (
            {"sinceSeconds": "5", "sinceTime": "2024-01-01T00:00:00Z"},
            422,
            "at most one of `sinceTime` or `sinceSeconds` may be specified",
        ),
    ):
        r = await api.get(oven_path(api, "p"), params=query)
        assert r.status == code, (query, r)
        assert message in r.body["message"], (query, r)
        if code == 422:
            assert r.body["details"]["kind"] == "PizzaOvenOptions"


async def _bake(api: Any, name: str) -> None:
    """Three changes of baking state after the create: spec.replicas 1 -> 3, status.replicas unset -> 2,
    then a label (no line)."""
    r = await api.patch(api.pizzas_path(name=name), {"spec": {"replicas": 3}}, MERGE)
    assert r.status == 200, r
    r = await api.patch(api.pizzas_path(name=name) + "/status", {"status": {"replicas": 2}}, MERGE)
    assert r.status == 200, r
    r = await api.patch(api.pizzas_path(name=name), {"metadata": {"labels": {"a": "b"}}}, MERGE)
    assert r.status == 200, r


BAKED = [
    "created: spec.replicas=1",
    "spec.replicas changed: 1 -> 3",
    "status.replicas changed: unset -> 2",
]


async def test_oven_log_and_its_parameters(any_api) -> None:
    api = any_api
    await api.create_toppings("ham")
    created = await _pizza(api, "p", [("ham", 1)], replicas=1)
    await _bake(api, "p")

    r = await api.get(oven_path(api, "p"))
    assert r.status == 200, r
    assert r.headers["Content-Type"].startswith("text/plain")
    assert r.text.splitlines() == BAKED

    r = await api.get(oven_path(api, "p"), params={"timestamps": "true"})
    lines = r.text.splitlines()
    assert lines[0] == f"{created['metadata']['creationTimestamp']} {BAKED[0]}"
    assert [line.split(" ", 1)[1] for line in lines] == BAKED
    assert all(line[:4].isdigit() and line.split(" ", 1)[0].endswith("Z") for line in lines)

    r = await api.get(oven_path(api, "p"), params={"tailLines": "2"})
    assert r.text.splitlines() == BAKED[1:]
    r = await api.get(oven_path(api, "p"), params={"tailLines": "0"})
    assert (r.status, r.text) == (200, "")
    r = await api.get(oven_path(api, "p"), params={"sinceSeconds": "3600"})
    assert r.text.splitlines() == BAKED
    r = await api.get(oven_path(api, "p"), params={"sinceTime": "2999-01-01T00:00:00Z"})
    assert (r.status, r.text) == (200, "")
    r = await api.get(oven_path(api, "p"), params={"sinceTime": "2000-01-01T00:00:00Z", "tailLines": "1"})
    assert r.text.splitlines() == BAKED[2:]
    r = await api.get(oven_path(api, "p"), params={"follow": "false"})
    assert r.text.splitlines() == BAKED


async def _read_line(response: aiohttp.ClientResponse) -> str:
    async with asyncio.timeout(READ_TIMEOUT):
        return (await response.content.readline()).decode().rstrip("\n")


async def test_oven_follow_streams_until_the_pizza_is_deleted(any_api) -> None:
    api = any_api
    await api.create_toppings("ham")
    # A finalizer keeps the pizza after the delete, so "deletion started" is a state of its own.
    await _pizza(api, "p", [("ham", 1)], replicas=1)
    r = await api.patch(api.pizzas_path(name="p"), {"metadata": {"finalizers": ["test/hold"]}}, MERGE)
    assert r.status == 200, r
    async with (
        asyncio.timeout(READ_TIMEOUT),
        api.session.get(oven_path(api, "p"), params={"follow": "true"}) as response,
    ):
        assert response.status == 200
        assert await _read_line(response) == "created: spec.replicas=1"
        await _bake(api, "p")
        assert [await _read_line(response) for _ in range(2)] == BAKED[1:]
        r = await api.delete(api.pizzas_path(name="p"))
        assert r.status == 200, r
        assert await _read_line(response) == "deletion started"
        r = await api.patch(api.pizzas_path(name="p"), {"metadata": {"finalizers": None}}, MERGE)
        assert r.status == 200, r
        # Gone: the stream ends.
        assert await response.content.read() == b""


async def test_oven_after_compaction_starts_at_the_oldest_retained_state(storage_api) -> None:
    api = storage_api
    storage = api.extra["storage"]
    await api.create_toppings("ham")
    await _pizza(api, "p", [("ham", 1)], replicas=1)
    await _bake(api, "p")
    compacted = await storage.current_revision()
    await storage.compact(compacted)
    r = await api.patch(api.pizzas_path(name="p"), {"spec": {"replicas": 4}}, MERGE)
    assert r.status == 200, r
    r = await api.get(oven_path(api, "p"))
    assert r.status == 200, r
    assert r.text.splitlines() == [
        f"history before revision {compacted} is compacted; oldest retained state: "
        "spec.replicas=3 status.replicas=2",
        "spec.replicas changed: 3 -> 4",
    ]


async def test_oven_follow_stops_when_the_client_leaves(storage_api) -> None:
    """The server runs in this event loop: once the client is gone, no task of the stream is left."""
    api = storage_api
    await api.create_toppings("ham")
    await _pizza(api, "p", [("ham", 1)], replicas=1)
    await asyncio.sleep(0.2)
    before = len(asyncio.all_tasks())
    async with api.server.session() as session, asyncio.timeout(READ_TIMEOUT):
        response = await session.get(oven_path(api, "p"), params={"follow": "true"})
        assert await _read_line(response) == "created: spec.replicas=1"
        assert len(asyncio.all_tasks()) > before
        response.close()
    async with asyncio.timeout(READ_TIMEOUT):
        while len(asyncio.all_tasks()) > before:
            await asyncio.sleep(0.05)
    # The pizza is still served as before.
    r = await api.get(oven_path(api, "p"))
    assert r.text.splitlines() == ["created: spec.replicas=1"]


async def _channels(ws: aiohttp.ClientWebSocketResponse) -> list[tuple[int, bytes]]:
    """Every (channel, payload) until the server closes."""
    out: list[tuple[int, bytes]] = []
    async with asyncio.timeout(READ_TIMEOUT):
        async for message in ws:
            assert message.type == aiohttp.WSMsgType.BINARY, message
            out.append((message.data[0], message.data[1:]))
    return out


@pytest.mark.parametrize("protocol", ["v5.channel.k8s.io", "v4.channel.k8s.io"])
async def test_oven_over_websocket(api, protocol) -> None:
    await api.create_toppings("ham")
    await _pizza(api, "p", [("ham", 1)], replicas=1)
    await _bake(api, "p")
    async with api.session.ws_connect(oven_path(api, "p"), protocols=(protocol, "channel.k8s.io")) as ws:
        assert ws.protocol == protocol
        received = await _channels(ws)
    # An empty first message on stdout (the stream is open), the lines, then Success on the error channel.
    assert received[0] == (1, b"")
    assert b"".join(data for channel, data in received if channel == 1).decode().splitlines() == BAKED
    assert received[-1] == (3, b'{"metadata":{},"status":"Success"}')


async def test_oven_websocket_follow_until_deletion(any_api) -> None:
    api = any_api
    await api.create_toppings("ham")
    await _pizza(api, "p", [("ham", 1)], replicas=1)
    url = oven_path(api, "p") + "?follow=true&timestamps=true"
    async with api.session.ws_connect(url, protocols=("v5.channel.k8s.io",)) as ws:
        async with asyncio.timeout(READ_TIMEOUT):
            assert (await ws.receive_bytes()) == b"\x01"
            first = await ws.receive_bytes()
            assert first.startswith(b"\x01") and first.endswith(b" created: spec.replicas=1\n")
            r = await api.patch(api.pizzas_path(name="p"), {"spec": {"replicas": 2}}, MERGE)
            assert r.status == 200, r
            assert (await ws.receive_bytes()).endswith(b" spec.replicas changed: 1 -> 2\n")
            # v5's close signal for stdin is read and ignored: the stream goes on.
            await ws.send_bytes(bytes([255, 0]))
            r = await api.delete(api.pizzas_path(name="p"))
            assert r.status == 200, r
        assert await _channels(ws) == [(3, b'{"metadata":{},"status":"Success"}')]


async def test_oven_websocket_refusals(api) -> None:
    await api.create_toppings("ham")
    await _pizza(api, "p", [("ham", 1)])
    # A subprotocol the server does not speak, a missing pizza, bad options: refused before the upgrade.
    for path, protocols, code in (
        (oven_path(api, "p"), ("channel.k8s.io",), 400),
        (oven_path(api, "nope"), ("v5.channel.k8s.io",), 404),
        (oven_path(api, "p") + "?tailLines=-3", ("v5.channel.k8s.io",), 422),
    ):
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await api.session.ws_connect(path, protocols=protocols)
        assert refused.value.status == code, path


async def test_oven_follow_is_long_running(tmp_path) -> None:
    """--request-timeout cuts ordinary requests, not a followed oven log (as kube spares pods/log)."""
    from tests.fixtures.server import running_server
    from tests.integration.conftest import Api

    async with (
        running_server(tmp_path / "data", "--request-timeout=1s") as server,
        server.session() as session,
    ):
        api = Api(server, session)
        await api.create_toppings("ham")
        await _pizza(api, "p", [("ham", 1)], replicas=1)
        async with session.get(oven_path(api, "p"), params={"follow": "1"}) as response:
            assert await _read_line(response) == "created: spec.replicas=1"
            await asyncio.sleep(2.5)
            r = await api.patch(api.pizzas_path(name="p"), {"spec": {"replicas": 2}}, MERGE)
            assert r.status == 200, r
            assert await _read_line(response) == "spec.replicas changed: 1 -> 2"


async def test_discovery_openapi_and_metrics(api) -> None:
    r = await api.get(f"/apis/{GROUP}/v1beta1")
    resources = {res["name"]: res for res in r.body["resources"]}
    assert [n for n in resources if n.startswith("pizzas")] == [
        "pizzas",
        "pizzas/bill",
        "pizzas/oven",
        "pizzas/scale",
        "pizzas/status",
    ]
    assert resources["pizzas/bill"] == {
        "name": "pizzas/bill",
        "singularName": "",
        "namespaced": True,
        "kind": "Bill",
        "verbs": ["get"],
    }
    assert (resources["pizzas/oven"]["kind"], resources["pizzas/oven"]["verbs"]) == (
        "PizzaOvenOptions",
        ["get"],
    )

    accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    r = await api.get("/apis", headers={"Accept": accept})
    group = next(g for g in r.body["items"] if g["metadata"]["name"] == GROUP)
    version = next(v for v in group["versions"] if v["version"] == "v1alpha1")
    pizzas = next(res for res in version["resources"] if res["resource"] == "pizzas")
    assert [s["subresource"] for s in pizzas["subresources"]] == ["bill", "oven", "scale", "status"]
    assert pizzas["subresources"][0] == {
        "subresource": "bill",
        "responseKind": {"group": GROUP, "version": "v1alpha1", "kind": "Bill"},
        "verbs": ["get"],
    }

    r = await api.get("/openapi/v2")
    doc = r.body
    item = f"/apis/{GROUP}/v1beta1/namespaces/{{namespace}}/pizzas/{{name}}"
    bill = doc["paths"][item + "/bill"]["get"]
    assert bill["operationId"] == "readRestaurantProgrammingKubernetesInfoV1beta1NamespacedPizzaBill"
    definition = "info.programming-kubernetes.restaurant.v1beta1.Bill"
    assert bill["responses"]["200"]["schema"] == {"$ref": f"#/definitions/{definition}"}
    assert bill["x-kubernetes-group-version-kind"] == {"group": GROUP, "version": "v1beta1", "kind": "Bill"}
    assert doc["definitions"][definition]["x-kubernetes-group-version-kind"] == [
        {"group": GROUP, "version": "v1beta1", "kind": "Bill"}
    ]
    assert "total" in doc["definitions"][definition]["properties"]
    oven = doc["paths"][item + "/oven"]
    assert (
        oven["get"]["operationId"]
        == "connectRestaurantProgrammingKubernetesInfoV1beta1GetNamespacedPizzaOven"
    )
    assert oven["get"]["x-kubernetes-action"] == "connect"
    assert oven["get"]["produces"] == ["*/*"]
    assert oven["get"]["responses"]["200"] == {"description": "OK", "schema": {"type": "string"}}
    shared = [doc["parameters"][p["$ref"].rsplit("/", 1)[1]]["name"] for p in oven["parameters"]]
    assert sorted(shared) == [
        "follow",
        "name",
        "namespace",
        "sinceSeconds",
        "sinceTime",
        "tailLines",
        "timestamps",
    ]

    r = await api.get(f"/openapi/v3/apis/{GROUP}/v1alpha1")
    doc = r.body
    item = f"/apis/{GROUP}/v1alpha1/namespaces/{{namespace}}/pizzas/{{name}}"
    content = doc["paths"][item + "/bill"]["get"]["responses"]["200"]["content"]
    v3_definition = "info.programming-kubernetes.restaurant.v1alpha1.Bill"
    assert content["application/json"]["schema"] == {"$ref": f"#/components/schemas/{v3_definition}"}
    assert v3_definition in doc["components"]["schemas"]
    connect = doc["paths"][item + "/oven"]["get"]
    assert connect["responses"]["200"]["content"] == {"*/*": {"schema": {"type": "string"}}}

    # Metrics label the subresource as kube does (the request info carries it).
    await api.create_toppings("ham")
    await _pizza(api, "p", [("ham", 1)])
    assert (await api.get(bill_path(api, "p"))).status == 200
    assert (await api.get(oven_path(api, "p"))).status == 200
    metrics = (await api.get("/metrics")).text
    for sub in ("bill", "oven"):
        assert any(
            line.startswith("apiserver_request_total{")
            and 'verb="GET"' in line
            and 'resource="pizzas"' in line
            and f'subresource="{sub}"' in line
            and 'code="200"' in line
            for line in metrics.splitlines()
        ), sub
