"""Through a real kube-aggregator (kube-apiserver 1.36.2): what a CRD cannot do, RBAC, the timeout.

One loopback cluster and one server of ours for the whole module (tests/fixtures/kube_aggregator.py),
registered for restaurant v1beta1 and v1alpha1. The cluster runs with `--request-timeout=8s`, so
that what kube-apiserver's timeout filter does to a streaming subresource that is not one of its own
(`log`, `exec`, `attach`, `portforward`, `proxy`) shows within the module's time; every other request
here ends well before it. Skipped when ../shared (the harness and its binaries) is not there.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import aiohttp
import orjson
import pytest
import pytest_asyncio

from apis.proto.k8s.io.apimachinery.pkg.apis.meta.v1 import generated_pb2 as meta_pb2
from apis.runtime import protobuf
from tests.fixtures.kube_aggregator import (
    COMMAND_TIMEOUT,
    BehindAggregator,
    Completed,
    behind_kube_aggregator,
    finish,
    missing_prerequisites,
)

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio(loop_scope="module")]

GROUP = "restaurant.programming-kubernetes.info"
REQUEST_TIMEOUT = 8.0  # kube-apiserver's --request-timeout in this module
PIZZAS = f"/apis/{GROUP}/v1beta1/namespaces/default/pizzas"
MENU = f"""
apiVersion: {GROUP}/v1beta1
kind: Topping
metadata: {{name: ham}}
spec: {{cost: 2}}
---
apiVersion: {GROUP}/v1beta1
kind: Topping
metadata: {{name: pineapple}}
spec: {{cost: 1.25}}
"""


def pizza(name: str) -> str:
    return f"""
apiVersion: {GROUP}/v1beta1
kind: Pizza
metadata: {{name: {name}, namespace: default}}
spec:
  replicas: 1
  toppings: [{{name: ham, quantity: 2}}, {{name: pineapple, quantity: 1}}]
"""


def bill(name: str, version: str = "v1beta1") -> dict[str, object]:
    return {
        "apiVersion": f"{GROUP}/{version}",
        "kind": "Bill",
        "metadata": {"name": name, "namespace": "default"},
        "lines": [
            {"topping": "ham", "quantity": 2, "unitCost": 2, "cost": 4},
            {"topping": "pineapple", "quantity": 1, "unitCost": 1.25, "cost": 1.25},
        ],
        "total": 5.25,
        "complete": True,
    }


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def behind(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[BehindAggregator]:
    reason = missing_prerequisites()
    if reason:
        pytest.skip(reason)
    workdir = tmp_path_factory.mktemp("kube-aggregator")
    up_env = {"APISERVER_EXTRA_ARGS": f"--request-timeout={REQUEST_TIMEOUT:g}s"}
    async with behind_kube_aggregator(workdir, up_env) as behind:
        await behind.kubectl_ok("apply", "-f", "-", stdin=MENU)
        yield behind


async def bake(behind: BehindAggregator, name: str) -> str:
    """A pizza of ham and pineapple in namespace default; its path."""
    await behind.kubectl_ok("apply", "-f", "-", stdin=pizza(name))
    return f"{PIZZAS}/{name}"


async def line(process: asyncio.subprocess.Process) -> str:
    assert process.stdout is not None
    async with asyncio.timeout(COMMAND_TIMEOUT):
        return (await process.stdout.readline()).decode().rstrip("\n")


async def stop(process: asyncio.subprocess.Process) -> None:
    if process.returncode is None:
        process.kill()
        await process.wait()


async def test_kubectl_raw_reads_the_bill_and_the_oven_log(behind: BehindAggregator) -> None:
    path = await bake(behind, "hawaii")
    assert orjson.loads(await behind.kubectl_ok("get", "--raw", path + "/bill")) == bill("hawaii")
    # The v1alpha1 APIService reaches the same server: the bill speaks the URL's version.
    alpha = path.replace("/v1beta1/", "/v1alpha1/")
    assert orjson.loads(await behind.kubectl_ok("get", "--raw", alpha + "/bill")) == bill(
        "hawaii", "v1alpha1"
    )
    assert await behind.kubectl_ok("get", "--raw", path + "/oven") == "created: spec.replicas=1\n"


async def test_kubectl_follows_the_oven_until_the_pizza_is_deleted(behind: BehindAggregator) -> None:
    """Within the aggregator's request timeout: every change streams, and deletion ends it cleanly."""
    path = await bake(behind, "followed")
    follow = await behind.start_kubectl("get", "--raw", path + "/oven?follow=true")
    try:
        assert await line(follow) == "created: spec.replicas=1"
        await behind.kubectl_ok("scale", "pizza", "followed", "--replicas=4")
        assert await line(follow) == "spec.replicas changed: 1 -> 4"
        await behind.kubectl_ok("delete", "pizza", "followed")
        done = await finish(follow)
        assert (done.code, done.out) == (0, ""), done.err
    finally:
        await stop(follow)


