"""The handler chain: every request passes these filters, outermost first, before reaching a handler.

The order follows kube's DefaultBuildHandlerChain (k8s.io/apiserver pkg/server/config.go), read
outermost first: audit init → panic recovery → request info → metrics → timeout → authentication →
audit → impersonation → max-in-flight → authorization. Each step is a middleware of its own module;
this list is the one place that orders them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from aiohttp.typedefs import Middleware

from server.authn.interface import Authenticator
from server.authn.requestheader import STANDARD_NAMES, RequestHeaderNames
from server.authz.interface import Authorizer
from server.filters.audit import audit_init
from server.filters.authentication import authentication, user_of
from server.filters.authorization import authorization
from server.filters.impersonation import impersonation
from server.filters.max_in_flight import max_in_flight
from server.filters.metrics import metrics as observe_metrics
from server.filters.recovery import recovery
from server.filters.request_info import request_info, request_info_of
from server.filters.timeout import timeout
from server.longrunning import DEFAULT_LONG_RUNNING, LongRunningCheck
from server.metrics import Metrics

if TYPE_CHECKING:
    # Only a type here: server.audit.pipeline itself imports the audit filter from this package.
    from server.audit.pipeline import AuditPipeline

__all__ = ["build_chain", "request_info_of", "user_of"]


def build_chain(
    *,
    authenticator: Authenticator,
    authorizer: Authorizer,
    metrics: Metrics,
    audit: AuditPipeline | None = None,
    request_timeout: float = 60.0,
    max_requests_inflight: int = 400,
    max_mutating_requests_inflight: int = 200,
    api_audiences: Sequence[str] = (),
    credential_headers: Callable[[], Sequence[RequestHeaderNames]] = lambda: (STANDARD_NAMES,),
    long_running: LongRunningCheck = DEFAULT_LONG_RUNNING,
) -> list[Middleware]:
    """The middlewares for `web.Application(middlewares=...)`, outermost first.

    `audit` None still sends an Audit-ID on every response (kube does), but records nothing.
    `credential_headers`: the front-proxy header names stripped from authenticated requests.
    `long_running`: which requests the timeout and the in-flight limit leave alone (server/longrunning.py).
    """
    return [
        # Audit-ID on every response (an incoming one is honoured); outermost so errors carry it too.
        audit_init,
        # Turns StatusError into a Status response and anything unexpected into a 500 Status.
        recovery,
        # request["request_info"]: verb, group, version, namespace, resource, subresource, name.
        request_info,
        # Inside recovery and after request info: sees every final code, labelled like kube's
        # instrumented handlers (kube takes the received timestamp about here, too).
        observe_metrics(metrics),
        # kube's WithTimeoutForNonLongRunningRequests: 504 for slow non-watch requests.
        timeout(request_timeout, long_running=long_running),
        # kube's WithFailedAuthenticationAudit: a 401 is audited (as the anonymous caller it was).
        *([audit.failed_authentication_middleware()] if audit else []),
        # request["user"], or 401; credentials (Authorization, X-Remote-*) stripped from the request.
        authentication(authenticator, api_audiences=api_audiences, credential_headers=credential_headers),
        # kube's WithAudit, after authentication so events name the user (and see it before impersonation).
        *([audit.middleware()] if audit else []),
        # kube's WithImpersonation: Impersonate-* headers, each part authorized; request["user"] becomes
        #   the impersonated user, request["impersonated_by"] the caller.
        impersonation(authorizer),
        # kube's WithMaxInFlightLimit (429 + Retry-After); after impersonation so it sees the effective user.
        max_in_flight(
            max_requests_inflight,
            max_mutating_requests_inflight,
            registry=metrics.registry,
            long_running=long_running,
        ),
        # 403 unless the authorizer allows the request.
        authorization(authorizer),
    ]
