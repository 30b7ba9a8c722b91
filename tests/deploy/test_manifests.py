"""The deployment as a cluster would receive it: `kubectl kustomize deploy/` rendered by the real kubectl.

The assertions follow what kube-aggregator and the kubelet will do with these objects (KUBE-BEHAVIOUR.md,
"Aggregation"), and the server's own flag parser judges the container arguments, so a renamed flag or
a moved Service breaks a test here rather than an APIService in someone's cluster.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tomllib
import urllib.parse
from pathlib import Path
from typing import Any

import pytest
import yaml

from apis.restaurant.install import GROUP
from server.options import Options, parse_args

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
NAMESPACE = "pizza-apiserver"
KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"

Obj = dict[str, Any]


def render(directory: Path) -> list[Obj]:
    result = subprocess.run(
        [KUBECTL, "kustomize", str(directory)], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


@pytest.fixture(scope="module")
def objects() -> list[Obj]:
    return render(DEPLOY)


def all_of(objs: list[Obj], kind: str) -> list[Obj]:
    return [o for o in objs if o["kind"] == kind]


def one(objs: list[Obj], kind: str, name: str | None = None) -> Obj:
    found = [o for o in all_of(objs, kind) if name is None or o["metadata"]["name"] == name]
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
    return found[0]


def apiserver_container(objs: list[Obj]) -> Obj:
    (container,) = one(objs, "Deployment")["spec"]["template"]["spec"]["containers"]
    return container


def server_options(objs: list[Obj]) -> Options:
    """The Deployment's args through the server's own parser: unknown or malformed flags fail here."""
    options = parse_args(apiserver_container(objs)["args"]).complete()
    assert options.validate() == []
    return options


def container_port(container: Obj, port: int | str) -> int:
    if isinstance(port, int):
        return port
    (number,) = [p["containerPort"] for p in container["ports"] if p["name"] == port]
    return number


def selects(selector: dict[str, str], workload: Obj) -> bool:
    labels = workload["spec"]["template"]["metadata"]["labels"]
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def aggregator_target(objs: list[Obj]) -> tuple[str, str]:
    """The one Service (name, namespace) every APIService points at."""
    targets = {
        (a["spec"]["service"]["name"], a["spec"]["service"]["namespace"]) for a in all_of(objs, "APIService")
    }
    assert len(targets) == 1
    return targets.pop()


def test_namespaced_objects_live_in_the_namespace_except_the_kube_system_binding(objects: list[Obj]) -> None:
    keys = [(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in objects]
    assert len(keys) == len(set(keys))
    one(objects, "Namespace", NAMESPACE)
    cluster_scoped = {"Namespace", "ClusterRole", "ClusterRoleBinding", "APIService"}
    for kind, namespace, name in keys:
        if kind in cluster_scoped:
            assert namespace is None, (kind, name)
        elif kind == "RoleBinding":
            assert namespace == "kube-system", name
        else:
            assert namespace == NAMESPACE, (kind, name)


def test_one_apiservice_per_served_version_named_version_dot_group(objects: list[Obj]) -> None:
    services = all_of(objects, "APIService")
    assert {a["spec"]["version"] for a in services} == set(GROUP.versions)
    for a in services:
        assert a["spec"]["group"] == GROUP.group
        assert a["metadata"]["name"] == f"{a['spec']['version']}.{GROUP.group}"  # required by validation
        assert a["spec"]["service"]["port"] == 443
    assert len({a["spec"]["groupPriorityMinimum"] for a in services}) == 1
    by_priority = sorted(services, key=lambda a: a["spec"]["versionPriority"], reverse=True)
    # The server's preferred (storage) version must also be the aggregator's: v1beta1 above v1alpha1.
    assert tuple(a["spec"]["version"] for a in by_priority) == GROUP.versions == ("v1beta1", "v1alpha1")


def test_apiservices_reach_the_secure_port_through_the_service(objects: list[Obj]) -> None:
    name, namespace = aggregator_target(objects)
    service = one(objects, "Service", name)
    assert service["metadata"]["namespace"] == namespace
    assert selects(service["spec"]["selector"], one(objects, "Deployment"))
    (port,) = [p for p in service["spec"]["ports"] if p["port"] == 443]
    container = apiserver_container(objects)
    assert (
        container_port(container, port["targetPort"]) == server_options(objects).serving.secure_port == 8443
    )


def test_tls_verification_is_skipped_only_with_its_caveat(objects: list[Obj]) -> None:
    for a in all_of(objects, "APIService"):
        # The API rejects caBundle together with insecureSkipTLSVerify.
        assert a["spec"]["insecureSkipTLSVerify"] is True and "caBundle" not in a["spec"]
    text = (DEPLOY / "apiservices.yaml").read_text()
    assert "production" in text and "caBundle" in text and "cert-manager.io/inject-ca-from" in text


def test_server_listens_on_the_pod_network_and_stores_in_the_etcd_service(objects: list[Obj]) -> None:
    options = server_options(objects)
    assert options.serving.bind_address == "0.0.0.0"
    (server,) = options.etcd.etcd_servers
    url = urllib.parse.urlsplit(server)
    etcd_service = one(objects, "Service", url.hostname)  # a short name resolves in the pod's namespace
    assert etcd_service["metadata"]["namespace"] == NAMESPACE
    assert url.port in [p["port"] for p in etcd_service["spec"]["ports"]]
    etcd = one(objects, "StatefulSet")
    assert selects(etcd_service["spec"]["selector"], etcd)
    assert etcd["spec"]["serviceName"] == url.hostname and etcd_service["spec"]["clusterIP"] == "None"


def test_serving_certificate_names_what_the_aggregator_verifies(objects: list[Obj]) -> None:
    name, namespace = aggregator_target(objects)
    options = server_options(objects)
    assert options.serving.generates_serving_cert
    assert f"{name}.{namespace}.svc" in options.serving.serving_cert_dns_names


def test_probes_ask_the_health_endpoints_over_https(objects: list[Obj]) -> None:
    container = apiserver_container(objects)
    secure_port = server_options(objects).serving.secure_port
    paths = {}
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        get = container[probe]["httpGet"]
        assert get["scheme"] == "HTTPS"
        assert container_port(container, get["port"]) == secure_port
        paths[probe] = get["path"]
    assert paths == {"startupProbe": "/livez", "readinessProbe": "/readyz", "livenessProbe": "/livez"}


def _can(objects: list[Obj], account: tuple[str, str], group: str, resource: str, verb: str) -> bool:
    """Whether the ClusterRoleBindings in the render grant a ServiceAccount a verb (no wildcards used)."""
    for binding in all_of(objects, "ClusterRoleBinding"):
        subjects = {
            (s["name"], s.get("namespace")) for s in binding["subjects"] if s["kind"] == "ServiceAccount"
        }
        if account not in subjects or binding["roleRef"]["kind"] != "ClusterRole":
            continue
        # Roles the cluster brings (system:auth-delegator) are not in the render and grant nothing here.
        roles = [
            r for r in all_of(objects, "ClusterRole") if r["metadata"]["name"] == binding["roleRef"]["name"]
        ]
        for rule in (rule for role in roles for rule in role["rules"]):
            if group in rule["apiGroups"] and resource in rule["resources"] and verb in rule["verbs"]:
                return True
    return False


def test_rbac_grants_what_delegated_authn_authz_and_admission_need(objects: list[Obj]) -> None:
    pod = one(objects, "Deployment")["spec"]["template"]["spec"]
    account = (pod["serviceAccountName"], NAMESPACE)
    one(objects, "ServiceAccount", account[0])
    subject = {"kind": "ServiceAccount", "name": account[0], "namespace": NAMESPACE}

    delegator = [
        b for b in all_of(objects, "ClusterRoleBinding") if b["roleRef"]["name"] == "system:auth-delegator"
    ]
    assert len(delegator) == 1 and subject in delegator[0]["subjects"]
    assert delegator[0]["roleRef"]["kind"] == "ClusterRole"

    (reader,) = all_of(objects, "RoleBinding")
    assert reader["metadata"]["namespace"] == "kube-system"
    assert reader["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": "extension-apiserver-authentication-reader",
    }
    assert subject in reader["subjects"]

    for group, resource in (
        ("", "namespaces"),
        ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"),
        ("admissionregistration.k8s.io", "validatingwebhookconfigurations"),
    ):
        for verb in ("get", "list", "watch"):
            assert _can(objects, account, group, resource, verb), (resource, verb)
    assert not _can(objects, account, "", "secrets", "get")


def test_users_get_the_api_through_the_default_view_role(objects: list[Obj]) -> None:
    view = [
        r
        for r in all_of(objects, "ClusterRole")
        if r["metadata"].get("labels", {}).get("rbac.authorization.k8s.io/aggregate-to-view") == "true"
    ]
    granted = {
        (resource, verb)
        for role in view
        for rule in role["rules"]
        if GROUP.group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    for kind in GROUP.kinds:
        assert {(kind.resource, v) for v in ("get", "list", "watch")} <= granted
    assert not any(verb in {"create", "update", "patch", "delete"} for _, verb in granted)


@pytest.mark.parametrize("kind", ["Deployment", "StatefulSet"])
def test_pods_meet_the_restricted_pod_security_standard(objects: list[Obj], kind: str) -> None:
    assert one(objects, "Namespace", NAMESPACE)["metadata"]["labels"][
        "pod-security.kubernetes.io/enforce"
    ] == ("restricted")
    pod = one(objects, kind)["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    for container in pod["containers"]:
        context = container["securityContext"]
        assert context["allowPrivilegeEscalation"] is False
        assert context["capabilities"]["drop"] == ["ALL"]
        assert context["readOnlyRootFilesystem"] is True
        assert "memory" in container["resources"]["limits"] and container["resources"]["requests"]


def test_everything_the_server_writes_is_on_an_empty_dir(objects: list[Obj]) -> None:
    pod = one(objects, "Deployment")["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounts = {Path(m["mountPath"]): volumes[m["name"]] for m in apiserver_container(objects)["volumeMounts"]}
    options = server_options(objects)
    assert options.serving.cert_dir is not None and options.generic.admin_kubeconfig is not None
    for written in (
        options.generic.data_dir,
        options.serving.cert_dir,
        options.generic.admin_kubeconfig.parent,
        Path("/tmp"),
    ):
        holders = [
            (path, volume) for path, volume in mounts.items() if path == written or path in written.parents
        ]
        assert holders, written
        _, volume = max(holders, key=lambda held: len(held[0].parts))  # the deepest mount wins
        assert "emptyDir" in volume, written


def test_etcd_is_a_single_member_with_persistent_storage(objects: list[Obj]) -> None:
    etcd = one(objects, "StatefulSet", "etcd")
    assert etcd["spec"]["replicas"] == 1
    (container,) = etcd["spec"]["template"]["spec"]["containers"]
    assert re.fullmatch(r"registry\.k8s\.io/etcd:3\.5\.\d+-0", container["image"])
    flags = dict(arg.split("=", 1) for arg in container["command"][1:])
    assert flags["--listen-client-urls"] == "http://0.0.0.0:2379"
    (claim,) = etcd["spec"]["volumeClaimTemplates"]
    mount = next(m for m in container["volumeMounts"] if m["name"] == claim["metadata"]["name"])
    assert Path(flags["--data-dir"]).is_relative_to(mount["mountPath"])
    # Only the API server may reach the unauthenticated client port.
    policy = one(objects, "NetworkPolicy", "etcd")
    (rule,) = policy["spec"]["ingress"]
    (peer,) = rule["from"]
    assert selects(peer["podSelector"]["matchLabels"], one(objects, "Deployment"))
    assert selects(policy["spec"]["podSelector"]["matchLabels"], etcd)


def test_production_tls_switch_trusts_a_cert_manager_certificate(objects: list[Obj], tmp_path: Path) -> None:
    """The switch documented in kustomization.yaml, run as written: caBundle replaces skipping TLS checks."""
    kustomization = (DEPLOY / "kustomization.yaml").read_text()
    (expression,) = re.findall(r"sed -i '([^']+)' deploy/kustomization\.yaml", kustomization)
    copy = tmp_path / "deploy"
    shutil.copytree(DEPLOY, copy)
    subprocess.run(["sed", "-i", expression, str(copy / "kustomization.yaml")], check=True, timeout=10)
    switched = render(copy)

    certificate = one(switched, "Certificate")
    name, namespace = aggregator_target(switched)
    assert f"{name}.{namespace}.svc" in certificate["spec"]["dnsNames"]
    for a in all_of(switched, "APIService"):
        assert a["spec"]["insecureSkipTLSVerify"] is False
        annotation = a["metadata"]["annotations"]["cert-manager.io/inject-ca-from"]
        assert annotation == f"{certificate['metadata']['namespace']}/{certificate['metadata']['name']}"

    options = server_options(switched)  # --serving-cert-dns-names is gone: it conflicts with a given cert
    assert not options.serving.generates_serving_cert and options.serving.tls_cert_file is not None
    pod = one(switched, "Deployment")["spec"]["template"]["spec"]
    (volume,) = [v for v in pod["volumes"] if "secret" in v]
    assert volume["secret"]["secretName"] == certificate["spec"]["secretName"]
    (mount,) = [m for m in apiserver_container(switched)["volumeMounts"] if m["name"] == volume["name"]]
    assert (
        options.serving.tls_cert_file.parent
        == Path(mount["mountPath"])
        == options.serving.tls_private_key_file.parent
    )
    # Everything else is untouched.
    assert options.etcd.etcd_servers == server_options(objects).etcd.etcd_servers
    assert len(switched) == len(objects) + 2


# --- the image -----------------------------------------------------------------------------------------


def dockerfile() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with line continuations joined and comments dropped."""
    text = re.sub(r"\\\n", " ", (REPO / "Dockerfile").read_text())
    lines = [line.strip() for line in text.splitlines()]
    return [
        (word.upper(), rest.strip())
        for word, _, rest in (line.partition(" ") for line in lines if line and not line.startswith("#"))
    ]


