"""Establishes who is calling, or answers 401 (kube's WithAuthentication).

The user lands in request[USER_KEY] for authorization, audit, admission and handlers. Which
credentials count, and whether anonymous is allowed (and where), is the authenticator's business;
see `server.authn.build_authenticator`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from apis.meta.errors import StatusError, unauthorized
from apis.meta.user import UserInfo
from server.authn.interface import Authenticator
from server.responses import status_response

logger = logging.getLogger(__name__)

# request[USER_KEY] holds the authenticated UserInfo.
USER_KEY = "user"


def authentication(authenticator: Authenticator, *, api_audiences: Sequence[str] = ()) -> Middleware:
    """`api_audiences`: the audiences this server accepts tokens for (kube's --api-audiences)."""
    accepted = tuple(api_audiences)

    @web.middleware
    async def authenticate(request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            result = await authenticator.authenticate(request)
        except StatusError as err:
            logger.info("unable to authenticate %s %s: %s", request.method, request.path, err)
            return status_response(unauthorized())
        if result is None:
            return status_response(unauthorized())
        if not _audiences_acceptable(accepted, result.audiences):
            logger.info(
                "unable to match the audience: %s, accepted: %s", list(result.audiences), list(accepted)
            )
            return status_response(unauthorized())
        request[USER_KEY] = result.user
        return await handler(request)

    return authenticate


def user_of(request: web.Request) -> UserInfo | None:
    """The authenticated user, None if authentication has not run."""
    return request.get(USER_KEY)


def _audiences_acceptable(accepted: tuple[str, ...], issued_for: tuple[str, ...]) -> bool:
    """kube's audiencesAreAcceptable: no restriction on either side, or some audience in common."""
    if not accepted or not issued_for:
        return True
    return bool(set(accepted) & set(issued_for))
