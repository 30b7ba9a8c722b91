"""A webhook's matchCondition asks the authorizer, over real HTTPS end to end.

The server delegates authentication and authorization to the fake control plane (users from bearer
tokens, its `sar_rule` playing RBAC) and reads the webhook configuration from it (--kubeconfig). The
hook's condition asks whether the requesting user may create toppings: the SubjectAccessReview the
condition sends says yes for alice (the hook is called and denies) and no for bob (the hook is
skipped, the pizza created). Both may create pizzas.
"""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path
from typing import Any

from tests.fixtures.admission import GROUP, configuration, hook, pizza, pizzas_path
from tests.fixtures.control_plane import (
    ControlPlane,
    call,
    control_plane_fixture,  # noqa: F401 - provides the control_plane fixture
    delegated_server,
)
from tests.fixtures.webhook_server import deny_with, running_webhook

CONDITION = f"authorizer.group('{GROUP}').resource('toppings').check('create').allowed()"


def rbac(spec: dict[str, Any]) -> dict[str, Any]:
    """alice and bob may do anything with pizzas; only alice may create toppings."""
    resource = (spec.get("resourceAttributes") or {}).get("resource")
    if resource == "pizzas":
        return {"allowed": True, "reason": "pizzas for everyone"}
    if resource == "toppings" and spec.get("user") == "alice":
        return {"allowed": True, "reason": 'RBAC: allowed by ClusterRoleBinding "cooks"'}
    return {"allowed": False, "reason": "no RBAC policy matched"}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def flags(plane: ControlPlane) -> tuple[str, ...]:
    return ("--kubeconfig", str(plane.kubeconfig), "--disable-admission-plugins", "PizzaToppings")


async def until_hooked(server: Any, token: str, prefix: str) -> tuple[int, dict[str, Any], int]:
    """POST pizzas as `token` until the answer is not 201 (the informer has the configuration and
    the hook or its condition decided), or 15 s passed: (status, body, attempt)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 15
    for attempt in itertools.count():
        status, body = await call(
            server, pizzas_path(), method="POST", headers=bearer(token), body=pizza(f"{prefix}{attempt}")
        )
        if status != 201 or loop.time() > deadline:
            return status, body, attempt
        await asyncio.sleep(0.05)
    raise AssertionError("unreachable")


async def test_the_condition_asks_the_authorizer_for_the_requesting_user(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    plane = control_plane
    plane.tokens.update({"alice": {"username": "alice", "groups": ["cooks"]}, "bob": {"username": "bob"}})
    plane.sar_rule = rbac
    conditions = [{"name": "may-create-toppings", "expression": CONDITION}]
    async with running_webhook(tmp_path / "hook", deny_with("toppings people only")) as webhook:
        plane.objects.validating.put(
            configuration(
                "authz", hook("authz.example.com", webhook.client_config(), matchConditions=conditions)
            )
        )
        async with delegated_server(tmp_path / "data", plane, *flags(plane)) as server:
            status, body, _ = await until_hooked(server, "alice", "a")
            assert status == 400, body
            assert (
                body["message"]
                == 'admission webhook "authz.example.com" denied the request: toppings people only'
            )
            assert webhook.reviews[-1]["request"]["userInfo"]["username"] == "alice"
            called = len(webhook.reviews)

            status, body = await call(
                server, pizzas_path(), method="POST", headers=bearer("bob"), body=pizza("b")
            )
            assert status == 201, body  # bob may not create toppings: the hook is skipped
            assert len(webhook.reviews) == called

    asked = [
        r["spec"]
        for r in plane.access_reviews
        if (r["spec"].get("resourceAttributes") or {}).get("resource") == "toppings"
    ]
    assert {
        "user": "alice",
        "groups": ["cooks", "system:authenticated"],
        "resourceAttributes": {"verb": "create", "group": GROUP, "version": "*", "resource": "toppings"},
    } in asked
    assert any(spec.get("user") == "bob" for spec in asked)


async def test_a_failing_review_is_an_errored_decision(control_plane: ControlPlane, tmp_path: Path) -> None:
    """The cluster fails the condition's SubjectAccessReview: the decision is `errored()` with the
    client's error, not allowed (the union has no opinion), and nothing is cached."""
    plane = control_plane
    plane.tokens["alice"] = {"username": "alice"}

    def failing_toppings(spec: dict[str, Any]) -> dict[str, Any]:
        if (spec.get("resourceAttributes") or {}).get("resource") == "toppings":
            raise RuntimeError("authorizer backend down")
        return rbac(spec)

    plane.sar_rule = failing_toppings
    errored = f"authorizer.group('{GROUP}').resource('toppings').check('create')"
    conditions = [
        {"name": "errored", "expression": f"{errored}.errored() && !{errored}.allowed()"},
        {"name": "says-why", "expression": f"{errored}.error().contains('500')"},
    ]
    async with running_webhook(tmp_path / "hook", deny_with("the authorizer is down")) as webhook:
        plane.objects.validating.put(
            configuration(
                "authz", hook("errored.example.com", webhook.client_config(), matchConditions=conditions)
            )
        )
        async with delegated_server(tmp_path / "data", plane, *flags(plane)) as server:
            status, body, _ = await until_hooked(server, "alice", "e")
    assert status == 400, body
    assert body["message"].endswith("denied the request: the authorizer is down"), body
    assert len(webhook.reviews) == 1


async def test_a_third_check_fails_the_request_with_kubes_cost_message(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    """Three checks made in one condition pass kube's per-call limit (3 x 350,000 > 1e6): with
    failurePolicy Fail the request is refused with kube's 403, and the hook is not called."""
    plane = control_plane
    plane.tokens["alice"] = {"username": "alice"}
    plane.sar_rule = lambda spec: {"allowed": True}
    three = " && ".join(
        f"authorizer.group('{GROUP}').resource('toppings').check('{verb}').allowed()"
        for verb in ("create", "update", "delete")
    )
    conditions = [{"name": "three-checks", "expression": three}]
    async with running_webhook(tmp_path / "hook", deny_with("never called")) as webhook:
        plane.objects.validating.put(
            configuration(
                "costly", hook("costly.example.com", webhook.client_config(), matchConditions=conditions)
            )
        )
        async with delegated_server(tmp_path / "data", plane, *flags(plane)) as server:
            status, body, attempt = await until_hooked(server, "alice", "c")
    assert status == 403 and body["reason"] == "Forbidden", body
    assert body["message"] == (
        f'pizzas.{GROUP} "c{attempt}" is forbidden: '
        f"expression '{three}' resulted in error: operation cancelled: actual cost limit exceeded"
    )
    assert webhook.reviews == []
    verbs = [
        r["spec"]["resourceAttributes"]["verb"]
        for r in plane.access_reviews
        if r["spec"].get("resourceAttributes", {}).get("resource") == "toppings"
    ]
    assert "delete" not in verbs  # the check past the limit is never asked
