"""Server-side apply over HTTPS: every status code and cause kube's applyPatcher and field manager give.

Expected bodies are kube 1.36's (k8s.io/apiserver handlers/patch.go, k8s.io/apimachinery
managedfields/internal: versioncheck.go, structuredmerge.go, conflict.go, lastappliedmanager.go,
skipnonapplied.go; sigs.k8s.io/structured-merge-diff merge/update.go), read in source.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.control_plane import (
    ControlPlane,
    call,
    control_plane_fixture,  # noqa: F401 - provides the control_plane fixture
    delegated_server,
)
from tests.integration.conftest import GROUP, V1A1, V1B1, Api

APPLY = "application/apply-patch+yaml"
MERGE = "application/merge-patch+json"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def item(name: str) -> str:
    return f'k:{{"name":"{name}"}}'


def entries(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return obj["metadata"].get("managedFields", [])


def entry(obj: dict[str, Any], manager: str, subresource: str = "") -> dict[str, Any] | None:
    found = [e for e in entries(obj) if e["manager"] == manager and e.get("subresource", "") == subresource]
    assert len(found) <= 1, entries(obj)
    return found[0] if found else None


def config(name: str = "p", version: str = "v1beta1", spec: Any = None, **meta: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": f"{GROUP}/{version}",
        "kind": "Pizza",
        "metadata": {"name": name, **meta},
    }
    if spec is not None:
        body["spec"] = spec
    return body


async def apply(
    api: Api, body: Any, manager: str, *, version: str = "v1beta1", name: str = "p", **params: str
) -> Any:
    return await api.patch(
        api.pizzas_path(version, name),
        body if isinstance(body, str) else json.dumps(body),
        APPLY,
        params={"fieldManager": manager, **params},
    )


@pytest.fixture
async def toppings(api: Api) -> None:
    await api.create_toppings("tomato", "ham", "basil", "salami", "mozzarella")


# --- create, update, no-op ------------------------------------------------------------------------


async def test_apply_creates_then_updates(api: Api, toppings: None) -> None:
    yaml_body = (
        f"apiVersion: {V1B1}\nkind: Pizza\nmetadata:\n  name: p\n  labels: {{a: '1'}}\n"
        "spec:\n  toppings:\n  - name: ham\n    quantity: 2\n"
    )
    r = await apply(api, yaml_body, "alice")
    assert r.status == 201, r
    created = r.body
    assert created["spec"]["toppings"] == [{"name": "ham", "quantity": 2}]
    [e] = entries(created)
    assert (e["manager"], e["operation"], e["apiVersion"], e["fieldsType"]) == (
        "alice",
        "Apply",
        V1B1,
        "FieldsV1",
    )
    assert e["fieldsV1"] == {
        "f:metadata": {"f:labels": {"f:a": {}}},
        "f:spec": {"f:toppings": {item("ham"): {".": {}, "f:name": {}, "f:quantity": {}}}},
    }
    r = await apply(
        api, config(spec={"toppings": [{"name": "ham", "quantity": 3}]}, labels={"a": "1"}), "alice"
    )
    assert r.status == 200, r
    assert r.body["spec"]["toppings"] == [{"name": "ham", "quantity": 3}]
    assert r.body["metadata"]["resourceVersion"] != created["metadata"]["resourceVersion"]
    assert r.body["metadata"]["generation"] == 2


async def test_json_body_and_noop_keeps_resource_version(api: Api, toppings: None) -> None:
    body = config(spec={"toppings": [{"name": "ham", "quantity": 1}]})
    first = (await apply(api, body, "alice")).body
    r = await apply(api, body, "alice")
    assert r.status == 200, r
    assert r.body["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    assert entries(r.body) == entries(first)


async def test_dry_run_stores_nothing(api: Api, toppings: None) -> None:
    r = await apply(api, config(spec={"toppings": [{"name": "ham"}]}), "alice", dryRun="All")
    assert r.status == 201, r
    assert entry(r.body, "alice") is not None
    assert (await api.get(api.pizzas_path(name="p"))).status == 404


# --- request errors -------------------------------------------------------------------------------


async def test_field_manager_is_required(api: Api) -> None:
    r = await api.patch(api.pizzas_path(name="p"), json.dumps(config()), APPLY)
    assert r.status == 422, r
    assert r.body["reason"] == "Invalid"
    assert r.body["details"]["kind"] == "PatchOptions" and r.body["details"]["group"] == "meta.k8s.io"
    assert r.body["details"]["causes"] == [
        {
            "reason": "FieldValueRequired",
            "message": "Required value: is required for apply patch",
            "field": "fieldManager",
        }
    ]


async def test_force_is_allowed_on_apply(api: Api, toppings: None) -> None:
    r = await apply(api, config(spec={"toppings": [{"name": "ham"}]}), "alice", force="true")
    assert r.status == 201, r


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            {"apiVersion": V1A1, "kind": "Pizza", "metadata": {"name": "p"}},
            f"invalid object type: {V1A1}, Kind=Pizza",
        ),
        (
            {"apiVersion": V1B1, "kind": "Topping", "metadata": {"name": "p"}},
            f"invalid object type: {V1B1}, Kind=Topping",
        ),
        ({"metadata": {"name": "p"}}, "invalid object type: /, Kind="),
        (
            {"apiVersion": V1B1, "kind": "Pizza", "metadata": {"name": "p", "managedFields": []}},
            "metadata.managedFields must be nil",
        ),
    ],
)
async def test_bad_request(api: Api, body: dict[str, Any], message: str) -> None:
    r = await apply(api, body, "alice")
    assert r.status == 400, r
    assert (r.body["reason"], r.body["message"]) == ("BadRequest", message)
    assert (await api.get(api.pizzas_path(name="p"))).status == 404


async def test_undecodable_body_is_400(api: Api) -> None:
    r = await apply(api, "metadata: [unclosed", "alice")
    assert r.status == 400, r
    assert r.body["message"].startswith("error decoding patch: yaml:"), r


@pytest.mark.parametrize("validation", ["Strict", "Warn", "Ignore"])
async def test_undeclared_fields_are_refused_whatever_field_validation(
    api: Api, toppings: None, validation: str
) -> None:
    """structuredmerge.go: SMD cannot type a config with a field its schema does not declare, before
    fieldValidation is looked at (kube's field-validation tests leave apply's unknown fields out for
    this reason). kube answers 500 (kubernetes#139253); the message is kube's, the code the fix's 400."""
    body = config(spec={"toppings": [{"name": "ham", "extra": 1}]}, namespace="default")
    r = await apply(api, body, "alice", fieldValidation=validation)
    assert r.status == 400, r
    assert r.body["message"] == (
        f"failed to create typed patch object (default/p; {V1B1}, Kind=Pizza): "
        '.spec.toppings[name="ham"].extra: field not declared in schema'
    )
    # One error per map (SMD stops reading a map at its first undeclared field), joined as SMD does.
    r = await apply(api, config(spec={"bogus": 1, "more": 2}, zz=1), "alice")
    assert r.status == 400, r
    assert r.body["message"] == (
        f"failed to create typed patch object (/p; {V1B1}, Kind=Pizza): errors:\n"
        "  .metadata.zz: field not declared in schema\n  .spec.bogus: field not declared in schema"
    )
    assert (await api.get(api.pizzas_path(name="p"))).status == 404


async def test_duplicate_yaml_keys_follow_field_validation(api: Api, toppings: None) -> None:
    body = f"apiVersion: {V1B1}\nkind: Pizza\nmetadata:\n  name: p\n  name: p\n"
    r = await apply(api, body, "alice", fieldValidation="Strict")
    assert r.status == 400, r
    assert r.body["message"] == 'error strict decoding patch: duplicate field "metadata.name"'
    r = await apply(api, body, "alice", fieldValidation="Warn")
    assert r.status == 201, r
    assert 'duplicate field \\"metadata.name\\"' in r.headers["Warning"]


async def test_wrongly_typed_config_is_422(api: Api) -> None:
    r = await apply(api, config(spec={"toppings": "ham"}), "alice")
    assert r.status == 422, r
    assert r.body["details"]["causes"][0]["field"] == "spec.toppings"


async def test_duplicate_map_keys_in_config_are_400(api: Api, toppings: None) -> None:
    r = await apply(
        api, config(spec={"toppings": [{"name": "ham"}, {"name": "ham", "quantity": 2}]}), "alice"
    )
    assert r.status == 400, r
    assert r.body["message"] == (
        f"failed to create typed patch object (/p; {V1B1}, Kind=Pizza): "
        '.spec.toppings: duplicate entries for key [name="ham"]'
    )


async def test_uid_on_create_is_409(api: Api) -> None:
    r = await apply(api, config(uid="6b0c5d5e-0000-0000-0000-000000000000"), "alice")
    assert r.status == 409, r
    assert r.body["reason"] == "Conflict"
    assert r.body["message"] == (
        f'Operation cannot be fulfilled on pizzas.{GROUP} "p": uid mismatch: the provided object specified '
        "uid 6b0c5d5e-0000-0000-0000-000000000000, and no existing object was found"
    )


async def test_stale_resource_version_in_config_is_409(api: Api, toppings: None) -> None:
    created = (await apply(api, config(spec={"toppings": [{"name": "ham"}]}), "alice")).body
    await apply(api, config(spec={"toppings": [{"name": "basil"}]}), "alice")
    stale = config(
        spec={"toppings": [{"name": "tomato"}]}, resourceVersion=created["metadata"]["resourceVersion"]
    )
    r = await apply(api, stale, "alice")
    assert r.status == 409, r
    assert r.body["message"].endswith(
        "the object has been modified; please apply your changes to the latest version and try again"
    )


async def test_apply_validates_the_merged_object(api: Api, toppings: None) -> None:
    await apply(api, config(spec={"toppings": [{"name": "ham"}]}), "alice")
    r = await apply(api, config(spec={"toppings": [{"name": "ham", "quantity": 0}]}), "alice")
    assert r.status == 422, r
    assert r.body["details"]["causes"][0]["field"] == "spec.toppings[0].quantity"


# --- conflicts ------------------------------------------------------------------------------------


async def test_conflict_with_an_applier_and_force(api: Api, toppings: None) -> None:
    await apply(api, config(spec={"toppings": [{"name": "ham", "quantity": 1}]}), "alice")
    r = await apply(api, config(spec={"toppings": [{"name": "ham", "quantity": 2}]}), "bob")
    assert r.status == 409, r
    assert r.body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'Apply failed with 1 conflict: conflict with "alice": .spec.toppings[name="ham"].quantity',
        "reason": "Conflict",
        "details": {
            "causes": [
                {
                    "reason": "FieldManagerConflict",
                    "message": 'conflict with "alice"',
                    "field": '.spec.toppings[name="ham"].quantity',
                }
            ]
        },
        "code": 409,
    }
    r = await apply(api, config(spec={"toppings": [{"name": "ham", "quantity": 2}]}), "bob", force="true")
    assert r.status == 200, r
    assert r.body["spec"]["toppings"] == [{"name": "ham", "quantity": 2}]
    alice, bob = entry(r.body, "alice"), entry(r.body, "bob")
    assert alice is not None and bob is not None
    # alice keeps the item and its name (same value: shared), loses the quantity.
    assert alice["fieldsV1"] == {"f:spec": {"f:toppings": {item("ham"): {".": {}, "f:name": {}}}}}
    assert bob["fieldsV1"]["f:spec"]["f:toppings"][item("ham")] == {".": {}, "f:name": {}, "f:quantity": {}}