async def test_a_websocket_client_follows_the_oven(behind: BehindAggregator) -> None:
    """aiohttp with kube's v5.channel.k8s.io, the admin certificate: the log on channel 1, a Status on 3."""
    path = await bake(behind, "websocket")
    async with (
        behind.session() as session,
        session.ws_connect(
            behind.aggregator_url + path + "/oven?follow=true", protocols=("v5.channel.k8s.io",)
        ) as ws,
    ):
        async with asyncio.timeout(COMMAND_TIMEOUT):
            assert ws.protocol == "v5.channel.k8s.io"
            assert await ws.receive_bytes() == b"\x01"
            assert await ws.receive_bytes() == b"\x01created: spec.replicas=1\n"
            await behind.kubectl_ok("scale", "pizza", "websocket", "--replicas=2")
            assert await ws.receive_bytes() == b"\x01spec.replicas changed: 1 -> 2\n"
            await behind.kubectl_ok("delete", "pizza", "websocket")
            assert await ws.receive_bytes() == b'\x03{"metadata":{},"status":"Success"}'
            closing = await ws.receive()
            assert closing.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED), closing


READER = """
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {{name: pizza-reader, namespace: default}}
rules:
- apiGroups: [{group}]
  resources: [{resources}]
  verbs: [get, list]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: pizza-reader-carol, namespace: default}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: pizza-reader}}
subjects:
- {{apiGroup: rbac.authorization.k8s.io, kind: User, name: carol}}
"""


async def eventually_status(behind: BehindAggregator, path: str, user: str, status: int) -> None:
    """RBAC reaches the authorizers through informers: poll, bounded, until `path` answers `status`."""
    deadline = time.monotonic() + COMMAND_TIMEOUT
    while (answer := await behind.get(path, user=user)).status != status:
        assert time.monotonic() < deadline, (path, answer.status, answer.body[:300])
        await asyncio.sleep(0.2)


async def test_rbac_treats_the_bill_as_a_resource_of_its_own(behind: BehindAggregator) -> None:
    """The cluster's RBAC (up.sh: --authorization-mode=Node,RBAC), asked by kube-apiserver before it
    proxies and by our server after (SubjectAccessReview): `pizzas` does not grant `pizzas/bill`."""
    path = await bake(behind, "rbac")
    await behind.add_user("carol")
    await behind.kubectl_ok("apply", "-f", "-", stdin=READER.format(group=GROUP, resources="pizzas"))
    await eventually_status(behind, path, "carol", 200)

    listed = await behind.kubectl_ok("get", "pizzas", "-n", "default", "-o", "name", user="carol")
    assert f"pizza.{GROUP}/rbac" in listed.split()
    denied = await behind.kubectl("get", "--raw", path + "/bill", user="carol")
    assert denied.code != 0
    assert "(Forbidden)" in denied.err, denied.err
    answer = await behind.get(path + "/bill", user="carol")
    assert answer.status == 403
    status = answer.json()
    assert (status["reason"], status["code"]) == ("Forbidden", 403)
    assert 'User "carol" cannot get resource "pizzas/bill"' in status["message"]

    # Our server asks the cluster too: straight to it (it trusts the cluster's client CA), carol may
    # read the pizza, not follow its oven, which the aggregator would not have let through either.
    assert (await behind.get(path, user="carol", direct=True)).status == 200
    oven = await behind.get(path + "/oven", user="carol", direct=True)
    assert oven.status == 403
    assert 'User "carol" cannot get resource "pizzas/oven"' in oven.json()["message"]

    await behind.kubectl_ok(
        "apply", "-f", "-", stdin=READER.format(group=GROUP, resources="pizzas, pizzas/bill")
    )
    await eventually_status(behind, path + "/bill", "carol", 200)
    granted = await behind.kubectl_ok("get", "--raw", path + "/bill", user="carol")
    assert orjson.loads(granted) == bill("rbac")
    assert (await behind.get(path + "/bill", user="carol", direct=True)).json() == bill("rbac")


