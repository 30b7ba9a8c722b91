"""Conversion between v1alpha1 and v1beta1, and schema defaults, as a client sees them."""

from __future__ import annotations

import pytest

GROUP = "restaurant.programming-kubernetes.info"
DEFAULT_NAMES = ("salami", "mozzarella", "tomato")


async def test_v1alpha1_duplicates_become_v1beta1_quantities(any_api) -> None:
    api = any_api
    await api.create_toppings("tomato", "cheese")
    created = await api.create_pizza("p", ["tomato", "cheese", "tomato"], "v1alpha1")
    assert created["spec"]["toppings"] == ["tomato", "tomato", "cheese"] or sorted(
        created["spec"]["toppings"]
    ) == [
        "cheese",
        "tomato",
        "tomato",
    ]
    beta = (await api.get(api.pizzas_path("v1beta1", "p"))).body
    assert beta["apiVersion"] == f"{GROUP}/v1beta1"
    assert sorted(beta["spec"]["toppings"], key=lambda t: t["name"]) == [
        {"name": "cheese", "quantity": 1},
        {"name": "tomato", "quantity": 2},
    ]
    assert beta["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert beta["metadata"]["uid"] == created["metadata"]["uid"]


async def test_v1beta1_quantities_read_as_v1alpha1_duplicates(any_api) -> None:
    api = any_api
    await api.create_toppings("ham", "olive")
    await api.create_pizza("q", [{"name": "ham", "quantity": 3}, {"name": "olive"}], "v1beta1")
    alpha = (await api.get(api.pizzas_path("v1alpha1", "q"))).body
    assert alpha["apiVersion"] == f"{GROUP}/v1alpha1"
    assert alpha["kind"] == "Pizza"
    assert alpha["spec"]["toppings"] == ["ham", "ham", "ham", "olive"]
    listed = (await api.get(api.pizzas_path("v1alpha1"))).body
    assert listed["apiVersion"] == f"{GROUP}/v1alpha1"
    assert listed["items"][0]["apiVersion"] == f"{GROUP}/v1alpha1"
    assert listed["items"][0]["spec"]["toppings"] == ["ham", "ham", "ham", "olive"]


async def test_body_in_other_version_than_url(api) -> None:
    """A body in another served version than the URL's is refused, as k8s.io/apiserver refuses it
    (it used to be converted and accepted here)."""
    await api.create_toppings("ham")
    r = await api.post(api.pizzas_path("v1beta1"), api.pizza("cross", ["ham", "ham"], "v1alpha1"))
    assert r.status == 400, r
    assert r.body["reason"] == "BadRequest"
    assert r.body["message"] == (
        f"the API version in the data ({GROUP}/v1alpha1) does not match "
        f"the expected API version ({GROUP}/v1beta1)"
    )
    assert (await api.get(api.pizzas_path("v1beta1", "cross"))).status == 404


async def test_topping_reads_in_both_versions(api) -> None:
    await api.post(api.toppings_path("v1alpha1"), api.topping("feta", 1.5, "v1alpha1"))
    for version in ("v1alpha1", "v1beta1"):
        body = (await api.get(api.toppings_path(version, "feta"))).body
        assert body["apiVersion"] == f"{GROUP}/{version}"
        assert body["spec"] == {"cost": 1.5}


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("v1alpha1", list(DEFAULT_NAMES)),
        ("v1beta1", [{"name": n, "quantity": 1} for n in DEFAULT_NAMES]),
    ],
)
async def test_pizza_without_spec_gets_default_toppings(api, version: str, expected: list) -> None:
    await api.create_toppings(*DEFAULT_NAMES)
    created = await api.create_pizza("margherita", None, version)
    assert created["spec"]["toppings"] == expected
    stored = (await api.get(api.pizzas_path(version, "margherita"))).body
    assert stored["spec"]["toppings"] == expected


async def test_pizza_with_empty_spec_gets_default_toppings(api) -> None:
    await api.create_toppings(*DEFAULT_NAMES)
    body = api.pizza("empty-spec", None)
    body["spec"] = {}
    r = await api.post(api.pizzas_path(), body)
    assert r.status == 201, r
    assert [t["name"] for t in r.body["spec"]["toppings"]] == list(DEFAULT_NAMES)


async def test_default_needs_existing_toppings(api) -> None:
    """The defaults name toppings, and the admission plugin checks they exist."""
    r = await api.post(api.pizzas_path(), api.pizza("nothing-there", None))
    assert r.status == 403, r
    assert r.body["message"] == f'pizzas.{GROUP} "nothing-there" is forbidden: unknown topping: salami'


async def test_v1beta1_topping_without_quantity_gets_one(api) -> None:
    await api.create_toppings("corn")
    created = await api.create_pizza("c", [{"name": "corn"}], "v1beta1")
    assert created["spec"]["toppings"] == [{"name": "corn", "quantity": 1}]


@pytest.mark.parametrize("version", ["v1alpha1", "v1beta1"])
async def test_explicit_empty_toppings_stay_empty(any_api, version: str) -> None:
    """KEP-1929: [] is a value, not an absence — no defaults replace it."""
    api = any_api
    created = await api.create_pizza("plain", [], version)
    assert created["spec"]["toppings"] == []
    for read_version in ("v1alpha1", "v1beta1"):
        body = (await api.get(api.pizzas_path(read_version, "plain"))).body
        assert body["spec"]["toppings"] == []


async def test_null_toppings_are_defaulted(api) -> None:
    """A null is dropped before defaulting (KEP-1929 for non-nullable fields), so the default applies."""
    await api.create_toppings(*DEFAULT_NAMES)
    body = api.pizza("nulled", None)
    body["spec"] = {"toppings": None}
    r = await api.post(api.pizzas_path(), body)
    assert r.status == 201, r
    assert [t["name"] for t in r.body["spec"]["toppings"]] == list(DEFAULT_NAMES)


async def test_status_in_both_versions(api) -> None:
    await api.create_toppings("ham")
    created = await api.create_pizza("s", ["ham"], "v1alpha1")
    r = await api.put(api.pizzas_path("v1alpha1", "s") + "/status", {**created, "status": {"cost": 2.5}})
    assert r.status == 200, r
    for version in ("v1alpha1", "v1beta1"):
        assert (await api.get(api.pizzas_path(version, "s"))).body["status"] == {"cost": 2.5}
