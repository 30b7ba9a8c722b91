"""Establishes who is calling, or answers 401 (kube's WithAuthentication).

The user lands in request[USER] for authorization, audit, admission and handlers. Which
credentials count, and whether anonymous is allowed (and where), is the authenticator's business;
see `server.authn.build_authenticator`.

Once a request is authenticated its credentials leave it, as kube's filter deletes them: the
`Authorization` header and every front-proxy identity header (the standard X-Remote-* ones and any
configured ones). Downstream code can then never mistake a forged header for an identity. Headers are
immutable in aiohttp, so the request is cloned; the clone shares the audit annotations dict created
here, so annotations added further in reach the audit filter outside.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware
from multidict import CIMultiDict

from apis.meta.errors import StatusError, unauthorized
from apis.meta.user import UserInfo
from server.authn.interface import WAIT, Authenticator, AuthResult, authenticator_now
from server.authn.requestheader import STANDARD_NAMES, RequestHeaderNames, headers_to_strip
from server.request_state import AUDIT_ANNOTATIONS, USER
from server.responses import answered, status_response

logger = logging.getLogger(__name__)


def _standard_names() -> Sequence[RequestHeaderNames]:
    return (STANDARD_NAMES,)


def authentication(
    authenticator: Authenticator,
    *,
    api_audiences: Sequence[str] = (),
    credential_headers: Callable[[], Sequence[RequestHeaderNames]] = _standard_names,
) -> Middleware:
    """`api_audiences`: the audiences this server accepts tokens for (kube's --api-audiences).

    `credential_headers`: the current front-proxy header names to strip (they may change at run time).
    """
    accepted = tuple(api_audiences)

    now = authenticator_now(authenticator)

    @web.middleware
    def authenticate(request: web.Request, handler: Handler) -> Awaitable[web.StreamResponse]:
        # A plain function when the authenticator answers at once (see ImmediateAuthenticator): an
        # authenticated request goes on with no frame of this filter alive.
        audit_annotations(request)
        try:
            result = now(request) if now is not None else WAIT
        except StatusError as err:
            return answered(_refused(request, err))
        if result is WAIT:
            return authenticate_later(request, handler)
        return proceed(request, handler, result)

    async def authenticate_later(request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            result = await authenticator.authenticate(request)
        except StatusError as err:
            return _refused(request, err)
        return await proceed(request, handler, result)

    def proceed(
        request: web.Request, handler: Handler, result: AuthResult | None
    ) -> Awaitable[web.StreamResponse]:
        if result is None:
            return answered(status_response(unauthorized(), request))
        if not _audiences_acceptable(accepted, result.audiences):
            logger.info(
                "unable to match the audience: %s, accepted: %s", list(result.audiences), list(accepted)
            )
            return answered(status_response(unauthorized(), request))
        request[USER] = result.user
        return handler(_without_credentials(request, credential_headers()))

    return authenticate


def _refused(request: web.Request, err: StatusError) -> web.Response:
    logger.info("unable to authenticate %s %s: %s", request.method, request.path, err)
    return status_response(unauthorized(), request)


def _without_credentials(request: web.Request, names: Sequence[RequestHeaderNames]) -> web.Request:
    """The request, or a clone without the credential headers (a helper, so that none of this
    stays referenced from the filter's frame while a long request runs)."""
    strip = headers_to_strip(request.headers, names)
    if not strip:
        return request
    kept = CIMultiDict((k, v) for k, v in request.headers.items() if k.lower() not in strip)
    return request.clone(headers=kept)


def audit_annotations(request: web.Request) -> dict[str, str]:
    """The request's audit annotations, created on first use (the first filter to ask shares it onward)."""
    annotations = request.get(AUDIT_ANNOTATIONS)
    if annotations is None:
        annotations = request[AUDIT_ANNOTATIONS] = {}
    return annotations


def user_of(request: web.Request) -> UserInfo | None:
    """The authenticated user, None if authentication has not run."""
    return request.get(USER)


def _audiences_acceptable(accepted: tuple[str, ...], issued_for: tuple[str, ...]) -> bool:
    """kube's audiencesAreAcceptable: no restriction on either side, or some audience in common."""
    if not accepted or not issued_for:
        return True
    return bool(set(accepted) & set(issued_for))