async def test_the_request_timeout_cuts_a_plain_follow_not_a_websocket(behind: BehindAggregator) -> None:
    """kube-apiserver's timeout filter spares only its own streaming subresources (log, exec, ...):
    `pizzas/oven?follow=true` is a non-long-running `get` to it. After --request-timeout it aborts
    the response it is proxying (HTTP/2: RST_STREAM, kubectl fails; HTTP/1.1: the connection closes
    mid-chunk). A WebSocket was hijacked before the timeout fired, so its bytes keep flowing."""
    path = await bake(behind, "slow")
    oven = path + "/oven?follow=true"
    started = time.monotonic()
    follow = await behind.start_kubectl("get", "--raw", oven)
    try:
        async with (
            behind.session() as session,
            session.ws_connect(behind.aggregator_url + oven, protocols=("v5.channel.k8s.io",)) as ws,
        ):
            async with asyncio.timeout(COMMAND_TIMEOUT):
                assert await ws.receive_bytes() == b"\x01"
                assert await ws.receive_bytes() == b"\x01created: spec.replicas=1\n"

            async def plain_http1() -> tuple[float, str]:
                """HTTP/1.1 (aiohttp): the aggregator closes the connection without the last chunk."""
                timeout = aiohttp.ClientTimeout(total=REQUEST_TIMEOUT + COMMAND_TIMEOUT)
                begun = time.monotonic()
                async with session.get(behind.aggregator_url + oven, timeout=timeout) as response:
                    assert response.status == 200
                    assert await response.content.readline() == b"created: spec.replicas=1\n"
                    with pytest.raises(aiohttp.ClientPayloadError) as cut:
                        await response.content.read()
                return time.monotonic() - begun, str(cut.value)

            async def plain_http2() -> tuple[float, Completed]:
                """kubectl (HTTP/2 to kube-apiserver): its stream is reset, kubectl fails."""
                done = await finish(follow, timeout=REQUEST_TIMEOUT + COMMAND_TIMEOUT)
                return time.monotonic() - started, done

            (http1_after, http1_error), (http2_after, done) = await asyncio.gather(
                plain_http1(), plain_http2()
            )
            assert "Not enough data to satisfy transfer length header" in http1_error
            assert (done.code, done.out) == (1, "created: spec.replicas=1\n")
            assert "stream error" in done.err and "INTERNAL_ERROR" in done.err, done.err
            for after in (http1_after, http2_after):
                assert REQUEST_TIMEOUT - 0.5 <= after < REQUEST_TIMEOUT + COMMAND_TIMEOUT

            # The WebSocket, opened at the same time, outlives the timeout and ends at deletion.
            async with asyncio.timeout(COMMAND_TIMEOUT):
                await behind.kubectl_ok("scale", "pizza", "slow", "--replicas=3")
                assert await ws.receive_bytes() == b"\x01spec.replicas changed: 1 -> 3\n"
                assert time.monotonic() - started > REQUEST_TIMEOUT
                await behind.kubectl_ok("delete", "pizza", "slow")
                assert await ws.receive_bytes() == b'\x03{"metadata":{},"status":"Success"}'
    finally:
        await stop(follow)


async def test_a_create_returns_its_order_number_and_a_second_cannot_take_it(
    behind: BehindAggregator,
) -> None:
    first = orjson.loads(await behind.kubectl_ok("create", "-f", "-", "-o", "json", stdin=pizza("numbered")))
    number = first["spec"]["orderNumber"]
    assert isinstance(number, int) and 1 <= number <= 999999
    taken = pizza("copycat").replace("replicas: 1", f"replicas: 1\n  orderNumber: {number}")
    refused = await behind.kubectl("create", "-f", "-", stdin=taken)
    assert refused.code != 0
    assert f"spec.orderNumber: Invalid value: {number}" in refused.err
    assert "already allocated" in refused.err
    # Nothing half written: the refused pizza does not exist.
    missing = await behind.kubectl("get", "pizza", "copycat")
    assert missing.code != 0 and "NotFound" in missing.err


async def test_a_graceful_delete_marks_the_pizza_then_the_server_removes_it(behind: BehindAggregator) -> None:
    await bake(behind, "slow")
    await behind.kubectl_ok("delete", "pizza", "slow", "--grace-period=2", "--wait=false")
    marked = orjson.loads(await behind.kubectl_ok("get", "pizza", "slow", "-o", "json"))
    assert marked["metadata"]["deletionGracePeriodSeconds"] == 2
    assert marked["metadata"]["deletionTimestamp"]
    # A longer period does not postpone it; the server removes it when the period is over.
    await behind.kubectl_ok("delete", "pizza", "slow", "--grace-period=600", "--wait=false")
    await behind.kubectl_ok("wait", "--for=delete", "pizza/slow", "--timeout=15s")


