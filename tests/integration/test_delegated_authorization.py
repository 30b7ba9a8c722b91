"""Delegated authorization (SubjectAccessReview) and impersonation against a fake control plane.

Users come from bearer tokens the fake reviews; its `sar_rule` plays RBAC. Every request is real HTTPS.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tests.fixtures.control_plane import (
    ControlPlane,
    allow_all,
    call,
    control_plane_fixture,  # noqa: F401 - provides the control_plane fixture
    delegated_server,
)

GROUP = "restaurant.programming-kubernetes.info"
PIZZAS = f"/apis/{GROUP}/v1beta1/namespaces/default/pizzas"
TOPPINGS = f"/apis/{GROUP}/v1beta1/toppings"


def bearer(token: str, **extra: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", **extra}


def by_user(rules: dict[str, dict[str, Any]]) -> Any:
    """An RBAC stand-in: the status for the reviewed user; unknown users get no opinion."""

    def rule(spec: dict[str, Any]) -> dict[str, Any]:
        return rules.get(spec.get("user", ""), {"allowed": False})

    return rule


def reviewed(plane: ControlPlane) -> list[dict[str, Any]]:
    return [r["spec"] for r in plane.access_reviews]


async def test_allow_deny_and_no_opinion(control_plane: ControlPlane, tmp_path: Path) -> None:
    plane = control_plane
    for name in ("alice", "bob", "carol"):
        plane.tokens[name] = {"username": name}
    plane.sar_rule = by_user(
        {
            "alice": {"allowed": True, "reason": 'RBAC: allowed by ClusterRoleBinding "cooks"'},
            "bob": {"allowed": False, "denied": True, "reason": "bob is banned"},
            "carol": {"allowed": False, "reason": "no RBAC policy matched"},
        }
    )
    async with delegated_server(tmp_path / "data", plane) as server:
        assert (await call(server, PIZZAS, headers=bearer("alice")))[0] == 200

        status, body = await call(server, PIZZAS, headers=bearer("bob"))
        assert status == 403
        assert body["message"] == (
            f'pizzas.{GROUP} is forbidden: User "bob" cannot list resource "pizzas" in API group "{GROUP}" '
            'in the namespace "default": bob is banned'
        )
        assert body["details"] == {"group": GROUP, "kind": "pizzas"}

        status, body = await call(server, f"{TOPPINGS}/salami", headers=bearer("carol"))
        assert status == 403
        assert body["message"] == (
            f'toppings.{GROUP} "salami" is forbidden: User "carol" cannot get resource "toppings" in API '
            f'group "{GROUP}" at the cluster scope: no RBAC policy matched'
        )

        # Non-resource requests are reviewed with nonResourceAttributes.
        status, body = await call(server, "/apis", headers=bearer("carol"))
        assert status == 403
        assert body["message"] == 'forbidden: User "carol" cannot get path "/apis": no RBAC policy matched'
        assert reviewed(plane)[-1]["nonResourceAttributes"] == {"path": "/apis", "verb": "get"}


async def test_a_user_without_rights_is_refused_every_verb(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    plane = control_plane
    plane.tokens["nobody"] = {"username": "nobody", "groups": ["visitors"]}
    requests = [
        ("GET", PIZZAS, None, "list"),
        ("GET", f"{PIZZAS}?watch=1", None, "watch"),
        ("GET", f"{PIZZAS}/margherita", None, "get"),
        ("POST", PIZZAS, {"kind": "Pizza"}, "create"),
        ("PUT", f"{PIZZAS}/margherita", {"kind": "Pizza"}, "update"),
        ("PATCH", f"{PIZZAS}/margherita", {"spec": {}}, "patch"),
        ("DELETE", f"{PIZZAS}/margherita", None, "delete"),
        ("DELETE", PIZZAS, None, "deletecollection"),
        ("GET", f"{TOPPINGS}/salami", None, "get"),
        ("PATCH", f"{PIZZAS}/margherita/scale", {"spec": {"replicas": 2}}, "patch"),
        ("PUT", f"{PIZZAS}/margherita/status", {"kind": "Pizza"}, "update"),
    ]
    async with delegated_server(tmp_path / "data", plane) as server:
        for method, path, body, verb in requests:
            headers = bearer("nobody")
            if method == "PATCH":
                headers["Content-Type"] = "application/merge-patch+json"
            status, answer = await call(server, path, method=method, headers=headers, body=body)
            assert status == 403, (method, path, answer)
            assert answer["reason"] == "Forbidden"
            assert f'User "nobody" cannot {verb} resource' in answer["message"], answer["message"]
            attributes = reviewed(plane)[-1]["resourceAttributes"]
            assert attributes["verb"] == verb
            assert attributes["group"] == GROUP and attributes["version"] == "v1beta1"
            if path.endswith("/scale"):  # the subresource is what is authorized (pizzas/scale)
                assert (attributes["resource"], attributes["subresource"]) == ("pizzas", "scale")
        assert reviewed(plane)[-1]["resourceAttributes"] == {
            "namespace": "default",
            "verb": "update",
            "group": GROUP,
            "version": "v1beta1",
            "resource": "pizzas",
            "subresource": "status",
            "name": "margherita",
        }
        # Nothing was written.
        status, listing = await call(server, PIZZAS, admin=True)
        assert status == 200 and listing["items"] == []


async def test_selectors_and_names_reach_the_review(control_plane: ControlPlane, tmp_path: Path) -> None:
    plane = control_plane
    plane.tokens["alice"] = {"username": "alice"}
    plane.sar_rule = allow_all
    async with delegated_server(tmp_path / "data", plane) as server:
        path = f"{PIZZAS}?fieldSelector=metadata.name%3Dhawaii&labelSelector=crust%3Dthin,veggie!%3Dfalse"
        assert (await call(server, path, headers=bearer("alice")))[0] == 200
        assert reviewed(plane)[-1]["resourceAttributes"] == {
            "namespace": "default",
            "verb": "list",
            "group": GROUP,
            "version": "v1beta1",
            "resource": "pizzas",
            "name": "hawaii",
            "fieldSelector": {
                "requirements": [{"key": "metadata.name", "operator": "In", "values": ["hawaii"]}]
            },
            "labelSelector": {
                "requirements": [
                    {"key": "crust", "operator": "In", "values": ["thin"]},
                    {"key": "veggie", "operator": "NotIn", "values": ["false"]},
                ]
            },
        }


async def test_answers_are_cached_for_their_ttls(control_plane: ControlPlane, tmp_path: Path) -> None:
    plane = control_plane
    plane.tokens["alice"] = {"username": "alice"}
    plane.tokens["bob"] = {"username": "bob"}
    plane.sar_rule = by_user({"alice": {"allowed": True}})
    flags = (
        "--authorization-webhook-cache-authorized-ttl=1s",
        "--authorization-webhook-cache-unauthorized-ttl=0",
    )
    async with delegated_server(tmp_path / "data", plane, *flags) as server:
        for _ in range(3):
            assert (await call(server, PIZZAS, headers=bearer("alice")))[0] == 200
        assert plane.calls["subjectaccessreviews"] == 1
        # Another request (a different review) is not answered from the cache.
        assert (await call(server, TOPPINGS, headers=bearer("alice")))[0] == 200
        assert plane.calls["subjectaccessreviews"] == 2
        # Denials are not cached with a zero TTL.
        for _ in range(2):
            assert (await call(server, PIZZAS, headers=bearer("bob")))[0] == 403
        assert plane.calls["subjectaccessreviews"] == 4
        # After the allowed TTL, the cluster is asked again, and its new answer counts.
        await asyncio.sleep(1.1)
        plane.sar_rule = by_user({})
        assert (await call(server, PIZZAS, headers=bearer("alice")))[0] == 403
        assert plane.calls["subjectaccessreviews"] == 5


async def test_denials_are_cached_by_default(control_plane: ControlPlane, tmp_path: Path) -> None:
    plane = control_plane
    plane.tokens["bob"] = {"username": "bob"}
    async with delegated_server(tmp_path / "data", plane) as server:
        for _ in range(3):
            assert (await call(server, PIZZAS, headers=bearer("bob")))[0] == 403
        assert plane.calls["subjectaccessreviews"] == 1
        # Granted meanwhile: within the 10s unauthorized TTL the cached denial stands (kube's trade-off).
        plane.sar_rule = allow_all
        assert (await call(server, PIZZAS, headers=bearer("bob")))[0] == 403
        assert plane.calls["subjectaccessreviews"] == 1


async def test_review_failure_is_500_but_masters_still_work(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    plane = control_plane
    plane.tokens["alice"] = {"username": "alice"}
    plane.sar_failure = 403
    async with delegated_server(tmp_path / "data", plane) as server:
        status, body = await call(server, PIZZAS, headers=bearer("alice"))
        assert status == 500, body
        assert body["reason"] == "InternalError"
        assert "subjectaccessreviews is forbidden (test)" in body["message"]
        # Errors are not cached: the next request asks again.
        await call(server, PIZZAS, headers=bearer("alice"))
        assert plane.calls["subjectaccessreviews"] == 2
        assert (await call(server, PIZZAS, admin=True))[0] == 200
        assert (await call(server, "/readyz"))[0] == 200


# --- impersonation -------------------------------------------------------------------------------


def impersonation_rule(spec: dict[str, Any]) -> dict[str, Any]:
    """ivan may impersonate bob, group cooks, uid 1234 and extra scopes=pizza; bob may list pizzas."""
    attrs = spec.get("resourceAttributes") or {}
    if spec.get("user") == "ivan" and attrs.get("verb") == "impersonate":
        allowed = {
            ("", "users", "", "bob"),
            ("", "groups", "", "cooks"),
            ("authentication.k8s.io", "uids", "", "1234"),
            ("authentication.k8s.io", "userextras", "scopes", "pizza"),
            ("", "serviceaccounts", "", "oven"),
        }
        key = (attrs.get("group", ""), attrs.get("resource"), attrs.get("subresource", ""), attrs.get("name"))
        return {"allowed": key in allowed}
    if spec.get("user") == "bob" and attrs.get("verb") == "list":
        return {"allowed": True}
    if spec.get("user") == "system:serviceaccount:kitchen:oven":
        return {"allowed": True}
    return {"allowed": False}


async def test_impersonation_allowed(control_plane: ControlPlane, tmp_path: Path) -> None:
    plane = control_plane
    plane.tokens["ivan"] = {"username": "ivan", "groups": ["support"]}
    plane.sar_rule = impersonation_rule
    async with delegated_server(tmp_path / "data", plane) as server:
        headers = bearer(
            "ivan",
            **{
                "Impersonate-User": "bob",
                "Impersonate-Group": "cooks",
                "Impersonate-Uid": "1234",
                "Impersonate-Extra-Scopes": "pizza",
            },
        )
        status, body = await call(server, PIZZAS, headers=headers)
        assert status == 200, body
        checks = [s["resourceAttributes"] for s in reviewed(plane)[:-1]]
        assert all(s["user"] == "ivan" for s in reviewed(plane)[:-1])
        assert checks == [
            {"verb": "impersonate", "resource": "users", "name": "bob"},
            {"verb": "impersonate", "resource": "groups", "name": "cooks"},
            {
                "verb": "impersonate",
                "group": "authentication.k8s.io",
                "version": "v1",
                "resource": "userextras",
                "subresource": "scopes",
                "name": "pizza",
            },
            {
                "verb": "impersonate",
                "group": "authentication.k8s.io",
                "version": "v1",
                "resource": "uids",
                "name": "1234",
            },
        ]
        # The request itself is authorized as the impersonated user.
        final = reviewed(plane)[-1]
        assert (final["user"], final["uid"], final["groups"], final["extra"]) == (
            "bob",
            "1234",
            ["cooks", "system:authenticated"],
            {"scopes": ["pizza"]},
        )

        # A service account gets its groups when none are asked for.
        status, _ = await call(
            server,
            PIZZAS,
            headers=bearer("ivan", **{"Impersonate-User": "system:serviceaccount:kitchen:oven"}),
        )
        assert status == 200
        assert reviewed(plane)[-2]["resourceAttributes"] == {
            "verb": "impersonate",
            "resource": "serviceaccounts",
            "namespace": "kitchen",
            "name": "oven",
        }
        assert reviewed(plane)[-1]["groups"] == [
            "system:serviceaccounts",
            "system:serviceaccounts:kitchen",
            "system:authenticated",
        ]


async def test_impersonation_denied(control_plane: ControlPlane, tmp_path: Path) -> None:
    plane = control_plane
    plane.tokens["ivan"] = {"username": "ivan"}
    plane.tokens["bob"] = {"username": "bob"}
    plane.sar_rule = impersonation_rule
    async with delegated_server(tmp_path / "data", plane) as server:
        status, body = await call(server, PIZZAS, headers=bearer("ivan", **{"Impersonate-User": "root"}))
        assert status == 403
        assert body["message"] == (
            'users "root" is forbidden: User "ivan" cannot impersonate resource "users" in API group "" '
            "at the cluster scope"
        )
        assert body["details"] == {"name": "root", "kind": "users"}

        # Allowed user, refused group: refused as a whole.
        headers = bearer("ivan", **{"Impersonate-User": "bob", "Impersonate-Group": "system:masters"})
        status, body = await call(server, PIZZAS, headers=headers)
        assert status == 403
        assert body["message"].startswith(
            'groups "system:masters" is forbidden: User "ivan" cannot impersonate'
        )

        # bob may not impersonate anyone.
        status, _ = await call(server, PIZZAS, headers=bearer("bob", **{"Impersonate-User": "ivan"}))
        assert status == 403

        # Groups without a user: 400.
        status, body = await call(server, PIZZAS, headers=bearer("ivan", **{"Impersonate-Group": "cooks"}))
        assert status == 400
        assert body["message"] == "requested [{Group  cooks    }] without impersonating a user"


async def test_masters_impersonate_and_lose_their_powers(control_plane: ControlPlane, tmp_path: Path) -> None:
    """system:masters may impersonate anyone; the request then has only the impersonated user's rights."""
    plane = control_plane
    async with delegated_server(tmp_path / "data", plane) as server:
        status, body = await call(server, PIZZAS, admin=True, headers={"Impersonate-User": "dora"})
        assert status == 403
        assert 'User "dora" cannot list resource "pizzas"' in body["message"]
        assert reviewed(plane) == [
            {
                "user": "dora",
                "groups": ["system:authenticated"],
                "resourceAttributes": {
                    "namespace": "default",
                    "verb": "list",
                    "group": GROUP,
                    "version": "v1beta1",
                    "resource": "pizzas",
                },
            }
        ]
        # Impersonating anonymous adds system:unauthenticated instead.
        await call(server, PIZZAS, admin=True, headers={"Impersonate-User": "system:anonymous"})
        assert reviewed(plane)[-1]["groups"] == ["system:unauthenticated"]
