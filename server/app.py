"""Config → aiohttp Application: the handler chain, the routes, and what runs at start and stop.

Routes are few on purpose: health, version, metrics, discovery, OpenAPI, and one catch-all for
resources that the dispatcher resolves from RequestInfo (the same parse authorization uses).
"""

from __future__ import annotations

from aiohttp import web

from registry.generic.custom_subresources import long_running_subresources
from server.admission.sinks import admission_warning_headers
from server.config import Config
from server.endpoints import published
from server.endpoints.deprecation import deprecation_warnings
from server.endpoints.dispatch import API_REGISTRY, serve_resource
from server.endpoints.registry import build_registry
from server.endpoints.scope import PATCH_TYPES
from server.endpoints.watch import OPEN_STREAMS, OpenStreams
from server.filters import build_chain
from server.filters.audit import audit_response_prepare
from server.filters.cache_control import cache_control
from server.health import HealthCheck, HealthChecks
from server.longrunning import with_subresources
from server.metrics import Metrics
from server.request_state import MIN_REQUEST_TIMEOUT
from server.version import version_handler, version_info


async def _end_watches(app: web.Application) -> None:
    app[OPEN_STREAMS].close()


async def _prepare_response(request: web.Request, response: web.StreamResponse) -> None:
    """What every response gets just before its headers go out, streamed ones (watches) included.

    One signal receiver calling plain functions in order, rather than one coroutine per step per
    response.
    """
    # The Audit-ID header, and the ResponseStarted event of a watch.
    await audit_response_prepare(request, response)
    # kube's 299 Warning on every response of a deprecated version (server/endpoints/deprecation.py).
    deprecation_warnings(request, response)
    # Warnings from admission webhooks, on successes and denials alike.
    admission_warning_headers(request, response)
    # kube's WithCacheControl: `no-cache, private` unless the handler chose (server/filters/cache_control.py).
    cache_control(request, response)


def build_app(config: Config) -> web.Application:
    metrics = Metrics()
    security = config.security
    # Streaming subresources the groups declare are long-running like watches (no 60 s timeout).
    long_running = with_subresources(
        name for i in config.installations for name in long_running_subresources(i.custom_subresources)
    )
    if config.audit is not None:
        config.audit.long_running = long_running
    app = web.Application(
        middlewares=build_chain(
            authenticator=security.authentication.authenticator,
            authorizer=security.authorizer,
            metrics=metrics,
            audit=config.audit,
            request_timeout=config.options.generic.request_timeout,
            max_requests_inflight=config.options.generic.max_requests_inflight,
            max_mutating_requests_inflight=config.options.generic.max_mutating_requests_inflight,
            api_audiences=security.authentication.api_audiences,
            credential_headers=security.authentication.credential_headers,
            long_running=long_running,
        ),
        client_max_size=4 * 1024 * 1024,
    )
    app[MIN_REQUEST_TIMEOUT] = float(config.options.generic.min_request_timeout)
    app.on_response_prepare.append(_prepare_response)
    # Open watches end cleanly as soon as shutdown begins, instead of being cut after a timeout.
    app[OPEN_STREAMS] = OpenStreams()
    app.on_shutdown.append(_end_watches)
    admission = config.admission
    metrics.registry.register(admission.metrics.registry)
    registry = build_registry(
        config.installations,
        mutating=admission.mutating,
        validating=admission.validating,
        enabled=admission.group_plugins_enabled,
        metrics=admission.metrics,
    )
    app[API_REGISTRY] = registry
    info = version_info()
    app[published.DOCUMENTS] = published.build_documents(
        registry.groups,
        patch_types=PATCH_TYPES,
        version_info=info.to_dict(),
        custom=registry.custom_subresources,
    )
    health = HealthChecks(
        readiness=[HealthCheck("storage", config.storage.check), *admission.readiness_checks()]
    )
    app.add_routes(health.routes())
    app.add_routes(
        [
            web.get("/version", version_handler(info)),
            web.get("/metrics", metrics.handle),
            # First of the /apis routes: aiohttp tries the routes under one prefix in registration
            # order, and this one takes nearly every request (the others match fewer segments, so
            # the order changes no answer). [\s\S] and not ".": a name with an encoded newline must
            # still reach the dispatcher (404 Status).
            web.route("*", r"/apis/{group}/{version}/{tail:[\s\S]+}", serve_resource),
            web.get("/apis", published.apis),
            web.get("/apis/", published.apis),
            web.get("/apis/{group}", published.api_group),
            web.get("/apis/{group}/{version}", published.api_resource_list),
            web.get("/openapi/v2", published.openapi_v2_document),
            web.get("/openapi/v3", published.openapi_v3_paths),
            web.get("/openapi/v3/apis/{group}/{version}", published.openapi_v3_document),
        ]
    )
    return app
