"""Every request is counted and timed with kube's metric names, labels and verb reporting rules."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from prometheus_client.parser import text_string_to_metric_families

from server.authn import build_authenticator
from server.authn.interface import Authenticator
from server.authz import build_authorizer
from server.filters import build_chain
from server.metrics import DURATION_BUCKETS, Metrics, Observation
from server.request_info import resolve

# Fixture types (the fixtures live in conftest.py).
MakeApp = Callable[..., web.Application]
AiohttpClient = Callable[..., Awaitable[TestClient]]

GROUP = "restaurant.programming-kubernetes.info"
PIZZAS = f"/apis/{GROUP}/v1alpha1/namespaces/default/pizzas"
TOPPINGS = f"/apis/{GROUP}/v1beta1/toppings"
MASTERS = {"X-Test-User": "admin;system:masters"}
LABELS = ("verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component", "code")


def counts(metrics: Metrics) -> dict[tuple[str, ...], float]:
    """apiserver_request_total samples keyed by their label values in LABELS order."""
    body, _ = metrics.render()
    out: dict[tuple[str, ...], float] = {}
    for family in text_string_to_metric_families(body.decode()):
        for sample in family.samples:
            if sample.name == "apiserver_request_total":
                out[tuple(sample.labels[name] for name in LABELS)] = sample.value
    return out


def histogram_count(metrics: Metrics, **labels: str) -> float:
    body, _ = metrics.render()
    for family in text_string_to_metric_families(body.decode()):
        for sample in family.samples:
            if sample.name == "apiserver_request_duration_seconds_count" and all(
                sample.labels[k] == v for k, v in labels.items()
            ):
                return sample.value
    return 0.0


def pizza(verb: str, scope: str, code: str, *, dry_run: str = "", subresource: str = "") -> tuple[str, ...]:
    return (verb, dry_run, GROUP, "v1alpha1", "pizzas", subresource, scope, "apiserver", code)


async def _created(request: web.Request) -> web.Response:
    return web.json_response({}, status=201)


async def _boom(request: web.Request) -> web.Response:
    raise RuntimeError("bug")


@pytest.fixture
def metrics() -> Metrics:
    return Metrics()


@pytest.fixture
async def client(
    make_app: MakeApp, aiohttp_client: AiohttpClient, header_authenticator: Authenticator, metrics: Metrics
) -> TestClient:
    app = make_app(
        authenticator=build_authenticator([header_authenticator], anonymous=False),
        authorizer=build_authorizer(),
        metrics=metrics,
        routes=[web.post(PIZZAS, _created), web.get("/boom", _boom)],
    )
    return await aiohttp_client(app)


async def test_resource_requests_are_labelled_like_kube(client: TestClient, metrics: Metrics) -> None:
    await client.get(PIZZAS, headers=MASTERS)
    await client.get(PIZZAS, params={"watch": "true"}, headers=MASTERS)
    # A list narrowed to one name is still a namespace-scoped LIST (kube fixes scope per route).
    await client.get(PIZZAS, params={"fieldSelector": "metadata.name=hawaii"}, headers=MASTERS)
    await client.get(f"{PIZZAS}/hawaii", headers=MASTERS)
    await client.head(f"{PIZZAS}/hawaii", headers=MASTERS)
    await client.post(PIZZAS, json={}, headers=MASTERS)
    await client.put(f"{PIZZAS}/hawaii/status", json={}, headers=MASTERS)
    await client.patch(
        f"{PIZZAS}/hawaii",
        data="spec: {}",
        params=[("dryRun", "All"), ("dryRun", "All")],
        headers={**MASTERS, "Content-Type": "application/apply-patch+yaml"},
    )
    await client.patch(f"{PIZZAS}/hawaii", json={}, params={"dryRun": "Some"}, headers=MASTERS)
    await client.delete(TOPPINGS, headers=MASTERS)  # deletecollection reports DELETE, like kube
    await client.get(f"/apis/{GROUP}/v1alpha1/watch/namespaces/default/pizzas", headers=MASTERS)
    await client.get(f"{PIZZAS}/hawaii/proxy", headers=MASTERS)

    assert counts(metrics) == {
        pizza("LIST", "namespace", "200"): 2,
        pizza("WATCH", "namespace", "200"): 2,
        pizza("GET", "resource", "200"): 2,
        pizza("POST", "resource", "201"): 1,
        pizza("PUT", "resource", "200", subresource="status"): 1,
        pizza("APPLY", "resource", "200", dry_run="All"): 1,
        pizza("PATCH", "resource", "200", dry_run="invalid"): 1,
        pizza("CONNECT", "resource", "200", subresource="proxy"): 1,
        ("DELETE", "", GROUP, "v1beta1", "toppings", "", "cluster", "apiserver", "200"): 1,
    }
    assert histogram_count(metrics, verb="LIST", resource="pizzas", scope="namespace") == 2


async def test_remembered_labels_tell_repeated_requests_apart(client: TestClient, metrics: Metrics) -> None:
    """Labels are derived once per kind of request: the same path must still be told apart by what
    the labels read (watch, dryRun, the apply content type), however often and in whatever order."""
    apply = {**MASTERS, "Content-Type": "application/apply-patch+yaml"}
    for _ in range(2):
        await client.get(PIZZAS, headers=MASTERS)
        await client.get(PIZZAS, params={"watch": "true"}, headers=MASTERS)
        await client.get(PIZZAS, params={"watch": "false"}, headers=MASTERS)
        await client.patch(f"{PIZZAS}/hawaii", data="spec: {}", headers=apply)
        await client.patch(f"{PIZZAS}/hawaii", json={}, headers=MASTERS)
        await client.patch(f"{PIZZAS}/hawaii", json={}, params={"dryRun": "All"}, headers=MASTERS)
    assert counts(metrics) == {
        pizza("LIST", "namespace", "200"): 4,
        pizza("WATCH", "namespace", "200"): 2,
        pizza("APPLY", "resource", "200"): 2,
        pizza("PATCH", "resource", "200"): 2,
        pizza("PATCH", "resource", "200", dry_run="All"): 2,
    }


async def test_rejections_and_failures_are_counted(client: TestClient, metrics: Metrics) -> None:
    await client.get(PIZZAS)  # no credential
    await client.get(PIZZAS, headers={"X-Test-User": "bob"})  # not allowed
    await client.get("/boom", headers=MASTERS)
    await client.get("/healthz")  # anonymous probe

    assert counts(metrics) == {
        pizza("LIST", "namespace", "401"): 1,
        pizza("LIST", "namespace", "403"): 1,
        ("GET", "", "", "", "", "/boom", "", "", "500"): 1,
        ("GET", "", "", "", "", "/healthz", "", "", "200"): 1,
    }


async def test_unrouted_requests_do_not_create_series_per_path(
    aiohttp_client: AiohttpClient, header_authenticator: Authenticator
) -> None:
    metrics = Metrics()
    app = web.Application(
        middlewares=build_chain(
            authenticator=build_authenticator([header_authenticator], anonymous=False),
            authorizer=build_authorizer(),
            metrics=metrics,
        )
    )
    client = await aiohttp_client(app)
    for path in ("/nope", "/apis/evil.example/v1/things", "/x/y/z"):
        assert (await client.get(path, headers=MASTERS)).status == 404
    assert counts(metrics) == {("GET", "", "", "", "", "", "", "", "404"): 3}


async def test_metrics_endpoint_is_prometheus_text(aiohttp_client: AiohttpClient) -> None:
    metrics = Metrics()
    app = web.Application()
    app.router.add_get("/metrics", metrics.handle)
    client = await aiohttp_client(app)
    empty = await client.get("/metrics")
    assert empty.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
    text = await empty.text()
    assert "# TYPE apiserver_request_total counter" in text
    assert "# TYPE apiserver_request_duration_seconds histogram" in text
    assert "_created" not in text


def test_each_metrics_object_has_its_own_registry() -> None:
    first, second = Metrics(), Metrics()
    first.observe(
        Observation(
            info=resolve("GET", "/readyz", {}), method="GET", query={}, dry_run=(), content_type="",
            code=200, seconds=0.3, route="/readyz",
        )
    )  # fmt: skip
    assert counts(first) == {("GET", "", "", "", "", "/readyz", "", "", "200"): 1}
    assert counts(second) == {}
    # 0.3 s falls in kube's 0.4 bucket, not the 0.2 one.
    assert histogram_bucket(first, "0.2") == 0 and histogram_bucket(first, "0.4") == 1
    assert DURATION_BUCKETS[0] == 0.005 and DURATION_BUCKETS[-1] == 60 and len(DURATION_BUCKETS) == 23


def histogram_bucket(metrics: Metrics, le: str) -> float:
    body, _ = metrics.render()
    for family in text_string_to_metric_families(body.decode()):
        for sample in family.samples:
            if sample.name == "apiserver_request_duration_seconds_bucket" and sample.labels["le"] == le:
                return sample.value
    raise AssertionError(f"no bucket le={le}")
