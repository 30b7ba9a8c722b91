"""Create/update details, on both backends: generateName collisions, name validation, namespace
mismatches, PUT on a missing object and (un)conditional updates.

Two rules cannot be reached over HTTP with the restaurant kinds (custom-resource strategies allow
neither create-on-update nor unconditional update, and generated names almost never collide), so those
tests drive the generic Store directly over real storage with a strategy or name generator of their
own; everything else goes through the real HTTPS server.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from apis.meta.errors import StatusError
from apis.restaurant.install import GROUP as GROUP_INFO
from apis.restaurant.install import TOPPING_KIND
from apis.restaurant.validation import validate_topping, validate_topping_update
from apis.runtime.codec import Codec
from registry.generic.options import WriteOptions
from registry.generic.store import Store
from registry.generic.strategy import SpecStatusStrategy
from registry.restaurant.topping.strategy import STRATEGY as TOPPING_STRATEGY
from storage.interface import Interface

GROUP = "restaurant.programming-kubernetes.info"
CODEC = Codec(GROUP_INFO.group, TOPPING_KIND)
DNS_SUBDOMAIN_MESSAGE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
    "must start and end with an alphanumeric character"
)


@pytest.fixture(params=["embedded", "etcd"])
async def storage(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Interface]:
    if request.param == "embedded":
        from storage.embedded import open_embedded

        backend: Interface = await open_embedded(tmp_path / "store.db", prefix="/registry/semantics")
    else:
        from storage.etcd import EtcdConfig, open_etcd

        etcd = request.getfixturevalue("etcd_server")
        backend = await open_etcd(
            EtcdConfig(servers=[etcd.client_url], prefix=f"/registry/semantics/{request.node.name}")
        )
    try:
        yield backend
    finally:
        await backend.close()


def _topping(name: str = "", cost: float = 1, **meta: Any) -> Any:
    data = {
        "apiVersion": f"{GROUP}/v1beta1",
        "kind": "Topping",
        "metadata": {**({"name": name} if name else {}), **meta},
        "spec": {"cost": cost},
    }
    CODEC.default(data, "v1beta1")
    return CODEC.from_version(data, "v1beta1")


def _sequence(*suffixes: str) -> Iterator[str]:
    return iter(suffixes)


async def test_generate_name_collisions_are_retried(storage: Interface) -> None:
    """kube retries a create whose generated name is taken, up to 8 names (RetryGenerateName)."""
    names = _sequence("aaaaa", "bbbbb", "ccccc")
    store = Store(CODEC, TOPPING_STRATEGY, storage, name_generator=lambda base: base + next(names))
    for taken in ("web-aaaaa", "web-bbbbb"):
        await store.create(_topping(taken))
    created = await store.create(_topping(generateName="web-"))
    assert created.metadata["name"] == "web-ccccc"
    assert created.metadata["generateName"] == "web-"
    assert (await store.get("", "web-ccccc")).metadata["uid"] == created.metadata["uid"]


async def test_generate_name_gives_up_after_eight_names(storage: Interface) -> None:
    tried: list[str] = []

    def generator(base: str) -> str:
        tried.append(f"{base}x{len(tried)}")
        return tried[-1]

    store = Store(CODEC, TOPPING_STRATEGY, storage, name_generator=generator)
    for i in range(8):
        await store.create(_topping(f"web-x{i}"))
    for dry_run in (False, True):
        tried.clear()
        with pytest.raises(StatusError) as caught:
            await store.create(_topping(generateName="web-"), WriteOptions(dry_run=dry_run))
        assert len(tried) == 8
        error = caught.value
        assert (error.code, error.reason) == (409, "AlreadyExists")
        assert error.message == (
            f'toppings.{GROUP} "web-x7" already exists, the server was not able to generate a unique name '
            "for the object"
        )
        assert error.details == {"name": "web-x7", "group": GROUP, "kind": "toppings", "retryAfterSeconds": 1}
    # A name the user picked collides plainly (no retry, no generated-name message).
    with pytest.raises(StatusError) as caught:
        await store.create(_topping("web-x0"))
    assert caught.value.message == f'toppings.{GROUP} "web-x0" already exists'


async def test_create_on_update_and_unconditional_update_per_strategy(storage: Interface) -> None:
    """A strategy that allows them (kube: AllowCreateOnUpdate, AllowUnconditionalUpdate). It leaves
    out the schema and its rules (the cost may at most double), which are not what is tested here."""
    lenient = SpecStatusStrategy(
        namespaced=False,
        validate_fn=validate_topping,
        validate_update_fn=validate_topping_update,
        has_status=False,
        allow_create_on_update=True,
        allow_unconditional_update=True,
        validate_schema=False,
    )
    store = Store(CODEC, lenient, storage)

    async def body(obj: Any) -> Any:
        return obj

    made, created = await store.update("", "fresh", lambda _old: body(_topping("fresh", 2)))
    assert created is True
    assert made.metadata["uid"] and made.metadata["generation"] == 1
    # No resourceVersion in the body: the update applies to whatever is stored.
    changed, created = await store.update("", "fresh", lambda _old: body(_topping("fresh", 5)))
    assert created is False
    assert changed.spec.cost == 5 and changed.metadata["generation"] == 2
    assert changed.metadata["uid"] == made.metadata["uid"]
    # A stale one still conflicts.
    stale = _topping("fresh", 6, resourceVersion=made.metadata["resourceVersion"])
    with pytest.raises(StatusError) as caught:
        await store.update("", "fresh", lambda _old: body(stale))
    assert caught.value.code == 409

    strict = Store(CODEC, TOPPING_STRATEGY, storage)
    with pytest.raises(StatusError) as caught:
        await strict.update("", "missing", lambda _old: body(_topping("missing")))
    assert (caught.value.code, caught.value.reason) == (404, "NotFound")
    with pytest.raises(StatusError) as caught:
        await strict.update("", "fresh", lambda _old: body(_topping("fresh", 7)))
    assert (caught.value.code, caught.value.reason) == (422, "Invalid")
    assert (
        "metadata.resourceVersion: Invalid value: 0: must be specified for an update" in caught.value.message
    )


@pytest.mark.parametrize(
    ("name", "field", "detail"),
    [
        ("Bad_Name", "metadata.name", f'Invalid value: "Bad_Name": {DNS_SUBDOMAIN_MESSAGE}'),
        ("-lead", "metadata.name", f'Invalid value: "-lead": {DNS_SUBDOMAIN_MESSAGE}'),
        ("a" * 254, "metadata.name", "must be no more than 253 characters"),
        ("", "metadata.name", "Required value: name or generateName is required"),
    ],
)
async def test_invalid_names_are_422(any_api, name: str, field: str, detail: str) -> None:
    api = any_api
    for version in ("v1alpha1", "v1beta1"):
        r = await api.post(api.toppings_path(version), api.topping(name, 1, version))
        assert r.status == 422, r
        assert (r.body["reason"], r.body["details"]["kind"]) == ("Invalid", "Topping")
        assert [c["field"] for c in r.body["details"]["causes"]] == [field]
        assert detail in r.body["message"]
    assert (await api.get(api.toppings_path())).body["items"] == []


async def test_invalid_generate_name_is_422(any_api) -> None:
    api = any_api
    body = api.topping("", 1, generateName="Bad_")
    del body["metadata"]["name"]
    r = await api.post(api.toppings_path(), body)
    assert r.status == 422, r
    # As in kube, the name generated from it is validated too (ValidateObjectMeta).
    assert [c["field"] for c in r.body["details"]["causes"]] == ["metadata.generateName", "metadata.name"]


async def test_namespace_in_body_must_match_the_url(any_api) -> None:
    api = any_api
    await api.create_toppings("ham")
    r = await api.post(api.pizzas_path(namespace="a"), api.pizza("p", [], namespace="b"))
    assert r.status == 400, r
    assert r.body["reason"] == "BadRequest"
    assert (
        r.body["message"]
        == "the namespace of the provided object does not match the namespace sent on the request"
    )
    r = await api.post(api.pizzas_path(namespace="a"), api.pizza("p", []))
    assert r.status == 201, r
    assert r.body["metadata"]["namespace"] == "a"
    r = await api.put(
        api.pizzas_path("v1beta1", "p", namespace="a"),
        {**r.body, "metadata": {**r.body["metadata"], "namespace": "b"}},
    )
    assert r.status == 400, r
    assert r.body["reason"] == "BadRequest"
    assert (await api.get(api.pizzas_path("v1beta1", "p", namespace="b"))).status == 404


async def test_put_rules_for_custom_resources(any_api) -> None:
    """Custom resources: PUT on a missing object is 404 (no create-on-update); PUT without a
    resourceVersion is 422; a stale one 409; a wrong uid 409; the current one succeeds."""
    api = any_api
    r = await api.put(api.toppings_path("v1beta1", "ghost"), api.topping("ghost", 1, resourceVersion="1"))
    assert r.status == 404, r
    assert r.body["details"] == {"name": "ghost", "group": GROUP, "kind": "toppings"}
    r = await api.put(api.toppings_path("v1beta1", "ghost"), api.topping("ghost", 1))
    assert r.status == 404, r
    assert (await api.get(api.toppings_path("v1beta1", "ghost"))).status == 404

    created = (await api.post(api.toppings_path(), api.topping("salt"))).body
    path = api.toppings_path("v1beta1", "salt")
    meta = created["metadata"]
    r = await api.put(path, {**created, "metadata": {"name": "salt"}, "spec": {"cost": 2}})
    assert r.status == 422, r
    assert r.body["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": "Invalid value: 0: must be specified for an update",
            "field": "metadata.resourceVersion",
        }
    ]
    r = await api.put(path, {**created, "metadata": {**meta, "uid": "someone-else"}, "spec": {"cost": 2}})
    assert r.status == 409, r
    assert "UID in precondition: someone-else" in r.body["message"]
    r = await api.put(path, {**created, "spec": {"cost": 2}})
    assert r.status == 200, r
    r = await api.put(path, {**created, "spec": {"cost": 3}})
    assert r.status == 409, r
    assert r.body["reason"] == "Conflict"
    # A merge patch carries no resourceVersion and needs none.
    r = await api.patch(path, {"spec": {"cost": 4}}, "application/merge-patch+json")
    assert (r.status, r.body["spec"]) == (200, {"cost": 4})
    # The name in the body must be the URL's.
    current = r.body
    r = await api.put(path, {**current, "metadata": {**current["metadata"], "name": "pepper"}})
    assert r.status == 400, r
    assert r.body["message"] == "the name of the object (pepper) does not match the name on the URL (salt)"
