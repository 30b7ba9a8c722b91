"""Policy loading, validation and rule matching, against kube's checker.go / validation.go semantics."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from apis.meta.user import UserInfo
from server.audit.policy import Policy, PolicyError, load_policy, parse_policy
from server.request_info import resolve

GROUP = "restaurant.programming-kubernetes.info"
ADMIN = UserInfo("admin", groups=("system:masters", "system:authenticated"))
BOB = UserInfo("bob", groups=("restaurant-staff", "system:authenticated"))


def policy(*rules: dict, **extra: object) -> Policy:
    doc = {"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "rules": list(rules), **extra}
    return parse_policy(yaml.safe_dump(doc).encode())


def level(p: Policy, user: UserInfo | None, method: str, path: str, query: str = "") -> str:
    params = dict(part.split("=", 1) for part in query.split("&") if part)
    return p.evaluate(user, resolve(method, path, params)).level


PIZZA = f"/apis/{GROUP}/v1alpha1/namespaces/default/pizzas"
TOPPINGS = f"/apis/{GROUP}/v1alpha1/toppings"


def test_no_match_is_none_and_first_match_wins() -> None:
    p = policy(
        {"level": "RequestResponse", "users": ["bob"]},
        {"level": "Metadata", "users": ["bob"]},
        {"level": "Request", "userGroups": ["system:masters"]},
    )
    assert level(p, BOB, "GET", PIZZA) == "RequestResponse"
    assert level(p, ADMIN, "GET", PIZZA) == "Request"
    assert level(p, UserInfo("carol"), "GET", PIZZA) == "None"
    assert level(p, None, "GET", PIZZA) == "None"  # failed authentication: user/group rules never match


def test_verbs() -> None:
    p = policy({"level": "Request", "verbs": ["create", "watch"]}, {"level": "Metadata"})
    assert level(p, ADMIN, "POST", PIZZA) == "Request"
    assert level(p, ADMIN, "GET", PIZZA, "watch=true") == "Request"
    assert level(p, ADMIN, "GET", PIZZA) == "Metadata"  # list
    assert level(p, ADMIN, "GET", "/healthz") == "Metadata"  # non-resource verb "get"


def test_resources_subresources_and_names() -> None:
    p = policy(
        {"level": "RequestResponse", "resources": [{"group": GROUP, "resources": ["pizzas/status"]}]},
        {"level": "Request", "resources": [{"group": GROUP, "resources": ["*/scale"]}]},
        {
            "level": "Metadata",
            "resources": [{"group": GROUP, "resources": ["toppings"], "resourceNames": ["salami"]}],
        },
        {"level": "Request", "resources": [{"group": GROUP, "resources": ["pizzas/*"]}]},
        {"level": "None", "resources": [{"group": GROUP}]},
        {"level": "Metadata"},
    )
    assert level(p, ADMIN, "PUT", f"{PIZZA}/hawaii/status") == "RequestResponse"
    assert level(p, ADMIN, "PUT", f"{PIZZA}/hawaii/scale") == "Request"
    assert level(p, ADMIN, "GET", f"{TOPPINGS}/salami") == "Metadata"
    # resourceNames: another name, or a list without a name, falls through to the group-wide None.
    assert level(p, ADMIN, "GET", f"{TOPPINGS}/cheese") == "None"
    assert level(p, ADMIN, "GET", TOPPINGS) == "None"
    # A list narrowed to one name by field selector counts as that name (kube's RequestInfo).
    assert level(p, ADMIN, "GET", TOPPINGS, "fieldSelector=metadata.name=salami") == "Metadata"
    # "pizzas/*" matches the resource itself and any subresource.
    assert level(p, ADMIN, "GET", f"{PIZZA}/hawaii") == "Request"
    # Another group matches no resource rule; the core group is "".
    assert level(p, ADMIN, "GET", "/api/v1/namespaces/default/pods") == "Metadata"


def test_core_group_and_star() -> None:
    p = policy({"level": "Request", "resources": [{"group": "", "resources": ["*"]}]}, {"level": "None"})
    assert level(p, ADMIN, "GET", "/api/v1/namespaces/default/secrets/s") == "Request"
    assert level(p, ADMIN, "GET", PIZZA) == "None"


def test_namespaces() -> None:
    p = policy(
        {"level": "Request", "namespaces": ["kitchen"]},
        {"level": "Metadata", "namespaces": [""]},  # cluster-scoped resources
        {"level": "None"},
    )
    assert level(p, ADMIN, "GET", f"/apis/{GROUP}/v1alpha1/namespaces/kitchen/pizzas") == "Request"
    assert level(p, ADMIN, "GET", PIZZA) == "None"
    assert level(p, ADMIN, "GET", TOPPINGS) == "Metadata"
    # Namespace rules are resource rules: a non-resource URL never matches them.
    assert level(p, ADMIN, "GET", "/version") == "None"


def test_non_resource_urls() -> None:
    p = policy(
        {"level": "None", "nonResourceURLs": ["/healthz*", "/version"]},
        {"level": "Request", "nonResourceURLs": ["/apis/*"]},
        {"level": "RequestResponse", "nonResourceURLs": ["*"]},
        {"level": "Metadata"},
    )
    assert level(p, ADMIN, "GET", "/healthz") == "None"
    assert level(p, ADMIN, "GET", "/healthz/etcd") == "None"
    assert level(p, ADMIN, "GET", "/version") == "None"
    assert level(p, ADMIN, "GET", "/version/x") == "RequestResponse"  # exact match only without "*"
    assert level(p, ADMIN, "GET", f"/apis/{GROUP}") == "Request"  # discovery is non-resource
    # Resource requests never match URL rules, even "*".
    assert level(p, ADMIN, "GET", PIZZA) == "Metadata"


def test_omit_stages_union_and_managed_fields_override() -> None:
    p = policy(
        {
            "level": "Metadata",
            "users": ["admin"],
            "omitStages": ["ResponseStarted"],
            "omitManagedFields": False,
        },
        {"level": "Metadata"},
        omitStages=["RequestReceived"],
        omitManagedFields=True,
    )
    info = resolve("GET", PIZZA, {})
    admin = p.evaluate(ADMIN, info)
    assert admin.omit_stages == {"RequestReceived", "ResponseStarted"}
    assert admin.omit_managed_fields is False
    bob = p.evaluate(BOB, info)
    assert bob.omit_stages == {"RequestReceived"}
    assert bob.omit_managed_fields is True
    nobody = policy({"level": "None", "users": ["x"]}, omitStages=["Panic"]).evaluate(BOB, info)
    assert (nobody.level, nobody.omit_stages) == ("None", {"Panic"})


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (
            {"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "rules": []},
            "loaded illegal policy with 0 rules",
        ),
        (
            {"apiVersion": "audit.k8s.io/v1beta1", "kind": "Policy", "rules": [{"level": "None"}]},
            'failed decoding: no kind "Policy" is registered for version "audit.k8s.io/v1beta1"',
        ),
        (
            {"kind": "Policy", "rules": [{"level": "None"}]},
            "failed decoding: Object 'apiVersion' is missing in policy",
        ),
        (
            {"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "rules": [{"level": "Everything"}]},
            'rules[0].level: Unsupported value: "Everything": supported values: '
            '"None", "Metadata", "Request", "RequestResponse"',
        ),
        (
            {"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "rules": [{"users": ["a"]}]},
            "rules[0].level: Required value",
        ),
        (
            {
                "apiVersion": "audit.k8s.io/v1",
                "kind": "Policy",
                "omitStages": ["Never"],
                "rules": [{"level": "None"}],
            },
            'omitStages[0]: Invalid value: "Never": allowed stages are '
            "RequestReceived,ResponseStarted,ResponseComplete,Panic",
        ),
        (
            {
                "apiVersion": "audit.k8s.io/v1",
                "kind": "Policy",
                "rules": [{"level": "None", "nonResourceURLs": ["healthz", "/a*b"], "omitStages": ["Done"]}],
            },
            '[rules[0].nonResourceURLs[0]: Invalid value: "healthz": non-resource URL rules must begin '
            "with a '/' character, rules[0].nonResourceURLs[1]: Invalid value: \"/a*b\": non-resource URL "
            "wildcards '*' must be the final character of the rule, rules[0].omitStages[0]: Invalid value: "
            '"Done": allowed stages are RequestReceived,ResponseStarted,ResponseComplete,Panic]',
        ),
        (
            {
                "apiVersion": "audit.k8s.io/v1",
                "kind": "Policy",
                "rules": [{"level": "None", "nonResourceURLs": ["/x"], "namespaces": ["a"]}],
            },
            'rules[0].nonResourceURLs: Invalid value: ["/x"]: rules cannot apply to both regular resources '
            "and non-resource URLs",
        ),
        (
            {
                "apiVersion": "audit.k8s.io/v1",
                "kind": "Policy",
                "rules": [{"level": "None", "resources": [{"group": "", "resourceNames": ["x"]}]}],
            },
            'rules[0].resources.resourceNames: Invalid value: ["x"]: using resourceNames requires at least '
            "one resource",
        ),
        (
            {"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "rules": [{"level": "None", "users": "bob"}]},
            "failed decoding: json: cannot unmarshal string into Go struct field PolicyRule.users of type []",
        ),
    ],
)
def test_invalid_policies(doc: dict, message: str) -> None:
    with pytest.raises(PolicyError) as err:
        parse_policy(yaml.safe_dump(doc).encode())
    assert str(err.value) == message


def test_group_must_be_a_dns_subdomain() -> None:
    doc = {
        "apiVersion": "audit.k8s.io/v1",
        "kind": "Policy",
        "rules": [{"level": "None", "resources": [{"group": f"{GROUP}/v1"}]}],
    }
    with pytest.raises(
        PolicyError, match=r"^rules\[0\]\.resources\.group: Invalid value: .*RFC 1123 subdomain"
    ):
        parse_policy(yaml.safe_dump(doc).encode())


def test_load_policy_file(tmp_path: Path) -> None:
    path = tmp_path / "policy.json"
    path.write_text('{"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "rules": [{"level": "Metadata"}]}')
    assert load_policy(str(path)).rules[0].level == "Metadata"
    path.write_text("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: []\n")
    with pytest.raises(PolicyError) as err:
        load_policy(str(path))
    assert str(err.value) == f"loaded illegal policy with 0 rules: from file {path}"
    with pytest.raises(PolicyError, match=r'^failed to read file path ".*missing.yaml"'):
        load_policy(str(tmp_path / "missing.yaml"))