async def test_same_value_is_shared_without_conflict(api: Api, toppings: None) -> None:
    body = config(spec={"toppings": [{"name": "ham", "quantity": 2}]})
    await apply(api, body, "alice")
    r = await apply(api, body, "bob")
    assert r.status == 200, r
    assert entry(r.body, "alice") is not None and entry(r.body, "bob") is not None


async def test_conflict_with_an_update_manager_names_its_version(api: Api, toppings: None) -> None:
    await apply(api, config(spec={"toppings": [{"name": "ham", "quantity": 1}]}, labels={"x": "1"}), "alice")
    r = await api.patch(
        api.pizzas_path(name="p"),
        {"metadata": {"labels": {"x": "2", "y": "2"}}},
        MERGE,
        params={"fieldManager": "bob"},
    )
    assert r.status == 200, r
    r = await apply(
        api, config(spec={"toppings": [{"name": "ham", "quantity": 1}]}, labels={"x": "1", "y": "1"}), "alice"
    )
    assert r.status == 409, r
    assert r.body["message"] == (
        f'Apply failed with 2 conflicts: conflicts with "bob" using {V1B1}:\n'
        "- .metadata.labels.x\n- .metadata.labels.y"
    )
    assert [c["field"] for c in r.body["details"]["causes"]] == [".metadata.labels.x", ".metadata.labels.y"]
    assert {c["message"] for c in r.body["details"]["causes"]} == {f'conflict with "bob" using {V1B1}'}


