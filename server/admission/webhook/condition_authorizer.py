"""The `authorizer` of webhook matchConditions: the server's own authorizer, asked for the requesting user.

kube's webhook admission gets the server's authorizer (SetUnconditionalAuthorizer) and binds it, with
the request's user, to the `authorizer` variable (plugin/cel/activation.go). Here that is the chain
the authorization filter uses (privileged groups, always-allowed paths, the SubjectAccessReview
authorizer with its cache), reached through `apis.cel.library_authz`'s `Authorize` contract: this
module turns a library `Check` into our `AuthzAttributes` and a `Decision` back into a `Verdict`.
"""

from __future__ import annotations

from typing import Any

from apis.cel.library_authz import Authorize, Check, Verdict
from apis.meta.user import UserInfo, service_account_user
from server.authz.interface import Authorizer, AuthzAttributes
from server.authz.interface import Verdict as AuthzVerdict
from server.request_info import RequestInfo


def request_user(request: dict[str, Any]) -> UserInfo:
    """The user of an AdmissionRequest (its `userInfo`, as UserInfo.to_dict wrote it)."""
    return UserInfo.from_dict(request.get("userInfo") or {})


def request_resource(request: dict[str, Any]) -> Check:
    """kube's NewResourceAuthorizerVal: the resource the request was made for (not the version a
    webhook asked for), its subresource, namespace and name."""
    gvr = request.get("requestResource") or request.get("resource") or {}
    return Check(
        verb="",
        resource_request=True,
        group=str(gvr.get("group", "")),
        resource=str(gvr.get("resource", "")),
        subresource=str(request.get("requestSubResource") or request.get("subResource") or ""),
        namespace=str(request.get("namespace") or ""),
        name=str(request.get("name") or ""),
    )


def attributes(check: Check, user: UserInfo) -> AuthzAttributes:
    """kube's AttributesRecord of a check: resource checks ask for every version ("*")."""
    who = service_account_user(*check.service_account) if check.service_account else user
    if not check.resource_request:
        return AuthzAttributes(who, RequestInfo(False, check.path, check.verb))
    info = RequestInfo(
        True,
        "",
        check.verb,
        api_group=check.group,
        api_version="*",
        namespace=check.namespace,
        resource=check.resource,
        subresource=check.subresource,
        name=check.name,
        field_selector=check.field_selector,
        label_selector=check.label_selector,
    )
    return AuthzAttributes(who, info)


def authorize_for(authorizer: Authorizer, user: UserInfo) -> Authorize:
    """The library's Authorize for one request's user."""

    async def authorize(check: Check) -> Verdict:
        decision = await authorizer.authorize(attributes(check, user))
        return Verdict(decision.verdict is AuthzVerdict.ALLOW, decision.reason, decision.error)

    return authorize
