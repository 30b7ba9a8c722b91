"""What a request is about (verb, group, version, namespace, resource, name), from its method, path and query.

A port of k8s.io/apiserver pkg/endpoints/request/requestinfo.go (RequestInfoFactory with API prefixes
"api" and "apis", groupless prefix "api"). Authorization, audit, metrics and dispatch all read this one
value, so they agree on what a request is; the rules below mirror kube's to the letter because RBAC
rules and SubjectAccessReviews are written against kube's verbs and names.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass

from apis.meta.fields import parse_field_selector

API_PREFIXES = frozenset({"api", "apis"})
GROUPLESS_API_PREFIXES = frozenset({"api"})

# Path segments that name an action rather than a resource (the deprecated /watch/ and /proxy/ forms).
_SPECIAL_VERBS = frozenset({"proxy", "watch"})
_SPECIAL_VERBS_NO_SUBRESOURCES = frozenset({"proxy"})
# /api/v1/namespaces/{name}/status is the namespace's subresource, not a resource inside the namespace.
_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})
# Verbs whose requests carry selectors that authorizers may see (AuthorizeWithSelectors, on by default).
_VERBS_WITH_SELECTORS = frozenset({"list", "watch", "deletecollection"})

_METHOD_VERBS = {
    "POST": "create",
    "GET": "get",
    "HEAD": "get",
    "PUT": "update",
    "PATCH": "patch",
    "DELETE": "delete",
}

# metav1.ListOptions fields decoded with strconv.ParseInt: a bad value makes kube drop the whole decode.
_INT64_LIST_OPTIONS = ("timeoutSeconds", "limit")
_INT64 = re.compile(r"[+-]?[0-9]{1,19}")  # bounded: int() refuses over 4300 digits
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


class RequestInfoError(ValueError):
    """The path looks like a resource request but cannot be one (kube answers 500 for these)."""


@dataclass(frozen=True, slots=True)
class RequestInfo:
    is_resource_request: bool
    path: str
    # kube verb for resource requests (get, list, watch, create, update, patch, delete,
    # deletecollection, proxy); the lower-case HTTP method for non-resource requests.
    verb: str
    api_prefix: str = ""
    api_group: str = ""
    api_version: str = ""
    namespace: str = ""
    resource: str = ""
    subresource: str = ""
    # From the path, or for list/watch from a `metadata.name=<x>` field selector (as kube does since
    # 1.29, so RBAC can grant a list of one named object).
    name: str = ""
    # The path segments starting at the resource: (resource, name, subresource, ...).
    parts: tuple[str, ...] = ()
    # Raw selectors of list/watch/deletecollection, for authorizers that check them.
    field_selector: str = ""
    label_selector: str = ""

    @property
    def path_name(self) -> str:
        """The object name written in the URL; unlike `name`, never taken from a field selector.

        Dispatch must tell a collection from an object by the path, as kube's router does: a list with
        `fieldSelector=metadata.name=x` has `name == "x"` but is still a collection request.
        """
        return self.parts[1] if self.is_resource_request and len(self.parts) >= 2 else ""


def resolve(method: str, path: str, query: Mapping[str, str]) -> RequestInfo:
    """Classify a request like kube's `RequestInfoFactory.NewRequestInfo`.

    `path` is the decoded URL path; `query` maps each parameter to its first value (an aiohttp
    `request.query` works). Raises RequestInfoError for a bare special verb such as `/api/v1/watch`.
    """
    non_resource = RequestInfo(is_resource_request=False, path=path, verb=method.lower())
    current = _split_path(path)
    if len(current) < 3 or current[0] not in API_PREFIXES:
        return non_resource
    api_prefix, current = current[0], current[1:]
    api_group = ""
    if api_prefix not in GROUPLESS_API_PREFIXES:
        # One part (the prefix) is consumed already, so this asks "were there four parts?".
        if len(current) < 3:
            return non_resource
        api_group, current = current[0], current[1:]
    api_version, current = current[0], current[1:]

    verb_via_path = current[0] in _SPECIAL_VERBS
    if verb_via_path:
        if len(current) < 2:
            raise RequestInfoError(f"unable to determine kind and namespace from url, {path}")
        verb, current = current[0], current[1:]
    else:
        verb = _METHOD_VERBS.get(method.upper(), "")

    namespace = ""
    if current[0] == "namespaces" and len(current) > 1:
        namespace = current[1]
        # A step after the namespace name that is not a namespace subresource is a resource of its own.
        if len(current) > 2 and current[2] not in _NAMESPACE_SUBRESOURCES:
            current = current[2:]

    parts = tuple(current)
    resource = parts[0]
    name = parts[1] if len(parts) >= 2 else ""
    subresource = parts[2] if len(parts) >= 3 and verb not in _SPECIAL_VERBS_NO_SUBRESOURCES else ""

    if not name and verb == "get":
        verb, name = _list_verb_and_name(query)
    if not name and verb == "delete":
        verb = "deletecollection"

    field_selector = label_selector = ""
    if not verb_via_path and verb in _VERBS_WITH_SELECTORS:
        field_selector = query.get("fieldSelector", "") or ""
        label_selector = query.get("labelSelector", "") or ""

    return RequestInfo(
        is_resource_request=True,
        path=path,
        verb=verb,
        api_prefix=api_prefix,
        api_group=api_group,
        api_version=api_version,
        namespace=namespace,
        resource=resource,
        subresource=subresource,
        name=name,
        parts=parts,
        field_selector=field_selector,
        label_selector=label_selector,
    )


class ResolvedPaths:
    """``resolve`` with a bounded memory of the answers that do not depend on the query string.

    Most requests name an object (``.../toppings/mozzarella``) or a non-resource path, and for those
    kube's rules never read the query: the answer is a function of method and path alone, and
    ``RequestInfo`` is immutable, so it can be shared. Lists, watches and delete-collections depend on
    the query (watch=, selectors) and are resolved every time. Resolving costs ~8 us, mostly building
    the frozen dataclass; a hit is a dict lookup. Paths come from clients, so the memory is bounded:
    when full, the oldest answer is dropped.
    """

    __slots__ = ("_answers", "_max_entries")

    def __init__(self, max_entries: int = 1024) -> None:
        self._answers: dict[tuple[str, str], RequestInfo] = {}
        self._max_entries = max_entries

    def resolve(self, method: str, path: str, query: Mapping[str, str]) -> RequestInfo:
        key = (method, path)
        info = self._answers.get(key)
        if info is not None:
            return info
        info = resolve(method, path, query)
        if not info.is_resource_request or info.path_name:
            answers = self._answers
            if len(answers) >= self._max_entries:
                del answers[next(iter(answers))]
            answers[key] = info
        return info


def watch_requested(query: Mapping[str, str]) -> bool:
    """`watch` as ListOptions decodes it: any value but "0"/"false" (any case) is true."""
    if "watch" not in query:
        return False
    return (query.get("watch") or "").lower() not in ("0", "false")


def _list_verb_and_name(query: Mapping[str, str]) -> tuple[str, str]:
    """A GET without a name is a list or watch; a `metadata.name=<x>` field selector names the object.

    Kube decodes the whole ListOptions first; if any field fails to decode it keeps only `watch` and
    sets no name. Label selectors are not validated here (kube would also drop the name for an invalid
    one; such a request fails with 400 in the list handler anyway).
    """
    verb = "watch" if watch_requested(query) else "list"
    for key in _INT64_LIST_OPTIONS:
        if key in query and not _is_int64(query.get(key) or ""):
            return verb, ""
    selector = query.get("fieldSelector")
    if not selector:
        return verb, ""
    try:
        name = exact_match(selector, "metadata.name")
    except ValueError:
        return verb, ""
    if name is None or not _valid_path_segment_name(name):
        return verb, ""
    return verb, name


def exact_match(selector: str, field: str) -> str | None:
    """The value a field selector requires `field` to equal, like kube's `RequiresExactMatch`.

    Parsed with kube's rules by `apis.meta.fields`, the parser the list handler uses too, so the name
    authorization sees is the one the list is filtered by. Raises ValueError (a SelectorError) for an
    unparseable selector.
    """
    return parse_field_selector(selector).requires_exact_match(field)


def _valid_path_segment_name(name: str) -> bool:
    """kube's path.IsValidPathSegmentName: a name that cannot break out of its URL segment."""
    return name not in (".", "..") and "/" not in name and "%" not in name


def _is_int64(value: str) -> bool:
    return bool(_INT64.fullmatch(value)) and _INT64_MIN <= int(value) <= _INT64_MAX


def _split_path(path: str) -> list[str]:
    """Segments interned: a list's or watch's RequestInfo is resolved per request and lives as long as
    it does, and a thousand watches of one resource then share one copy of each name."""
    trimmed = path.strip("/")
    return [sys.intern(segment) for segment in trimmed.split("/")] if trimmed else []