# --- pruning --------------------------------------------------------------------------------------


async def test_dropped_fields_are_removed_unless_someone_else_owns_them(api: Api, toppings: None) -> None:
    spec = {"toppings": [{"name": "ham"}, {"name": "basil"}]}
    await apply(api, config(spec=spec, labels={"mine": "1", "shared": "1"}), "alice")
    await apply(api, config(labels={"shared": "1"}), "bob")
    r = await apply(api, config(spec={"toppings": [{"name": "ham"}]}), "alice")
    assert r.status == 200, r
    assert r.body["metadata"]["labels"] == {"shared": "1"}
    assert [t["name"] for t in r.body["spec"]["toppings"]] == ["ham"]


async def test_applying_only_the_name_drops_the_entry(api: Api, toppings: None) -> None:
    await apply(api, config(spec={"toppings": [{"name": "ham"}]}, labels={"a": "1"}), "alice")
    r = await apply(api, config(), "alice")
    assert r.status == 200, r
    assert entry(r.body, "alice") is None
    assert "labels" not in r.body["metadata"]
    # toppings went away with alice's ownership; the schema's default fills the list again.
    assert [t["name"] for t in r.body["spec"]["toppings"]] == ["salami", "mozzarella", "tomato"]


# --- versions -------------------------------------------------------------------------------------