async def test_menu_items_are_listed_and_watched_through_the_aggregator(behind: BehindAggregator) -> None:
    await bake(behind, "menu-watch")
    table = await behind.kubectl_ok("get", "menuitems", "menu-watch")
    header, row = table.splitlines()[:2]
    assert header.split()[:3] == ["NAME", "PRICE", "AVAILABLE"]
    assert row.split()[:3] == ["menu-watch", "5.25", "true"]
    watch = await behind.start_kubectl("get", "menuitems", "menu-watch", "-w", "-o", "json")
    stdout = watch.stdout
    assert stdout is not None
    buffer = b""

    async def prices_until(wanted: float) -> list[float]:
        """The prices kubectl has printed, read until `wanted` is among them."""
        nonlocal buffer
        prices: list[float] = []
        try:
            async with asyncio.timeout(COMMAND_TIMEOUT):
                while wanted not in prices:
                    chunk = await stdout.read(4096)
                    assert chunk, "kubectl's watch ended"
                    buffer += chunk
                    prices = [float(p) for p in _prices(buffer.decode())]
        except TimeoutError:
            raise AssertionError(f"no price {wanted} in kubectl's watch: {buffer.decode()!r}") from None
        return prices

    try:
        # kubectl has read the menu item (and starts watching from its resourceVersion) ...
        assert await prices_until(5.25) == [5.25]
        await behind.kubectl_ok("patch", "topping", "pineapple", "--type=merge", "-p", '{"spec":{"cost":2}}')
        # ... and sees the new price: ham 2 * 2 + pineapple 1 * 2.
        assert await prices_until(6) == [5.25, 6]
    finally:
        await stop(watch)
        await behind.kubectl_ok(
            "patch", "topping", "pineapple", "--type=merge", "-p", '{"spec":{"cost":1.25}}'
        )


def _prices(text: str) -> list[str]:
    """The `"price": N` values in kubectl's stream of pretty-printed JSON objects."""
    return [part.split(",")[0].split("\n")[0].strip() for part in text.split('"price": ')[1:]]


# client-go's metadata client (k8s.io/client-go/metadata): what kube-controller-manager's metadata
# informers (garbage collector, namespace and quota controllers) send for every aggregated resource.
METADATA_LIST = (
    "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,"
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
)
METADATA_WATCH = METADATA_LIST.replace("PartialObjectMetadataList", "PartialObjectMetadata")


def answered_in(metrics: str, verb: str, content_type: str) -> float:
    """How many pizza answers of `verb` the server sent in `content_type`, from its /metrics."""
    labels = (
        f'content_type="{content_type}",group="{GROUP}",resource="pizzas",verb="{verb}",version="v1beta1"'
    )
    prefix = f"apiserver_responses_by_content_type_total{{{labels}}} "
    return sum(float(line[len(prefix) :]) for line in metrics.splitlines() if line.startswith(prefix))


async def test_metadata_informers_get_protobuf_through_the_aggregator(behind: BehindAggregator) -> None:
    """A metadata informer's LIST and WATCH through the aggregator are answered in protobuf.

    ../shared has no kube-controller-manager to run, so its requests are made here with its exact
    Accept headers; our server's /metrics then counts what it answered them in.
    """
    await bake(behind, "metadata-only")
    before = (await behind.get("/metrics", direct=True)).body.decode()
    async with behind.session() as session:
        async with session.get(behind.aggregator_url + PIZZAS, headers={"Accept": METADATA_LIST}) as r:
            assert (r.status, r.headers["Content-Type"]) == (200, protobuf.CONTENT_TYPE)
            envelope, listed = protobuf.decode_message(await r.read(), meta_pb2.PartialObjectMetadataList)
        assert (envelope.api_version, envelope.kind) == ("meta.k8s.io/v1", "PartialObjectMetadataList")
        assert "metadata-only" in [item.metadata.name for item in listed.items]
        # Ends before the cluster's --request-timeout.
        params = {"watch": "1", "resourceVersion": listed.metadata.resourceVersion, "timeoutSeconds": "6"}
        headers = {"Accept": METADATA_WATCH}
        async with session.get(behind.aggregator_url + PIZZAS, params=params, headers=headers) as w:
            assert w.headers["Content-Type"] == protobuf.CONTENT_TYPE + ";stream=watch"
            await behind.kubectl_ok("scale", "pizza", "metadata-only", "--replicas=3")
            async with asyncio.timeout(COMMAND_TIMEOUT):
                size = int.from_bytes(await w.content.readexactly(4), "big")
                event = meta_pb2.WatchEvent.FromString(await w.content.readexactly(size))
    envelope, partial = protobuf.decode_message(event.object.raw, meta_pb2.PartialObjectMetadata)
    assert (event.type, envelope.kind, partial.metadata.name) == (
        "MODIFIED",
        "PartialObjectMetadata",
        "metadata-only",
    )
    # A watch is counted when it ends, which the server sees shortly after the client left.
    wanted = {("LIST", protobuf.CONTENT_TYPE): 1.0, ("WATCH", protobuf.CONTENT_TYPE + ";stream=watch"): 1.0}
    deadline = time.monotonic() + COMMAND_TIMEOUT
    while True:
        after = (await behind.get("/metrics", direct=True)).body.decode()
        counted = {key: answered_in(after, *key) - answered_in(before, *key) for key in wanted}
        if counted == wanted or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.2)
    assert counted == wanted
