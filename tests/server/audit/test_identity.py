"""What the other filters tell audit: the authorization decision, the impersonated user, client IPs."""

from __future__ import annotations

import ssl
from typing import Any

from aiohttp import ClientSession

from server.audit.event import source_ips, user_agent

GROUP = "restaurant.programming-kubernetes.info"
PIZZAS = f"/apis/{GROUP}/v1alpha1/namespaces/default/pizzas"


async def test_authorization_decision_annotations(
    audited: Any, session: ClientSession, tls: dict[str, ssl.SSLContext]
) -> None:
    async with audited([{"level": "Metadata"}]) as a:
        async with session.get(a.url(PIZZAS), ssl=tls["admin"]) as response:
            assert response.status == 200
        async with session.get(a.url(PIZZAS), ssl=tls["bob"]) as response:
            assert response.status == 403
        events = a.events()
    admin_received, admin_complete, bob_received, bob_complete = events
    # The authorizer runs after audit: RequestReceived cannot know its decision yet, as in kube.
    assert "annotations" not in admin_received and "annotations" not in bob_received
    assert admin_complete["annotations"]["authorization.k8s.io/decision"] == "allow"
    assert bob_complete["annotations"]["authorization.k8s.io/decision"] == "forbid"
    assert set(bob_complete["annotations"]) == {
        "authorization.k8s.io/decision",
        "authorization.k8s.io/reason",
    }


async def test_impersonation_names_both_users(
    audited: Any, session: ClientSession, tls: dict[str, ssl.SSLContext]
) -> None:
    rules = [{"level": "Metadata", "users": ["admin"]}, {"level": "None"}]
    headers = {"Impersonate-User": "alice", "Impersonate-Group": "chefs"}
    async with audited(rules) as a:
        async with session.get(a.url(PIZZAS), headers=headers, ssl=tls["admin"]) as response:
            # alice is no system:master: the request itself is forbidden, after impersonation was allowed.
            assert response.status == 403
        events = a.events()
    # The policy saw the authenticated user (admin); the event names whom they acted as.
    received, complete = events
    assert received["user"]["username"] == complete["user"]["username"] == "admin"
    assert "impersonatedUser" not in received
    assert complete["impersonatedUser"] == {"username": "alice", "groups": ["chefs", "system:authenticated"]}
    assert complete["responseStatus"]["reason"] == "Forbidden"


def test_source_ips_like_kube() -> None:
    headers = {"X-Forwarded-For": "10.0.0.1, bogus, 10.0.0.2", "X-Real-Ip": "10.0.0.3"}
    assert source_ips(headers, "127.0.0.1") == ["10.0.0.1", "10.0.0.2", "10.0.0.3", "127.0.0.1"]
    # X-Real-Ip already in the chain, peer equal to the chain's end: neither is repeated.
    assert source_ips({"X-Forwarded-For": "10.0.0.1", "X-Real-Ip": "10.0.0.1"}, "10.0.0.1") == ["10.0.0.1"]
    assert source_ips({}, "::1") == ["::1"]
    assert source_ips({}, None) == []


def test_user_agent_is_truncated() -> None:
    assert user_agent({"User-Agent": "kubectl/v1.31"}) == "kubectl/v1.31"
    long = "a" * 1500
    assert user_agent({"User-Agent": long}) == "a" * 1024 + "...TRUNCATED"
