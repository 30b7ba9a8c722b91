"""The cluster's admissionregistration.k8s.io/v1 webhook configurations, parsed once per change.

kube's configuration managers (pkg/admission/configuration) turn the informer's objects into one list
of webhook accessors, configurations sorted by name and hooks in list order, rebuilt when the informer
changes, with selectors parsed once per hook. Fields are read with the v1 API's defaults (the cluster
has already defaulted and validated them, but a defaulted read keeps a hand-written object working).
A selector that cannot be parsed is kept as its error: kube answers it with a 500 only when a request
reaches that hook.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from typing import Any

from apis.meta.labels import LabelSelector, SelectorError, selector_from_label_selector_dict
from server.cluster.informer import Informer

MUTATING_PATH = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
VALIDATING_PATH = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
DEFAULT_TIMEOUT_SECONDS = 10


@dataclass(frozen=True, slots=True)
class Rule:
    operations: tuple[str, ...]
    api_groups: tuple[str, ...]
    api_versions: tuple[str, ...]
    resources: tuple[str, ...]
    scope: str = "*"


@dataclass(frozen=True, slots=True)
class MatchCondition:
    name: str
    expression: str


@dataclass(frozen=True, slots=True)
class ClientConfig:
    url: str | None
    service_namespace: str = ""
    service_name: str = ""
    service_path: str = ""
    service_port: int = 443
    ca_bundle: bytes = b""  # PEM, decoded from the base64 of the API object

    @property
    def target(self) -> str:
        """The URL to POST to: `url` as given, or kube's service URL `https://<svc>.<ns>.svc:<port><path>`."""
        if self.url is not None:
            return self.url
        return f"https://{self.server_name}:{self.service_port}{self.service_path}"

    @property
    def server_name(self) -> str:
        return f"{self.service_name}.{self.service_namespace}.svc"


@dataclass(frozen=True, slots=True)
class Hook:
    name: str
    configuration: str
    index: int  # position in the configuration (kube's UID is <configuration>/<name>/<index>)
    mutating: bool
    rules: tuple[Rule, ...]
    client: ClientConfig
    failure_policy: str = "Fail"
    match_policy: str = "Equivalent"
    namespace_selector: LabelSelector | None = None
    object_selector: LabelSelector | None = None
    selector_error: str | None = None
    side_effects: str | None = None
    timeout_seconds: int = DEFAULT_TIMEOUT_SECONDS
    review_versions: tuple[str, ...] = ("v1",)
    reinvocation_policy: str = "Never"
    match_conditions: tuple[MatchCondition, ...] = ()

    @property
    def uid(self) -> str:
        return f"{self.configuration}/{self.name}/{self.index}"

    @property
    def type(self) -> str:
        """The `type` label of kube's webhook metrics."""
        return "admit" if self.mutating else "validating"


def _rule(raw: dict[str, Any]) -> Rule:
    return Rule(
        operations=tuple(raw.get("operations") or ()),
        api_groups=tuple(raw.get("apiGroups") or ()),
        api_versions=tuple(raw.get("apiVersions") or ()),
        resources=tuple(raw.get("resources") or ()),
        scope=str(raw.get("scope") or "*"),
    )


def _client(raw: dict[str, Any]) -> ClientConfig:
    bundle = raw.get("caBundle") or ""
    try:
        ca = base64.b64decode(bundle) if bundle else b""
    except (binascii.Error, ValueError):
        ca = b""
    service = raw.get("service")
    if isinstance(service, dict):
        return ClientConfig(
            url=None,
            service_namespace=str(service.get("namespace", "")),
            service_name=str(service.get("name", "")),
            service_path=str(service.get("path") or ""),
            service_port=int(service.get("port") or 443),
            ca_bundle=ca,
        )
    return ClientConfig(url=str(raw.get("url") or ""), ca_bundle=ca)


def parse_hook(raw: dict[str, Any], configuration: str, index: int, *, mutating: bool) -> Hook:
    selector_error = None
    namespace_selector = object_selector = None
    try:
        namespace_selector = selector_from_label_selector_dict(raw.get("namespaceSelector") or {})
        object_selector = selector_from_label_selector_dict(raw.get("objectSelector") or {})
    except (SelectorError, ValueError) as err:
        selector_error = str(err)
    side_effects = raw.get("sideEffects")
    return Hook(
        name=str(raw.get("name", "")),
        configuration=configuration,
        index=index,
        mutating=mutating,
        rules=tuple(_rule(r) for r in raw.get("rules") or () if isinstance(r, dict)),
        client=_client(raw.get("clientConfig") or {}),
        failure_policy=str(raw.get("failurePolicy") or "Fail"),
        match_policy=str(raw.get("matchPolicy") or "Equivalent"),
        namespace_selector=namespace_selector,
        object_selector=object_selector,
        selector_error=selector_error,
        side_effects=str(side_effects) if side_effects is not None else None,
        timeout_seconds=int(raw.get("timeoutSeconds") or DEFAULT_TIMEOUT_SECONDS),
        review_versions=tuple(raw.get("admissionReviewVersions") or ("v1",)),
        reinvocation_policy=str(raw.get("reinvocationPolicy") or "Never") if mutating else "Never",
        match_conditions=tuple(
            MatchCondition(str(c.get("name", "")), str(c.get("expression", "")))
            for c in raw.get("matchConditions") or ()
            if isinstance(c, dict)
        ),
    )


def parse_configurations(items: list[dict[str, Any]], *, mutating: bool) -> tuple[Hook, ...]:
    """kube's mutatingWebhookConfigurationManager.getConfiguration: sorted by name, hooks in order."""
    hooks: list[Hook] = []
    for item in sorted(items, key=lambda i: str((i.get("metadata") or {}).get("name", ""))):
        name = str((item.get("metadata") or {}).get("name", ""))
        for index, raw in enumerate(item.get("webhooks") or ()):
            if isinstance(raw, dict):
                hooks.append(parse_hook(raw, name, index, mutating=mutating))
    return tuple(hooks)


@dataclass
class HookSource:
    """The hooks of one kind of configuration, kept current from its informer."""

    informer: Informer
    mutating: bool
    hooks: tuple[Hook, ...] = field(default=())

    def __post_init__(self) -> None:
        self.informer.on_change(self._rebuild)
        self._rebuild()

    def _rebuild(self) -> None:
        self.hooks = parse_configurations(self.informer.items(), mutating=self.mutating)
