"""The server's admission plugins from the flags: the cluster-backed generic plugins when a cluster is
reachable, the groups' own plugins, the informers they share, and the readiness checks of those.

kube starts the shared informers in a post-start hook and reports their sync on /readyz; here they
start while the config is built (before the server listens) and the same checks report them:
`informer-sync`, `poststarthook/generic-apiserver-start-informers` and
`poststarthook/start-apiserver-admission-initializer` (the last fails until the caches have synced).
Standalone (no --kubeconfig, not in a pod) there are no namespaces or webhook configurations to read,
so NamespaceLifecycle and the webhook plugins are off; the groups' plugins still run.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from registry.generic.admission import MutatingPlugin, ValidatingPlugin
from registry.generic.installation import GroupInstallation
from server.admission.metrics import AdmissionMetrics
from server.admission.namespace_lifecycle import NAMESPACES_PATH, NamespaceLifecycle
from server.admission.options import (
    GENERIC_PLUGINS,
    MUTATING_WEBHOOK,
    NAMESPACE_LIFECYCLE,
    VALIDATING_WEBHOOK,
    AdmissionOptions,
)
from server.admission.webhook.calls import ClientManager
from server.admission.webhook.conditions import CelConditions
from server.admission.webhook.credentials import WebhookCredentials
from server.admission.webhook.hooks import MUTATING_PATH, VALIDATING_PATH, HookSource
from server.admission.webhook.matching import ConditionEvaluator, Matcher
from server.admission.webhook.plugins import MutatingWebhook, ValidatingWebhook
from server.admission.webhook.service_resolver import (
    ENDPOINT_SLICES_PATH,
    SERVICES_PATH,
    EndpointServiceResolver,
)
from server.authz.interface import Authorizer
from server.cluster.connections import ClusterConnections
from server.cluster.informer import Informer, SharedInformers
from server.health import HealthCheck

logger = logging.getLogger(__name__)

WEBHOOK_ADMISSION_KIND = "WebhookAdmission"


class AdmissionConfigError(ValueError):
    """--admission-control-config-file or the plugin names cannot be used."""


@dataclass
class Admission:
    mutating: list[MutatingPlugin] = field(default_factory=list)
    validating: list[ValidatingPlugin] = field(default_factory=list)
    informers: SharedInformers | None = None
    clients: ClientManager | None = None
    metrics: AdmissionMetrics = field(default_factory=AdmissionMetrics)
    options: AdmissionOptions = field(default_factory=AdmissionOptions)

    def group_plugins_enabled(self, name: str) -> bool:
        return self.options.enabled(name)

    def readiness_checks(self) -> list[HealthCheck]:
        informers = self.informers
        if informers is None:
            return []

        async def synced() -> None:
            if not informers.synced:
                raise RuntimeError("admission informers have not synced yet")

        async def started() -> None:
            return None

        return [
            HealthCheck("informer-sync", synced),
            HealthCheck("poststarthook/generic-apiserver-start-informers", started),
            HealthCheck("poststarthook/start-apiserver-admission-initializer", synced),
        ]

    async def close(self) -> None:
        if self.informers is not None:
            await self.informers.stop()
        if self.clients is not None:
            await self.clients.close()


def webhook_kubeconfig(config_file: Path | None) -> dict[str, Path]:
    """The WebhookAdmission kubeConfigFile per webhook plugin from an AdmissionConfiguration.
    Reads files: call it off the loop."""
    if config_file is None:
        return {}
    try:
        document = yaml.safe_load(config_file.read_text()) or {}
    except (OSError, yaml.YAMLError) as err:
        raise AdmissionConfigError(f"failed to read plugin config: {err}") from None
    if document.get("kind") != "AdmissionConfiguration":
        raise AdmissionConfigError(
            f"failed to read plugin config: {config_file} is not an AdmissionConfiguration"
        )
    found: dict[str, Path] = {}
    for plugin in document.get("plugins") or []:
        name = str(plugin.get("name", ""))
        configuration = plugin.get("configuration")
        if configuration is None and plugin.get("path"):
            path = Path(plugin["path"])
            path = path if path.is_absolute() else config_file.parent / path
            try:
                configuration = yaml.safe_load(path.read_text()) or {}
            except (OSError, yaml.YAMLError) as err:
                raise AdmissionConfigError(f"failed to read plugin config: {err}") from None
        if name in (MUTATING_WEBHOOK, VALIDATING_WEBHOOK) and isinstance(configuration, dict):
            if configuration.get("kind") != WEBHOOK_ADMISSION_KIND:
                raise AdmissionConfigError(
                    f"failed to read plugin config: {name} expects a {WEBHOOK_ADMISSION_KIND}"
                )
            if configuration.get("kubeConfigFile"):
                kubeconfig = Path(configuration["kubeConfigFile"])
                if not kubeconfig.is_absolute():
                    raise AdmissionConfigError(
                        f"failed to read plugin config: kubeConfigFile {kubeconfig} must be an absolute path"
                    )
                found[name] = kubeconfig
    return found


async def start_admission(
    options: AdmissionOptions,
    connections: ClusterConnections,
    installations: list[GroupInstallation],
    *,
    conditions: ConditionEvaluator | None = None,
    authorizer: Authorizer | None = None,
) -> Admission:
    """Build the generic plugins and start their informers (the caller closes the result).

    `authorizer` is the server's authorization chain, which matchConditions reach as `authorizer`."""
    known = set(GENERIC_PLUGINS)
    for installation in installations:
        known |= {p.name for p in installation.mutating} | {p.name for p in installation.validating}
    problems = options.unknown_names(known)
    if problems:
        raise AdmissionConfigError("; ".join(problems))
    admission = Admission(options=options)
    credentials_files = await asyncio.to_thread(webhook_kubeconfig, options.admission_control_config_file)
    client = await connections.open(options.kubeconfig, "admission")
    if client is None:
        logger.info("admission: standalone (no cluster), NamespaceLifecycle and webhooks are off")
        return admission
    informers = SharedInformers(client)
    namespaces = informers.informer(NAMESPACES_PATH)
    admission.informers = informers
    if options.enabled(NAMESPACE_LIFECYCLE):
        admission.mutating.append(NamespaceLifecycle(namespaces, client))
    # One credentials file serves both plugins in practice; the mutating one's wins when they differ.
    kubeconfig = credentials_files.get(MUTATING_WEBHOOK) or credentials_files.get(VALIDATING_WEBHOOK)
    credentials = await asyncio.to_thread(WebhookCredentials.load, kubeconfig) if kubeconfig else None
    webhooks = [options.enabled(MUTATING_WEBHOOK), options.enabled(VALIDATING_WEBHOOK)]
    if any(webhooks):
        resolver = None
        if options.enable_aggregator_routing:
            resolver = EndpointServiceResolver(
                informers.informer(SERVICES_PATH), informers.informer(ENDPOINT_SLICES_PATH)
            )
        admission.clients = ClientManager(credentials, resolver)
        matcher = Matcher(namespaces, client, conditions or CelConditions(authorizer), admission.metrics)
        for enabled, path, mutating in (
            (webhooks[0], MUTATING_PATH, True),
            (webhooks[1], VALIDATING_PATH, False),
        ):
            if not enabled:
                continue
            source = HookSource(informers.informer(path), mutating)
            configs = informers.informer(path)

            async def ready(
                timeout: float,
                configs: Informer = configs,
                resolver: EndpointServiceResolver | None = resolver,
            ) -> bool:
                return (
                    await namespaces.wait_synced(timeout)
                    and await configs.wait_synced(timeout)
                    and (resolver is None or await resolver.wait_synced(timeout))
                )

            if mutating:
                admission.mutating.append(
                    MutatingWebhook(source, matcher, admission.clients, admission.metrics, ready)
                )
            else:
                admission.validating.append(
                    ValidatingWebhook(source, matcher, admission.clients, admission.metrics, ready)
                )
    informers.start()
    names = [p.name for p in admission.mutating] + [p.name for p in admission.validating]
    logger.info(
        "admission: %s, using %s", ", ".join(names) or "no cluster-backed plugins", client.description
    )
    return admission
