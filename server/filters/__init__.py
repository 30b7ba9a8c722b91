"""The handler chain: every request passes these filters, outermost first, before reaching a handler.

The order follows kube's DefaultBuildHandlerChain (k8s.io/apiserver pkg/server/config.go), read
outermost first: panic recovery → request info → (latency tracking, timeout) → authentication →
audit → impersonation → max-in-flight / priority & fairness → authorization. Later steps slot into
the list where their placeholder comment stands; each is a middleware of its own module.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from aiohttp.typedefs import Middleware

from server.authn.interface import Authenticator
from server.authn.requestheader import STANDARD_NAMES, RequestHeaderNames
from server.authz.interface import Authorizer
from server.filters.authentication import USER_KEY, authentication, user_of
from server.filters.authorization import authorization
from server.filters.impersonation import impersonation
from server.filters.metrics import metrics as observe_metrics
from server.filters.recovery import recovery
from server.filters.request_info import REQUEST_INFO_KEY, request_info, request_info_of
from server.metrics import Metrics

__all__ = ["REQUEST_INFO_KEY", "USER_KEY", "build_chain", "request_info_of", "user_of"]


def build_chain(
    *,
    authenticator: Authenticator,
    authorizer: Authorizer,
    metrics: Metrics,
    api_audiences: Sequence[str] = (),
    credential_headers: Callable[[], Sequence[RequestHeaderNames]] = lambda: (STANDARD_NAMES,),
) -> list[Middleware]:
    """The middlewares for `web.Application(middlewares=...)`, outermost first.

    `credential_headers`: the front-proxy header names stripped from authenticated requests.
    """
    return [
        # Turns StatusError into a Status response and anything unexpected into a 500 Status.
        recovery,
        # request["request_info"]: verb, group, version, namespace, resource, subresource, name.
        request_info,
        # Inside recovery and after request info: sees every final code, labelled like kube's
        # instrumented handlers (kube takes the received timestamp about here, too).
        observe_metrics(metrics),
        # timeout(...): kube's WithTimeoutForNonLongRunningRequests (504 for slow non-watch requests).
        # request["user"], or 401; credentials (Authorization, X-Remote-*) stripped from the request.
        authentication(authenticator, api_audiences=api_audiences, credential_headers=credential_headers),
        # audit(...): kube's WithAudit, after authentication so events name the user.
        # kube's WithImpersonation: Impersonate-* headers, each part authorized; request["user"] becomes
        #   the impersonated user, request["impersonated_by"] the caller.
        impersonation(authorizer),
        # max_in_flight(...): kube's WithMaxInFlightLimit / WithPriorityAndFairness (429); after
        #   impersonation in kube so flow control sees the effective user.
        # 403 unless the authorizer allows the request.
        authorization(authorizer),
    ]
