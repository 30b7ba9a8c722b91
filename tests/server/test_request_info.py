"""RequestInfo resolution, ported from k8s.io/apiserver pkg/endpoints/request/requestinfo_test.go.

The Go table's `expectedAPIPrefix` column says "api" for the /apis/extensions rows but the Go test
never compares it; here the prefix is checked, with its real value "apis".
"""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

import pytest

from server.request_info import RequestInfo, RequestInfoError, ResolvedPaths, exact_match, resolve


def _resolve(method: str, url: str) -> RequestInfo:
    split = urlsplit(url)
    query: dict[str, str] = {}
    for key, value in parse_qsl(split.query, keep_blank_values=True):
        query.setdefault(key, value)  # first value wins, like Go's url.Values.Get and aiohttp's query
    return resolve(method, split.path, query)


# The core group (/api/v1): method, url, verb, namespace, resource, subresource, name, parts (space-separated)
CORE_CASES = [
    # resource paths
    ("GET", "/api/v1/namespaces", "list", "", "namespaces", "", "", "namespaces"),
    ("GET", "/api/v1/namespaces/other", "get", "other", "namespaces", "", "other", "namespaces other"),
    ("GET", "/api/v1/namespaces/other/pods", "list", "other", "pods", "", "", "pods"),
    ("GET", "/api/v1/namespaces/other/pods/foo", "get", "other", "pods", "", "foo", "pods foo"),
    ("HEAD", "/api/v1/namespaces/other/pods/foo", "get", "other", "pods", "", "foo", "pods foo"),
    ("GET", "/api/v1/pods", "list", "", "pods", "", "", "pods"),
    ("HEAD", "/api/v1/pods", "list", "", "pods", "", "", "pods"),
    # special verbs
    ("GET", "/api/v1/proxy/namespaces/other/pods/foo", "proxy", "other", "pods", "", "foo", "pods foo"),
    (
        "GET", "/api/v1/proxy/namespaces/other/pods/foo/subpath/not/a/subresource",
        "proxy", "other", "pods", "", "foo", "pods foo subpath not a subresource",
    ),
    ("GET", "/api/v1/watch/pods", "watch", "", "pods", "", "", "pods"),
    ("GET", "/api/v1/pods?watch=true", "watch", "", "pods", "", "", "pods"),
    ("GET", "/api/v1/pods?watch=false", "list", "", "pods", "", "", "pods"),
    ("GET", "/api/v1/watch/namespaces/other/pods", "watch", "other", "pods", "", "", "pods"),
    ("GET", "/api/v1/namespaces/other/pods?watch=1", "watch", "other", "pods", "", "", "pods"),
    ("GET", "/api/v1/namespaces/other/pods?watch=0", "list", "other", "pods", "", "", "pods"),
    # subresource identification
    (
        "GET", "/api/v1/namespaces/other/pods/foo/status",
        "get", "other", "pods", "status", "foo", "pods foo status",
    ),
    (
        "GET", "/api/v1/namespaces/other/pods/foo/proxy/subpath",
        "get", "other", "pods", "proxy", "foo", "pods foo proxy subpath",
    ),
    (
        "PUT", "/api/v1/namespaces/other/finalize",
        "update", "other", "namespaces", "finalize", "other", "namespaces other finalize",
    ),
    (
        "PUT", "/api/v1/namespaces/other/status",
        "update", "other", "namespaces", "status", "other", "namespaces other status",
    ),
    # verb identification
    ("PATCH", "/api/v1/namespaces/other/pods/foo", "patch", "other", "pods", "", "foo", "pods foo"),
    ("DELETE", "/api/v1/namespaces/other/pods/foo", "delete", "other", "pods", "", "foo", "pods foo"),
    ("POST", "/api/v1/namespaces/other/pods", "create", "other", "pods", "", "", "pods"),
    # deletecollection verb identification
    ("DELETE", "/api/v1/nodes", "deletecollection", "", "nodes", "", "", "nodes"),
    ("DELETE", "/api/v1/namespaces", "deletecollection", "", "namespaces", "", "", "namespaces"),
    ("DELETE", "/api/v1/namespaces/other/pods", "deletecollection", "other", "pods", "", "", "pods"),
]  # fmt: skip

