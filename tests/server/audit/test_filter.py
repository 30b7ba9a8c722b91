"""The audit filters over real HTTPS: levels, stages, Audit-ID, bodies, errors, panics, failed authn."""

from __future__ import annotations

import re
import ssl
import uuid
from typing import Any

import pytest
from aiohttp import ClientSession

GROUP = "restaurant.programming-kubernetes.info"
PIZZAS = f"/apis/{GROUP}/v1alpha1/namespaces/default/pizzas"
MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
PIZZA = {
    "apiVersion": f"{GROUP}/v1alpha1",
    "kind": "Pizza",
    "metadata": {"name": "margherita", "namespace": "default"},
    "spec": {"toppings": ["mozzarella", "tomato"]},
}


def by_stage(events: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {e["stage"]: e for e in events}


@pytest.mark.parametrize("level", ["None", "Metadata", "Request", "RequestResponse"])
async def test_create_at_each_level(
    level: str, audited: Any, session: ClientSession, tls: dict[str, ssl.SSLContext]
) -> None:
    async with audited([{"level": level}]) as a:
        async with session.post(a.url(PIZZAS), json=PIZZA, ssl=tls["admin"]) as response:
            assert response.status == 201
            returned = await response.json()
            audit_id = response.headers["Audit-ID"]
        events = a.events()

    # The handler read the body after audit had seen it.
    assert returned["spec"] == PIZZA["spec"]
    assert str(uuid.UUID(audit_id)) == audit_id
    if level == "None":
        assert events == []
        return
    assert [e["stage"] for e in events] == ["RequestReceived", "ResponseComplete"]
    received, complete = events
    for event in events:
        assert event["kind"] == "Event" and event["apiVersion"] == "audit.k8s.io/v1"
        assert event["level"] == level
        assert event["auditID"] == audit_id
        assert event["verb"] == "create"
        assert event["requestURI"] == PIZZAS
        assert event["user"] == {"username": "admin", "groups": ["system:masters", "system:authenticated"]}
        assert event["sourceIPs"] == ["127.0.0.1"]
        assert event["userAgent"].startswith("Python/")
        assert MICRO_TIME.match(event["requestReceivedTimestamp"])
        assert MICRO_TIME.match(event["stageTimestamp"])
        assert "impersonatedUser" not in event
    assert received["stageTimestamp"] == received["requestReceivedTimestamp"]
    assert complete["requestReceivedTimestamp"] == received["requestReceivedTimestamp"]
    assert complete["stageTimestamp"] >= received["stageTimestamp"]
    # RequestReceived knows only the URL; the name of a create comes from the body (kube's LogRequestObject).
    base_ref = {"resource": "pizzas", "namespace": "default", "apiGroup": GROUP, "apiVersion": "v1alpha1"}
    assert received["objectRef"] == base_ref
    assert complete["objectRef"] == {**base_ref, "name": "margherita"}
    assert "responseStatus" not in received
    assert complete["responseStatus"] == {"metadata": {}, "code": 201}
    assert "requestObject" not in received and "responseObject" not in received
    if level == "Metadata":
        assert "requestObject" not in complete and "responseObject" not in complete
    if level == "Request":
        assert complete["requestObject"] == PIZZA
        assert "responseObject" not in complete
    if level == "RequestResponse":
        assert complete["requestObject"] == PIZZA
        assert complete["responseObject"] == returned
        assert complete["responseObject"]["metadata"]["managedFields"] == [
            {"manager": "test", "operation": "Update"}
        ]


async def test_yaml_body_and_delete_options(
    audited: Any, session: ClientSession, tls: dict[str, ssl.SSLContext]
) -> None:
    yaml_body = "apiVersion: v1\nkind: Pizza\nmetadata:\n  name: hawaii\nspec:\n  toppings: [ham]\n"
    async with audited([{"level": "Request"}]) as a:
        headers = {"Content-Type": "application/yaml"}
        async with session.put(
            f"{a.url(PIZZAS)}/hawaii", data=yaml_body, headers=headers, ssl=tls["admin"]
        ) as r:
            assert r.status == 200
            assert (await r.json())["spec"] == {"toppings": ["ham"]}
        options = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Foreground"}
        async with session.delete(f"{a.url(PIZZAS)}/hawaii", json=options, ssl=tls["admin"]) as r:
            assert r.status == 200
        events = [e for e in a.events() if e["stage"] == "ResponseComplete"]
    update, delete = events
    assert update["verb"] == "update"
    assert update["requestObject"] == {
        "apiVersion": "v1",
        "kind": "Pizza",
        "metadata": {"name": "hawaii"},
        "spec": {"toppings": ["ham"]},
    }
    assert delete["verb"] == "delete"
    assert delete["requestObject"] == options
    # A delete's success Status lands in responseStatus.
    assert delete["responseStatus"] == {
        "metadata": {},
        "status": "Success",
        "details": {"name": "hawaii", "kind": "pizzas"},
        "code": 200,
    }


async def test_forbidden_request_has_no_request_object(
    audited: Any, session: ClientSession, tls: dict[str, ssl.SSLContext]
) -> None:
    async with audited([{"level": "RequestResponse"}]) as a:
        async with session.post(a.url(PIZZAS), json=PIZZA, ssl=tls["bob"]) as response:
            assert response.status == 403
            status = await response.json()
        complete = by_stage(a.events())["ResponseComplete"]
    # Authorization refused it before any handler decoded the body, as in kube.
    assert "requestObject" not in complete
    assert complete["user"]["username"] == "bob"
    assert complete["responseStatus"] == {
        "metadata": {},
        "status": "Failure",
        "message": status["message"],
        "reason": "Forbidden",
        "details": status["details"],
        "code": 403,
    }
    assert complete["responseObject"] == status


async def test_handler_errors_keep_request_and_status(
    audited: Any, session: ClientSession, tls: dict[str, ssl.SSLContext]
) -> None:
    invalid = {**PIZZA, "spec": {"invalid": True}}
    async with audited([{"level": "RequestResponse"}]) as a:
        async with session.post(a.url(PIZZAS), json=invalid, ssl=tls["admin"]) as response:
            assert response.status == 422
        async with session.get(f"{a.url(PIZZAS)}/missing", ssl=tls["admin"]) as response:
            assert response.status == 404
        completes = [e for e in a.events() if e["stage"] == "ResponseComplete"]
    create, get = completes
    assert create["requestObject"] == invalid
    assert create["responseStatus"]["reason"] == "Invalid"
    assert create["responseStatus"]["code"] == 422
    assert create["responseObject"]["kind"] == "Status"
    assert get["verb"] == "get"
    assert get["objectRef"]["name"] == "missing"
    assert get["responseStatus"] == {
        "metadata": {},
        "status": "Failure",
        "message": f'pizzas.{GROUP} "missing" not found',
        "reason": "NotFound",
        "details": {"name": "missing"},
        "code": 404,
    }


async def test_watch_has_response_started_and_no_body(
    audited: Any, session: ClientSession, tls: dict[str, ssl.SSLContext]
) -> None:
    async with (
        audited([{"level": "RequestResponse"}]) as a,
        session.get(f"{a.url(PIZZAS)}?watch=true", ssl=tls["admin"]) as response,
    ):
        assert response.status == 200
        audit_id = response.headers["Audit-ID"]
        lines = (await response.read()).splitlines()
    # A stream is complete for the client before its handler returns: read the log once the server
    # has stopped (and the pipeline flushed), as ResponseComplete follows the handler's return.
    events = a.events()
    assert len(lines) == 1
    assert [e["stage"] for e in events] == ["RequestReceived", "ResponseStarted", "ResponseComplete"]
    assert {e["auditID"] for e in events} == {audit_id}
    assert all(e["verb"] == "watch" for e in events)
    assert events[1]["responseStatus"] == {"metadata": {}, "code": 200}
    # Streamed bodies are not captured, as kube skips watch responses.
    assert all("responseObject" not in e for e in events)


async def test_omit_stages_rule_and_policy(
    audited: Any, session: ClientSession, tls: dict[str, ssl.SSLContext]
) -> None:
    rules = [{"level": "Metadata", "omitStages": ["ResponseStarted"]}]
    async with audited(rules, policy_extra={"omitStages": ["RequestReceived"]}) as a:
        async with session.get(f"{a.url(PIZZAS)}?watch=1", ssl=tls["admin"]) as response:
            await response.read()
        async with session.get(a.url(PIZZAS), ssl=tls["admin"]) as response:
            assert response.status == 200
    events = a.events()  # after shutdown: the watch's ResponseComplete follows its handler's return
    assert sorted((e["verb"], e["stage"]) for e in events) == [
        ("list", "ResponseComplete"),
        ("watch", "ResponseComplete"),
    ]


async def test_audit_id_header_everywhere(
    audited: Any, session: ClientSession, tls: dict[str, ssl.SSLContext]
) -> None:
    async with audited([{"level": "Metadata"}]) as a:
        # An incoming Audit-ID (the aggregator forwards its own) is kept as is.
        given = "aggregator-id-1"
        async with session.get(a.url(PIZZAS), headers={"Audit-ID": given}, ssl=tls["admin"]) as response:
            assert response.headers.getall("Audit-ID") == [given]
        # Error responses of every origin carry it: authentication 401, router 404, panic 500.
        ids = []
        for path, client, code in (
            (PIZZAS, "nobody", 401),
            ("/no/such/path", "admin", 404),
            ("/panic", "admin", 500),
        ):
            async with session.get(a.url(path), ssl=tls[client]) as response:
                assert response.status == code
                ids.append(response.headers["Audit-ID"])
        assert len(set(ids)) == 3
        events = a.events()
    assert {e["auditID"] for e in events} == {given, *ids}


async def test_panic_stage(audited: Any, session: ClientSession, tls: dict[str, ssl.SSLContext]) -> None:
    async with audited([{"level": "Metadata", "nonResourceURLs": ["/panic"]}]) as a:
        async with session.get(a.url("/panic"), ssl=tls["admin"]) as response:
            assert response.status == 500
            assert (await response.json())["reason"] == "InternalError"
        events = a.events()
    assert [e["stage"] for e in events] == ["RequestReceived", "Panic"]
    assert "objectRef" not in events[1]
    assert events[1]["verb"] == "get"
    assert events[1]["responseStatus"] == {
        "metadata": {},
        "status": "Failure",
        "message": "APIServer panic'd: boom",
        "reason": "InternalError",
        "code": 500,
    }


async def test_failed_authentication_event(
    audited: Any, session: ClientSession, tls: dict[str, ssl.SSLContext]
) -> None:
    rules = [{"level": "None", "users": ["admin"]}, {"level": "Metadata"}]
    async with audited(rules) as a:
        async with session.get(a.url(PIZZAS), ssl=tls["nobody"]) as response:
            assert response.status == 401
            audit_id = response.headers["Audit-ID"]
        async with session.get(a.url(PIZZAS), ssl=tls["admin"]) as response:
            assert response.status == 200  # rule 1: admin is not audited
        events = a.events()
    # kube's WithFailedAuthenticationAudit: one ResponseStarted event, no user.
    assert len(events) == 1
    (event,) = events
    assert event["auditID"] == audit_id
    assert event["stage"] == "ResponseStarted"
    assert event["user"] == {}
    assert event["verb"] == "list"
    assert event["responseStatus"] == {
        "metadata": {},
        "status": "Failure",
        "message": "Unauthorized",
        "reason": "Unauthorized",
        "code": 401,
    }


async def test_omit_managed_fields(
    audited: Any, session: ClientSession, tls: dict[str, ssl.SSLContext]
) -> None:
    managed = {**PIZZA, "metadata": {**PIZZA["metadata"], "managedFields": [{"manager": "kubectl"}]}}
    rules = [
        {"level": "RequestResponse", "verbs": ["list"], "omitManagedFields": False},
        {"level": "RequestResponse"},
    ]
    async with audited(rules, policy_extra={"omitManagedFields": True}) as a:
        async with session.put(f"{a.url(PIZZAS)}/margherita", json=managed, ssl=tls["admin"]) as response:
            returned = await response.json()
        async with session.get(a.url(PIZZAS), ssl=tls["admin"]) as response:
            listed = await response.json()
        update, listing = [e for e in a.events() if e["stage"] == "ResponseComplete"]
    assert "managedFields" in returned["metadata"]  # the client still gets them
    assert update["requestObject"]["metadata"] == PIZZA["metadata"]
    assert "managedFields" not in update["responseObject"]["metadata"]
    assert update["responseObject"]["metadata"]["uid"] == "uid-1"
    # The rule's omitManagedFields: false overrides the policy's true.
    assert listing["responseObject"] == listed
    assert all("managedFields" in item["metadata"] for item in listing["responseObject"]["items"])


async def test_rules_pick_levels_per_request(
    audited: Any, session: ClientSession, tls: dict[str, ssl.SSLContext]
) -> None:
    rules = [
        {"level": "None", "users": ["bob"]},
        {"level": "RequestResponse", "userGroups": ["auditors"]},
        {
            "level": "Request",
            "resources": [{"group": GROUP, "resources": ["pizzas"], "resourceNames": ["special"]}],
        },
        {"level": "None", "nonResourceURLs": ["/healthz*"]},
        {"level": "Metadata"},
    ]
    requests = [
        ("get", PIZZAS, "bob", None),
        ("get", PIZZAS, "carol", "RequestResponse"),
        ("put", f"{PIZZAS}/special", "admin", "Request"),
        ("put", f"{PIZZAS}/plain", "admin", "Metadata"),
        ("get", "/healthz", "nobody", None),
        ("get", "/healthz/ping", "admin", None),
        ("get", "/version", "admin", "Metadata"),
    ]
    async with audited(rules) as a:
        expected: dict[str, str | None] = {}
        for method, path, who, level in requests:
            body = {**PIZZA, "metadata": {"name": path.rsplit("/", 1)[-1]}} if method == "put" else None
            async with session.request(method, a.url(path), json=body, ssl=tls[who]) as response:
                assert response.status < 400 or who == "bob", (path, who, response.status)
                expected[response.headers["Audit-ID"]] = level
        events = a.events()
    levels = {e["auditID"]: e["level"] for e in events}
    assert levels == {audit_id: level for audit_id, level in expected.items() if level is not None}
