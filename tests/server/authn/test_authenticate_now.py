"""`authenticate_now` (the filter's frame-free path) answers exactly as `authenticate` does, or WAIT."""

from __future__ import annotations

import pytest
from aiohttp import web
from aiohttp.test_utils import make_mocked_request

from apis.meta.errors import StatusError, unauthorized
from apis.meta.user import UserInfo
from server.authn import build_authenticator
from server.authn.interface import WAIT, AuthResult, NowResult, Union


class Named:
    """`X-User: name` identifies; "bad" is an invalid credential of this kind. Answers at once."""

    def __init__(self, header: str = "X-User") -> None:
        self.header = header

    def authenticate_now(self, request: web.Request) -> NowResult:
        value = request.headers.get(self.header)
        if value is None:
            return None
        if value == "bad":
            raise unauthorized()
        return AuthResult(UserInfo(value))

    async def authenticate(self, request: web.Request) -> AuthResult | None:
        result = self.authenticate_now(request)
        assert result is not WAIT
        return result


class AskFirst(Named):
    """Like Named, but can only answer after asking someone (a token review not yet cached)."""

    def authenticate_now(self, request: web.Request) -> NowResult:
        return WAIT if self.header in request.headers else None

    async def authenticate(self, request: web.Request) -> AuthResult | None:
        return Named.authenticate_now(self, request)  # type: ignore[return-value]


def request(**headers: str) -> web.Request:
    return make_mocked_request("GET", "/apis", headers=headers)


async def outcome(authenticator: Named | Union, req: web.Request, *, now: bool) -> object:
    try:
        if now:
            result = authenticator.authenticate_now(req)
        else:
            result = await authenticator.authenticate(req)
    except StatusError as err:
        return err.code
    if result is WAIT or result is None:
        return result
    assert isinstance(result, AuthResult)
    return result.user.name, result.user.groups


CASES = [
    {},
    {"X-User": "alice"},
    {"X-User": "bad"},
    {"X-User": "bad", "X-Proxy": "bob"},
    {"X-Proxy": "bob"},
    {"X-Token": "carol"},
    {"X-User": "alice", "X-Token": "carol"},
]


@pytest.mark.parametrize("headers", CASES)
@pytest.mark.parametrize("anonymous", [True, False])
async def test_the_chain_answers_now_as_it_answers_later(headers: dict[str, str], anonymous: bool) -> None:
    chain = build_authenticator([Named("X-User"), Named("X-Proxy"), AskFirst("X-Token")], anonymous=anonymous)
    req = request(**headers)
    later = await outcome(chain, req, now=False)  # type: ignore[arg-type]
    now = await outcome(chain, req, now=True)  # type: ignore[arg-type]
    if now is WAIT:
        # Only when an authenticator that must ask is reached before anyone answered.
        assert "X-Token" in headers and "X-User" not in headers
    else:
        assert now == later


async def test_fail_on_error_raises_at_once_and_a_plain_union_tries_the_rest() -> None:
    req = request(**{"X-User": "bad", "X-Proxy": "bob"})
    assert await outcome(Union([Named("X-User"), Named("X-Proxy")]), req, now=True) == ("bob", ())
    strict = Union([Named("X-User"), Named("X-Proxy")], fail_on_error=True)
    assert await outcome(strict, req, now=True) == 401
