"""Authorizers (privileged groups, always-allow paths, union) and kube's 403 messages."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from apis.meta.user import ANONYMOUS, UserInfo
from server.authn import build_authenticator
from server.authn.interface import Authenticator
from server.authz import (
    ALLOW,
    NO_OPINION,
    AlwaysAllowPaths,
    AuthzAttributes,
    Decision,
    PrivilegedGroups,
    Union,
    Verdict,
    build_authorizer,
    deny,
)
from server.filters.authorization import forbidden_error
from server.request_info import resolve

# Fixture types (the fixtures live in conftest.py).
MakeApp = Callable[..., web.Application]
AiohttpClient = Callable[..., Awaitable[TestClient]]

GROUP = "restaurant.programming-kubernetes.info"
BOB = UserInfo("bob", groups=("restaurant-staff", "system:authenticated"))


def attrs(method: str, path: str, user: UserInfo = BOB, **query: str) -> AuthzAttributes:
    return AuthzAttributes(user, resolve(method, path, query))


class Fixed:
    """An authorizer with a fixed answer that records whether it was asked."""

    def __init__(self, decision: Decision) -> None:
        self.decision = decision
        self.asked = 0

    async def authorize(self, attributes: AuthzAttributes) -> Decision:
        self.asked += 1
        return self.decision


@pytest.mark.parametrize(
    ("method", "path", "user", "message", "details"),
    [
        (
            "GET",
            f"/apis/{GROUP}/v1alpha1/namespaces/default/pizzas",
            BOB,
            f'pizzas.{GROUP} is forbidden: User "bob" cannot list resource "pizzas" in API group "{GROUP}" '
            'in the namespace "default"',
            {"group": GROUP, "kind": "pizzas"},
        ),
        (
            "DELETE",
            f"/apis/{GROUP}/v1beta1/toppings/salami",
            BOB,
            f'toppings.{GROUP} "salami" is forbidden: User "bob" cannot delete resource "toppings" '
            f'in API group "{GROUP}" at the cluster scope',
            {"name": "salami", "group": GROUP, "kind": "toppings"},
        ),
        (
            "PUT",
            f"/apis/{GROUP}/v1alpha1/namespaces/default/pizzas/margherita/status",
            BOB,
            f'pizzas.{GROUP} "margherita" is forbidden: User "bob" cannot update resource "pizzas/status" '
            f'in API group "{GROUP}" in the namespace "default"',
            {"name": "margherita", "group": GROUP, "kind": "pizzas"},
        ),
        (
            "GET",
            "/api/v1/namespaces/default/pods",
            ANONYMOUS,
            'pods is forbidden: User "system:anonymous" cannot list resource "pods" in API group "" '
            'in the namespace "default"',
            {"kind": "pods"},
        ),
        ("GET", "/foo", BOB, 'forbidden: User "bob" cannot get path "/foo"', None),
        # Go's sanitizer keeps the message from looking like HTML; %q escapes control characters.
        (
            "POST",
            "/<b>x&y</b>\n",
            BOB,
            'forbidden: User "bob" cannot post path "/&lt;b&gt;x&amp;y&lt;/b&gt;\\n"',
            None,
        ),
    ],
)
def test_forbidden_messages(
    method: str, path: str, user: UserInfo, message: str, details: dict[str, str] | None
) -> None:
    err = forbidden_error(attrs(method, path, user))
    assert (err.code, err.reason, err.message) == (403, "Forbidden", message)
    assert err.details == details


def test_reason_is_appended_unsanitized() -> None:
    err = forbidden_error(attrs("GET", "/metrics"), 'RBAC: role "<x>" not found')
    assert err.message == 'forbidden: User "bob" cannot get path "/metrics": RBAC: role "<x>" not found'


async def test_privileged_groups() -> None:
    masters = PrivilegedGroups()
    admin = UserInfo("admin", groups=("system:masters",))
    assert await masters.authorize(attrs("DELETE", f"/apis/{GROUP}/v1beta1/toppings", admin)) == ALLOW
    assert await masters.authorize(attrs("GET", "/anything", admin)) == ALLOW
    assert await masters.authorize(attrs("GET", "/anything", BOB)) == NO_OPINION


@pytest.mark.parametrize(
    ("path", "verdict"),
    [
        ("/healthz", Verdict.ALLOW),
        ("/healthz/ping", Verdict.NO_OPINION),  # exact unless the pattern ends in *
        ("/openapi/v2", Verdict.ALLOW),
        ("/openapi/v3/apis/x", Verdict.ALLOW),
        ("/openapiz", Verdict.NO_OPINION),
        ("/", Verdict.ALLOW),
        ("/version", Verdict.NO_OPINION),
    ],
)
async def test_always_allow_paths(path: str, verdict: Verdict) -> None:
    authorizer = AlwaysAllowPaths(["/healthz", "/openapi/*", "/"])
    assert (await authorizer.authorize(attrs("GET", path, ANONYMOUS))).verdict is verdict


async def test_always_allow_paths_ignores_resource_requests() -> None:
    authorizer = AlwaysAllowPaths(["/*"])
    assert await authorizer.authorize(attrs("GET", "/api/v1/pods", ANONYMOUS)) == NO_OPINION
    assert await authorizer.authorize(attrs("GET", "/apis", ANONYMOUS)) == ALLOW


def test_always_allow_paths_only_trailing_star() -> None:
    with pytest.raises(ValueError, match="only trailing"):
        AlwaysAllowPaths(["/health*z"])


async def test_union_first_decision_wins() -> None:
    quiet = Fixed(Decision(Verdict.NO_OPINION, "no rule"))
    denier = Fixed(deny("denied by policy"))
    allower = Fixed(ALLOW)
    decision = await Union([quiet, denier, allower]).authorize(attrs("GET", "/foo"))
    assert decision == deny("denied by policy")
    assert (quiet.asked, denier.asked, allower.asked) == (1, 1, 0)


async def test_union_without_decision_joins_reasons_and_errors() -> None:
    union = Union(
        [
            Fixed(Decision(Verdict.NO_OPINION, "rbac: no rule")),
            Fixed(Decision(Verdict.NO_OPINION, "", "webhook timed out")),
            Fixed(Decision(Verdict.NO_OPINION, "abac: no policy", "bad policy file")),
        ]
    )
    decision = await union.authorize(attrs("GET", "/foo"))
    assert decision == Decision(
        Verdict.NO_OPINION, "rbac: no rule\nabac: no policy", "[webhook timed out, bad policy file]"
    )


def test_union_decides_now_only_when_every_authorizer_asked_can() -> None:
    """The filter's frame-free path: a decision known without waiting, None when one must be awaited."""
    root = UserInfo("root", groups=("system:masters",))
    union = Union([PrivilegedGroups(), AlwaysAllowPaths(["/healthz"]), Fixed(ALLOW)])
    pizzas = f"/apis/{GROUP}/v1beta1/namespaces/default/pizzas"
    assert union.decide_now(attrs("GET", pizzas, root)) == ALLOW
    assert union.decide_now(attrs("GET", "/healthz")) == ALLOW
    assert union.decide_now(attrs("GET", pizzas)) is None  # Fixed can only be awaited
    quiet = Union([PrivilegedGroups(), AlwaysAllowPaths(["/healthz"])])
    assert quiet.decide_now(attrs("GET", pizzas)) == NO_OPINION