async def test_ownership_is_kept_across_versions(api: Api, toppings: None) -> None:
    r = await apply(
        api, config(version="v1alpha1", spec={"toppings": ["ham", "ham"]}), "alpha", version="v1alpha1"
    )
    assert r.status == 201, r
    r = await apply(api, config(labels={"b": "1"}), "beta")
    assert r.status == 200, r
    alpha, beta = entry(r.body, "alpha"), entry(r.body, "beta")
    assert alpha is not None and alpha["apiVersion"] == V1A1
    assert alpha["fieldsV1"] == {"f:spec": {"f:toppings": {}}}
    assert beta is not None and beta["apiVersion"] == V1B1
    assert r.body["spec"]["toppings"] == [{"name": "ham", "quantity": 2}]
    # beta changing the toppings conflicts with alpha's atomic list, seen in alpha's version.
    r = await apply(api, config(spec={"toppings": [{"name": "basil"}]}, labels={"b": "1"}), "beta")
    assert r.status == 409, r
    assert r.body["message"] == 'Apply failed with 1 conflict: conflict with "alpha": .spec.toppings'
    r = await apply(
        api, config(spec={"toppings": [{"name": "basil"}]}, labels={"b": "1"}), "beta", force="true"
    )
    assert r.status == 200, r
    assert entry(r.body, "alpha") is None
    # alpha replacing the atomic list (in v1alpha1) *removes* beta's item (in v1beta1 terms): SMD
    # counts only added and modified fields as conflicts; beta just loses what went away.
    r = await apply(api, config(version="v1alpha1", spec={"toppings": ["ham"]}), "alpha", version="v1alpha1")
    assert r.status == 200, r
    assert r.body["spec"]["toppings"] == ["ham"]
    assert entry(r.body, "alpha")["fieldsV1"] == {"f:spec": {"f:toppings": {}}}  # type: ignore[index]
    assert entry(r.body, "beta")["fieldsV1"] == {"f:metadata": {"f:labels": {"f:b": {}}}}  # type: ignore[index]


