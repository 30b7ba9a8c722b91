"""Lets an authorized user act as another (kube's WithImpersonation, k8s.io/apiserver pkg/endpoints/filters).

`Impersonate-User` names the user (a `system:serviceaccount:<ns>:<name>` name is a service account),
`Impersonate-Group` (repeatable) the groups, `Impersonate-Uid` the uid and `Impersonate-Extra-<key>` the
extra values (key lower-cased and %-decoded). Groups, uid or extra without a user is a 400. Each
part is authorized for the caller with verb `impersonate` — users/groups/serviceaccounts in the core
group, uids and userextras (subresource = key) in authentication.k8s.io/v1 — and the first refusal is a
403 naming it. Then the request continues as the new user: a named user also gets
`system:authenticated` unless the groups already say (un)authenticated; `system:anonymous` gets
`system:unauthenticated`; a service account without groups gets its service-account groups.

The authenticated caller stays on the request under IMPERSONATED_BY (audit records both), and
the impersonation headers are removed before anything downstream sees them.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware
from multidict import CIMultiDict

from apis.meta.errors import StatusError, bad_request, internal_error
from apis.meta.names import is_dns1123_label, is_dns1123_subdomain
from apis.meta.user import SERVICE_ACCOUNT_PREFIX, UserInfo, service_account_user
from server.authn.interface import ALL_AUTHENTICATED, ALL_UNAUTHENTICATED
from server.authn.requestheader import unescape_extra_key
from server.authz.interface import Authorizer, AuthzAttributes
from server.filters.authentication import user_of
from server.filters.authorization import forbidden_error
from server.filters.immediate import immediate
from server.request_info import RequestInfo
from server.request_state import IMPERSONATED_BY, USER
from server.responses import status_response

logger = logging.getLogger(__name__)


USER_HEADER = "Impersonate-User"
GROUP_HEADER = "Impersonate-Group"
UID_HEADER = "Impersonate-Uid"
EXTRA_HEADER_PREFIX = "Impersonate-Extra-"

ANONYMOUS = "system:anonymous"
AUTHENTICATION_GROUP_VERSION = ("authentication.k8s.io", "v1")


@dataclass(frozen=True, slots=True)
class Target:
    """One thing to impersonate, shaped like the ObjectReference kube builds for it."""

    kind: str  # ServiceAccount, User, Group, UserExtra, UID
    name: str
    namespace: str = ""
    api_version: str = ""
    field_path: str = ""  # the extra key of a UserExtra

    def go_string(self) -> str:
        """Go's %v of the v1.ObjectReference: Kind Namespace Name UID APIVersion ResourceVersion FieldPath."""
        fields = (self.kind, self.namespace, self.name, "", self.api_version, "", self.field_path)
        return "{" + " ".join(fields) + "}"


def impersonation(authorizer: Authorizer) -> Middleware:
    @web.middleware
    def impersonate(request: web.Request, handler: Handler) -> Awaitable[web.StreamResponse]:
        # A plain function: a request without Impersonate-* headers passes straight through, and
        # keeps no frame of this filter alive while it runs.
        try:
            targets = impersonation_targets(request.headers)
        except StatusError as err:
            logger.debug("%s", err)
            return immediate(status_response(err, request))
        if not targets:
            return handler(request)
        return act_as(request, handler, targets)

    async def act_as(request: web.Request, handler: Handler, targets: list[Target]) -> web.StreamResponse:
        requestor = user_of(request)
        if requestor is None:
            return status_response(internal_error("no user found for request"), request)

        groups_specified = bool(request.headers.getall(GROUP_HEADER, []))
        username, uid = "", ""
        groups: list[str] = []
        extra: dict[str, tuple[str, ...]] = {}
        for target in targets:
            attrs = AuthzAttributes(requestor, _acting_as(target))
            if target.kind == "ServiceAccount":
                account = service_account_user(target.namespace, target.name)
                username = account.name
                if not groups_specified:
                    groups = list(account.groups)
            elif target.kind == "User":
                username = target.name
            elif target.kind == "Group":
                groups.append(target.name)
            elif target.kind == "UserExtra":
                extra[target.field_path] = (*extra.get(target.field_path, ()), target.name)
            else:
                uid = target.name
            decision = await authorizer.authorize(attrs)
            if not decision.allowed:
                logger.debug(
                    "forbidden impersonation %s: %s %s", request.path, decision.reason, decision.error
                )
                return status_response(forbidden_error(attrs, decision.reason), request)

        if username != ANONYMOUS:
            if ALL_AUTHENTICATED not in groups and ALL_UNAUTHENTICATED not in groups:
                groups.append(ALL_AUTHENTICATED)
        elif ALL_UNAUTHENTICATED not in groups:
            groups.append(ALL_UNAUTHENTICATED)
        impersonated = UserInfo(username, uid, tuple(groups), extra)
        logger.debug("%s is impersonating %s", _user_string(requestor), _user_string(impersonated))

        # Set on the incoming request too: filters outside this one (audit) hold that object.
        request[IMPERSONATED_BY] = requestor
        request[USER] = impersonated
        return await handler(request.clone(headers=_without_impersonation(request.headers)))

    return impersonate


