"""The bakery controller against a real server process over HTTPS (embedded store).

Status writes are server-side apply on /status: these tests need the server-side apply work.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes.client.rest import ApiException

from controller.status_apply import FIELD_MANAGER, GROUP
from server.config import open_storage
from server.options import parse_args
from tests.controller.running import Restaurant, eventually, running_controller
from tests.fixtures.etcd import free_port
from tests.fixtures.server import ServerProcess, server_args, start_server_process


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    process = start_server_process(tmp_path / "data", "--secure-port", str(free_port()))
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture
def restaurant(server: ServerProcess) -> Iterator[Restaurant]:
    writer = Restaurant(server.kubeconfig)
    try:
        yield writer
    finally:
        writer.close()


def test_cost_is_computed_and_follows_topping_costs(server: ServerProcess, restaurant: Restaurant) -> None:
    restaurant.topping("salami", 1.5)
    restaurant.topping("mozzarella", 1)
    restaurant.topping("tomato", 0.5)
    restaurant.pizza("margherita", {"mozzarella": 2, "tomato": 1})
    restaurant.pizza("salami", {"salami": 2, "tomato": 1})
    with running_controller(server.kubeconfig, workers=2) as controller:
        assert eventually(lambda: restaurant.status("margherita").get("cost") == 2.5, "margherita priced")
        assert eventually(lambda: restaurant.status("salami").get("cost") == 3.5, "salami priced")
        status = restaurant.status("margherita")
        assert status["observedGeneration"] == restaurant.get("margherita")["metadata"]["generation"] == 1

        # Owned by the controller through server-side apply on /status.
        managed = restaurant.get("margherita")["metadata"]["managedFields"]
        mine = [m for m in managed if m["manager"] == FIELD_MANAGER]
        assert [(m["operation"], m.get("subresource")) for m in mine] == [("Apply", "status")]
        assert set(mine[0]["fieldsV1"]["f:status"]) == {"f:cost", "f:observedGeneration"}

        # A topping's new cost reprices every pizza that names it, and only those change.
        salami_rv = restaurant.get("salami")["metadata"]["resourceVersion"]
        restaurant.set_cost("mozzarella", 2)
        assert eventually(lambda: restaurant.status("margherita").get("cost") == 4.5, "margherita repriced")
        assert restaurant.get("salami")["metadata"]["resourceVersion"] == salami_rv

        # A spec change: new generation, new cost, observedGeneration follows.
        restaurant.set_toppings("salami", {"salami": 1})
        assert eventually(lambda: restaurant.status("salami").get("observedGeneration") == 2, "generation 2")
        assert restaurant.status("salami")["cost"] == 1.5

        # A topping deleted under a pizza: no price rather than a wrong one (the field is removed).
        restaurant.delete_topping("tomato")
        assert eventually(lambda: "cost" not in restaurant.status("margherita"), "cost removed")
        assert restaurant.status("margherita")["observedGeneration"] == 1
        # Reconciling an unchanged pizza writes nothing: the pizza's own status events settle.
        writes = controller.bakery.writes
        restaurant.set_cost("salami", 1.5)  # same cost: an event, no change
        restaurant.topping("basil", 0.25)  # named by no pizza
        restaurant.pizza("plain", {"salami": 1})
        assert eventually(lambda: restaurant.status("plain").get("cost") == 1.5, "plain priced")
        assert controller.bakery.writes == writes + 1


def test_replicas_are_baked_after_the_delay(server: ServerProcess, restaurant: Restaurant) -> None:
    """status.replicas follows spec.replicas (set through /scale, as kubectl scale does) once baked."""
    restaurant.topping("salami", 1)
    restaurant.pizza("p", {"salami": 1})
    with running_controller(server.kubeconfig, bake_delay=1.0):
        assert eventually(lambda: restaurant.status("p").get("cost") == 1, "p priced")
        assert "replicas" not in restaurant.status("p")  # no spec.replicas, no status.replicas
        server.kubectl("scale", "pizza", "p", "--replicas=3")
        assert eventually(lambda: restaurant.status("p").get("replicas") == 3, "3 baked")
        assert restaurant.status("p")["observedGeneration"] == restaurant.get("p")["metadata"]["generation"]
        server.kubectl("patch", "pizza", "p", "--type=merge", "-p", '{"spec":{"replicas":null}}')
        assert eventually(lambda: "replicas" not in restaurant.status("p"), "replicas removed")


def test_a_pizza_deleted_with_a_grace_period_is_taken_out_of_the_oven(
    server: ServerProcess, restaurant: Restaurant
) -> None:
    """The server would keep it ten minutes; the controller deletes it with grace 0 on seeing the
    deletion timestamp. A pizza deleted without a grace period but held by a finalizer is left alone."""
    restaurant.topping("salami", 1)
    restaurant.pizza("early", {"salami": 1})
    restaurant.pizza("held", {"salami": 1})
    restaurant.objects.patch_namespaced_custom_object(
        GROUP, "v1beta1", "default", "pizzas", "held", {"metadata": {"finalizers": ["example.com/hold"]}}
    )
    with running_controller(server.kubeconfig) as controller:
        assert eventually(lambda: restaurant.status("early").get("cost") == 1, "early priced")
        marked = restaurant.delete_pizza("early", grace_period_seconds=600)
        assert marked["metadata"]["deletionGracePeriodSeconds"] == 600
        assert eventually(lambda: not _exists(restaurant, "early"), "early taken out")
        assert controller.bakery.taken_out == 1

        restaurant.objects.delete_namespaced_custom_object(GROUP, "v1beta1", "default", "pizzas", "held")
        held = restaurant.get("held")["metadata"]
        assert (held["deletionGracePeriodSeconds"], held["finalizers"]) == (0, ["example.com/hold"])
        restaurant.set_toppings("held", {"salami": 2})  # an event the controller reconciles
        assert eventually(lambda: restaurant.status("held").get("cost") == 2, "held repriced")
        assert controller.bakery.taken_out == 1 and _exists(restaurant, "held")
    restaurant.objects.patch_namespaced_custom_object(
        GROUP, "v1beta1", "default", "pizzas", "held", {"metadata": {"finalizers": None}}
    )


def _exists(restaurant: Restaurant, name: str) -> bool:
    try:
        restaurant.get(name)
    except ApiException as e:
        if e.status == 404:
            return False
        raise
    return True


def test_relists_after_a_server_restart_and_410(tmp_path: Path) -> None:
    """A restart is resumed from the last resourceVersion; a 410 (history compacted while the
    controller was away) makes it list again and catch up on everything it missed."""
    data_dir = tmp_path / "data"
    port = ["--secure-port", str(free_port())]
    server = start_server_process(data_dir, *port)
    kubeconfig = data_dir.parent / "controller.kubeconfig"
    kubeconfig.write_text(server.kubeconfig.read_text())  # the server rewrites its own on each start
    restaurant = Restaurant(kubeconfig)
    try:
        restaurant.topping("salami", 1)
        restaurant.pizza("a", {"salami": 1})
        with running_controller(kubeconfig, watch_timeout=5) as controller:
            assert eventually(lambda: restaurant.status("a").get("cost") == 1, "a priced")
            assert controller.pizzas.relists == 1

            # 1. A restart: the watch drops, resumes from its resourceVersion; no relist.
            server.stop()
            server = start_server_process(data_dir, *port)
            restaurant.set_cost("salami", 2)
            assert eventually(lambda: restaurant.status("a").get("cost") == 2, "a repriced after restart")
            assert (controller.pizzas.relists, controller.toppings.relists) == (1, 1)

            # 2. Away (the server answers on another port) while things change, then compacted.
            server.stop()
            away = start_server_process(data_dir, "--secure-port", str(free_port()))
            with_away = Restaurant(away.kubeconfig)
            with_away.set_cost("salami", 3)
            with_away.pizza("b", {"salami": 2})
            with_away.close()
            away.stop()
            compacted = asyncio.run(_compact_offline(data_dir, *port))
            assert compacted > int(controller.toppings.resource_version)
            server = start_server_process(data_dir, *port)

            assert eventually(lambda: restaurant.status("b").get("cost") == 6, "b priced after relist")
            assert eventually(lambda: restaurant.status("a").get("cost") == 3, "a repriced after relist")
            assert controller.toppings.relists == 2 and controller.pizzas.relists == 2
    finally:
        restaurant.close()
        server.stop()


async def _compact_offline(data_dir: Path, *extra: str) -> int:
    """With the server stopped: open its storage as it would, forget all history, close."""
    options = parse_args(server_args(data_dir, *extra)).complete()
    storage = await open_storage(options)
    try:
        revision = await storage.current_revision()
        await storage.compact(revision)
        return revision
    finally:
        await storage.close()
