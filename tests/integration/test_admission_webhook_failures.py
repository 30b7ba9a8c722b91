"""Webhooks that fail: timeouts, nobody listening, invalid answers; failurePolicy; dry run and sideEffects;
matchConditions evaluated with CEL; and the metrics kube keeps about all of it."""

from __future__ import annotations

import asyncio
import itertools
import socket
from pathlib import Path
from typing import Any

from tests.fixtures.admission import admission_server, configuration, hook, pizza, pizzas_path, request
from tests.fixtures.control_plane import ControlPlane
from tests.fixtures.control_plane import control_plane_fixture as control_plane_fixture
from tests.fixtures.webhook_server import allow, deny_with, running_webhook

NO_TOPPINGS_CHECK = ("--disable-admission-plugins", "PizzaToppings")


def closed_port() -> int:
    """A loopback port nobody listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def metrics_text(server: Any) -> str:
    status, body, _ = await request(server, "GET", "/metrics")
    assert status == 200
    return str(body)


async def test_timeout_fail_and_ignore(control_plane: ControlPlane, tmp_path: Path) -> None:
    async with running_webhook(tmp_path / "hook", allow) as webhook:
        webhook.delay = 3.0
        url = webhook.url()
        control_plane.objects.validating.put(
            configuration(
                "slow",
                hook("slow-fail.example.com", webhook.client_config(), timeoutSeconds=1),
            )
        )
        control_plane.objects.mutating.put(
            configuration(
                "slow-ignore",
                hook(
                    "slow-ignore.example.com",
                    webhook.client_config(),
                    timeoutSeconds=1,
                    failurePolicy="Ignore",
                ),
            )
        )
        async with admission_server(tmp_path / "data", control_plane, *NO_TOPPINGS_CHECK) as server:
            status, body, _ = await request(server, "POST", pizzas_path(), pizza("p"))
            text = await metrics_text(server)
    assert status == 500 and body["reason"] == "InternalError", body
    assert body["message"] == (
        'Internal error occurred: failed calling webhook "slow-fail.example.com": failed to call webhook: '
        f'Post "{url}?timeout=1s": context deadline exceeded'
    )
    assert webhook.queries[0] == {"timeout": "1s"}
    # The Ignore hook failed open (counted); the Fail hook rejected with a calling error.
    assert (
        'apiserver_admission_webhook_fail_open_count{name="slow-ignore.example.com",type="admit"} 1.0' in text
    )
    assert (
        'apiserver_admission_webhook_rejection_count{error_type="calling_webhook_error",'
        'name="slow-fail.example.com",operation="CREATE",rejection_code="503",type="validating"} 1.0'
    ) in text
    assert 'apiserver_admission_webhook_admission_duration_seconds_count{name="slow-fail.example.com"' in text
    assert (
        'apiserver_admission_step_admission_duration_seconds_count{operation="CREATE",rejected="true",type="validate"}'
        in text
    )


async def test_connection_refused_fail_and_ignore(control_plane: ControlPlane, tmp_path: Path) -> None:
    port = closed_port()
    url = f"https://127.0.0.1:{port}/admit"
    control_plane.objects.validating.put(configuration("gone", hook("gone.example.com", {"url": url})))
    async with admission_server(tmp_path / "data", control_plane, *NO_TOPPINGS_CHECK) as server:
        status, body, _ = await request(server, "POST", pizzas_path(), pizza("p"))
        assert status == 500, body
        assert body["message"] == (
            'Internal error occurred: failed calling webhook "gone.example.com": failed to call webhook: '
            f'Post "{url}?timeout=10s": dial tcp 127.0.0.1:{port}: connect: connection refused'
        )
        control_plane.objects.validating.put(
            configuration("gone", hook("gone.example.com", {"url": url}, failurePolicy="Ignore"))
        )

        async def created() -> bool:
            status, _, _ = await request(server, "POST", pizzas_path(), pizza("p"))
            return status == 201

        deadline = asyncio.get_running_loop().time() + 15
        while not await created():
            assert asyncio.get_running_loop().time() < deadline, "Ignore never applied"
            await asyncio.sleep(0.05)


async def test_untrusted_certificate_is_a_call_failure(control_plane: ControlPlane, tmp_path: Path) -> None:
    async with running_webhook(tmp_path / "hook", allow) as webhook:
        control_plane.objects.validating.put(
            configuration("untrusted", hook("untrusted.example.com", {"url": webhook.url()}))
        )
        async with admission_server(tmp_path / "data", control_plane, *NO_TOPPINGS_CHECK) as server:
            status, body, _ = await request(server, "POST", pizzas_path(), pizza("p"))
    assert status == 500, body
    assert 'failed calling webhook "untrusted.example.com": failed to call webhook: Post' in body["message"]
    assert "certificate" in body["message"]
    assert webhook.reviews == []


async def test_dry_run_and_side_effects(control_plane: ControlPlane, tmp_path: Path) -> None:
    async with (
        running_webhook(tmp_path / "none") as none_hook,
        running_webhook(tmp_path / "some") as some_hook,
    ):
        control_plane.objects.validating.put(
            configuration("a-none", hook("none.example.com", none_hook.client_config()))
        )
        async with admission_server(tmp_path / "data", control_plane, *NO_TOPPINGS_CHECK) as server:
            status, body, _ = await request(
                server, "POST", pizzas_path(), pizza("p"), params={"dryRun": "All"}
            )
            assert status == 201, body
            assert (await request(server, "GET", pizzas_path(name="p")))[0] == 404
            [review] = none_hook.reviews
            assert review["request"]["dryRun"] is True
            assert review["request"]["options"]["dryRun"] == ["All"]
            control_plane.objects.validating.put(
                configuration(
                    "b-some", hook("some.example.com", some_hook.client_config(), sideEffects="Some")
                )
            )
            deadline = asyncio.get_running_loop().time() + 15
            while True:
                status, body, _ = await request(
                    server, "POST", pizzas_path(), pizza("p"), params={"dryRun": "All"}
                )
                if status != 201 or asyncio.get_running_loop().time() > deadline:
                    break
                await asyncio.sleep(0.05)
            assert status == 400 and body["reason"] == "BadRequest", body
            assert body["message"] == 'admission webhook "some.example.com" does not support dry run'
            # Without dry run, the Some hook is called.
            status, body, _ = await request(server, "POST", pizzas_path(), pizza("real"))
            assert status == 201, body
    assert [r["request"]["name"] for r in some_hook.reviews] == ["real"]


async def test_invalid_responses(control_plane: ControlPlane, tmp_path: Path) -> None:
    def wrong_uid(req: dict[str, Any]) -> dict[str, Any]:
        return {"uid": "not-the-request", "allowed": True}

    def validating_patch(req: dict[str, Any]) -> dict[str, Any]:
        return {"allowed": True, "patch": "W10=", "patchType": "JSONPatch"}

    async with (
        running_webhook(tmp_path / "a", wrong_uid) as a,
        running_webhook(tmp_path / "b", validating_patch) as b,
    ):
        control_plane.objects.validating.put(configuration("a", hook("uid.example.com", a.client_config())))
        async with admission_server(tmp_path / "data", control_plane, *NO_TOPPINGS_CHECK) as server:
            status, body, _ = await request(server, "POST", pizzas_path(), pizza("p"))
            assert status == 500, body
            uid = a.reviews[0]["request"]["uid"]
            assert body["message"] == (
                'Internal error occurred: failed calling webhook "uid.example.com": received invalid webhook '
                f'response: expected response.uid="{uid}", got "not-the-request"'
            )
            control_plane.objects.validating.put(
                configuration("a", hook("patch.example.com", b.client_config()))
            )
            deadline = asyncio.get_running_loop().time() + 15
            while not b.reviews and asyncio.get_running_loop().time() < deadline:
                status, body, _ = await request(server, "POST", pizzas_path(), pizza("p"))
                await asyncio.sleep(0.05)
    assert status == 500, body
    assert body["message"].endswith(
        "received invalid webhook response: validating webhook may not return response.patch"
    )


async def test_v1beta1_review_and_unknown_versions(control_plane: ControlPlane, tmp_path: Path) -> None:
    async with running_webhook(tmp_path / "hook", deny_with("old style")) as webhook:
        control_plane.objects.validating.put(
            configuration(
                "b",
                hook("beta.example.com", webhook.client_config(), admissionReviewVersions=["v2", "v1beta1"]),
            )
        )
        control_plane.objects.mutating.put(
            configuration(
                "unknown",
                hook(
                    "v9.example.com",
                    webhook.client_config(),
                    admissionReviewVersions=["v9"],
                    failurePolicy="Ignore",
                ),
            )
        )
        async with admission_server(tmp_path / "data", control_plane, *NO_TOPPINGS_CHECK) as server:
            status, body, _ = await request(server, "POST", pizzas_path(), pizza("p"))
    assert status == 400 and body["message"].endswith("denied the request: old style"), body
    [review] = webhook.reviews  # the v9-only hook was never called; it failed open
    assert review["apiVersion"] == "admission.k8s.io/v1beta1"


async def test_match_conditions_decide_with_cel(control_plane: ControlPlane, tmp_path: Path) -> None:
    """kube's rule: a false condition skips the hook, all true call it, and an error (here a key the
    object lacks) goes to the failure policy: Ignore skips the hook, Fail is a 403 with kube's text."""
    named = [{"name": "only-called", "expression": "object.metadata.name.startsWith('called')"}]
    broken = [{"name": "no-such", "expression": "object.spec.missing == 1"}]
    async with running_webhook(tmp_path / "hook", deny_with("called")) as webhook:
        control_plane.objects.validating.put(
            configuration("c", hook("cel.example.com", webhook.client_config(), matchConditions=named))
        )
        async with admission_server(tmp_path / "data", control_plane, *NO_TOPPINGS_CHECK) as server:
            deadline = asyncio.get_running_loop().time() + 15
            for attempt in itertools.count():  # until the informer has the configuration: the hook denies
                status, body, _ = await request(server, "POST", pizzas_path(), pizza(f"called-{attempt}"))
                if status != 201 or asyncio.get_running_loop().time() > deadline:
                    break
                await asyncio.sleep(0.05)
            assert status == 400 and body["message"].endswith("denied the request: called"), body
            status, body, _ = await request(server, "POST", pizzas_path(), pizza("skipped"))
            assert status == 201, body  # the condition is false: the hook is not called
            calls = len(webhook.reviews)

            control_plane.objects.validating.put(
                configuration(
                    "c",
                    hook(
                        "cel.example.com",
                        webhook.client_config(),
                        matchConditions=broken,
                        failurePolicy="Ignore",
                    ),
                )
            )
            control_plane.objects.validating.put(
                configuration("f", hook("fail.example.com", webhook.client_config(), matchConditions=broken))
            )
            deadline = asyncio.get_running_loop().time() + 15
            for attempt in itertools.count():
                status, body, _ = await request(server, "POST", pizzas_path(), pizza(f"refused-{attempt}"))
                if status == 403 or asyncio.get_running_loop().time() > deadline:
                    break
                await asyncio.sleep(0.05)
    assert status == 403 and body["reason"] == "Forbidden", body
    assert body["message"].startswith(
        f'pizzas.restaurant.programming-kubernetes.info "refused-{attempt}" is forbidden: '
        "expression 'object.spec.missing == 1' resulted in error: "
    ), body
    assert len(webhook.reviews) == calls, "a hook whose condition failed was called"


