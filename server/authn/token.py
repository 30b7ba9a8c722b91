"""Bearer tokens, checked by the cluster with a TokenReview and cached (kube's webhook token authenticator).

Ports of k8s.io/apiserver plugin/pkg/authenticator/token/webhook, pkg/authentication/token/cache and
pkg/authentication/request/bearertoken:
- a review that authenticates yields the user; one that does not is an invalid token (401); an error
  (unreachable cluster, `status.error`) is a 401 too, but is never cached;
- answers are cached for --authentication-token-webhook-cache-ttl, successes and failures alike, keyed
  by a hash of token and audiences so tokens are not kept in memory; concurrent lookups of one token
  share a single review;
- with audiences (--api-audiences) the review asks for them and the answer must name one of them (or,
  answering none, be valid for the cluster's implicit audience, which delegation leaves empty).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from apis.meta.errors import unauthorized
from apis.meta.user import UserInfo
from server.authn.interface import WAIT, AuthResult, NowResult
from server.cluster.cache import ExpiringLRU
from server.cluster.client import ClusterClient, ClusterError

logger = logging.getLogger(__name__)

TOKEN_REVIEW_PATH = "/apis/authentication.k8s.io/v1/tokenreviews"
CACHE_SIZE = 4096  # kube: 32 stripes of 128 entries


class TokenReviewError(Exception):
    """The token could not be checked (not: the token is invalid)."""


@dataclass(frozen=True, slots=True)
class Review:
    """What the cluster said: a result (None when not authenticated)."""

    result: AuthResult | None


class TokenReviewer:
    """One TokenReview per call, no cache."""

    __slots__ = ("_client", "_implicit_audiences")

    def __init__(self, client: ClusterClient, implicit_audiences: Sequence[str] = ()) -> None:
        self._client = client
        self._implicit_audiences = tuple(implicit_audiences)

    async def review(self, token: str, audiences: Sequence[str]) -> Review:
        spec: dict[str, Any] = {"token": token}
        if audiences:
            spec["audiences"] = list(audiences)
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": spec}
        try:
            answer = await self._client.create(TOKEN_REVIEW_PATH, body)
        except ClusterError as err:
            raise TokenReviewError(f"failed to make webhook authenticator request: {err}") from err
        status = answer.get("status") or {}
        granted: tuple[str, ...] = ()
        if audiences:
            said = tuple(status.get("audiences") or ()) or self._implicit_audiences
            granted = tuple(a for a in audiences if a in said)
            if not granted:
                return Review(None)
        if not status.get("authenticated"):
            if status.get("error"):
                raise TokenReviewError(str(status["error"]))
            return Review(None)
        return Review(AuthResult(UserInfo.from_dict(status.get("user") or {}), granted))


class CachedTokenReviewer:
    __slots__ = ("_cache", "_failure_ttl", "_inflight", "_reviewer", "_success_ttl")

    def __init__(self, reviewer: TokenReviewer, *, success_ttl: float, failure_ttl: float) -> None:
        self._reviewer = reviewer
        self._success_ttl = success_ttl
        self._failure_ttl = failure_ttl
        self._cache: ExpiringLRU[Review] = ExpiringLRU(CACHE_SIZE)
        self._inflight: dict[str, asyncio.Task[Review]] = {}

    def cached(self, token: str, audiences: Sequence[str]) -> Review | None:
        """The review of this token if it is cached (not expired), without asking."""
        return self._cache.get(_key(token, audiences))

    async def review(self, token: str, audiences: Sequence[str]) -> Review:
        key = _key(token, audiences)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        lookup = self._inflight.get(key)
        if lookup is None:
            # A task of its own: the request that started the review may go away; the others still wait.
            lookup = asyncio.create_task(self._lookup(key, token, audiences))
            self._inflight[key] = lookup
            lookup.add_done_callback(lambda done: self._finished(key, done))
        return await asyncio.shield(lookup)

    async def _lookup(self, key: str, token: str, audiences: Sequence[str]) -> Review:
        review = await self._reviewer.review(token, audiences)  # errors are not cached
        ttl = self._success_ttl if review.result is not None else self._failure_ttl
        self._cache.add(key, review, ttl)
        return review

    def _finished(self, key: str, done: asyncio.Task[Review]) -> None:
        self._inflight.pop(key, None)
        if not done.cancelled():
            done.exception()  # retrieved here, so an error nobody waited for is not logged as lost


class BearerTokenAuthenticator:
    """`Authorization: Bearer <token>`; a token the cluster does not accept is a 401."""

    __slots__ = ("_audiences", "_reviewer")

    def __init__(self, reviewer: TokenReviewer | CachedTokenReviewer, audiences: Sequence[str] = ()) -> None:
        self._reviewer = reviewer
        self._audiences = tuple(audiences)

    async def authenticate(self, request: web.Request) -> AuthResult | None:
        token = bearer_token(request.headers.get("Authorization", ""))
        if token is None:
            return None
        try:
            review = await self._reviewer.review(token, self._audiences)
        except TokenReviewError as err:
            logger.warning("unable to authenticate a bearer token: %s", err)
            raise unauthorized() from err
        return _reviewed(review)

    def authenticate_now(self, request: web.Request) -> NowResult:
        """No token, or a token whose review is cached; WAIT when the cluster must be asked."""
        token = bearer_token(request.headers.get("Authorization", ""))
        if token is None:
            return None
        if not isinstance(self._reviewer, CachedTokenReviewer):
            return WAIT
        review = self._reviewer.cached(token, self._audiences)
        return WAIT if review is None else _reviewed(review)


def _reviewed(review: Review) -> AuthResult:
    if review.result is None:
        raise unauthorized()
    return review.result


def bearer_token(header: str) -> str | None:
    """kube's bearertoken parsing: `Bearer <token>`, scheme case-insensitive; an empty token is no token."""
    parts = header.strip().split(" ", 2)
    if len(parts) < 2 or parts[0].lower() != "bearer":
        return None
    return parts[1] or None


def _key(token: str, audiences: Sequence[str]) -> str:
    h = hashlib.sha256()
    for audience in audiences:
        h.update(audience.encode())
        h.update(b"\0")
    h.update(b"\1")
    h.update(token.encode())
    return h.hexdigest()
