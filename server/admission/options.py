"""Admission flags: kube's CoreAPIOptions (`--kubeconfig`) and AdmissionOptions.

Names and help follow k8s.io/apiserver pkg/server/options/coreapi.go and admission.go. The generic
plugins carry kube's names (NamespaceLifecycle, MutatingAdmissionWebhook, ValidatingAdmissionWebhook);
the groups' own plugins (PizzaToppings, BanFlunder) are named the same way and can be switched off too.
Their names are only known once the groups are installed, so unknown names are reported by
`server/admission/setup.py` at start-up rather than here.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path

from server.flags import add_bool, add_list, add_path

NAMESPACE_LIFECYCLE = "NamespaceLifecycle"
MUTATING_WEBHOOK = "MutatingAdmissionWebhook"
VALIDATING_WEBHOOK = "ValidatingAdmissionWebhook"
# kube's RecommendedPluginOrder for a generic server, minus the CEL admission policies (not built yet).
GENERIC_PLUGINS = (NAMESPACE_LIFECYCLE, MUTATING_WEBHOOK, VALIDATING_WEBHOOK)


@dataclass(slots=True)
class AdmissionOptions:
    kubeconfig: Path | None = None
    admission_control_config_file: Path | None = None
    enable_admission_plugins: list[str] = field(default_factory=list)
    disable_admission_plugins: list[str] = field(default_factory=list)
    enable_aggregator_routing: bool = False

    @staticmethod
    def add_flags(parser: argparse.ArgumentParser) -> None:
        g = parser.add_argument_group("admission")
        add_path(
            g,
            "--kubeconfig",
            "kubeconfig file pointing at the 'core' kubernetes server. Admission uses it to watch "
            "namespaces and admission webhook configurations. If empty, the in-cluster config is used when "
            "running in a pod; otherwise the server runs standalone and the cluster-backed plugins "
            "(NamespaceLifecycle, MutatingAdmissionWebhook, ValidatingAdmissionWebhook) are off, since "
            "there are no namespaces or webhook configurations to consult.",
        )
        names = ", ".join(GENERIC_PLUGINS)
        add_list(
            g,
            "--enable-admission-plugins",
            [],
            f"admission plugins that should be enabled in addition to default enabled ones ({names}, and "
            "the API groups' own plugins, e.g. PizzaToppings, BanFlunder). Comma-delimited list of admission "
            "plugins. The order of plugins in this flag does not matter.",
        )
        add_list(
            g,
            "--disable-admission-plugins",
            [],
            f"admission plugins that should be disabled although they are in the default enabled plugins "
            f"list ({names}, and the API groups' own plugins). Comma-delimited list of admission plugins. "
            "The order of plugins in this flag does not matter.",
        )
        add_path(
            g,
            "--admission-control-config-file",
            "File with admission control configuration (apiserver.config.k8s.io/v1 AdmissionConfiguration). "
            "For MutatingAdmissionWebhook and ValidatingAdmissionWebhook, a WebhookAdmission configuration's "
            "kubeConfigFile gives the credentials to present to webhooks.",
        )
        add_bool(
            g,
            "--enable-aggregator-routing",
            False,
            "Turns on routing of admission webhook calls for `service` clientConfigs to endpoint IPs (a "
            "ready endpoint from the service's EndpointSlices, as kube-apiserver's flag of this name does) "
            "rather than to the service's DNS name <name>.<namespace>.svc, which stays the TLS server name. "
            "Needs get/list/watch on services and endpointslices.",
        )

    def validate(self) -> list[str]:
        """kube's AdmissionOptions.Validate (the unknown-name check happens at start, see the docstring)."""
        problems: list[str] = []
        overlap = sorted(set(self.enable_admission_plugins) & set(self.disable_admission_plugins))
        if overlap:
            problems.append(
                f"[{' '.join(overlap)}] in enable-admission-plugins and disable-admission-plugins overlapped"
            )
        return problems

    def enabled(self, name: str) -> bool:
        """Every known plugin is on by default (kube's DefaultOffPlugins is empty for a generic server)."""
        return name in self.enable_admission_plugins or name not in self.disable_admission_plugins

    def unknown_names(self, known: set[str]) -> list[str]:
        problems = [
            f'enable-admission-plugins plugin "{n}" is unknown'
            for n in self.enable_admission_plugins
            if n not in known
        ]
        problems += [
            f'disable-admission-plugins plugin "{n}" is unknown'
            for n in self.disable_admission_plugins
            if n not in known
        ]
        return problems
