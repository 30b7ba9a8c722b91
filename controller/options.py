"""The controller's flags (kube-controller-manager style names) and their defaults."""

from __future__ import annotations

import argparse
import os
import re
from dataclasses import dataclass
from pathlib import Path

# Where `pizza-apiserver` writes its admin kubeconfig in standalone mode (its default --data-dir).
STANDALONE_KUBECONFIG = Path(".pizza-apiserver/admin.kubeconfig")
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")
_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def duration(text: str) -> float:
    """A Go-style duration ("500ms", "2s", "1m30s"; a bare number is seconds) in seconds."""
    if re.fullmatch(r"\d+(?:\.\d+)?", text):
        return float(text)
    parts = _DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise argparse.ArgumentTypeError(f'time: invalid duration "{text}"')
    return sum(float(n) * _UNIT[u] for n, u in parts)


def in_cluster() -> bool:
    """client-go's test: a pod has the service host variable (and its service-account token)."""
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST"))


@dataclass(slots=True)
class ControllerOptions:
    kubeconfig: Path | None = None
    leader_elect: bool = False
    leader_elect_lease_duration: float = 15.0
    leader_elect_renew_deadline: float = 10.0
    leader_elect_retry_period: float = 2.0
    leader_elect_resource_name: str = "pizza-controller"
    leader_elect_resource_namespace: str = "default"
    bake_delay: float = 0.0
    workers: int = 2
    watch_timeout: float = 300.0
    identity: str = ""

    def validate(self) -> list[str]:
        errors = []
        if self.bake_delay < 0:
            errors.append("--bake-delay must not be negative")
        if self.workers < 1:
            errors.append("--workers must be at least 1")
        if self.leader_elect and self.leader_elect_renew_deadline >= self.leader_elect_lease_duration:
            errors.append("--leader-elect-renew-deadline must be less than --leader-elect-lease-duration")
        return errors


def _bool(text: str) -> bool:
    if text in ("1", "t", "T", "true", "TRUE", "True"):
        return True
    if text in ("0", "f", "F", "false", "FALSE", "False"):
        return False
    raise argparse.ArgumentTypeError(f'strconv.ParseBool: parsing "{text}": invalid syntax')


def parse_args(argv: list[str] | None = None) -> ControllerOptions:
    d = ControllerOptions()
    p = argparse.ArgumentParser(
        prog="pizza-controller", description="Bakes pizzas: status.cost and replicas."
    )
    p.add_argument(
        "--kubeconfig",
        type=Path,
        default=None,
        help=f"kubeconfig of the API server; default: {STANDALONE_KUBECONFIG} when it exists, "
        "else the in-cluster config, else ~/.kube/config",
    )
    p.add_argument(
        "--leader-elect",
        type=_bool,
        nargs="?",
        const=True,
        default=None,
        metavar="true|false",
        help="elect a leader through a coordination.k8s.io/v1 Lease before working "
        "(default: true in a cluster, false standalone)",
    )
    for flag, value, text in (
        ("--leader-elect-lease-duration", d.leader_elect_lease_duration, "how long a lease is held"),
        (
            "--leader-elect-renew-deadline",
            d.leader_elect_renew_deadline,
            "how long the leader tries to renew",
        ),
        ("--leader-elect-retry-period", d.leader_elect_retry_period, "wait between acquire/renew attempts"),
        ("--bake-delay", d.bake_delay, "how long baking takes before status.replicas follows spec.replicas"),
        ("--watch-timeout", d.watch_timeout, "each watch request's timeoutSeconds"),
    ):
        p.add_argument(
            flag, type=duration, default=value, metavar="duration", help=f"{text} (default {value}s)"
        )
    p.add_argument("--leader-elect-resource-name", default=d.leader_elect_resource_name)
    p.add_argument(
        "--leader-elect-resource-namespace",
        default=None,
        help="namespace of the Lease (default: the pod's namespace in a cluster, else default)",
    )
    p.add_argument(
        "--workers", type=int, default=d.workers, help=f"concurrent reconciles (default {d.workers})"
    )
    p.add_argument("--identity", default="", help="leader election identity (default: hostname_uuid)")
    ns = p.parse_args(argv)
    options = ControllerOptions(**{k: v for k, v in vars(ns).items() if v is not None})
    if ns.leader_elect is None:
        options.leader_elect = in_cluster()
    if ns.leader_elect_resource_namespace is None:
        options.leader_elect_resource_namespace = _pod_namespace() or d.leader_elect_resource_namespace
    if ns.kubeconfig is None and STANDALONE_KUBECONFIG.exists():
        options.kubeconfig = STANDALONE_KUBECONFIG
    errors = options.validate()
    if errors:
        p.error("; ".join(errors))
    return options


def _pod_namespace() -> str | None:
    path = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
    try:
        return path.read_text().strip() or None
    except OSError:
        return None
