"""The authorizer contract (kube's authorizer.Authorizer and Attributes) and the union of authorizers.

An authorizer returns a `Decision`: ALLOW, DENY or NO_OPINION with a reason. Evaluation failures
(e.g. a SubjectAccessReview webhook that cannot be reached) are reported in `Decision.error` rather
than raised, because kube's union keeps asking later authorizers after an error and the filter only
turns the error into a 500 when nobody allowed the request.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
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


class ImmediateAuthorizer(Authorizer, Protocol):
    """An authorizer that can often decide without waiting (group membership, a path list, a cached
    review): `decide_now` gives that decision, or None when only `authorize` can (a review to ask).

    The filter then hands an allowed request on without a coroutine of its own, which costs every
    request a frame and keeps one alive for as long as a watch runs.
    """

    def decide_now(self, attrs: AuthzAttributes) -> Decision | None: ...


def decider_now(authorizer: Authorizer) -> Callable[[AuthzAttributes], Decision | None] | None:
    """`authorizer.decide_now` if it has one."""
    return getattr(authorizer, "decide_now", None)


class Union:
    """Asks authorizers in order; the first ALLOW or DENY wins (kube's union.New).

    When all have no opinion, their reasons are joined with newlines and the first error is kept.
    """

    __slots__ = ("_authorizers", "_decide_now")

    def __init__(self, authorizers: Iterable[Authorizer]) -> None:
        self._authorizers: tuple[Authorizer, ...] = tuple(authorizers)
        # Looked up once, not per request: each member's decide_now, None where it has none.
        self._decide_now = tuple(decider_now(a) for a in self._authorizers)

    async def authorize(self, attrs: AuthzAttributes) -> Decision:
        passed: list[Decision] = []
        for authorizer in self._authorizers:
            decision = await authorizer.authorize(attrs)
            if decision.verdict is not Verdict.NO_OPINION:
                return decision
            passed.append(decision)
        return _no_opinion(passed)

    def decide_now(self, attrs: AuthzAttributes) -> Decision | None:
        """The union's decision when every authorizer asked before the first opinion can decide now."""
        passed: list[Decision] = []
        for decide in self._decide_now:
            decision = decide(attrs) if decide is not None else None
            if decision is None:
                return None
            if decision.verdict is not Verdict.NO_OPINION:
                return decision
            passed.append(decision)
        return _no_opinion(passed)


def _no_opinion(passed: list[Decision]) -> Decision:
    """Nobody had an opinion: their reasons joined with newlines, their errors aggregated."""
    reasons = [d.reason for d in passed if d.reason]
    errors = [d.error for d in passed if d.error]
    return Decision(Verdict.NO_OPINION, "\n".join(reasons), _aggregate(errors))


def _aggregate(errors: list[str]) -> str:
    """Like utilerrors.NewAggregate's message: one error as is, several as a bracketed list."""
    if len(errors) <= 1:
        return errors[0] if errors else ""
    return "[" + ", ".join(errors) + "]"
