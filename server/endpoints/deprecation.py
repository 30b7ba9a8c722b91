"""kube's deprecation warning on every response of a deprecated version of a kind.

k8s.io/apiserver wraps each route of a deprecated version in a handler that records
`<group>/<version> <Kind> is deprecated in v1.3+, unavailable in v1.10+` before the handler runs, so
every answer of that route (objects, lists, watches, errors from the handler) carries it as a `299`
Warning. Here the routes are one dispatcher, so the warning is added when the response is prepared,
from the scope the request was dispatched to: call `deprecation_warnings` from the app's
`on_response_prepare`. Answers the filters give before dispatch (401, 403, 429) do not carry it, as in
kube, where those filters run before the route's handler.
"""

from __future__ import annotations

from aiohttp import web

from apis.runtime.kinds import KindInfo
from server.endpoints.dispatch import API_REGISTRY
from server.request_state import REQUEST_INFO
from server.responses import add_warning
from server.version import KUBE_MAJOR, KUBE_MINOR

# Statuses the filter chain answers before a request reaches a resource route.
_BEFORE_ROUTE = frozenset({401, 403, 429})


def version_warnings(group: str, kind: KindInfo, version: str) -> tuple[str, ...]:
    """The warnings every request to `version` of `kind` gets: deprecation.WarningMessage when the
    version's lifecycle says it is deprecated at the Kubernetes release this server follows."""
    lifecycle = kind.versions[version].lifecycle
    if lifecycle is None or not lifecycle.is_deprecated((int(KUBE_MAJOR), int(KUBE_MINOR))):
        return ()
    return (lifecycle.warning(f"{group}/{version}", kind.kind),)


def deprecation_warnings(request: web.Request, response: web.StreamResponse) -> None:
    """Part of the response hook (server/app.py): the dispatched scope's warnings go first, before
    the handler's own."""
    info = request.get(REQUEST_INFO)
    registry = request.app.get(API_REGISTRY)
    if info is None or registry is None or not info.is_resource_request:
        return
    if response.status in _BEFORE_ROUTE:
        return
    scope = registry.lookup(info.api_group, info.api_version, info.resource)
    if scope is None:
        return
    for text in reversed(scope.warnings):
        add_warning(response, text, first=True)
