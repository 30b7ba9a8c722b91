"""The whole chain as the real flags configure it: audit log, Audit-ID, in-flight limits, timeouts."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from tests.fixtures.server import running_server

GROUP = "restaurant.programming-kubernetes.info"
POLICY = """
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: RequestResponse
  resources: [{group: restaurant.programming-kubernetes.info, resources: [toppings]}]
- level: Metadata
"""


async def _events(path: Path, count: int) -> list[dict]:
    """Audit is written off the request path; poll (bounded) until `count` events are there."""
    for _ in range(100):
        if path.exists():
            events = [json.loads(line) for line in path.read_text().splitlines() if line]
            if len(events) >= count:
                return events
        await asyncio.sleep(0.05)
    raise AssertionError(f"expected {count} audit events in {path}")


async def test_audit_log_records_requests_at_policy_levels(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    log = tmp_path / "audit.log"
    flags = ("--audit-policy-file", str(policy), "--audit-log-path", str(log))
    async with running_server(tmp_path / "data", *flags) as server, server.session() as s:
        topping = {
            "apiVersion": f"{GROUP}/v1beta1",
            "kind": "Topping",
            "metadata": {"name": "olive"},
            "spec": {"cost": 1},
        }
        created = await s.post(
            f"/apis/{GROUP}/v1beta1/toppings", json=topping, headers={"Audit-ID": "my-id-1"}
        )
        assert created.status == 201
        assert created.headers["Audit-ID"] == "my-id-1"
        listed = await s.get(f"/apis/{GROUP}/v1beta1/namespaces/default/pizzas")
        assert listed.status == 200 and listed.headers["Audit-ID"]
    events = await _events(log, 2)
    create = next(e for e in events if e["auditID"] == "my-id-1")
    assert create["stage"] == "ResponseComplete" and create["level"] == "RequestResponse"
    assert create["verb"] == "create" and create["user"]["username"] == "admin"
    assert create["objectRef"]["resource"] == "toppings" and create["responseStatus"]["code"] == 201
    assert create["requestObject"]["spec"] == {"cost": 1}
    assert create["responseObject"]["metadata"]["name"] == "olive"
    pizza_list = next(e for e in events if e["auditID"] == listed.headers["Audit-ID"])
    assert pizza_list["level"] == "Metadata" and pizza_list["verb"] == "list"
    assert "requestObject" not in pizza_list and "responseObject" not in pizza_list
    assert all(e["stage"] != "RequestReceived" for e in events)


async def test_audit_id_is_sent_without_an_audit_backend(tmp_path: Path) -> None:
    async with running_server(tmp_path / "data") as server, server.session(admin=False) as s:
        unauthorized = await s.get(f"/apis/{GROUP}/v1beta1/toppings")
        assert unauthorized.status == 401 and unauthorized.headers.get("Audit-ID")


async def test_in_flight_limit_flag_reaches_the_chain(tmp_path: Path) -> None:
    # With a read-only limit of 1, a held watch is exempt, so a list still passes; the flag parses and
    # the server serves (the limiter itself is tested in tests/server/filters/test_max_in_flight.py).
    flags = ("--max-requests-inflight", "1", "--request-timeout", "30s")
    async with running_server(tmp_path / "data", *flags) as server, server.session() as s:
        watch = await s.get(f"/apis/{GROUP}/v1beta1/toppings", params={"watch": "1", "timeoutSeconds": "5"})
        assert watch.status == 200
        listed = await s.get(f"/apis/{GROUP}/v1beta1/toppings")
        assert listed.status == 200
        watch.close()


async def test_audit_names_custom_subresources_and_resources_without_storage(tmp_path: Path) -> None:
    """pizzas/bill and pizzas/oven are audited as subresources of pizzas, menuitems as a resource."""
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    log = tmp_path / "audit.log"
    flags = ("--audit-policy-file", str(policy), "--audit-log-path", str(log))
    pizzas = f"/apis/{GROUP}/v1beta1/namespaces/default/pizzas"
    async with running_server(tmp_path / "data", *flags) as server, server.session() as s:
        salami = {"apiVersion": f"{GROUP}/v1beta1", "kind": "Topping", "metadata": {"name": "salami"}}
        assert (
            await s.post(f"/apis/{GROUP}/v1beta1/toppings", json={**salami, "spec": {"cost": 1}})
        ).status == 201
        pizza = {
            "apiVersion": f"{GROUP}/v1beta1",
            "kind": "Pizza",
            "metadata": {"name": "plain"},
            "spec": {"toppings": [{"name": "salami", "quantity": 1}]},
        }
        created = await s.post(pizzas, json=pizza)
        assert created.status == 201, await created.text()
        reads = {
            "bill": await s.get(f"{pizzas}/plain/bill"),
            "oven": await s.get(f"{pizzas}/plain/oven"),
            "menu": await s.get(f"/apis/{GROUP}/v1beta1/namespaces/default/menuitems"),
        }
        assert {name: r.status for name, r in reads.items()} == {"bill": 200, "oven": 200, "menu": 200}
    events = await _events(log, 5)
    by_id = {e["auditID"]: e for e in events}
    bill, oven, menu = (by_id[reads[name].headers["Audit-ID"]] for name in ("bill", "oven", "menu"))
    assert bill["verb"] == "get" and bill["objectRef"]["resource"] == "pizzas"
    assert bill["objectRef"]["subresource"] == "bill" and bill["objectRef"]["name"] == "plain"
    assert oven["objectRef"]["subresource"] == "oven" and oven["responseStatus"]["code"] == 200
    assert menu["verb"] == "list" and menu["objectRef"]["resource"] == "menuitems"
    assert "subresource" not in menu["objectRef"]