R = "restaurant.programming-kubernetes.info"
# Named groups (/apis/<group>/<version>): method, url, verb, group, version, namespace, resource,
# subresource, name, parts.
GROUP_CASES = [
    # deletecollection, api group and api version identification
    (
        "DELETE", "/apis/extensions/v1/namespaces/other/pods",
        "deletecollection", "extensions", "v1", "other", "pods", "", "", "pods",
    ),
    (
        "POST", "/apis/extensions/v1/namespaces/other/pods",
        "create", "extensions", "v1", "other", "pods", "", "", "pods",
    ),
    (
        "POST", "/apis/extensions/v1beta3/namespaces/other/pods",
        "create", "extensions", "v1beta3", "other", "pods", "", "", "pods",
    ),
    # this project's group, both scopes
    (
        "GET", f"/apis/{R}/v1alpha1/namespaces/default/pizzas/margherita/status",
        "get", R, "v1alpha1", "default", "pizzas", "status", "margherita", "pizzas margherita status",
    ),
    (
        "DELETE", f"/apis/{R}/v1beta1/toppings",
        "deletecollection", R, "v1beta1", "", "toppings", "", "", "toppings",
    ),
    (
        "PUT", f"/apis/{R}/v1beta1/toppings/salami",
        "update", R, "v1beta1", "", "toppings", "", "salami", "toppings salami",
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    ("method", "url", "verb", "namespace", "resource", "subresource", "name", "parts"), CORE_CASES
)
def test_core_group_requests(
    method: str, url: str, verb: str, namespace: str, resource: str, subresource: str, name: str, parts: str
) -> None:
    info = _resolve(method, url)
    assert info.is_resource_request
    assert (info.verb, info.api_prefix, info.api_group, info.api_version) == (verb, "api", "", "v1")
    assert (info.namespace, info.resource, info.subresource, info.name) == (
        namespace,
        resource,
        subresource,
        name,
    )
    assert info.parts == tuple(parts.split())
    assert info.path == urlsplit(url).path


@pytest.mark.parametrize(
    ("method", "url", "verb", "group", "version", "namespace", "resource", "subresource", "name", "parts"),
    GROUP_CASES,
)
def test_named_group_requests(
    method: str,
    url: str,
    verb: str,
    group: str,
    version: str,
    namespace: str,
    resource: str,
    subresource: str,
    name: str,
    parts: str,
) -> None:
    info = _resolve(method, url)
    assert info.is_resource_request
    assert (info.verb, info.api_prefix, info.api_group, info.api_version) == (verb, "apis", group, version)
    assert (info.namespace, info.resource, info.subresource, info.name) == (
        namespace,
        resource,
        subresource,
        name,
    )
    assert info.parts == tuple(parts.split())


@pytest.mark.parametrize(
    "url",
    [
        "/",  # no resource path
        "/api/version/",  # just apiversion
        "/apis/group/version/",  # just prefix, group, version
        "/badprefix/version/resource",  # bad prefix
        "/apis/version/resource",  # missing api group
    ],
)
def test_paths_that_are_not_resource_requests(url: str) -> None:
    info = _resolve("GET", url)
    assert not info.is_resource_request
    assert info.verb == "get"
    assert (info.resource, info.name, info.parts) == ("", "", ())


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("/api/version/resource", True),  # simple groupless
        ("/apis/group/version/resource/name/subresource", True),  # simple group
        ("/api/version/resource/name/subresource", True),  # more steps
        ("/apis/batch/v1/job", True),  # group list
        ("/apis/batch/v1/job/foo", True),  # group get
        ("/apis/batch/v1/job/foo/scale", True),  # group subresource
        ("/not-api/version/resource", False),  # bad root
        ("/apis/extensions/v1beta1", False),  # group without enough steps
        ("/apis/extensions/v1beta1/", False),  # group without enough steps 2
        ("/api/version", False),  # not enough steps
        ("/api", False),  # one step
        ("/", False),  # zero step
        ("", False),  # empty
    ],
)
def test_is_resource_request(url: str, expected: bool) -> None:
    assert _resolve("GET", url).is_resource_request is expected


