"""metadata.managedFields over HTTPS: who set which field, as kube's field manager records it.

Behaviour follows k8s.io/apimachinery/pkg/util/managedfields/internal (fieldmanager.go,
managedfieldsupdater.go, capmanagers.go, stripmeta.go, skipnonapplied.go) and the handlers'
managerOrUserAgent/ValidateFieldManager: Update entries per (manager, apiVersion, subresource),
fields computed on the request's version, ownership moving to whoever changed a field.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.integration.conftest import GROUP, V1A1, V1B1, Api

SMP = "application/strategic-merge-patch+json"
MERGE = "application/merge-patch+json"
TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
TOPPINGS = [{"name": "tomato", "quantity": 1}, {"name": "ham", "quantity": 2}]


def entries(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return obj["metadata"].get("managedFields", [])


def entry(obj: dict[str, Any], manager: str, subresource: str = "") -> dict[str, Any] | None:
    found = [e for e in entries(obj) if e["manager"] == manager and e.get("subresource", "") == subresource]
    assert len(found) <= 1, entries(obj)
    return found[0] if found else None


def fields(obj: dict[str, Any], manager: str, subresource: str = "") -> dict[str, Any]:
    e = entry(obj, manager, subresource)
    assert e is not None, (manager, entries(obj))
    return e["fieldsV1"]


def item(name: str) -> str:
    return f'k:{{"name":"{name}"}}'


@pytest.fixture
async def toppings(api: Api) -> None:
    await api.create_toppings("tomato", "ham", "basil")


async def create(api: Api, manager: str, **meta: Any) -> dict[str, Any]:
    r = await api.post(api.pizzas_path(), api.pizza("p", TOPPINGS, **meta), params={"fieldManager": manager})
    assert r.status == 201, r
    return r.body


async def test_create_records_an_update_entry_of_the_request_version(api: Api, toppings: None) -> None:
    r = await api.post(
        api.pizzas_path(),
        api.pizza("p", TOPPINGS, labels={"a": "1"}),
        headers={"User-Agent": "chef/1.2 (linux)"},
    )
    assert r.status == 201, r
    [e] = entries(r.body)
    assert e.keys() == {"manager", "operation", "apiVersion", "time", "fieldsType", "fieldsV1"}
    assert (e["manager"], e["operation"], e["apiVersion"], e["fieldsType"]) == (
        "chef",
        "Update",
        V1B1,
        "FieldsV1",
    )
    assert TIME.match(e["time"]), e
    quantity = {".": {}, "f:name": {}, "f:quantity": {}}
    # No name, namespace, uid, generation... (stripped) and no status (reset by the main resource).
    assert e["fieldsV1"] == {
        "f:metadata": {"f:labels": {".": {}, "f:a": {}}},
        "f:spec": {".": {}, "f:toppings": {".": {}, item("ham"): quantity, item("tomato"): quantity}},
    }
    assert entries((await api.get(api.pizzas_path(name="p"))).body) == [e]


async def test_v1alpha1_create_owns_the_atomic_list(api: Api, toppings: None) -> None:
    r = await api.post(
        api.pizzas_path("v1alpha1"), api.pizza("p", ["ham", "ham"], "v1alpha1"), params={"fieldManager": "m"}
    )
    [e] = entries(r.body)
    assert e["apiVersion"] == V1A1
    assert e["fieldsV1"] == {"f:spec": {".": {}, "f:toppings": {}}}
    # Reading in another version does not change the entries.
    assert entries((await api.get(api.pizzas_path("v1beta1", "p"))).body) == [e]


async def test_field_manager_defaults(api: Api, toppings: None) -> None:
    r = await api.post(api.toppings_path(), api.topping("olive"), headers={"User-Agent": ""})
    assert [e["manager"] for e in entries(r.body)] == ["unknown"]
    r = await api.post(
        api.toppings_path(),
        api.topping("caper"),
        headers={"User-Agent": "my\u00adtool/1"},
        params={"fieldManager": ""},
    )
    assert [e["manager"] for e in entries(r.body)] == ["mytool"]  # unprintable characters dropped


@pytest.mark.parametrize(
    "method, options", [("POST", "CreateOptions"), ("PUT", "UpdateOptions"), ("PATCH", "PatchOptions")]
)
async def test_field_manager_is_validated(api: Api, toppings: None, method: str, options: str) -> None:
    await create(api, "m")
    path = api.pizzas_path() if method == "POST" else api.pizzas_path(name="p")
    headers = {"Content-Type": MERGE if method == "PATCH" else "application/json"}
    body = "{}" if method == "PATCH" else '{"apiVersion": "x"}'
    for value, reason, message in (
        ("x" * 129, "FieldValueTooLong", "Too long: may not be more than 128 bytes"),
        ("a\u0007", "FieldValueInvalid", "invalid character U+0007 (at position 1)"),
    ):
        r = await api.request(method, path, data=body, headers=headers, params={"fieldManager": value})
        assert r.status == 422, r
        assert r.body["details"]["kind"] == options and r.body["details"]["group"] == "meta.k8s.io"
        [cause] = r.body["details"]["causes"]
        assert (cause["reason"], cause["field"]) == (reason, "fieldManager")
        assert message in cause["message"]


async def test_force_is_forbidden_for_non_apply_patches(api: Api, toppings: None) -> None:
    await create(api, "m")
    r = await api.patch(api.pizzas_path(name="p"), {}, MERGE, params={"force": "true"})
    assert r.status == 422, r
    assert r.body["details"]["causes"] == [
        {
            "reason": "FieldValueForbidden",
            "message": "Forbidden: may not be specified for non-apply patch",
            "field": "force",
        }
    ]


async def test_ownership_moves_to_whoever_changes_a_field(api: Api, toppings: None) -> None:
    await create(api, "alice")
    path = api.pizzas_path(name="p")
    r = await api.patch(
        path, {"spec": {"toppings": [{"name": "ham", "quantity": 5}]}}, SMP, params={"fieldManager": "bob"}
    )
    assert r.status == 200, r
    assert [e["manager"] for e in entries(r.body)] == ["alice", "bob"]
    assert fields(r.body, "bob") == {"f:spec": {"f:toppings": {item("ham"): {"f:quantity": {}}}}}
    assert fields(r.body, "alice")["f:spec"]["f:toppings"][item("ham")] == {".": {}, "f:name": {}}
    assert fields(r.body, "alice")["f:spec"]["f:toppings"][item("tomato")] == {
        ".": {},
        "f:name": {},
        "f:quantity": {},
    }


async def test_a_manager_left_with_nothing_disappears(api: Api, toppings: None) -> None:
    await create(api, "creator", labels={"base": "1"})
    path = api.pizzas_path(name="p")
    r = await api.patch(path, {"metadata": {"labels": {"x": "1"}}}, MERGE, params={"fieldManager": "alice"})
    assert fields(r.body, "alice") == {"f:metadata": {"f:labels": {"f:x": {}}}}
    r = await api.patch(path, {"metadata": {"labels": {"x": "2"}}}, MERGE, params={"fieldManager": "bob"})
    assert entry(r.body, "alice") is None
    assert fields(r.body, "bob") == {"f:metadata": {"f:labels": {"f:x": {}}}}
    # Removing a field takes it from its owner too; a removal alone owns nothing.
    r = await api.patch(path, {"metadata": {"labels": {"x": None}}}, MERGE, params={"fieldManager": "carol"})
    assert entry(r.body, "bob") is None and entry(r.body, "carol") is None
    assert [e["manager"] for e in entries(r.body)] == ["creator"]


async def test_a_no_op_write_records_nothing(api: Api, toppings: None) -> None:
    created = await create(api, "creator")
    r = await api.put(api.pizzas_path(name="p"), created, params={"fieldManager": "carol"})
    assert r.status == 200, r
    assert entries(r.body) == entries(created)
    assert r.body["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]  # nothing written


async def test_entries_are_per_version_and_compared_in_each_version(api: Api, toppings: None) -> None:
    await create(api, "creator")
    r = await api.patch(
        api.pizzas_path("v1alpha1", "p"),
        {"spec": {"toppings": ["basil"]}},
        MERGE,
        params={"fieldManager": "dave"},
    )
    assert r.status == 200, r
    dave = entry(r.body, "dave")
    assert dave is not None and dave["apiVersion"] == V1A1
    assert dave["fieldsV1"] == {"f:spec": {"f:toppings": {}}}
    # In v1beta1 ham and tomato went away: the creator no longer owns them.
    creator = fields(r.body, "creator")
    assert creator == {"f:spec": {".": {}, "f:toppings": {}}}
    # The same manager writing in another version gets another entry.
    r = await api.patch(
        api.pizzas_path("v1beta1", "p"),
        {"metadata": {"labels": {"v": "b"}}},
        MERGE,
        params={"fieldManager": "dave"},
    )
    assert sorted(e["apiVersion"] for e in entries(r.body) if e["manager"] == "dave") == [V1A1, V1B1]


async def test_status_writes_are_recorded_with_their_subresource(api: Api, toppings: None) -> None:
    await create(api, "ctl")
    path = api.pizzas_path(name="p")
    r = await api.patch(path + "/status", {"status": {"cost": 5}}, MERGE, params={"fieldManager": "ctl"})
    assert r.status == 200, r
    assert fields(r.body, "ctl", "status") == {"f:status": {"f:cost": {}}}
    assert entry(r.body, "ctl", "status")["subresource"] == "status"  # type: ignore[index]
    assert "f:status" not in fields(r.body, "ctl")  # the main entry is separate and untouched
    # Status sent to the main resource is reset by the strategy: nobody owns it through there.
    r = await api.patch(path, {"status": {"cost": 7}}, MERGE, params={"fieldManager": "other"})
    assert entry(r.body, "other") is None and r.body["status"] == {"cost": 5}
    # A subresource request cannot set managedFields.
    r = await api.patch(path + "/status", {"metadata": {"managedFields": []}}, MERGE)
    assert entries(r.body) and entry(r.body, "ctl", "status") is not None


async def test_managed_fields_sent_on_update_are_honoured(api: Api, toppings: None) -> None:
    created = await create(api, "alice")
    body = dict(created)
    body["metadata"] = {
        **created["metadata"],
        "managedFields": [{**entries(created)[0], "manager": "renamed"}],
    }
    r = await api.put(api.pizzas_path(name="p"), body, params={"fieldManager": "bob"})
    assert r.status == 200, r
    assert [e["manager"] for e in entries(r.body)] == ["renamed"]
    assert entries(r.body)[0]["time"] == entries(created)[0]["time"]


async def test_invalid_managed_fields_sent_are_ignored(api: Api, toppings: None) -> None:
    created = await create(api, "alice")
    body = dict(created)
    body["metadata"] = {**created["metadata"], "managedFields": [{"manager": "x", "operation": "Bogus"}]}
    r = await api.put(api.pizzas_path(name="p"), body)
    assert r.status == 200, r
    assert entries(r.body) == entries(created)


async def test_empty_managed_fields_reset_tracking(api: Api, toppings: None) -> None:
    created = await create(api, "alice")
    path = api.pizzas_path(name="p")
    body = {**created, "metadata": {**created["metadata"], "managedFields": []}}
    r = await api.put(path, body)
    assert r.status == 200 and "managedFields" not in r.body["metadata"], r
    # With nothing left to track, later updates are not tracked either (skipNonAppliedManager).
    r = await api.patch(path, {"metadata": {"labels": {"a": "b"}}}, MERGE, params={"fieldManager": "bob"})
    assert r.status == 200 and "managedFields" not in r.body["metadata"], r


async def test_a_single_empty_entry_resets_too(api: Api, toppings: None) -> None:
    await create(api, "alice")
    ops = [{"op": "replace", "path": "/metadata/managedFields", "value": [{}]}]
    r = await api.patch(api.pizzas_path(name="p"), ops, "application/json-patch+json")
    assert r.status == 200 and "managedFields" not in r.body["metadata"], r


async def test_update_managers_are_capped_at_ten(api: Api, toppings: None) -> None:
    await create(api, "creator")
    path = api.pizzas_path(name="p")
    for i in range(11):
        r = await api.patch(
            path, {"metadata": {"labels": {f"k{i}": "v"}}}, MERGE, params={"fieldManager": f"m{i:02d}"}
        )
        assert r.status == 200, r
    managed = entries(r.body)
    assert len(managed) == 10, [e["manager"] for e in managed]
    ancient = entry(r.body, "ancient-changes")
    assert ancient is not None and (ancient["operation"], ancient["apiVersion"]) == ("Update", V1B1)
    assert entry(r.body, "m10") is not None
    owned = {k for e in managed for k in e["fieldsV1"].get("f:metadata", {}).get("f:labels", {})}
    assert {f"f:k{i}" for i in range(11)} <= owned  # merged, never lost


async def test_dry_run_create_shows_but_stores_nothing(api: Api, toppings: None) -> None:
    r = await api.post(
        api.pizzas_path(), api.pizza("p", TOPPINGS), params={"dryRun": "All", "fieldManager": "m"}
    )
    assert r.status == 201 and [e["manager"] for e in entries(r.body)] == ["m"], r
    assert (await api.get(api.pizzas_path(name="p"))).status == 404


async def test_topping_groups_follow_the_same_rules(api: Api) -> None:
    r = await api.post(
        api.toppings_path("v1alpha1"), api.topping("olive", 1, "v1alpha1"), params={"fieldManager": "m"}
    )
    assert entries(r.body)[0]["apiVersion"] == f"{GROUP}/v1alpha1"
    assert entries(r.body)[0]["fieldsV1"] == {"f:spec": {".": {}, "f:cost": {}}}