async def test_an_immediate_no_opinion_is_403(
    make_app: MakeApp, aiohttp_client: AiohttpClient, header_authenticator: Authenticator
) -> None:
    app = make_app(
        authenticator=build_authenticator([header_authenticator], anonymous=False),
        authorizer=Union([PrivilegedGroups(), AlwaysAllowPaths(["/healthz"])]),
    )
    client = await aiohttp_client(app)
    path = f"/apis/{GROUP}/v1alpha1/namespaces/default/pizzas/hawaii"
    response = await client.get(path, headers={"X-Test-User": "bob"})
    assert response.status == 403
    assert (await response.json())["reason"] == "Forbidden"
    ok = await client.get(path, headers={"X-Test-User": "root;system:masters"})
    assert ok.status == 200


async def test_deny_reason_reaches_the_client(
    make_app: MakeApp, aiohttp_client: AiohttpClient, header_authenticator: Authenticator
) -> None:
    authorizer = build_authorizer(delegates=[Fixed(deny("pizzas are for staff only"))])
    app = make_app(
        authenticator=build_authenticator([header_authenticator], anonymous=False), authorizer=authorizer
    )
    client = await aiohttp_client(app)
    response = await client.get(f"/apis/{GROUP}/v1alpha1/namespaces/default/pizzas/hawaii")
    assert response.status == 401  # no credential at all
    response = await client.get(
        f"/apis/{GROUP}/v1alpha1/namespaces/default/pizzas/hawaii", headers={"X-Test-User": "bob"}
    )
    assert response.status == 403
    assert await response.json() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'pizzas.{GROUP} "hawaii" is forbidden: User "bob" cannot get resource "pizzas" '
        f'in API group "{GROUP}" in the namespace "default": pizzas are for staff only',
        "reason": "Forbidden",
        "details": {"name": "hawaii", "group": GROUP, "kind": "pizzas"},
        "code": 403,
    }
    # system:masters is allowed before the delegate is asked.
    ok = await client.get(
        f"/apis/{GROUP}/v1alpha1/namespaces/default/pizzas/hawaii",
        headers={"X-Test-User": "root;system:masters"},
    )
    assert ok.status == 200


async def test_authorizer_error_without_allow_is_500(
    make_app: MakeApp, aiohttp_client: AiohttpClient, header_authenticator: Authenticator
) -> None:
    broken = Fixed(Decision(Verdict.NO_OPINION, "", "subjectaccessreviews: connection refused"))
    app = make_app(
        authenticator=build_authenticator([header_authenticator], anonymous=False),
        authorizer=build_authorizer(delegates=[broken]),
    )
    client = await aiohttp_client(app)
    response = await client.get("/apis", headers={"X-Test-User": "bob"})
    assert response.status == 500
    body = await response.json()
    assert (body["reason"], body["message"]) == (
        "InternalError",
        "Internal error occurred: subjectaccessreviews: connection refused",
    )