# --- upgrades and resets --------------------------------------------------------------------------


async def test_existing_fields_become_before_first_apply(api: Api, toppings: None) -> None:
    r = await api.post(
        api.pizzas_path(), api.pizza("p", [{"name": "ham", "quantity": 1}]), params={"fieldManager": "old"}
    )
    assert r.status == 201, r
    r = await api.put(
        api.pizzas_path(name="p"), {**r.body, "metadata": {**r.body["metadata"], "managedFields": []}}
    )
    assert r.status == 200 and "managedFields" not in r.body["metadata"], r
    r = await apply(api, config(spec={"toppings": [{"name": "ham", "quantity": 5}]}), "alice")
    assert r.status == 409, r
    assert r.body["message"] == (
        f'Apply failed with 1 conflict: conflict with "before-first-apply" using {V1B1}: '
        '.spec.toppings[name="ham"].quantity'
    )


async def test_client_side_apply_upgrade_for_kubectl(api: Api, toppings: None) -> None:
    last = config(spec={"toppings": [{"name": "ham", "quantity": 1}]})
    body = {**last, "metadata": {"name": "p", "annotations": {LAST_APPLIED: json.dumps(last)}}}
    r = await api.post(api.pizzas_path(), body, params={"fieldManager": "kubectl-client-side-apply"})
    assert r.status == 201, r
    new = config(spec={"toppings": [{"name": "ham", "quantity": 2}]})
    # Another manager conflicts with the client-side applier ...
    r = await apply(api, new, "someone")
    assert r.status == 409, r
    assert (
        r.body["details"]["causes"][0]["message"] == f'conflict with "kubectl-client-side-apply" using {V1B1}'
    )
    # ... kubectl does not: the conflicting fields are last-applied ones with their live values.
    r = await apply(api, new, "kubectl")
    assert r.status == 200, r
    assert r.body["spec"]["toppings"] == [{"name": "ham", "quantity": 2}]
    assert json.loads(r.body["metadata"]["annotations"][LAST_APPLIED]) == new
    assert entry(r.body, "kubectl") is not None


async def test_kubectl_still_conflicts_on_fields_changed_since_last_applied(api: Api, toppings: None) -> None:
    last = config(spec={"toppings": [{"name": "ham", "quantity": 1}]})
    body = {**last, "metadata": {"name": "p", "annotations": {LAST_APPLIED: json.dumps(last)}}}
    await api.post(api.pizzas_path(), body, params={"fieldManager": "kubectl-client-side-apply"})
    r = await api.patch(
        api.pizzas_path(name="p"),
        {"spec": {"toppings": [{"name": "ham", "quantity": 3}]}},
        MERGE,
        params={"fieldManager": "edit"},
    )
    assert r.status == 200, r
    r = await apply(api, config(spec={"toppings": [{"name": "ham", "quantity": 2}]}), "kubectl")
    assert r.status == 409, r
    assert r.body["details"]["causes"][0]["message"] == f'conflict with "edit" using {V1B1}'


async def test_updates_keep_recording_update_entries(api: Api, toppings: None) -> None:
    await apply(api, config(spec={"toppings": [{"name": "ham"}]}), "alice")
    r = await api.patch(
        api.pizzas_path(name="p"), {"metadata": {"labels": {"z": "1"}}}, MERGE, params={"fieldManager": "bob"}
    )
    assert r.status == 200, r
    bob = entry(r.body, "bob")
    assert bob is not None and bob["operation"] == "Update"
    assert bob["fieldsV1"] == {"f:metadata": {"f:labels": {".": {}, "f:z": {}}}}
    assert entry(r.body, "alice")["operation"] == "Apply"  # type: ignore[index]


# --- /status --------------------------------------------------------------------------------------


