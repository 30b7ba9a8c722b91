"""kube's rule matching (predicates/rules/rules.go), service URLs and webhook credential lookup."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from apis.meta.user import UserInfo
from apis.restaurant.install import GROUP, PIZZA_KIND
from apis.runtime.codec import Codec
from registry.generic.admission import Attributes, Operation
from server.admission.webhook.calls import timeout_param
from server.admission.webhook.credentials import WebhookCredentials
from server.admission.webhook.hooks import Rule, parse_hook
from server.admission.webhook.matching import match_rules, rule_matches


def attrs(subresource: str = "", namespace: str = "default", version: str = "v1beta1") -> Attributes:
    return Attributes(
        operation=Operation.CREATE,
        group=GROUP.group,
        version=version,
        resource="pizzas",
        subresource=subresource,
        kind="Pizza",
        namespace=namespace,
        name="p",
        object=None,
        old_object=None,
        user=UserInfo("u"),
        dry_run=False,
        codec=Codec(GROUP.group, PIZZA_KIND),
    )


def rule(resources: list[str], scope: str = "*", versions: tuple[str, ...] = ("*",)) -> Rule:
    return Rule(("CREATE",), (GROUP.group,), versions, tuple(resources), scope)


@pytest.mark.parametrize(
    ("resources", "subresource", "expected"),
    [
        (["*"], "", True),
        (["*"], "status", False),
        (["*/*"], "status", True),
        (["*/*"], "", True),
        (["*/scale"], "scale", True),
        (["*/scale"], "status", False),
        (["pizzas/*"], "", True),
        (["pizzas/*"], "status", True),
        (["pizzas"], "status", False),
        (["pizzas/status"], "status", True),
        (["toppings"], "", False),
    ],
)
def test_resources(resources: list[str], subresource: str, expected: bool) -> None:
    a = attrs(subresource)
    assert rule_matches(rule(resources), a, a.version, a.resource) is expected


@pytest.mark.parametrize(
    ("scope", "namespace", "expected"),
    [
        ("*", "", True),
        ("Namespaced", "ns", True),
        ("Namespaced", "", False),
        ("Cluster", "", True),
        ("Cluster", "ns", False),
    ],
)
def test_scope(scope: str, namespace: str, expected: bool) -> None:
    a = attrs(namespace=namespace)
    assert rule_matches(rule(["pizzas"], scope), a, a.version, a.resource) is expected


def test_equivalent_falls_back_to_another_version_and_exact_does_not() -> None:
    raw = {
        "name": "h",
        "clientConfig": {"url": "https://x"},
        "rules": [
            {
                "operations": ["CREATE"],
                "apiGroups": [GROUP.group],
                "apiVersions": ["v1alpha1"],
                "resources": ["pizzas"],
            }
        ],
    }
    equivalent = parse_hook(raw, "c", 0, mutating=False)
    invocation = match_rules(equivalent, attrs())
    assert invocation is not None and invocation.version == "v1alpha1"
    exact = parse_hook({**raw, "matchPolicy": "Exact"}, "c", 0, mutating=False)
    assert match_rules(exact, attrs()) is None


def test_service_url_and_defaults() -> None:
    hook = parse_hook(
        {
            "name": "h",
            "clientConfig": {"service": {"namespace": "gk", "name": "gatekeeper", "path": "/v1/admit"}},
        },
        "c",
        0,
        mutating=True,
    )
    assert hook.client.target == "https://gatekeeper.gk.svc:443/v1/admit"
    assert hook.client.server_name == "gatekeeper.gk.svc"
    assert (hook.failure_policy, hook.match_policy, hook.timeout_seconds) == ("Fail", "Equivalent", 10)
    assert hook.reinvocation_policy == "Never" and hook.uid == "c/h/0"


def test_bad_selector_is_kept_as_an_error() -> None:
    hook = parse_hook(
        {
            "name": "h",
            "clientConfig": {"url": "https://x"},
            "objectSelector": {"matchExpressions": [{"key": "a", "operator": "Bogus"}]},
        },
        "c",
        0,
        mutating=False,
    )
    assert hook.selector_error == '"Bogus" is not a valid pod selector operator'


def test_timeout_rounds_up_to_whole_seconds() -> None:
    assert (timeout_param(10.0), timeout_param(9.2), timeout_param(0.5)) == ("10s", "10s", "1s")


def test_credentials_by_host_port_then_suffix_then_star(tmp_path: Path) -> None:
    config = {
        "users": [
            {"name": "hook.ns.svc:8443", "user": {"token": "exact"}},
            {"name": "*.other.svc", "user": {"token": "suffix"}},
            {"name": "plain.svc", "user": {"token": "no-port"}},
            {"name": "*", "user": {"token": "star"}},
        ],
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    credentials = WebhookCredentials.load(path)

    def token(host: str, port: int) -> str:
        return credentials.for_host(host, port).headers["Authorization"]

    assert token("hook.ns.svc", 8443) == "Bearer exact"
    assert token("a.other.svc", 443) == "Bearer suffix"
    assert token("plain.svc", 443) == "Bearer no-port"
    assert token("plain.svc", 8443) == "Bearer star"
