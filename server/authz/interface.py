"""The authorizer contract (kube's authorizer.Authorizer and Attributes) and the union of authorizers.

An authorizer returns a `Decision`: ALLOW, DENY or NO_OPINION with a reason. Evaluation failures
(e.g. a SubjectAccessReview webhook that cannot be reached) are reported in `Decision.error` rather
than raised, because kube's union keeps asking later authorizers after an error and the filter only
turns the error into a 500 when nobody allowed the request.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from apis.meta.user import UserInfo
from server.request_info import RequestInfo


class Verdict(enum.Enum):
    ALLOW = "Allow"
    DENY = "Deny"
    NO_OPINION = "NoOpinion"


@dataclass(frozen=True, slots=True)
class Decision:
    verdict: Verdict
    reason: str = ""
    error: str = ""

    @property
    def allowed(self) -> bool:
        return self.verdict is Verdict.ALLOW


ALLOW = Decision(Verdict.ALLOW)
NO_OPINION = Decision(Verdict.NO_OPINION)


def deny(reason: str = "") -> Decision:
    return Decision(Verdict.DENY, reason)


@dataclass(frozen=True, slots=True)
class AuthzAttributes:
    """kube's authorizer.Attributes: the (possibly impersonated) user and what the request does."""

    user: UserInfo
    request: RequestInfo

    @property
    def verb(self) -> str:
        return self.request.verb

    @property
    def is_resource_request(self) -> bool:
        return self.request.is_resource_request

    @property
    def path(self) -> str:
        return self.request.path

    @property
    def namespace(self) -> str:
        return self.request.namespace

    @property
    def api_group(self) -> str:
        return self.request.api_group

    @property
    def api_version(self) -> str:
        return self.request.api_version

    @property
    def resource(self) -> str:
        return self.request.resource

    @property
    def subresource(self) -> str:
        return self.request.subresource

    @property
    def name(self) -> str:
        return self.request.name


class Authorizer(Protocol):
    async def authorize(self, attrs: AuthzAttributes) -> Decision: ...


class Union:
    """Asks authorizers in order; the first ALLOW or DENY wins (kube's union.New).

    When all have no opinion, their reasons are joined with newlines and the first error is kept.
    """

    __slots__ = ("_authorizers",)

    def __init__(self, authorizers: Iterable[Authorizer]) -> None:
        self._authorizers: tuple[Authorizer, ...] = tuple(authorizers)

    async def authorize(self, attrs: AuthzAttributes) -> Decision:
        reasons: list[str] = []
        errors: list[str] = []
        for authorizer in self._authorizers:
            decision = await authorizer.authorize(attrs)
            if decision.verdict is not Verdict.NO_OPINION:
                return decision
            if decision.reason:
                reasons.append(decision.reason)
            if decision.error:
                errors.append(decision.error)
        return Decision(Verdict.NO_OPINION, "\n".join(reasons), _aggregate(errors))


def _aggregate(errors: list[str]) -> str:
    """Like utilerrors.NewAggregate's message: one error as is, several as a bracketed list."""
    if len(errors) <= 1:
        return errors[0] if errors else ""
    return "[" + ", ".join(errors) + "]"