async def test_apply_on_status(api: Api, toppings: None) -> None:
    await apply(api, config(spec={"toppings": [{"name": "ham"}]}), "alice")
    status = {**config(), "status": {"cost": 3}, "spec": {"toppings": [{"name": "basil"}]}}
    r = await api.patch(
        api.pizzas_path(name="p") + "/status", json.dumps(status), APPLY, params={"fieldManager": "baker"}
    )
    assert r.status == 200, r
    assert r.body["status"] == {"cost": 3}
    assert [t["name"] for t in r.body["spec"]["toppings"]] == ["ham"]  # reset: spec is not written here
    baker = entry(r.body, "baker", "status")
    assert baker is not None and baker["operation"] == "Apply" and baker["subresource"] == "status"
    assert baker["fieldsV1"] == {"f:status": {"f:cost": {}}}
    # the main resource ignores status: no conflict, no ownership.
    r = await apply(api, {**config(spec={"toppings": [{"name": "ham"}]}), "status": {"cost": 9}}, "alice")
    assert r.status == 200, r
    assert r.body["status"] == {"cost": 3}
    assert "f:status" not in entry(r.body, "alice")["fieldsV1"]  # type: ignore[index]
    # a second status applier conflicts with the first.
    r = await api.patch(
        api.pizzas_path(name="p") + "/status",
        json.dumps({**config(), "status": {"cost": 4}}),
        APPLY,
        params={"fieldManager": "other"},
    )
    assert r.status == 409, r
    assert (
        r.body["message"]
        == 'Apply failed with 1 conflict: conflict with "baker" with subresource "status": .status.cost'
    )


async def test_apply_on_status_of_a_missing_object_is_404(api: Api) -> None:
    r = await api.patch(
        api.pizzas_path(name="nope") + "/status",
        json.dumps({**config("nope"), "status": {"cost": 1}}),
        APPLY,
        params={"fieldManager": "baker"},
    )
    assert r.status == 404, r


async def test_apply_on_a_cluster_scoped_kind(api: Api) -> None:
    body = {"apiVersion": V1B1, "kind": "Topping", "metadata": {"name": "olive"}, "spec": {"cost": 2}}
    r = await api.patch(
        api.toppings_path(name="olive"), json.dumps(body), APPLY, params={"fieldManager": "alice"}
    )
    assert r.status == 201, r
    assert r.body["spec"] == {"cost": 2}
    assert entry(r.body, "alice")["fieldsV1"] == {"f:spec": {"f:cost": {}}}  # type: ignore[index]


# --- authorization of a create by apply -----------------------------------------------------------


async def test_apply_that_creates_needs_create(control_plane: ControlPlane, tmp_path: Path) -> None:
    """handlers/patch.go withAuthorization: `patch` lets the request in, a create also needs `create`."""
    plane = control_plane
    plane.tokens["patcher"] = {"username": "patcher", "groups": ["cooks"]}
    plane.tokens["creator"] = {"username": "creator", "groups": ["cooks"]}

    def rule(spec: dict[str, Any]) -> dict[str, Any]:
        verb = spec.get("resourceAttributes", {}).get("verb")
        allowed = verb == "patch" or (verb == "create" and spec.get("user") == "creator")
        return {"allowed": allowed, "reason": "" if allowed else "no create for you"}

    plane.sar_rule = rule
    path = f"/apis/{GROUP}/v1beta1/toppings/olive"
    body = {"apiVersion": V1B1, "kind": "Topping", "metadata": {"name": "olive"}, "spec": {"cost": 2}}
    async with delegated_server(tmp_path / "data", plane) as server:
        headers = {"Authorization": "Bearer patcher", "Content-Type": APPLY}
        status, answer = await call(
            server, f"{path}?fieldManager=m", method="PATCH", headers=headers, body=body
        )
        assert status == 403, answer
        assert answer["message"] == f'toppings.{GROUP} "olive" is forbidden: no create for you'
        assert plane.access_reviews[-1]["spec"]["resourceAttributes"]["verb"] == "create"
        headers["Authorization"] = "Bearer creator"
        status, answer = await call(
            server, f"{path}?fieldManager=m", method="PATCH", headers=headers, body=body
        )
        assert status == 201, answer
        # An existing object needs only patch.
        headers["Authorization"] = "Bearer patcher"
        body["spec"]["cost"] = 3
        status, answer = await call(
            server, f"{path}?fieldManager=m", method="PATCH", headers=headers, body=body
        )
        assert status == 200 and answer["spec"]["cost"] == 3, answer
