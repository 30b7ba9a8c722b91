"""deletecollection deletes each item as kube's Store.Delete would, on both backends and over HTTPS.

Items are deleted from the state the list gave (registry/generic/deletion.py); these tests hold
that to kube's per-item semantics: finalizers mark instead of deleting, preconditions answer in
BeforeDelete's words, validating admission sees each item and its denial is the answer, and an item
written while its delete is under way is deleted from its current state after admission saw that
state too (kube's conditionalDelete retry).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.admission import (
    GROUP,
    admission_server,
    configuration,
    hook,
    pizza,
    pizza_rule,
    pizzas_path,
    request,
)
from tests.fixtures.control_plane import ControlPlane
from tests.fixtures.control_plane import control_plane_fixture as control_plane_fixture
from tests.fixtures.etcd import unique_prefix
from tests.fixtures.webhook_server import running_webhook

HOLD = "example.com/hold"
MERGE = "application/merge-patch+json"
NO_TOPPINGS_CHECK = ("--disable-admission-plugins", "PizzaToppings")
DELETE_RULES = [pizza_rule(operations=["DELETE"])]


@pytest.fixture(params=["embedded", "etcd"])
def backend_flags(request: pytest.FixtureRequest) -> Iterator[list[str]]:
    if request.param == "embedded":
        yield []
        return
    etcd = request.getfixturevalue("etcd_server")
    yield ["--etcd-servers", etcd.client_url, "--etcd-prefix", unique_prefix()]


def _options(**fields: Any) -> dict[str, Any]:
    return {"kind": "DeleteOptions", "apiVersion": "v1", **fields}


async def test_a_held_item_among_many_is_marked_and_the_others_go(any_api) -> None:
    api = any_api
    names = [f"t{i:02d}" for i in range(40)]
    for name in names:
        meta = {"finalizers": [HOLD]} if name == "t17" else {}
        assert (await api.post(api.toppings_path(), api.topping(name, **meta))).status == 201

    r = await api.delete(api.toppings_path())
    assert r.status == 200, r
    # The answer is the list as read: every item, none yet marked.
    assert [i["metadata"]["name"] for i in r.body["items"]] == names
    assert not any(i["metadata"].get("deletionTimestamp") for i in r.body["items"])
    [held] = (await api.get(api.toppings_path())).body["items"]
    assert held["metadata"]["name"] == "t17" and held["metadata"]["finalizers"] == [HOLD]
    assert held["metadata"]["deletionTimestamp"] and held["metadata"]["deletionGracePeriodSeconds"] == 0

    # Releasing the finalizer finishes the deletion.
    r = await api.patch(api.toppings_path("v1beta1", "t17"), {"metadata": {"finalizers": None}}, MERGE)
    assert r.status == 200, r
    assert (await api.get(api.toppings_path("v1beta1", "t17"))).status == 404


async def test_preconditions_answer_in_before_deletes_words(any_api) -> None:
    api = any_api
    uids = {}
    for name in ("a", "b", "c"):
        r = await api.post(api.toppings_path(), api.topping(name))
        uids[name] = (r.body["metadata"]["uid"], r.body["metadata"]["resourceVersion"])

    r = await api.request("DELETE", api.toppings_path(), json=_options(preconditions={"uid": "nope"}))
    assert r.status == 409, r
    assert re.fullmatch(
        rf'Operation cannot be fulfilled on Topping\.{re.escape(GROUP)} "[abc]": the UID in the precondition '
        r"\(nope\) does not match the UID in record \([0-9a-f-]+\)\. The object might have been deleted and "
        r"then recreated",
        r.body["message"],
    ), r.body
    assert len((await api.get(api.toppings_path())).body["items"]) == 3

    # Preconditions that hold for the selected item: it goes, the others stay.
    uid, rv = uids["b"]
    r = await api.request(
        "DELETE",
        api.toppings_path(),
        json=_options(preconditions={"uid": uid, "resourceVersion": rv}),
        params={"fieldSelector": "metadata.name=b"},
    )
    assert r.status == 200, r
    assert [i["metadata"]["name"] for i in (await api.get(api.toppings_path())).body["items"]] == ["a", "c"]


async def test_an_admission_denial_of_one_item_is_the_answer(
    control_plane: ControlPlane, tmp_path: Path, backend_flags: list[str]
) -> None:
    def answer(req: dict[str, Any]) -> dict[str, Any]:
        if req["name"] == "p07":
            return {"allowed": False, "status": {"message": "p07 stays"}}
        return {"allowed": True}

    async with running_webhook(tmp_path / "hook", answer) as webhook:
        control_plane.objects.validating.put(
            configuration("keep", hook("keep.example.com", webhook.client_config(), rules=DELETE_RULES))
        )
        async with admission_server(
            tmp_path / "data", control_plane, *NO_TOPPINGS_CHECK, *backend_flags
        ) as server:
            for i in range(20):
                assert (await request(server, "POST", pizzas_path(), pizza(f"p{i:02d}")))[0] == 201
            status, body, _ = await request(server, "DELETE", pizzas_path())
            assert status == 400, body
            assert body["message"] == 'admission webhook "keep.example.com" denied the request: p07 stays'
            assert (await request(server, "GET", pizzas_path(name="p07")))[0] == 200
    reviews = [r["request"] for r in webhook.reviews]
    assert all(r["operation"] == "DELETE" and r["object"] is None for r in reviews)
    # Its listed state was current, so admission was asked once about it, as kube's Delete does.
    assert [r["oldObject"]["metadata"]["name"] for r in reviews].count("p07") == 1


async def test_an_item_written_during_its_delete_is_deleted_from_its_current_state(
    control_plane: ControlPlane, tmp_path: Path, backend_flags: list[str]
) -> None:
    """The webhook changes p03 while the server waits for its verdict on deleting p03: the delete of
    the listed state fails its revision compare, and the item is deleted from its current state after
    admission saw that state (kube's conditionalDelete retry)."""
    async with running_webhook(tmp_path / "hook") as webhook:
        control_plane.objects.validating.put(
            configuration("touch", hook("touch.example.com", webhook.client_config(), rules=DELETE_RULES))
        )
        async with admission_server(
            tmp_path / "data", control_plane, *NO_TOPPINGS_CHECK, *backend_flags
        ) as server:
            touched: list[int] = []

            async def touch(req: dict[str, Any]) -> None:
                if req["name"] == "p03" and not touched:
                    touched.append(1)
                    patch = {"metadata": {"labels": {"touched": "yes"}}}
                    status, body, _ = await request(
                        server, "PATCH", pizzas_path(name="p03"), patch, content_type=MERGE
                    )
                    assert status == 200, body

            webhook.before_answer = touch
            for i in range(10):
                assert (await request(server, "POST", pizzas_path(), pizza(f"p{i:02d}")))[0] == 201
            status, body, _ = await request(server, "DELETE", pizzas_path())
            assert status == 200, body
            # The answer is the list as read, before the change.
            [listed] = [i for i in body["items"] if i["metadata"]["name"] == "p03"]
            assert "labels" not in listed["metadata"]
            status, left, _ = await request(server, "GET", pizzas_path())
            assert left["items"] == []
    seen = [r["request"]["oldObject"] for r in webhook.reviews if r["request"]["name"] == "p03"]
    assert [o["metadata"].get("labels") for o in seen] == [None, {"touched": "yes"}]
    assert int(seen[1]["metadata"]["resourceVersion"]) > int(seen[0]["metadata"]["resourceVersion"])