def test_non_resource_verb_is_the_lower_case_method() -> None:
    info = _resolve("POST", "/healthz/ping")
    assert (info.is_resource_request, info.verb, info.path) == (False, "post", "/healthz/ping")


def test_unknown_method_on_resource_has_empty_verb() -> None:
    assert _resolve("OPTIONS", "/api/v1/pods/foo").verb == ""


@pytest.mark.parametrize("url", ["/api/v1/watch", "/apis/g/v1/proxy", "/api/v1/watch/"])
def test_special_verb_without_resource_is_an_error(url: str) -> None:
    with pytest.raises(RequestInfoError, match="unable to determine kind and namespace from url"):
        _resolve("GET", url)


# From TestSelectorParsing (AuthorizeWithSelectors enabled, as it is by default since kube 1.32).
# method, url, name, verb, fieldSelector, labelSelector
B = "/apis/group/version"
SELECTOR_CASES = [
    ("GET", f"{B}/resource", "", "list", "", ""),  # no selector
    ("GET", f"{B}/resource?fieldSelector=metadata.name=name1", "name1", "list", "metadata.name=name1", ""),
    (
        "GET", f"{B}/resource?watch=true&fieldSelector=metadata.name=name1",
        "name1", "watch", "metadata.name=name1", "",
    ),
    ("GET", f"{B}/resource?fieldSelector=foo=bar&labelSelector=baz=qux", "", "list", "foo=bar", "baz=qux"),
    # invalid selector with metadata.name: no name, verb still decided
    ("GET", f"{B}/resource?fieldSelector=metadata.name=name1,foo", "", "list", "metadata.name=name1,foo", ""),
    (
        "GET", f"{B}/resource?fieldSelector=metadata.name=name1,foo&watch=true",
        "", "watch", "metadata.name=name1,foo", "",
    ),
    (
        "GET", f"{B}/resource?fieldSelector=metadata.name=name1,foo&watch=false",
        "", "list", "metadata.name=name1,foo", "",
    ),
    # selector on deletecollection is honored (but never names the object)
    (
        "DELETE", f"{B}/resource?fieldSelector=foo=bar&labelSelector=baz=qux",
        "", "deletecollection", "foo=bar", "baz=qux",
    ),
    # selector on repeated param matches parsed param
    (
        "GET",
        f"{B}/resource?fieldSelector=metadata.name=foo&fieldSelector=metadata.name=bar"
        "&labelSelector=foo=bar&labelSelector=foo=baz",
        "foo", "list", "metadata.name=foo", "foo=bar",
    ),
    # selector on other verb is ignored
    ("GET", f"{B}/resource/name?fieldSelector=foo=bar&labelSelector=foo=bar", "name", "get", "", ""),
    # selector on deprecated root type watch is not parsed
    (
        "GET", f"{B}/watch/resource?fieldSelector=metadata.name=foo&labelSelector=foo=bar",
        "", "watch", "", "",
    ),
    # selector on deprecated root item watch is not parsed
    (
        "GET", f"{B}/watch/resource/name?fieldSelector=metadata.name=foo&labelSelector=foo=bar",
        "name", "watch", "", "",
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    ("method", "url", "name", "verb", "field_selector", "label_selector"), SELECTOR_CASES
)
def test_selectors(
    method: str, url: str, name: str, verb: str, field_selector: str, label_selector: str
) -> None:
    info = _resolve(method, url)
    assert (info.name, info.verb) == (name, verb)
    assert (info.field_selector, info.label_selector) == (field_selector, label_selector)


@pytest.mark.parametrize(
    ("query", "name"),
    [
        ("fieldSelector=metadata.name==pepperoni", "pepperoni"),  # == is equality too
        ("fieldSelector=metadata.name!=pepperoni", ""),  # inequality names nothing
        ("fieldSelector=spec.cost=2,metadata.name=pepperoni", "pepperoni"),  # found among terms
        ("fieldSelector=metadata.name=a\\,b", "a,b"),  # escaped comma is part of the value
        ("fieldSelector=metadata.name=..", ""),  # not a valid path segment name
        ("fieldSelector=metadata.name=a%2Fb", ""),  # "/" (decoded) cannot be a name
        ("fieldSelector=metadata.name=x&limit=500", "x"),
        ("fieldSelector=metadata.name=x&limit=many", ""),  # ListOptions fails to decode: no name
        ("fieldSelector=metadata.name=x&timeoutSeconds=", ""),
        ("fieldSelector=metadata.name=x&timeoutSeconds=%2B30", "x"),  # strconv.ParseInt accepts a sign
        ("fieldSelector=metadata.name=bad\\x", ""),  # invalid escape sequence
    ],
)
def test_field_selector_names_the_object_of_a_list(query: str, name: str) -> None:
    info = _resolve(
        "GET", f"/apis/restaurant.programming-kubernetes.info/v1alpha1/namespaces/default/pizzas?{query}"
    )
    assert (info.verb, info.name) == ("list", name)
    # Dispatch still sees a collection: the name did not come from the path.
    assert info.path_name == ""


def test_path_name_is_the_url_segment() -> None:
    assert _resolve("GET", "/api/v1/namespaces/other/pods/foo/status").path_name == "foo"
    assert _resolve("GET", "/api/v1/namespaces/other").path_name == "other"
    assert _resolve("GET", "/healthz/ping").path_name == ""


@pytest.mark.parametrize(
    ("value", "watch"), [("TRUE", "watch"), ("False", "list"), ("", "watch"), ("yes", "watch")]
)
def test_watch_parameter_is_decoded_like_a_go_bool(value: str, watch: str) -> None:
    assert _resolve("GET", f"/api/v1/pods?watch={value}").verb == watch


def test_exact_match_rejects_a_term_without_operator() -> None:
    with pytest.raises(ValueError, match="can't understand 'foo'"):
        exact_match("metadata.name=x,foo", "metadata.name")
    assert exact_match("", "metadata.name") is None
    # Terms are sorted before matching, as kube does: the first sorted match wins.
    assert exact_match("metadata.name=b,metadata.name==a", "metadata.name") == "a"


def test_resolved_paths_remembers_only_answers_that_ignore_the_query() -> None:
    paths = ResolvedPaths(max_entries=2)
    toppings = "/apis/restaurant.programming-kubernetes.info/v1beta1/toppings"
    named = paths.resolve("GET", f"{toppings}/salami", {"watch": "1"})
    assert named is paths.resolve("GET", f"{toppings}/salami", {})
    assert (named.verb, named.name) == ("get", "salami")
    # A collection: list, then watch, then a list of one named object, all from the same path.
    assert paths.resolve("GET", toppings, {}).verb == "list"
    assert paths.resolve("GET", toppings, {"watch": "true"}).verb == "watch"
    one = paths.resolve("GET", toppings, {"fieldSelector": "metadata.name=x"})
    assert (one.verb, one.name, one.field_selector) == ("list", "x", "metadata.name=x")
    assert paths.resolve("DELETE", toppings, {}).verb == "deletecollection"
    # The method is part of the answer.
    assert paths.resolve("DELETE", f"{toppings}/salami", {}).verb == "delete"
    assert paths.resolve("GET", "/healthz", {}).is_resource_request is False
    # Bounded: the oldest answer went, and is resolved again (equal, not the same object).
    again = paths.resolve("GET", f"{toppings}/salami", {})
    assert again == named and again is not named
    with pytest.raises(RequestInfoError):
        paths.resolve("GET", "/api/v1/watch", {})
