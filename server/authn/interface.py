"""The authenticator contract and the combinators kube builds its authentication chain from.

An authenticator answers one of three things, as kube's `authenticator.Request` does with
(response, ok, err): a user (`AuthResult`), no opinion (`None`: no credential of its kind), or an
error (raise a 401 `StatusError`: a credential of its kind is present but invalid). Combinators
(`Union`, `AuthenticatedGroupAdder`, `AnonymousAuthenticator`) compose them the way
k8s.io/apiserver pkg/authentication/request/{union,anonymous} and group/authenticated_group_adder.go do.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from aiohttp import web

from apis.meta.errors import StatusError
from apis.meta.user import ANONYMOUS, UserInfo

ALL_AUTHENTICATED = "system:authenticated"
ALL_UNAUTHENTICATED = "system:unauthenticated"


@dataclass(frozen=True, slots=True)
class AuthResult:
    user: UserInfo
    # Audiences the credential was issued for (token authenticators); empty means "any".
    audiences: tuple[str, ...] = ()


class Authenticator(Protocol):
    async def authenticate(self, request: web.Request) -> AuthResult | None:
        """The user behind the request, None without a credential of this kind; raise 401 if invalid."""
        ...


class Pending(enum.Enum):
    WAIT = "wait"


# What `authenticate_now` answers when only `authenticate` can tell (a token review to ask).
WAIT = Pending.WAIT
NowResult = AuthResult | None | Literal[Pending.WAIT]


class ImmediateAuthenticator(Authenticator, Protocol):
    """An authenticator that can usually answer without waiting (a client certificate, headers, a
    cached review): `authenticate_now` answers as `authenticate` would, or WAIT.

    The filter then hands the request on without a coroutine of its own, which costs every request a
    frame (and a few more for the combinators) and keeps one alive for as long as a watch runs.
    """

    def authenticate_now(self, request: web.Request) -> NowResult: ...


def authenticator_now(authenticator: Authenticator) -> Callable[[web.Request], NowResult] | None:
    """`authenticator.authenticate_now` if it has one."""
    return getattr(authenticator, "authenticate_now", None)


class Union:
    """Tries authenticators in order; the first that recognises the request wins.

    With `fail_on_error=False` (kube's `union.New`) an authenticator's error does not stop the
    others: a client certificate from the front-proxy CA fails x509 but succeeds as request-header
    authentication. If nobody succeeds, the first error is raised. With `fail_on_error=True`
    (`union.NewFailOnError`) the first error is raised at once: kube puts anonymous behind such a
    union, so a bad credential is 401 rather than anonymous.
    """

    __slots__ = ("_authenticators", "_fail_on_error", "_now")

    def __init__(self, authenticators: Iterable[Authenticator], *, fail_on_error: bool = False) -> None:
        self._authenticators: tuple[Authenticator, ...] = tuple(authenticators)
        self._fail_on_error = fail_on_error
        # Looked up once, not per request: each member's authenticate_now, None where it has none.
        self._now = tuple(authenticator_now(a) for a in self._authenticators)

    async def authenticate(self, request: web.Request) -> AuthResult | None:
        first_error: StatusError | None = None
        for authenticator in self._authenticators:
            try:
                result = await authenticator.authenticate(request)
            except StatusError as err:
                if self._fail_on_error:
                    raise
                first_error = first_error or err
                continue
            if result is not None:
                return result
        if first_error is not None:
            raise first_error
        return None

    def authenticate_now(self, request: web.Request) -> NowResult:
        """`authenticate`'s answer if every authenticator asked before the deciding one answers now."""
        first_error: StatusError | None = None
        for now in self._now:
            if now is None:
                return WAIT
            try:
                result = now(request)
            except StatusError as err:
                if self._fail_on_error:
                    raise
                first_error = first_error or err
                continue
            if result is not None:
                return result
        if first_error is not None:
            raise first_error
        return None


class AuthenticatedGroupAdder:
    """Adds `system:authenticated` to every authenticated user except anonymous, as kube does.

    Users already in `system:authenticated` or `system:unauthenticated` are left alone.
    """

    __slots__ = ("_inner", "_inner_now", "_last")

    def __init__(self, inner: Authenticator) -> None:
        self._inner = inner
        self._inner_now = authenticator_now(inner)
        # The last (inner result, result with the group): an authenticator that hands out the same
        # result object for the same credential (x509) then costs no new user per request.
        self._last: tuple[AuthResult, AuthResult] | None = None

    async def authenticate(self, request: web.Request) -> AuthResult | None:
        return self._with_group(await self._inner.authenticate(request))

    def authenticate_now(self, request: web.Request) -> NowResult:
        now = self._inner_now
        result = now(request) if now is not None else WAIT
        return result if result is WAIT else self._with_group(result)

    def _with_group(self, result: AuthResult | None) -> AuthResult | None:
        if result is None:
            return None
        last = self._last
        if last is not None and last[0] is result:
            return last[1]
        user = result.user
        if user.name == ANONYMOUS.name:
            return result
        if ALL_AUTHENTICATED in user.groups or ALL_UNAUTHENTICATED in user.groups:
            return result
        with_group = UserInfo(user.name, user.uid, (*user.groups, ALL_AUTHENTICATED), user.extra)
        added = AuthResult(with_group, result.audiences)
        self._last = (result, added)
        return added


class AnonymousAuthenticator:
    """Everyone is `system:anonymous` (group `system:unauthenticated`), optionally only on some paths.

    `paths` mirrors kube's structured authentication config `anonymous.conditions` (feature
    AnonymousAuthConfigurableEndpoints): when given, anonymous applies only to those paths and their
    sub-paths (`/readyz` also covers `/readyz/ping`), so health probes work with anonymous auth off.
    """

    __slots__ = ("_paths",)

    def __init__(self, paths: Sequence[str] | None = None) -> None:
        self._paths = None if paths is None else tuple(p.rstrip("/") or "/" for p in paths)

    async def authenticate(self, request: web.Request) -> AuthResult | None:
        return self.authenticate_now(request)

    def authenticate_now(self, request: web.Request) -> AuthResult | None:
        if self._paths is not None and not _under_any(request.path, self._paths):
            return None
        return AuthResult(ANONYMOUS)


def _under_any(path: str, roots: Sequence[str]) -> bool:
    return any(path == root or path.startswith(root + "/") or root == "/" for root in roots)
