"""deploy/controller/ as a cluster would receive it (`kubectl kustomize`, the real kubectl).

The controller's own flag parser judges the container arguments, and the RBAC is checked against the
calls the controller makes: list/watch of pizzas and toppings, PATCH (apply) of pizzas/status, and
get/create/update of its Lease in its own namespace.
"""

from __future__ import annotations

import tomllib

import pytest

from controller.options import parse_args
from tests.deploy.test_manifests import REPO, Obj, all_of, one, render

DEPLOY = REPO / "deploy" / "controller"
GROUP = "restaurant.programming-kubernetes.info"


@pytest.fixture(scope="module")
def objects() -> list[Obj]:
    return render(DEPLOY)


def _granted(objects: list[Obj], binding_kind: str, role_kind: str, account: tuple[str, str]) -> set:
    granted = set()
    for binding in all_of(objects, binding_kind):
        subjects = {
            (s["name"], s.get("namespace")) for s in binding["subjects"] if s["kind"] == "ServiceAccount"
        }
        if account not in subjects:
            continue
        for role in all_of(objects, role_kind):
            if role["metadata"]["name"] != binding["roleRef"]["name"]:
                continue
            namespace = role["metadata"].get("namespace")
            for rule in role["rules"]:
                for group in rule["apiGroups"]:
                    for resource in rule["resources"]:
                        granted |= {(namespace, group, resource, verb) for verb in rule["verbs"]}
    return granted


def test_the_container_runs_the_console_script_with_valid_flags(objects: list[Obj]) -> None:
    (container,) = one(objects, "Deployment", "pizza-controller")["spec"]["template"]["spec"]["containers"]
    (script,) = container["command"]
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts[script] == "controller.cli:main"
    options = parse_args(container["args"])
    assert options.leader_elect and options.validate() == []


def test_rbac_grants_exactly_what_the_controller_calls(objects: list[Obj]) -> None:
    deployment = one(objects, "Deployment", "pizza-controller")
    namespace = deployment["metadata"]["namespace"]
    account = (deployment["spec"]["template"]["spec"]["serviceAccountName"], namespace)
    one(objects, "ServiceAccount", account[0])
    cluster = _granted(objects, "ClusterRoleBinding", "ClusterRole", account)
    assert cluster == {
        *((None, GROUP, r, v) for r in ("pizzas", "toppings") for v in ("get", "list", "watch")),
        (None, GROUP, "pizzas/status", "patch"),
    }
    leases = _granted(objects, "RoleBinding", "Role", account)
    # The Lease lives in the pod's namespace, the controller's default for --leader-elect-resource-namespace.
    assert leases == {(namespace, "coordination.k8s.io", "leases", v) for v in ("get", "create", "update")}
    for binding in all_of(objects, "RoleBinding"):
        assert binding["metadata"]["namespace"] == namespace


def test_the_pod_meets_the_restricted_pod_security_standard(objects: list[Obj]) -> None:
    pod = one(objects, "Deployment", "pizza-controller")["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    for container in pod["containers"]:
        context = container["securityContext"]
        assert context["allowPrivilegeEscalation"] is False and context["readOnlyRootFilesystem"] is True
        assert context["capabilities"]["drop"] == ["ALL"]
        assert "memory" in container["resources"]["limits"] and container["resources"]["requests"]
