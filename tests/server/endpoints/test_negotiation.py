"""negotiate_discovery: which /apis document an Accept header gets, as kube's wrapper decides it."""

from __future__ import annotations

import pytest

from server.endpoints.discovery import negotiate_discovery, parse_accept

V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
V2BETA1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"


@pytest.mark.parametrize(
    ("accept", "expected"),
    [
        # The header kube-aggregator sends (KUBE-BEHAVIOUR.md).
        (f"{V2},{V2BETA1}", "v2"),
        # kubectl / client-go discovery: both aggregated variants, then plain JSON.
        (f"{V2},{V2BETA1},application/json", "v2"),
        ("application/json", None),
        ("", None),
        ("*/*", None),
        (V2BETA1, "v2beta1"),
        # Equal q: header order decides.
        (f"{V2BETA1},{V2}", "v2beta1"),
        # q-values reorder.
        (f"{V2};q=0.5,{V2BETA1};q=0.9", "v2beta1"),
        (f"{V2BETA1};q=0.4, {V2};q=0.6", "v2"),
        # A plain clause is skipped by the discovery endpoint restrictions, not chosen.
        (f"application/json,{V2}", "v2"),
        # Wildcards match JSON; parameters still select the aggregated document.
        ("*/*;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", "v2"),
        ("application/*;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList", "v2beta1"),
        # Media types the aggregated document is not served in are passed over.
        ("application/yaml;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", None),
        (
            f"application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,{V2BETA1}",
            "v2beta1",
        ),
        # Not the aggregated GVK.
        ("application/json;g=apidiscovery.k8s.io;v=v1;as=APIGroupDiscoveryList", None),
        ("application/json;g=meta.k8s.io;v=v2;as=APIGroupDiscoveryList", None),
        ("application/json;as=Table;v=v1;g=meta.k8s.io", None),
        # stream=watch is allowed, other streams and a server version are not.
        (f"{V2};stream=watch", "v2"),
        (f"{V2};stream=other", None),
        (f"{V2};sv=v1,{V2BETA1}", "v2beta1"),
        # Parameter order and surrounding blanks do not matter.
        ("application/json; as=APIGroupDiscoveryList; v=v2; g=apidiscovery.k8s.io", "v2"),
        # A q that does not parse is 0 (sorted last), but the clause still counts.
        (f"{V2};q=abc", "v2"),
        (f"{V2};q=abc,{V2BETA1}", "v2beta1"),
    ],
)
def test_negotiate_discovery(accept: str, expected: str | None) -> None:
    assert negotiate_discovery(accept) == expected


def test_parse_accept_orders_by_q_then_specificity() -> None:
    clauses = parse_accept("text/html;q=0.1, */*;q=0.9, application/json")
    assert [(c.type, c.subtype) for c in clauses] == [("application", "json"), ("*", "*"), ("text", "html")]


def test_parse_accept_keeps_go_quirk_of_specific_before_wildcard() -> None:
    # goautoneg's Less puts a concrete type before a wildcard even when its q is lower.
    clauses = parse_accept("*/*;q=1, text/plain;q=0.5")
    assert [(c.type, c.subtype, c.q) for c in clauses] == [("text", "plain", 0.5), ("*", "*", 1.0)]


def test_parse_accept_drops_malformed_clauses() -> None:
    clauses = parse_accept("application, a/b/c, application/json;broken;x=1=2;y=2")
    assert [(c.type, c.subtype) for c in clauses] == [("application", "json")]
    assert clauses[0].params == {"y": "2"}
