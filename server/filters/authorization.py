"""Decides whether the authenticated user may make the request, or answers 403 (kube's WithAuthorization).

The 403 `Status` message is kube's, built from the request info (responsewriters.Forbidden): e.g.
`pizzas.restaurant.programming-kubernetes.info is forbidden: User "bob" cannot list resource
"pizzas" in API group "restaurant.programming-kubernetes.info" in the namespace "default"`.

Like kube, the decision is recorded as audit annotations: `authorization.k8s.io/decision` (allow or
forbid) and `authorization.k8s.io/reason`; an evaluation error records only the reason "internal error".
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from apis.goformat import go_quote
from apis.meta.errors import GroupResource, StatusError, forbidden, internal_error
from server.authz.interface import Authorizer, AuthzAttributes, Decision, decider_now
from server.filters.authentication import audit_annotations, user_of
from server.filters.request_info import request_info_of
from server.request_state import AUTHORIZER
from server.responses import answered, status_response

logger = logging.getLogger(__name__)

# Go's responsewriters sanitizer: a message must never look like HTML. Quotes are fine.
_SANITIZE = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})

DECISION_ANNOTATION = "authorization.k8s.io/decision"
REASON_ANNOTATION = "authorization.k8s.io/reason"


def authorization(authorizer: Authorizer) -> Middleware:
    decide_now = decider_now(authorizer)

    @web.middleware
    def authorize(request: web.Request, handler: Handler) -> Awaitable[web.StreamResponse]:
        # A plain function when the decision is known at once (see ImmediateAuthorizer): an allowed
        # request goes on with no frame of this filter alive.
        user = user_of(request)
        if user is None:
            return answered(status_response(internal_error("no user found for request"), request))
        attrs = AuthzAttributes(user, request_info_of(request))
        request[AUTHORIZER] = authorizer
        decision = decide_now(attrs) if decide_now is not None else None
        if decision is None:
            return authorize_later(request, handler, attrs)
        return _apply(decision, request, handler, attrs)

    async def authorize_later(
        request: web.Request, handler: Handler, attrs: AuthzAttributes
    ) -> web.StreamResponse:
        return await _apply(await authorizer.authorize(attrs), request, handler, attrs)

    return authorize


def _apply(
    decision: Decision, request: web.Request, handler: Handler, attrs: AuthzAttributes
) -> Awaitable[web.StreamResponse]:
    # An authorizer may hit an evaluation error and still allow, so the decision comes first.
    annotations = audit_annotations(request)
    if decision.allowed:
        annotations.update({DECISION_ANNOTATION: "allow", REASON_ANNOTATION: decision.reason})
        return handler(request)
    if decision.error:
        annotations[REASON_ANNOTATION] = "internal error"
        logger.warning("authorization of %s %s failed: %s", request.method, request.path, decision.error)
        return answered(status_response(internal_error(decision.error), request))
    annotations.update({DECISION_ANNOTATION: "forbid", REASON_ANNOTATION: decision.reason})
    logger.debug("forbidden %s %s: %s", request.method, request.path, decision.reason)
    return answered(status_response(forbidden_error(attrs, decision.reason), request))


def forbidden_error(attrs: AuthzAttributes, reason: str = "") -> StatusError:
    """kube's 403: NewForbidden(group/resource, name, forbiddenMessage + ": " + reason)."""
    message = forbidden_message(attrs).translate(_SANITIZE)
    if reason:
        message = f"{message}: {reason}"
    gr = GroupResource(attrs.api_group, attrs.resource)
    if not gr.group and not gr.resource:
        # apierrors.NewForbidden with an empty GroupResource: no subject before "forbidden".
        return StatusError(403, "Forbidden", f"forbidden: {message}")
    return forbidden(gr, attrs.name, message)


def forbidden_message(attrs: AuthzAttributes) -> str:
    user = go_quote(attrs.user.name)
    if not attrs.is_resource_request:
        return f"User {user} cannot {attrs.verb} path {go_quote(attrs.path)}"
    resource = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    where = f"in the namespace {go_quote(attrs.namespace)}" if attrs.namespace else "at the cluster scope"
    return (
        f"User {user} cannot {attrs.verb} resource {go_quote(resource)} "
        f"in API group {go_quote(attrs.api_group)} {where}"
    )