# Every impersonation header starts with it (Impersonate-User, -Group, -Uid, -Extra-*).
_PREFIX = "impersonate-"
_PREFIX_LEN = len(_PREFIX)


def impersonation_targets(headers: Mapping[str, str]) -> list[Target]:
    """kube's buildImpersonationRequests: what is asked for, in the order kube authorizes it."""
    if not any(header[:_PREFIX_LEN].lower() == _PREFIX for header in headers):
        return []  # nearly every request: one cheap look at the names
    targets: list[Target] = []
    user = headers.get(USER_HEADER, "")
    if user:
        account = split_service_account(user)
        targets.append(Target("ServiceAccount", account[1], account[0]) if account else Target("User", user))
    groups = headers.getall(GROUP_HEADER, []) if hasattr(headers, "getall") else []
    targets.extend(Target("Group", group) for group in groups)
    api_version = "/".join(AUTHENTICATION_GROUP_VERSION)
    has_extra = False
    for header, value in headers.items():
        if header.lower().startswith(EXTRA_HEADER_PREFIX.lower()):
            has_extra = True
            key = unescape_extra_key(header[len(EXTRA_HEADER_PREFIX) :].lower())
            targets.append(Target("UserExtra", value, api_version=api_version, field_path=key))
    uid = headers.get(UID_HEADER, "")
    if uid:
        targets.append(Target("UID", uid, api_version=api_version))
    if (groups or has_extra or uid) and not user:
        listed = " ".join(t.go_string() for t in targets)
        raise bad_request(f"requested [{listed}] without impersonating a user")
    return targets


def split_service_account(username: str) -> tuple[str, str] | None:
    """serviceaccount.SplitUsername: (namespace, name) of `system:serviceaccount:<ns>:<name>`, else None."""
    if not username.startswith(SERVICE_ACCOUNT_PREFIX):
        return None
    parts = username[len(SERVICE_ACCOUNT_PREFIX) :].split(":")
    if len(parts) != 2 or is_dns1123_label(parts[0]) or is_dns1123_subdomain(parts[1]):
        return None
    return parts[0], parts[1]


def _acting_as(target: Target) -> RequestInfo:
    """The attributes kube authorizes for one target (verb impersonate, a resource request)."""
    group, version = AUTHENTICATION_GROUP_VERSION if target.api_version else ("", "")
    resource, subresource = {
        "ServiceAccount": ("serviceaccounts", ""),
        "User": ("users", ""),
        "Group": ("groups", ""),
        "UserExtra": ("userextras", target.field_path),
        "UID": ("uids", ""),
    }[target.kind]
    return RequestInfo(
        is_resource_request=True,
        path="",
        verb="impersonate",
        api_group=group,
        api_version=version,
        namespace=target.namespace,
        resource=resource,
        subresource=subresource,
        name=target.name,
    )


def _without_impersonation(headers: Mapping[str, str]) -> CIMultiDict[str]:
    kept: CIMultiDict[str] = CIMultiDict()
    for header, value in headers.items():
        lowered = header.lower()
        if lowered in ("impersonate-user", "impersonate-group", "impersonate-uid"):
            continue
        if lowered.startswith("impersonate-extra-"):
            continue
        kept.add(header, value)
    return kept


def _user_string(user: UserInfo) -> str:
    name = user.name or "<empty>"
    return f"{name}[{','.join(user.groups)}]" if user.groups else name