async def test_match_condition_metrics(control_plane: ControlPlane, tmp_path: Path) -> None:
    """kube's apiserver_admission_match_condition_{evaluation_errors,exclusions}_total: errors counted
    up to the first false condition, and an exclusion for every hook its conditions skip."""
    false, broken = (
        {"name": "never", "expression": "object.metadata.name == 'never'"},
        {"name": "no-such", "expression": "object.spec.missing == 1"},
    )
    async with running_webhook(tmp_path / "hook") as webhook:
        config = webhook.client_config()
        control_plane.objects.validating.put(
            configuration(
                "v",
                hook("false-first.example.com", config, matchConditions=[false, broken]),
                hook("ignored.example.com", config, matchConditions=[broken], failurePolicy="Ignore"),
            )
        )
        control_plane.objects.mutating.put(
            configuration("m", hook("error-first.example.com", config, matchConditions=[broken, false]))
        )
        async with admission_server(tmp_path / "data", control_plane, *NO_TOPPINGS_CHECK) as server:
            status, body, _ = await request(server, "POST", pizzas_path(), pizza("p"))
            text = await metrics_text(server)
    assert status == 201, body
    assert webhook.reviews == []

    def sample(metric: str, name: str, kind: str) -> str:
        labels = f'kind="webhook",name="{name}",operation="CREATE",type="{kind}"'
        return f"apiserver_admission_match_condition_{metric}_total{{{labels}}} 1.0"

    assert sample("evaluation_errors", "error-first.example.com", "admit") in text
    assert sample("evaluation_errors", "ignored.example.com", "validating") in text
    assert "evaluation_errors_total{" + 'kind="webhook",name="false-first.example.com"' not in text
    for name, kind in (
        ("error-first.example.com", "admit"),
        ("false-first.example.com", "validating"),
        ("ignored.example.com", "validating"),
    ):
        assert sample("exclusions", name, kind) in text


async def test_connections_are_reused(control_plane: ControlPlane, tmp_path: Path) -> None:
    async with running_webhook(tmp_path / "hook") as webhook:
        control_plane.objects.validating.put(
            configuration("r", hook("reuse.example.com", webhook.client_config()))
        )
        async with admission_server(tmp_path / "data", control_plane, *NO_TOPPINGS_CHECK) as server:
            for index in range(5):
                status, body, _ = await request(server, "POST", pizzas_path(), pizza(f"p{index}"))
                assert status == 201, body
    assert len(webhook.reviews) == 5
    assert len(webhook.connections) == 1
