"""Admission webhooks from the cluster's configurations, called over real HTTPS.

The configurations live in the fake control plane (list + watch); the webhooks are real HTTPS servers
with their own CA (tests/fixtures/webhook_server.py). Expected texts and codes are kube's
(k8s.io/apiserver pkg/admission/plugin/webhook, and KUBE-BEHAVIOUR.md's observations on kube 1.36).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.fixtures.admission import (
    GROUP,
    admission_server,
    configuration,
    eventually,
    hook,
    pizza,
    pizza_rule,
    pizzas_path,
    request,
)
from tests.fixtures.control_plane import ControlPlane
from tests.fixtures.control_plane import control_plane_fixture as control_plane_fixture
from tests.fixtures.webhook_server import deny_with, patch_with, running_webhook

NO_TOPPINGS_CHECK = ("--disable-admission-plugins", "PizzaToppings")


async def test_validating_webhook_denies_with_kubes_message(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    async with running_webhook(tmp_path / "hook", deny_with("no pizzas today")) as webhook:
        control_plane.objects.validating.put(
            configuration("deny", hook("deny.example.com", webhook.client_config()))
        )
        async with admission_server(tmp_path / "data", control_plane, *NO_TOPPINGS_CHECK) as server:
            status, body, _ = await request(server, "POST", pizzas_path(), pizza("margherita"))
            assert status == 400, body
            assert (
                body["message"] == 'admission webhook "deny.example.com" denied the request: no pizzas today'
            )
            assert "reason" not in body
            status, body, _ = await request(server, "GET", pizzas_path(name="margherita"))
            assert status == 404, body
    [review] = webhook.reviews
    assert review["apiVersion"] == "admission.k8s.io/v1" and review["kind"] == "AdmissionReview"
    req = review["request"]
    assert req["kind"] == {"group": GROUP, "version": "v1beta1", "kind": "Pizza"}
    assert req["requestKind"] == req["kind"]
    assert req["resource"] == {"group": GROUP, "version": "v1beta1", "resource": "pizzas"}
    assert req["operation"] == "CREATE" and req["namespace"] == "default" and req["name"] == "margherita"
    assert req["dryRun"] is False and req["oldObject"] is None
    assert req["userInfo"]["username"] == "admin" and "system:masters" in req["userInfo"]["groups"]
    assert req["object"]["apiVersion"] == f"{GROUP}/v1beta1"
    # Defaults are applied before admission: the webhook sees the toppings the server filled in.
    assert [t["name"] for t in req["object"]["spec"]["toppings"]] == ["salami", "mozzarella", "tomato"]
    assert req["options"]["kind"] == "CreateOptions"
    assert webhook.queries == [{"timeout": "10s"}]


async def test_denial_keeps_the_webhooks_code_and_warnings(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    def answer(req: dict[str, Any]) -> dict[str, Any]:
        return {
            "allowed": False,
            "status": {"code": 403, "reason": "Forbidden", "message": "kitchen closed"},
            "warnings": ["oven is cold", "oven is cold", "try tomorrow"],
        }

    async with running_webhook(tmp_path / "hook", answer) as webhook:
        control_plane.objects.validating.put(
            configuration("closed", hook("closed.example.com", webhook.client_config()))
        )
        async with admission_server(tmp_path / "data", control_plane, *NO_TOPPINGS_CHECK) as server:
            status, body, headers = await request(server, "POST", pizzas_path(), pizza("p"))
    assert status == 403 and body["reason"] == "Forbidden", body
    assert body["message"] == 'admission webhook "closed.example.com" denied the request: kitchen closed'
    assert headers.getall("Warning") == ['299 - "oven is cold"', '299 - "try tomorrow"']


async def test_mutating_webhook_patches_in_its_version_and_defaults_apply(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    """A v1alpha1-only hook under matchPolicy Equivalent gets a v1beta1 request in v1alpha1, and its
    JSONPatch (written against v1alpha1's shape: toppings as names) lands in the stored object."""
    operations = [
        {"op": "add", "path": "/metadata/labels", "value": {"patched": "yes"}},
        {"op": "replace", "path": "/spec/toppings", "value": ["tomato", "basil"]},
    ]
    async with running_webhook(tmp_path / "hook", patch_with(operations)) as webhook:
        rules = [pizza_rule(versions=["v1alpha1"])]
        control_plane.objects.mutating.put(
            configuration("mutate", hook("mutate.example.com", webhook.client_config(), rules=rules))
        )
        async with admission_server(tmp_path / "data", control_plane, *NO_TOPPINGS_CHECK) as server:
            status, body, _ = await request(server, "POST", pizzas_path(), pizza("p"))
            assert status == 201, body
            status, stored, _ = await request(server, "GET", pizzas_path(name="p"))
    assert stored["metadata"]["labels"] == {"patched": "yes"}
    assert stored["spec"]["toppings"] == [{"name": "tomato", "quantity": 1}, {"name": "basil", "quantity": 1}]
    [review] = webhook.reviews
    req = review["request"]
    assert req["kind"]["version"] == "v1alpha1" and req["resource"]["version"] == "v1alpha1"
    assert req["requestKind"]["version"] == "v1beta1" and req["requestResource"]["version"] == "v1beta1"
    assert req["object"]["apiVersion"] == f"{GROUP}/v1alpha1"
    assert req["object"]["spec"]["toppings"] == ["salami", "mozzarella", "tomato"]


async def test_a_mutation_that_breaks_the_schema_is_invalid(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    """The request decoded valid; the webhook's patch is what breaks the schema, and it must not get
    through: 422 in the schema's words, nothing stored (kube validates a patched object before
    taking it)."""
    operations = [{"op": "replace", "path": "/spec/toppings/0/quantity", "value": 0}]
    async with running_webhook(tmp_path / "hook", patch_with(operations)) as webhook:
        rules = [pizza_rule(versions=["v1beta1"])]
        control_plane.objects.mutating.put(
            configuration("mutate", hook("mutate.example.com", webhook.client_config(), rules=rules))
        )
        async with admission_server(tmp_path / "data", control_plane, *NO_TOPPINGS_CHECK) as server:
            toppings = [{"name": "tomato", "quantity": 2}]
            status, body, _ = await request(server, "POST", pizzas_path(), pizza("p", toppings))
            assert status == 422, body
            assert body["reason"] == "Invalid"
            # The schema's wording (the strategy's own check would say "must be greater than ...").
            assert [(c["field"], c["message"]) for c in body["details"]["causes"]] == [
                (
                    "spec.toppings[0].quantity",
                    "Invalid value: 0: spec.toppings[0].quantity in body should be greater than or equal "
                    "to 1",
                )
            ]
            status, _, _ = await request(server, "GET", pizzas_path(name="p"))
            assert status == 404
    assert len(webhook.reviews) == 1


async def test_validating_webhooks_see_the_options_mutating_ones_see(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    """kube builds one admission.Attributes per write and hands its options to mutating and to
    validating admission alike (handlers/create.go, update.go, patch.go): `fieldManager` included,
    as CreateOptions for a create (an apply that creates too) and UpdateOptions for an update or a
    patch."""
    merge, apply = "application/merge-patch+json", "application/apply-patch+yaml"
    labels = {"metadata": {"labels": {"hot": "yes"}}}
    writes = [  # method, name, body, content type, query, expected status
        ("POST", "", pizza("p"), "application/json", {"fieldManager": "chef"}, 201),
        ("PUT", "p", None, "application/json", {"fieldManager": "waiter"}, 200),
        ("PATCH", "p", labels, merge, {"fieldManager": "cook", "dryRun": "All"}, 200),
        ("PATCH", "applied", pizza("applied"), apply, {"fieldManager": "baker"}, 201),
    ]
    async with running_webhook(tmp_path / "m") as mutating, running_webhook(tmp_path / "v") as checking:
        plane = control_plane.objects
        plane.mutating.put(configuration("m", hook("m.example.com", mutating.client_config())))
        plane.validating.put(configuration("v", hook("v.example.com", checking.client_config())))
        async with admission_server(tmp_path / "data", control_plane, *NO_TOPPINGS_CHECK) as server:
            stored: Any = None
            for method, name, body, content_type, params, expected in writes:
                path = pizzas_path(name=name)
                answer = await request(
                    server, method, path, body or stored, params=params, content_type=content_type
                )
                assert answer[0] == expected, answer[1]
                stored = answer[1]
    seen = [(r["request"]["operation"], r["request"]["options"]) for r in checking.reviews]
    assert seen == [(r["request"]["operation"], r["request"]["options"]) for r in mutating.reviews]
    meta = "meta.k8s.io/v1"
    assert seen == [
        ("CREATE", {"kind": "CreateOptions", "apiVersion": meta, "fieldManager": "chef"}),
        ("UPDATE", {"kind": "UpdateOptions", "apiVersion": meta, "fieldManager": "waiter"}),
        ("UPDATE", {"kind": "UpdateOptions", "apiVersion": meta, "dryRun": ["All"], "fieldManager": "cook"}),
        ("CREATE", {"kind": "CreateOptions", "apiVersion": meta, "fieldManager": "baker"}),
    ]


async def test_exact_match_policy_does_not_convert(control_plane: ControlPlane, tmp_path: Path) -> None:
    async with running_webhook(tmp_path / "hook", deny_with("v1alpha1 only")) as webhook:
        rules = [pizza_rule(versions=["v1alpha1"])]
        control_plane.objects.validating.put(
            configuration(
                "exact", hook("exact.example.com", webhook.client_config(), rules=rules, matchPolicy="Exact")
            )
        )
        async with admission_server(tmp_path / "data", control_plane, *NO_TOPPINGS_CHECK) as server:
            status, body, _ = await request(server, "POST", pizzas_path(), pizza("beta"))
            assert status == 201, body
            status, body, _ = await request(
                server, "POST", pizzas_path(version="v1alpha1"), pizza("alpha", version="v1alpha1")
            )
            assert status == 400, body
    assert [r["request"]["name"] for r in webhook.reviews] == ["alpha"]


async def test_reinvocation_if_needed(control_plane: ControlPlane, tmp_path: Path) -> None:
    """Hook "a" (IfNeeded) runs before hook "b" changes the object, so "a" runs again; "b" does not."""
    add_label = [{"op": "add", "path": "/metadata/labels", "value": {"b": "1"}}]
    async with (
        running_webhook(tmp_path / "a") as first,
        running_webhook(tmp_path / "b", patch_with(add_label)) as second,
    ):
        control_plane.objects.mutating.put(
            configuration(
                "m",
                hook("a.example.com", first.client_config(), reinvocationPolicy="IfNeeded"),
                hook("b.example.com", second.client_config(), reinvocationPolicy="IfNeeded"),
            )
        )
        async with admission_server(tmp_path / "data", control_plane, *NO_TOPPINGS_CHECK) as server:
            status, body, _ = await request(server, "POST", pizzas_path(), pizza("p"))
    assert status == 201, body
    assert len(first.reviews) == 2 and len(second.reviews) == 1
    # The second round sees the later hook's change.
    assert first.reviews[1]["request"]["object"]["metadata"]["labels"] == {"b": "1"}


async def test_patch_on_delete_is_refused(control_plane: ControlPlane, tmp_path: Path) -> None:
    add_label = [{"op": "add", "path": "/metadata/labels", "value": {"x": "y"}}]
    async with running_webhook(tmp_path / "hook", patch_with(add_label)) as webhook:
        rules = [pizza_rule(operations=["DELETE"])]
        control_plane.objects.mutating.put(
            configuration("d", hook("d.example.com", webhook.client_config(), rules=rules))
        )
        async with admission_server(tmp_path / "data", control_plane, *NO_TOPPINGS_CHECK) as server:
            assert (await request(server, "POST", pizzas_path(), pizza("p")))[0] == 201
            status, body, _ = await request(server, "DELETE", pizzas_path(name="p"))
            assert status == 500, body
            assert body["message"] == (
                'Internal error occurred: admission webhook "d.example.com" attempted to modify the object, '
                "which is not supported for this operation"
            )
            assert (await request(server, "GET", pizzas_path(name="p")))[0] == 200
    [review] = webhook.reviews
    assert review["request"]["operation"] == "DELETE" and review["request"]["object"] is None
    assert review["request"]["oldObject"]["metadata"]["name"] == "p"
    assert review["request"]["options"]["kind"] == "DeleteOptions"


async def test_status_subresource_rules(control_plane: ControlPlane, tmp_path: Path) -> None:
    async with (
        running_webhook(tmp_path / "main", deny_with("main")) as main,
        running_webhook(tmp_path / "status", deny_with("status")) as status_hook,
    ):
        control_plane.objects.validating.put(
            configuration(
                "v",
                hook("main.example.com", main.client_config(), rules=[pizza_rule(operations=["UPDATE"])]),
                hook(
                    "status.example.com",
                    status_hook.client_config(),
                    rules=[pizza_rule(resources=["*/status"], operations=["UPDATE"])],
                ),
            )
        )
        async with admission_server(tmp_path / "data", control_plane, *NO_TOPPINGS_CHECK) as server:
            status, created, _ = await request(server, "POST", pizzas_path(), pizza("p"))
            assert status == 201, created
            created["status"] = {"cost": 3}
            status, body, _ = await request(server, "PUT", pizzas_path(name="p") + "/status", created)
    assert status == 400 and body["message"].endswith("denied the request: status"), body
    assert main.reviews == []
    [review] = status_hook.reviews
    assert review["request"]["subResource"] == "status"


async def test_selectors(control_plane: ControlPlane, tmp_path: Path) -> None:
    control_plane.objects.add_namespace("team-a", {"team": "a"})
    control_plane.objects.add_namespace("team-b", {"team": "b"})
    async with running_webhook(tmp_path / "hook", deny_with("selected")) as webhook:
        control_plane.objects.validating.put(
            configuration(
                "sel",
                hook(
                    "sel.example.com",
                    webhook.client_config(),
                    namespaceSelector={"matchLabels": {"team": "a"}},
                    objectSelector={"matchExpressions": [{"key": "check", "operator": "Exists"}]},
                ),
            )
        )
        async with admission_server(tmp_path / "data", control_plane, *NO_TOPPINGS_CHECK) as server:
            cases = [
                ("team-a", {"check": "1"}, 400),
                ("team-a", {}, 201),
                ("team-b", {"check": "1"}, 201),
            ]
            for index, (namespace, labels, expected) in enumerate(cases):
                body = pizza(f"p{index}", labels=labels) if labels else pizza(f"p{index}")
                status, answer, _ = await request(server, "POST", pizzas_path(namespace), body)
                assert status == expected, (namespace, labels, answer)
    assert len(webhook.reviews) == 1


async def test_configuration_created_after_start_applies(control_plane: ControlPlane, tmp_path: Path) -> None:
    async with (
        running_webhook(tmp_path / "hook", deny_with("late")) as webhook,
        admission_server(tmp_path / "data", control_plane, *NO_TOPPINGS_CHECK) as server,
    ):
        assert (await request(server, "POST", pizzas_path(), pizza("before")))[0] == 201
        control_plane.objects.validating.put(
            configuration("late", hook("late.example.com", webhook.client_config()))
        )

        async def denied() -> bool:
            status, _, _ = await request(
                server, "POST", pizzas_path(), pizza("probe"), params={"dryRun": "All"}
            )
            return status == 400

        await eventually(denied, "the new configuration to apply")
        control_plane.objects.validating.delete("late")

        async def allowed() -> bool:
            status, _, _ = await request(
                server, "POST", pizzas_path(), pizza("probe"), params={"dryRun": "All"}
            )
            return status == 201

        await eventually(allowed, "the deleted configuration to stop applying")


async def test_audit_annotations_reach_the_audit_event(control_plane: ControlPlane, tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\n"
        "rules:\n- level: Metadata\n"
    )
    log = tmp_path / "audit.log"
    audit = ("--audit-policy-file", str(policy), "--audit-log-path", str(log))

    def answer(req: dict[str, Any]) -> dict[str, Any]:
        return {"allowed": False, "status": {"message": "no"}, "auditAnnotations": {"verdict": "refused"}}

    async with running_webhook(tmp_path / "hook", answer) as webhook:
        control_plane.objects.validating.put(
            configuration("a", hook("audit.example.com", webhook.client_config()))
        )
        async with admission_server(tmp_path / "data", control_plane, *NO_TOPPINGS_CHECK, *audit) as server:
            status, body, _ = await request(server, "POST", pizzas_path(), pizza("p"))
            assert status == 400, body

            async def logged() -> bool:
                return log.exists() and '"audit.example.com/verdict"' in log.read_text()

            await eventually(logged, "the audit event")
    events = [json.loads(line) for line in log.read_text().splitlines() if line]
    create = next(e for e in events if e["verb"] == "create")
    assert create["annotations"]["audit.example.com/verdict"] == "refused"
    assert create["responseStatus"]["code"] == 400
