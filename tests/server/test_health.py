"""Health endpoints with kube's exact text (healthz.go), and the /version document beside them."""

from __future__ import annotations

import asyncio
import platform
from collections.abc import Awaitable, Callable

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from server.health import HealthCheck, HealthChecks
from server.version import version_handler, version_info

Client = Callable[[web.Application], Awaitable[TestClient]]


class Storage:
    """A storage check whose health the test flips; the error text must never reach clients."""

    def __init__(self) -> None:
        self.healthy = True

    async def check(self) -> None:
        await asyncio.sleep(0)
        if not self.healthy:
            raise ConnectionError("etcd at 10.0.0.7:2379 unreachable")


def _app(checks: HealthChecks) -> web.Application:
    app = web.Application()
    app.add_routes(checks.routes())
    return app


@pytest.fixture
def storage() -> Storage:
    return Storage()


@pytest.fixture
async def client(aiohttp_client: Client, storage: Storage) -> TestClient:
    shutdown = HealthCheck("shutdown", storage.check)  # readiness-only, shares the switch for brevity
    return await aiohttp_client(
        _app(HealthChecks([HealthCheck("storage", storage.check)], readiness=[shutdown]))
    )


@pytest.mark.parametrize("path", ["/healthz", "/livez", "/readyz"])
async def test_healthy_is_plain_ok(client: TestClient, path: str) -> None:
    response = await client.get(path)
    assert response.status == 200
    assert await response.text() == "ok"
    assert response.headers["Content-Type"] == "text/plain; charset=utf-8"
    assert response.headers["X-Content-Type-Options"] == "nosniff"


async def test_verbose_lists_every_check(client: TestClient) -> None:
    response = await client.get("/healthz?verbose")
    assert response.status == 200
    assert await response.text() == "[+]ping ok\n[+]storage ok\nhealthz check passed\n"


async def test_readyz_has_its_own_checks(client: TestClient) -> None:
    response = await client.get("/readyz", params={"verbose": "1"})
    assert await response.text() == "[+]ping ok\n[+]storage ok\n[+]shutdown ok\nreadyz check passed\n"


async def test_failing_check_is_500_with_reason_withheld(client: TestClient, storage: Storage) -> None:
    storage.healthy = False
    response = await client.get("/livez")
    assert response.status == 500
    body = await response.text()
    assert body == "[+]ping ok\n[-]storage failed: reason withheld\nlivez check failed\n"
    assert "10.0.0.7" not in body


async def test_exclude_skips_a_failing_check(client: TestClient, storage: Storage) -> None:
    storage.healthy = False
    response = await client.get("/healthz?exclude=storage&verbose")
    assert response.status == 200
    assert await response.text() == "[+]ping ok\n[+]storage excluded: ok\nhealthz check passed\n"


async def test_excluding_unknown_checks_warns(client: TestClient) -> None:
    response = await client.get("/healthz?verbose&exclude=etcd&exclude=bogus&exclude=ping")
    assert response.status == 200
    assert await response.text() == (
        "[+]ping excluded: ok\n[+]storage ok\n"
        'warn: some health checks cannot be excluded: no matches for "bogus","etcd"\n'
        "healthz check passed\n"
    )


async def test_unknown_excluded_names_are_quoted_as_go_quotes_them(client: TestClient) -> None:
    # sample-apiserver 1.36.2's answer to the same query: %q, so "é" raw and U+00A0 escaped.
    response = await client.get("/healthz?verbose&exclude=%C3%A9&exclude=a%01%C2%A0")
    assert 'no matches for "a\\x01\\u00a0","é"\n' in await response.text()


async def test_single_check_sub_path(client: TestClient, storage: Storage) -> None:
    ping = await client.get("/readyz/ping")
    assert (ping.status, await ping.text()) == (200, "ok")
    storage.healthy = False
    failed = await client.get("/readyz/storage")
    assert failed.status == 500
    # The per-check handler reports the error, as kube's adaptCheckToHandler does.
    assert await failed.text() == "internal server error: etcd at 10.0.0.7:2379 unreachable\n"
    assert (await client.get("/livez/shutdown")).status == 404  # readiness-only check


def test_duplicate_check_names_are_rejected() -> None:
    with pytest.raises(ValueError, match="duplicate health check names"):
        HealthChecks([HealthCheck("ping", Storage().check)])


async def test_version_document(aiohttp_client: Client) -> None:
    app = web.Application()
    app.router.add_get("/version", version_handler(version_info(git_commit="abc123", git_tree_state="clean")))
    client = await aiohttp_client(app)
    response = await client.get("/version")
    assert response.status == 200
    assert response.headers["Content-Type"] == "application/json"
    body = await response.json()
    assert body == {
        "major": "1",
        "minor": "32",
        "emulationMajor": "1",
        "emulationMinor": "32",
        "minCompatibilityMajor": "1",
        "minCompatibilityMinor": "31",
        "gitVersion": "v1.32.0+pizza-apiserver.0.1.0",
        "gitCommit": "abc123",
        "gitTreeState": "clean",
        "buildDate": "1970-01-01T00:00:00Z",
        "goVersion": f"python{platform.python_version()}",
        "compiler": "cpython",
        "platform": body["platform"],
    }
    os_name, _, arch = body["platform"].partition("/")
    assert os_name and arch and arch != "x86_64"  # Go's GOARCH spelling
