"""NamespaceLifecycle against the fake cluster's namespaces (list + watch, live GET), over real HTTPS.

Texts and codes are kube's (k8s.io/apiserver pkg/admission/plugin/namespace/lifecycle/admission.go).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from server.admission.setup import AdmissionConfigError
from tests.fixtures.admission import admission_server, eventually, pizza, pizzas_path, request
from tests.fixtures.control_plane import ControlPlane
from tests.fixtures.control_plane import control_plane_fixture as control_plane_fixture
from tests.fixtures.server import running_server

NO_TOPPINGS_CHECK = ("--disable-admission-plugins", "PizzaToppings")


async def test_missing_namespace_is_404_after_a_live_lookup(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    async with admission_server(tmp_path / "data", control_plane, *NO_TOPPINGS_CHECK) as server:
        gets = control_plane.calls["namespaces-get"]
        status, body, _ = await request(server, "POST", pizzas_path("nope"), pizza("p"))
        assert status == 404, body
        assert body["reason"] == "NotFound"
        assert body["message"] == 'namespaces "nope" not found'
        assert body["details"] == {"name": "nope", "kind": "namespaces"}
        assert control_plane.calls["namespaces-get"] == gets + 1


async def test_namespace_the_cache_has_not_seen_is_found_live(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    async with admission_server(tmp_path / "data", control_plane, *NO_TOPPINGS_CHECK) as server:
        control_plane.objects.namespaces.hold()  # the server's cache lags behind the cluster
        control_plane.objects.add_namespace("fresh")
        status, body, _ = await request(server, "POST", pizzas_path("fresh"), pizza("p"))
        assert status == 201, body
        control_plane.objects.namespaces.release()


async def test_live_lookup_failure_is_500(control_plane: ControlPlane, tmp_path: Path) -> None:
    async with admission_server(tmp_path / "data", control_plane, *NO_TOPPINGS_CHECK) as server:
        control_plane.objects.namespaces.get_failure = 500
        status, body, _ = await request(server, "POST", pizzas_path("unknown"), pizza("p"))
    assert status == 500 and body["reason"] == "InternalError", body


async def test_terminating_namespace_refuses_creates_only(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    control_plane.objects.add_namespace("closing")
    async with admission_server(tmp_path / "data", control_plane, *NO_TOPPINGS_CHECK) as server:
        status, created, _ = await request(server, "POST", pizzas_path("closing"), pizza("kept"))
        assert status == 201, created
        control_plane.objects.terminate_namespace("closing")

        async def refused() -> bool:
            status, _, _ = await request(
                server, "POST", pizzas_path("closing"), pizza("probe"), params={"dryRun": "All"}
            )
            return status == 403

        await eventually(refused, "the namespace to be seen terminating")
        status, body, _ = await request(server, "POST", pizzas_path("closing"), pizza("new"))
        assert status == 403, body
        assert body["reason"] == "Forbidden"
        assert body["message"] == (
            'pizzas.restaurant.programming-kubernetes.info "new" is forbidden: '
            "unable to create new content in namespace closing because it is being terminated"
        )
        assert body["details"]["causes"] == [
            {
                "reason": "NamespaceTerminating",
                "message": "namespace closing is being terminated",
                "field": "metadata.namespace",
            }
        ]
        # Updates and deletes of what is there are allowed, so the namespace can be emptied.
        created["metadata"]["labels"] = {"touched": "yes"}
        status, body, _ = await request(server, "PUT", pizzas_path("closing", "kept"), created)
        assert status == 200, body
        status, body, _ = await request(server, "DELETE", pizzas_path("closing", "kept"))
        assert status == 200, body


async def test_namespace_deleted_while_pizzas_are_created(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    """Creates race a namespace's termination and deletion: each answer is 201 before, 403 while it
    terminates, 404 once gone, and never anything else; nothing is created after the 403s start."""
    control_plane.objects.add_namespace("party")
    async with admission_server(tmp_path / "data", control_plane, *NO_TOPPINGS_CHECK) as server:
        answers: list[tuple[int, str]] = []
        stop = asyncio.Event()

        async def cook(worker: int) -> None:
            index = 0
            while not stop.is_set() and index < 200:
                name = f"w{worker}-{index}"
                status, body, _ = await request(server, "POST", pizzas_path("party"), pizza(name))
                answers.append((status, name))
                assert status in (201, 403, 404), body
                index += 1

        workers = [asyncio.create_task(cook(w)) for w in range(3)]
        await eventually(has_answer(answers, 201), "the first pizzas")
        control_plane.objects.terminate_namespace("party")
        await eventually(has_answer(answers, 403), "creates to be refused")
        control_plane.objects.namespaces.delete("party")
        await eventually(has_answer(answers, 404), "the namespace to be gone")
        stop.set()
        await asyncio.gather(*workers)
    codes = [status for status, _ in answers]
    first_refusal = codes.index(403)
    assert 201 not in codes[first_refusal + 3 :], codes  # at most the requests already past admission
    assert codes[-1] == 404


def has_answer(answers: list[tuple[int, str]], code: int) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return any(status == code for status, _ in answers)

    return check


async def test_readiness_reports_the_informers(control_plane: ControlPlane, tmp_path: Path) -> None:
    async with admission_server(tmp_path / "data", control_plane) as server:
        status, body, _ = await request(server, "GET", "/readyz", params={"verbose": ""})
    assert status == 200, body
    for line in (
        "[+]informer-sync ok",
        "[+]poststarthook/generic-apiserver-start-informers ok",
        "[+]poststarthook/start-apiserver-admission-initializer ok",
    ):
        assert line in body


async def test_informer_relists_after_410(control_plane: ControlPlane, tmp_path: Path) -> None:
    namespaces = control_plane.objects.namespaces
    async with admission_server(tmp_path / "data", control_plane, *NO_TOPPINGS_CHECK) as server:
        lists = control_plane.calls["namespaces-list"]
        namespaces.hold()
        control_plane.objects.add_namespace("after-compaction")
        namespaces.compact()
        namespaces.held = None
        namespaces.end_watches()  # the watch drops; resuming from its resourceVersion gets 410 → relist

        async def relisted() -> bool:
            return control_plane.calls["namespaces-list"] > lists

        await eventually(relisted, "a relist after 410")
        # The relisted cache has the namespace: no live GET needed.
        gets = control_plane.calls["namespaces-get"]
        status, body, _ = await request(server, "POST", pizzas_path("after-compaction"), pizza("p"))
        assert status == 201, body
        assert control_plane.calls["namespaces-get"] == gets


async def test_namespace_lifecycle_can_be_disabled(control_plane: ControlPlane, tmp_path: Path) -> None:
    async with admission_server(
        tmp_path / "data", control_plane, "--disable-admission-plugins", "NamespaceLifecycle,PizzaToppings"
    ) as server:
        status, body, _ = await request(server, "POST", pizzas_path("anywhere"), pizza("p"))
    assert status == 201, body


async def test_standalone_has_no_namespace_lifecycle(tmp_path: Path) -> None:
    async with running_server(tmp_path / "data", *NO_TOPPINGS_CHECK) as server:
        status, body, _ = await request(server, "POST", pizzas_path("anywhere"), pizza("p"))
        assert status == 201, body
        status, body, _ = await request(server, "GET", "/readyz", params={"verbose": ""})
    assert "informer-sync" not in body


async def test_unknown_plugin_names_stop_the_start(tmp_path: Path) -> None:
    with pytest.raises(
        AdmissionConfigError, match='enable-admission-plugins plugin "NoSuchPlugin" is unknown'
    ):
        async with running_server(tmp_path / "data", "--enable-admission-plugins", "NoSuchPlugin"):
            pass
