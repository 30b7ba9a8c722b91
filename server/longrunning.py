"""Which requests are long-running: exempt from max-in-flight and from the request timeout.

A port of kube's BasicLongRunningRequestCheck (k8s.io/apiserver pkg/server/filters/longrunning.go).
A watch may rightly stay open for half an hour, so counting it against the in-flight limit or cutting
it at --request-timeout would starve or break every informer. kube-apiserver's own set (verbs watch
and proxy; subresources attach, exec, proxy, log, portforward) is the default here, and the server
adds the names of the streaming subresources its groups declare (a long-running Connecter, e.g.
pizzas/oven: `with_subresources`), as an aggregated server's config passes its own LongRunningFunc.
The generic server's narrower default (watch only) is available as GENERIC_LONG_RUNNING.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from server.request_info import RequestInfo

LongRunningCheck = Callable[[RequestInfo], bool]

KUBE_APISERVER_LONG_RUNNING_VERBS = frozenset({"watch", "proxy"})
KUBE_APISERVER_LONG_RUNNING_SUBRESOURCES = frozenset({"attach", "exec", "proxy", "log", "portforward"})
# kube's profiler endpoints stream for as long as the profile runs.
_PPROF_PREFIX = "/debug/pprof/"


def basic_long_running_check(verbs: Iterable[str], subresources: Iterable[str] = ()) -> LongRunningCheck:
    """Long-running if the verb or (for resource requests) the subresource is listed, or pprof."""
    long_verbs = frozenset(verbs)
    long_subresources = frozenset(subresources)

    def is_long_running(info: RequestInfo) -> bool:
        if info.verb in long_verbs:
            return True
        if info.is_resource_request:
            return info.subresource in long_subresources
        return info.path.startswith(_PPROF_PREFIX)

    return is_long_running


GENERIC_LONG_RUNNING: LongRunningCheck = basic_long_running_check({"watch"})
DEFAULT_LONG_RUNNING: LongRunningCheck = basic_long_running_check(
    KUBE_APISERVER_LONG_RUNNING_VERBS, KUBE_APISERVER_LONG_RUNNING_SUBRESOURCES
)


def with_subresources(subresources: Iterable[str]) -> LongRunningCheck:
    """kube-apiserver's check, with `subresources` (the groups' streaming ones) long-running too."""
    extra = frozenset(subresources)
    if not extra:
        return DEFAULT_LONG_RUNNING
    return basic_long_running_check(
        KUBE_APISERVER_LONG_RUNNING_VERBS, KUBE_APISERVER_LONG_RUNNING_SUBRESOURCES | extra
    )
