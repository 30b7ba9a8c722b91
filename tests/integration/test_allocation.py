"""Allocation at create: every pizza gets a spec.orderNumber no other pizza holds (the book's
Service-IP example), on both storage backends, over HTTPS.

The number keys are read straight from the server's storage (registry/generic/keys.allocation_prefix):
what a create, a failure or a delete leaves there is the point of the design.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from apis.restaurant.v1alpha1.conversion import ORDER_NUMBER_ANNOTATION
from registry.generic.keys import allocation_prefix
from storage import interface as st
from tests.fixtures.etcd import unique_prefix
from tests.integration.conftest import GROUP, Api, server_with_storage

NUMBERS = allocation_prefix(GROUP, "pizzas", ".spec.orderNumber")
MERGE = "application/merge-patch+json"
APPLY = "application/apply-patch+yaml"


async def _number_keys(api: Api) -> dict[int, dict[str, Any]]:
    storage: st.Interface = api.extra["storage"]
    listed = await storage.list(NUMBERS)
    return {int(kv.key.rpartition("/")[2]): orjson.loads(kv.value) for kv in listed.items}


def _number(body: dict[str, Any]) -> int:
    return body["spec"]["orderNumber"]


def _invalid_message(name: str, value: Any, detail: str) -> str:
    return f'Pizza.{GROUP} "{name}" is invalid: spec.orderNumber: Invalid value: {value}: {detail}'


async def test_a_create_gets_a_number_returned_stored_and_reserved(storage_api: Api) -> None:
    api = storage_api
    await api.create_toppings("salami", "mozzarella", "tomato")
    created = await api.create_pizza("margherita")
    number = _number(created)
    assert 1 <= number <= 999999
    got = await api.get(api.pizzas_path(name="margherita"))
    assert got.status == 200 and _number(got.body) == number
    keys = await _number_keys(api)
    assert keys == {
        number: {"owner": f"/{GROUP}/pizzas/default/margherita", "uid": created["metadata"]["uid"]}
    }
    # The number keys are outside the group's directory: a list shows pizzas only.
    listed = await api.get(api.pizzas_path())
    assert [p["metadata"]["name"] for p in listed.body["items"]] == ["margherita"]


async def test_an_asked_number_is_checked(storage_api: Api) -> None:
    api = storage_api
    await api.create_toppings("salami", "mozzarella", "tomato")
    body = api.pizza("first")
    body["spec"] = {"orderNumber": 42}
    r = await api.post(api.pizzas_path(), body)
    assert r.status == 201, r
    assert _number(r.body) == 42

    taken = api.pizza("second")
    taken["spec"] = {"orderNumber": 42}
    r = await api.post(api.pizzas_path(), taken)
    assert r.status == 422, r
    assert r.body["reason"] == "Invalid"
    assert r.body["message"] == _invalid_message(
        "second", 42, "failed to allocate order number 42: provided order number is already allocated"
    )
    assert r.body["details"]["causes"][0]["field"] == "spec.orderNumber"

    for outside in (1000000, 1234567):
        body = api.pizza("third")
        body["spec"] = {"orderNumber": outside}
        r = await api.post(api.pizzas_path(), body)
        assert r.status == 422, r
        assert r.body["message"] == _invalid_message(
            "third",
            outside,
            f"failed to allocate order number {outside}: the provided order number ({outside}) is not in "
            "the valid range. The range of valid order numbers is 1-999999",
        )
    # Not an integer: the v1beta1 schema refuses it.
    body = api.pizza("fourth")
    body["spec"] = {"orderNumber": "seven"}
    r = await api.post(api.pizzas_path(), body)
    assert r.status == 422, r
    assert "spec.orderNumber" in r.body["message"]
    assert set(await _number_keys(api)) == {42}
    assert [p["metadata"]["name"] for p in (await api.get(api.pizzas_path())).body["items"]] == ["first"]


async def test_the_number_is_immutable_and_kept_when_omitted(storage_api: Api) -> None:
    api = storage_api
    await api.create_toppings("salami", "mozzarella", "tomato")
    created = await api.create_pizza("margherita")
    number = _number(created)
    path = api.pizzas_path(name="margherita")
    other = number % 999999 + 1

    # PUT without the number (kubectl replace of the original manifest) keeps it.
    without = {**created, "spec": {"toppings": [{"name": "salami", "quantity": 2}]}}
    r = await api.put(path, without)
    assert r.status == 200, r
    assert _number(r.body) == number
    assert r.body["metadata"]["generation"] == 2

    changed = {**r.body, "spec": {**r.body["spec"], "orderNumber": other}}
    r = await api.put(path, changed)
    assert r.status == 422, r
    assert r.body["message"] == _invalid_message("margherita", other, "field is immutable")

    r = await api.patch(path, {"spec": {"orderNumber": other}}, MERGE)
    assert r.status == 422, r
    assert r.body["message"] == _invalid_message("margherita", other, "field is immutable")

    manifest = api.pizza("margherita")
    manifest["spec"] = {"toppings": [{"name": "tomato"}], "orderNumber": other}
    r = await api.patch(path, manifest, APPLY, params={"fieldManager": "tester", "force": "true"})
    assert r.status == 422, r
    assert r.body["message"] == _invalid_message("margherita", other, "field is immutable")

    # Apply of a manifest without the number keeps it.
    manifest["spec"] = {"toppings": [{"name": "tomato"}]}
    r = await api.patch(path, manifest, APPLY, params={"fieldManager": "tester", "force": "true"})
    assert r.status == 200, r
    assert _number(r.body) == number
    # A merge patch that sets it to null leaves it as it is, as an omitted field.
    r = await api.patch(path, {"spec": {"orderNumber": None}}, MERGE)
    assert r.status == 200, r
    assert _number(r.body) == number
    assert set(await _number_keys(api)) == {number}


async def test_v1alpha1_carries_the_number_in_an_annotation(storage_api: Api) -> None:
    api = storage_api
    await api.create_toppings("salami", "mozzarella", "tomato")
    created = await api.create_pizza("alpha", version="v1alpha1")
    annotation = created["metadata"]["annotations"][ORDER_NUMBER_ANNOTATION]
    beta = (await api.get(api.pizzas_path(name="alpha"))).body
    assert str(_number(beta)) == annotation
    # A v1alpha1 client writing back what it read keeps the number.
    r = await api.put(api.pizzas_path("v1alpha1", "alpha"), {**created, "spec": {"toppings": ["salami"]}})
    assert r.status == 200, r
    assert r.body["metadata"]["annotations"][ORDER_NUMBER_ANNOTATION] == annotation
    # Asking for a number through the annotation.
    asked = api.pizza("asked", version="v1alpha1", annotations={ORDER_NUMBER_ANNOTATION: "77"})
    r = await api.post(api.pizzas_path("v1alpha1"), asked)
    assert r.status == 201, r
    assert _number((await api.get(api.pizzas_path(name="asked"))).body) == 77
    bad = api.pizza("bad", version="v1alpha1", annotations={ORDER_NUMBER_ANNOTATION: "seven"})
    r = await api.post(api.pizzas_path("v1alpha1"), bad)
    assert r.status == 422, r
    assert r.body["message"] == _invalid_message("bad", '"seven"', "must be an integer")


async def test_a_create_failing_after_allocation_leaves_the_number_free(storage_api: Api) -> None:
    api = storage_api
    await api.create_toppings("salami", "mozzarella", "tomato")

    def asking(name: str, number: int, **spec: Any) -> dict[str, Any]:
        body = api.pizza(name)
        body["spec"] = {"orderNumber": number, **spec}
        return body

    # Validating admission denies it (PizzaToppings: the topping does not exist).
    r = await api.post(api.pizzas_path(), asking("denied", 5, toppings=[{"name": "pineapple"}]))
    assert r.status == 403, r
    # Validation refuses it (a topping named twice).
    twice = [{"name": "salami"}, {"name": "salami"}]
    r = await api.post(api.pizzas_path(), asking("invalid", 5, toppings=twice))
    assert r.status == 422, r
    # The name is taken: AlreadyExists, and the number stays free.
    await api.create_pizza("existing")
    r = await api.post(api.pizzas_path(), asking("existing", 5))
    assert r.status == 409, r
    # The same failures without asking for a number leave no key behind either.
    r = await api.post(api.pizzas_path(), api.pizza("denied", [{"name": "pineapple"}]))
    assert r.status == 403, r
    r = await api.post(api.pizzas_path(), api.pizza("existing"))
    assert r.status == 409, r
    assert len(await _number_keys(api)) == 1

    r = await api.post(api.pizzas_path(), asking("finally", 5))
    assert r.status == 201, r
    assert _number(r.body) == 5


async def test_a_delete_releases_the_number(storage_api: Api) -> None:
    api = storage_api
    await api.create_toppings("salami", "mozzarella", "tomato")
    body = api.pizza("first")
    body["spec"] = {"orderNumber": 9}
    assert (await api.post(api.pizzas_path(), body)).status == 201
    r = await api.delete(api.pizzas_path(name="first"))
    assert r.status == 200, r
    assert await _number_keys(api) == {}
    body["metadata"]["name"] = "second"
    r = await api.post(api.pizzas_path(), body)
    assert r.status == 201, r

    # Deleted once its last finalizer goes: released with it.
    body["metadata"] = {"name": "third", "finalizers": ["example.com/hold"]}
    body["spec"] = {"orderNumber": 10}
    assert (await api.post(api.pizzas_path(), body)).status == 201
    assert (await api.delete(api.pizzas_path(name="third"))).status == 200
    assert set(await _number_keys(api)) == {9, 10}
    r = await api.patch(api.pizzas_path(name="third"), {"metadata": {"finalizers": None}}, MERGE)
    assert r.status == 200, r
    assert set(await _number_keys(api)) == {9}

    # A deletecollection releases every number.
    r = await api.delete(api.pizzas_path())
    assert r.status == 200, r
    assert await _number_keys(api) == {}


async def test_dry_run_writes_nothing(storage_api: Api) -> None:
    api = storage_api
    await api.create_toppings("salami", "mozzarella", "tomato")
    r = await api.post(api.pizzas_path(), api.pizza("dry"), params={"dryRun": "All"})
    assert r.status == 201, r
    assert 1 <= _number(r.body) <= 999999
    assert await _number_keys(api) == {}
    held = api.pizza("held")
    held["spec"] = {"orderNumber": 3}
    assert (await api.post(api.pizzas_path(), held)).status == 201
    held["metadata"]["name"] = "dry"
    r = await api.post(api.pizzas_path(), held, params={"dryRun": "All"})
    assert r.status == 422, r
    r = await api.delete(api.pizzas_path(name="held"), params={"dryRun": "All"})
    assert r.status == 200, r
    assert set(await _number_keys(api)) == {3}


@pytest.fixture(params=["embedded", "etcd", "no-watch-cache"])
async def small_range_api(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Api]:
    """A server allocating from 1-3 and repairing every 0.2 s (without a watch cache, the taken
    numbers are read from the number keys)."""
    extra = ["--order-numbers", "1-3", "--allocation-repair-interval", "200ms"]
    if request.param == "no-watch-cache":
        extra.append("--watch-cache=false")
    if request.param == "etcd":
        etcd = request.getfixturevalue("etcd_server")
        extra += ["--etcd-servers", etcd.client_url, "--etcd-prefix", unique_prefix()]
    async with (
        server_with_storage(tmp_path / "data", *extra) as (server, storage),
        server.session() as session,
    ):
        yield Api(server, session, {"storage": storage})


async def test_an_exhausted_range_is_kubes_range_is_full(small_range_api: Api) -> None:
    api = small_range_api
    await api.create_toppings("salami", "mozzarella", "tomato")
    numbers = [_number(await api.create_pizza(f"p{i}")) for i in range(3)]
    assert sorted(numbers) == [1, 2, 3]
    r = await api.post(api.pizzas_path(), api.pizza("p3"))
    assert r.status == 500, r
    assert r.body["reason"] == "InternalError"
    assert r.body["message"] == "Internal error occurred: failed to allocate an order number: range is full"
    assert (await api.delete(api.pizzas_path(name="p1"))).status == 200
    assert _number(await api.create_pizza("p3")) == numbers[1]


async def _eventually(check: Any, timeout: float = 10.0) -> None:
    async with asyncio.timeout(timeout):
        while not await check():
            await asyncio.sleep(0.05)


async def test_repair_frees_leaks_and_restores_missing_keys(small_range_api: Api) -> None:
    api = small_range_api
    storage: st.Interface = api.extra["storage"]
    await api.create_toppings("salami", "mozzarella", "tomato")
    # A leaked key, written straight into storage: no pizza holds 2.
    leaked = await storage.create(f"{NUMBERS}2", b'{"owner":"/gone","uid":"x"}')
    # A pizza whose number key went missing.
    body = api.pizza("kept")
    body["spec"] = {"orderNumber": 3}
    created = (await api.post(api.pizzas_path(), body)).body
    await storage.delete(f"{NUMBERS}3")

    async def repaired() -> bool:
        keys = await _number_keys(api)
        return 2 not in keys and 3 in keys

    await _eventually(repaired)
    assert (await _number_keys(api))[3] == {
        "owner": f"/{GROUP}/pizzas/default/kept",
        "uid": created["metadata"]["uid"],
    }
    assert leaked.mod_revision > 0
    # 2 is free again; 3 is held again, so asking for it is a 422.
    body = api.pizza("two")
    body["spec"] = {"orderNumber": 2}
    assert (await api.post(api.pizzas_path(), body)).status == 201
    body = api.pizza("three")
    body["spec"] = {"orderNumber": 3}
    assert (await api.post(api.pizzas_path(), body)).status == 422
