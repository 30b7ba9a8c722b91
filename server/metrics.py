"""Request metrics with kube's names, labels and buckets (k8s.io/apiserver pkg/endpoints/metrics/metrics.go).

Dashboards and SLO alerts written for kube-apiserver work unchanged: `apiserver_request_total` and
`apiserver_request_duration_seconds` with labels verb, dry_run, group, version, resource,
subresource, scope, component (and code on the counter). The verb label follows kube's reporting
rules, which differ from RequestInfo's verbs: it is derived from the HTTP method (POST, PUT, DELETE
stay as such, so deletecollection reports DELETE), GET on a collection is LIST, `watch=true` is
WATCH, an apply patch is APPLY. Each `Metrics` owns its registry, so two servers in one process
(tests) never share counters. Under `--workers N` the values are kept in files shared by the workers
and /metrics merges them all (server/metrics_multiprocess.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4, generate_latest
from prometheus_client.metrics_core import Metric

from server import metrics_multiprocess
from server.request_info import RequestInfo, watch_requested

APISERVER_COMPONENT = "apiserver"
OTHER_VERB = "other"
APPLY_PATCH = "application/apply-patch+yaml"

_VALID_VERBS = frozenset(
    {
        "APPLY",
        "CONNECT",
        "CREATE",
        "DELETE",
        "DELETECOLLECTION",
        "GET",
        "LIST",
        "PATCH",
        "POST",
        "PROXY",
        "PUT",
        "UPDATE",
        "WATCH",
        "WATCHLIST",
    }
)
_CONNECT_SUBRESOURCES = frozenset({"log", "exec", "portforward", "attach", "proxy"})
# Tuned by kube for its API latency SLOs; kept so the same alerts apply.
DURATION_BUCKETS = (
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60,
)  # fmt: skip
# Requests whose label derivation is remembered (Metrics.observe_request) before starting over.
LABEL_MEMORY = 4096
_LABELS = ("verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component")


@dataclass(slots=True)
class Observation:
    """What the metrics filter saw of one finished request (not frozen: made on every request, and a
    frozen dataclass's __init__ costs a setattr call per field)."""

    info: RequestInfo
    method: str
    query: Mapping[str, str]
    dry_run: tuple[str, ...]
    content_type: str
    code: int
    seconds: float
    # The route template that matched a non-resource request (bounds the label's values), else "".
    route: str = ""
    # False when no route matched (a 404 from the router): labels are then left empty so that
    # random paths cannot create unbounded series.
    routed: bool = True


class Metrics:
    __slots__ = (
        "_children",
        "_content_types",
        "_duration",
        "_exposed",
        "_labels",
        "_registry",
        "_requests",
        "_served",
    )

    def __init__(self) -> None:
        self._registry = CollectorRegistry()
        # What /metrics shows: this registry, or under --workers N every worker's values merged.
        self._exposed = metrics_multiprocess.merged_registry() if metrics_multiprocess.enabled() else None
        self._requests = Counter(
            "apiserver_request",
            "Counter of apiserver requests broken out for each verb, dry run value, group, version, "
            "resource, scope, component, and HTTP response code.",
            (*_LABELS, "code"),
            registry=self._registry,
        )
        self._duration = Histogram(
            "apiserver_request_duration_seconds",
            "Response latency distribution in seconds for each verb, dry run value, group, version, "
            "resource, subresource, scope and component.",
            _LABELS,
            buckets=DURATION_BUCKETS,
            registry=self._registry,
        )
        # Not a kube metric: which representation each answer was sent in (JSON, YAML, a Table,
        # kube protobuf with or without as=PartialObjectMetadata...), so an operator can see which
        # clients (the controller manager's metadata informers ask for protobuf) get what.
        self._served = Counter(
            "apiserver_responses_by_content_type",
            "Counter of responses sent, broken out for each verb, group, version, resource and the "
            "response's Content-Type (without charset). Not a kube-apiserver metric.",
            ("verb", "group", "version", "resource", "content_type"),
            registry=self._registry,
        )
        self._content_types: dict[tuple[tuple[str, ...], str], Counter] = {}
        # (labels, code) → the counter and histogram series. prometheus_client's labels() validates
        # and locks on every call (most of observe's ~20 us); a series, once made, never changes.
        # As many entries as the metrics have series, which kube's label rules already bound.
        self._children: dict[tuple[tuple[str, ...], int], tuple[Counter, Histogram]] = {}
        # What a request's labels are derived from (see `observe_request`) → the labels: requests
        # repeat, and deriving them is most of the filter's cost. Bounded: keys come from clients.
        self._labels: dict[tuple[object, ...], tuple[str, ...]] = {}

    @property
    def registry(self) -> CollectorRegistry:
        """For adding more collectors (e.g. process metrics) to what /metrics exposes."""
        return self._registry

    def observe(self, seen: Observation) -> None:
        self._count(request_labels(seen), seen.code, seen.seconds)

    def observe_request(
        self, key: tuple[object, ...], seen: Callable[[], Observation], code: int, seconds: float
    ) -> None:
        """Like `observe`, for a request whose labels are a function of `key` (method, path and the
        query and headers they read): `seen` is only called the first time a key is met."""
        labels = self._labels.get(key)
        if labels is None:
            if len(self._labels) >= LABEL_MEMORY:
                self._labels.clear()
            labels = self._labels[key] = request_labels(seen())
        self._count(labels, code, seconds)

    def observe_content_type(
        self, key: tuple[object, ...], seen: Callable[[], Observation], content_type: str
    ) -> None:
        """Counts a response by its Content-Type; `key` and `seen` as for `observe_request`, which
        has already remembered the labels. The values are the server's own (bounded) media types."""
        labels = self._labels.get(key)
        if labels is None:
            labels = request_labels(seen())
        series_key = (labels, content_type)
        series = self._content_types.get(series_key)
        if series is None:
            verb, _, group, version, resource = labels[:5]
            media = content_type.split(";charset=", 1)[0].split("; charset=", 1)[0]
            series = self._served.labels(verb, group, version, resource, media)
            self._content_types[series_key] = series
        series.inc()

    def _count(self, labels: tuple[str, ...], code: int, seconds: float) -> None:
        key = (labels, code)
        children = self._children.get(key)
        if children is None:
            children = (self._requests.labels(*labels, str(code)), self._duration.labels(*labels))
            self._children[key] = children
        counter, histogram = children
        counter.inc()
        histogram.observe(seconds)

    def render(self) -> tuple[bytes, str]:
        """The Prometheus text exposition and its content type, as kube serves /metrics."""
        exposed = self._registry if self._exposed is None else self._exposed
        return generate_latest(_WithoutCreated(exposed)), CONTENT_TYPE_PLAIN_0_0_4

    async def handle(self, request: web.Request) -> web.Response:
        """GET /metrics."""
        if self._exposed is None:
            body, content_type = self.render()
        else:
            body, content_type = await asyncio.to_thread(self.render)  # reads the workers' files
        response = web.Response(body=body)
        response.headers["Content-Type"] = content_type
        return response


def request_labels(seen: Observation) -> tuple[str, ...]:
    """(verb, dry_run, group, version, resource, subresource, scope, component) as kube reports them."""
    info = seen.info
    dry_run = clean_dry_run(seen.dry_run)
    if not seen.routed:
        verb = _clean_verb(seen.method.upper(), seen, watch_via_path=False)
        return verb, dry_run, "", "", "", "", "", ""
    scope = clean_scope(info, seen.method)
    verb = canonical_verb(seen.method.upper(), scope)
    # The deprecated /watch/ path form: kube's installer passes WATCH in explicitly for those routes.
    watch_via_path = info.is_resource_request and info.verb == "watch" and not watch_requested(seen.query)
    verb = _clean_verb(verb, seen, watch_via_path=watch_via_path)
    if info.is_resource_request:
        return (
            verb,
            dry_run,
            info.api_group,
            info.api_version,
            info.resource,
            info.subresource,
            scope,
            APISERVER_COMPONENT,
        )
    # Non-resource handlers (health) are instrumented by kube with the path as subresource.
    return verb, dry_run, "", "", "", seen.route, scope, ""


def clean_scope(info: RequestInfo, method: str) -> str:
    """kube's scope label: resource (named or create), namespace, cluster, or "" for non-resource.

    Uses the name in the path, as kube's installer fixes the scope per route: a list filtered by
    `metadata.name` is still a namespace- or cluster-scoped LIST.
    """
    if info.path_name or (info.is_resource_request and method.upper() == "POST"):
        return "resource"
    if info.namespace:
        return "namespace"
    if info.is_resource_request:
        return "cluster"
    return ""


def canonical_verb(verb: str, scope: str) -> str:
    """GET and HEAD on a collection are LIST."""
    if verb in ("GET", "HEAD"):
        return "LIST" if scope not in ("resource", "") else "GET"
    return verb


def clean_dry_run(values: Iterable[str]) -> str:
    """The dryRun values sorted and de-duplicated; "invalid" if any is not "All"."""
    unique = sorted(set(values))
    if any(v != "All" for v in unique):
        return "invalid"
    return ",".join(unique)


def _clean_verb(verb: str, seen: Observation, *, watch_via_path: bool) -> str:
    if watch_via_path:
        return "WATCH"
    reported = verb
    if seen.method.upper() == "GET" and watch_requested(seen.query):
        reported = "WATCH"
    if verb == "WATCHLIST":
        reported = "WATCH"
    if verb == "PATCH" and seen.content_type == APPLY_PATCH:
        reported = "APPLY"
    info = seen.info
    if info.is_resource_request and info.subresource in _CONNECT_SUBRESOURCES:
        reported = "CONNECT"
    return reported if reported in _VALID_VERBS else OTHER_VERB


class _WithoutCreated:
    """A view of a registry without the `_created` samples prometheus_client adds and kube lacks.

    prometheus_client can only switch them off process-wide; filtering here keeps that global alone.
    """

    __slots__ = ("_registry",)

    def __init__(self, registry: CollectorRegistry) -> None:
        self._registry = registry

    def collect(self) -> Iterable[Metric]:
        for family in self._registry.collect():
            family.samples = [s for s in family.samples if not s.name.endswith("_created")]
            yield family
