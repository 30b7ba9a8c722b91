"""Health endpoints, /version and /metrics over real HTTPS."""

from __future__ import annotations

import re

import aiohttp
import pytest

GROUP = "restaurant.programming-kubernetes.info"


@pytest.mark.parametrize("path", ["/healthz", "/livez", "/readyz"])
async def test_health_endpoints_answer_anonymous(embedded_server, path: str) -> None:
    async with embedded_server.session(admin=False) as s, s.get(path) as r:
        assert r.status == 200
        assert r.headers["Content-Type"].startswith("text/plain")
        assert await r.text() == "ok"


async def test_readyz_verbose_lists_the_storage_check(embedded_server) -> None:
    async with embedded_server.session(admin=False) as s, s.get("/readyz?verbose") as r:
        text = await r.text()
    assert r.status == 200
    assert text.splitlines() == ["[+]ping ok", "[+]storage ok", "readyz check passed"]
    async with embedded_server.session(admin=False) as s, s.get("/livez?verbose") as r:
        assert (await r.text()).splitlines() == ["[+]ping ok", "livez check passed"]
    async with embedded_server.session() as s, s.get("/readyz/storage") as r:
        assert (r.status, await r.text()) == (200, "ok")


async def test_readyz_exclude(embedded_server) -> None:
    async with embedded_server.session() as s, s.get("/readyz?verbose&exclude=storage") as r:
        assert "[+]storage excluded: ok" in (await r.text()).splitlines()


async def test_version_shape(embedded_server) -> None:
    async with embedded_server.session() as s, s.get("/version") as r:
        assert r.status == 200
        body = await r.json()
    assert body["major"] == "1"
    assert re.fullmatch(r"\d+", body["minor"])
    assert re.match(rf"v1\.{body['minor']}\.\d+", body["gitVersion"])
    for key in ("gitCommit", "gitTreeState", "buildDate", "goVersion", "compiler", "platform"):
        assert key in body
    assert "/" in body["platform"]


async def test_metrics_after_a_request(embedded_server) -> None:
    async with embedded_server.session() as s:
        async with s.get(f"/apis/{GROUP}/v1beta1/toppings") as r:
            assert r.status == 200
        async with s.get(f"/apis/{GROUP}/v1beta1/namespaces/default/pizzas/nope") as r:
            assert r.status == 404
        async with s.get("/metrics") as r:
            assert r.status == 200
            assert r.headers["Content-Type"].startswith("text/plain")
            text = await r.text()
    list_line = (
        'apiserver_request_total{code="200",component="apiserver",dry_run="",group="' + GROUP + '",'
        'resource="toppings",scope="cluster",subresource="",verb="LIST",version="v1beta1"} 1.0'
    )
    assert list_line in text.splitlines()
    get_line = (
        'apiserver_request_total{code="404",component="apiserver",dry_run="",group="' + GROUP + '",'
        'resource="pizzas",scope="resource",subresource="",verb="GET",version="v1beta1"} 1.0'
    )
    assert get_line in text.splitlines()
    bucket = re.compile(
        r'apiserver_request_duration_seconds_bucket\{component="apiserver",dry_run="",group="'
        + re.escape(GROUP)
        + r'",le="\+Inf",resource="toppings",scope="cluster",subresource="",'
        + r'verb="LIST",version="v1beta1"\} 1\.0'
    )
    assert any(bucket.fullmatch(line) for line in text.splitlines()), text[:3000]
    assert "apiserver_request_duration_seconds_count{" in text


async def test_metrics_needs_authorization(embedded_server) -> None:
    connector = aiohttp.TCPConnector(ssl=embedded_server.ssl_context(admin=False))
    async with (
        aiohttp.ClientSession(base_url=embedded_server.url, connector=connector) as s,
        s.get("/metrics") as r,
    ):
        assert r.status == 401


async def test_metrics_count_answers_by_content_type(embedded_server) -> None:
    """Which representation answers went out in: what tells an operator the controller manager's
    metadata informers get protobuf (tests/integration/test_protobuf_* check that one)."""
    table = "application/json;as=Table;v=v1;g=meta.k8s.io"
    async with embedded_server.session() as s:
        for accept in ("application/json", table, table, "application/yaml"):
            async with s.get(f"/apis/{GROUP}/v1beta1/toppings", headers={"Accept": accept}) as r:
                assert r.status == 200
        async with s.get("/metrics") as r:
            text = await r.text()
    prefix = (
        'apiserver_responses_by_content_type_total{content_type="%s",group="'
        + GROUP
        + '",resource="toppings",verb="LIST",version="v1beta1"} '
    )
    counts = {
        media: next(
            float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(prefix % media)
        )
        for media in ("application/json", table, "application/yaml")
    }
    assert counts == {"application/json": 1.0, table: 2.0, "application/yaml": 1.0}