def pyproject() -> dict[str, Any]:
    return tomllib.loads((REPO / "pyproject.toml").read_text())


def test_entrypoint_is_the_console_script_of_pyproject() -> None:
    entrypoints = [json.loads(args) for word, args in dockerfile() if word == "ENTRYPOINT"]
    assert entrypoints, "no exec-form ENTRYPOINT"
    (script,) = entrypoints[-1]
    assert pyproject()["project"]["scripts"][script] == "server.cli:main"


def test_image_defaults_serve_on_all_interfaces_as_a_numeric_non_root_user() -> None:
    instructions = dockerfile()
    (cmd,) = [json.loads(args) for word, args in instructions if word == "CMD"]
    options = parse_args(cmd).complete()
    assert options.validate() == [] and options.serving.bind_address == "0.0.0.0"
    user = [args for word, args in instructions if word == "USER"][-1]
    uid, _, gid = user.partition(":")
    assert uid.isdigit() and int(uid) != 0 and gid.isdigit()
    stages = [args for word, args in instructions if word == "FROM"]
    assert len(stages) >= 2  # build the wheels, then a runtime without them
    (base,) = [
        args.split("=", 1)[1] for word, args in instructions if word == "ARG" and "PYTHON_IMAGE=" in args
    ]
    assert base == "python:3.11-slim"


def test_the_pod_runs_as_the_image_user_with_the_project_version(objects: list[Obj]) -> None:
    user = [args for word, args in dockerfile() if word == "USER"][-1]
    uid, _, gid = user.partition(":")
    pod = one(objects, "Deployment")["spec"]["template"]["spec"]
    assert (pod["securityContext"]["runAsUser"], pod["securityContext"]["runAsGroup"]) == (int(uid), int(gid))
    assert apiserver_container(objects)["image"] == f"pizza-apiserver:{pyproject()['project']['version']}"


def test_build_context_carries_every_package_the_wheel_ships() -> None:
    includes = pyproject()["tool"]["setuptools"]["packages"]["find"]["include"]
    packages = sorted(pattern.rstrip("*") for pattern in includes)
    copied = {args.split()[0] for word, args in dockerfile() if word == "COPY"}
    allowed = set((REPO / ".dockerignore").read_text().split())
    for package in packages:
        assert (REPO / package / "__init__.py").is_file()
        assert f"{package}/" in copied, package
        assert f"!{package}/" in allowed, package
    assert "pyproject.toml" in copied and "!pyproject.toml" in allowed
