"""The audit policy (audit.k8s.io/v1 Policy): loading, validation, and which level a request gets.

A port of k8s.io/apiserver pkg/audit/policy/{reader,checker}.go and pkg/apis/audit/validation. The
first rule that matches decides the level; no match means None. Operators write these files for
kube-apiserver too, so a file accepted (or refused) there is accepted (or refused) here, with the same
messages.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from apis.meta import field
from apis.meta.user import UserInfo
from server.request_info import RequestInfo

LEVEL_NONE = "None"
LEVEL_METADATA = "Metadata"
LEVEL_REQUEST = "Request"
LEVEL_REQUEST_RESPONSE = "RequestResponse"
LEVELS = (LEVEL_NONE, LEVEL_METADATA, LEVEL_REQUEST, LEVEL_REQUEST_RESPONSE)

STAGE_REQUEST_RECEIVED = "RequestReceived"
STAGE_RESPONSE_STARTED = "ResponseStarted"
STAGE_RESPONSE_COMPLETE = "ResponseComplete"
STAGE_PANIC = "Panic"
STAGES = (STAGE_REQUEST_RECEIVED, STAGE_RESPONSE_STARTED, STAGE_RESPONSE_COMPLETE, STAGE_PANIC)

GROUP_VERSION = "audit.k8s.io/v1"

_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS1123_SUBDOMAIN_MESSAGE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
    "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)


def level_rank(level: str) -> int:
    """Levels are ordered None < Metadata < Request < RequestResponse (kube's Level.Less)."""
    return LEVELS.index(level)


@dataclass(frozen=True, slots=True)
class GroupResources:
    group: str = ""
    resources: tuple[str, ...] = ()
    resource_names: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PolicyRule:
    level: str
    users: tuple[str, ...] = ()
    user_groups: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ()
    resources: tuple[GroupResources, ...] = ()
    namespaces: tuple[str, ...] = ()
    non_resource_urls: tuple[str, ...] = ()
    omit_stages: frozenset[str] = frozenset()
    # None: the policy-wide omitManagedFields applies.
    omit_managed_fields: bool | None = None


@dataclass(frozen=True, slots=True)
class RequestAuditConfig:
    """What the policy decided for one request (kube's RequestAuditConfig)."""

    level: str
    omit_stages: frozenset[str] = frozenset()
    omit_managed_fields: bool = False


@dataclass(frozen=True, slots=True)
class Policy:
    rules: tuple[PolicyRule, ...]
    omit_stages: frozenset[str] = frozenset()
    omit_managed_fields: bool = False
    # The answer of each rule, and of no rule, made once: evaluate runs on every request.
    _answers: tuple[RequestAuditConfig, ...] = dataclasses.field(init=False, repr=False, compare=False)
    _default: RequestAuditConfig = dataclasses.field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        answers = tuple(
            RequestAuditConfig(
                rule.level,
                rule.omit_stages | self.omit_stages,
                self.omit_managed_fields if rule.omit_managed_fields is None else rule.omit_managed_fields,
            )
            for rule in self.rules
        )
        object.__setattr__(self, "_answers", answers)
        object.__setattr__(
            self, "_default", RequestAuditConfig(LEVEL_NONE, self.omit_stages, self.omit_managed_fields)
        )

    def evaluate(self, user: UserInfo | None, info: RequestInfo) -> RequestAuditConfig:
        """First matching rule wins; its omitStages are unioned with the policy's (kube's NewChecker)."""
        for rule, answer in zip(self.rules, self._answers, strict=True):
            if rule_matches(rule, user, info):
                return answer
        return self._default


def rule_matches(rule: PolicyRule, user: UserInfo | None, info: RequestInfo) -> bool:
    if rule.users and (user is None or user.name not in rule.users):
        return False
    if rule.user_groups and (user is None or not any(g in rule.user_groups for g in user.groups)):
        return False
    if rule.verbs and info.verb not in rule.verbs:
        return False
    if rule.namespaces or rule.resources:
        return _matches_resource(rule, info)
    if rule.non_resource_urls:
        return not info.is_resource_request and any(
            _path_matches(info.path, s) for s in rule.non_resource_urls
        )
    return True


def _path_matches(path: str, spec: str) -> bool:
    if spec in ("*", path):
        return True
    return spec.endswith("*") and path.startswith(spec.rstrip("*"))


def _matches_resource(rule: PolicyRule, info: RequestInfo) -> bool:
    if not info.is_resource_request:
        return False
    # Cluster-scoped resources have the empty namespace, which a rule can list as "".
    if rule.namespaces and info.namespace not in rule.namespaces:
        return False
    if not rule.resources:
        return True
    resource, subresource = info.resource, info.subresource
    combined = f"{resource}/{subresource}" if subresource else resource
    for gr in rule.resources:
        if gr.group != info.api_group:
            continue
        if not gr.resources:
            return True
        for res in gr.resources:
            if gr.resource_names and info.name not in gr.resource_names:
                continue
            if res in (combined, "*"):
                return True
            if subresource and res.startswith("*/") and subresource == res[2:]:
                return True
            if res.endswith("/*") and resource == res[:-2]:
                return True
    return False


# --- loading ----------------------------------------------------------------------------------


class PolicyError(ValueError):
    """A policy file that kube-apiserver would refuse to start with."""


def load_policy(path: str) -> Policy:
    """Read and check a policy file. Synchronous file I/O: call through asyncio.to_thread."""
    if not path:
        raise PolicyError("file path not specified")
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as err:
        raise PolicyError(f'failed to read file path "{path}": {err}') from None
    try:
        return parse_policy(data)
    except PolicyError as err:
        raise PolicyError(f"{err}: from file {path}") from None


def parse_policy(data: bytes) -> Policy:
    """Decode (JSON or YAML), check apiVersion/kind, validate, refuse an empty rule list."""
    try:
        doc = yaml.safe_load(data)
    except yaml.YAMLError as err:
        raise PolicyError(f"failed decoding: {err}") from None
    if not isinstance(doc, dict):
        raise PolicyError("failed decoding: couldn't get version/kind; json parse error")
    kind, api_version = doc.get("kind"), doc.get("apiVersion")
    if not kind:
        raise PolicyError("failed decoding: Object 'Kind' is missing in policy")
    if not api_version:
        raise PolicyError("failed decoding: Object 'apiVersion' is missing in policy")
    if api_version != GROUP_VERSION or kind != "Policy":
        # Only audit.k8s.io/v1 is registered since kube 1.24 removed v1alpha1 and v1beta1.
        raise PolicyError(f'failed decoding: no kind "{kind}" is registered for version "{api_version}"')
    raw_rules = _list(doc, "rules", "Policy")
    policy = Policy(
        rules=tuple(_rule(r) for r in raw_rules),
        omit_stages=frozenset(_strings(doc, "omitStages", "Policy")),
        omit_managed_fields=_bool(doc, "omitManagedFields", "Policy") or False,
    )
    problems = validate_policy(raw_rules, _strings(doc, "omitStages", "Policy"))
    if problems:
        messages = [str(p) for p in problems]
        raise PolicyError(messages[0] if len(messages) == 1 else f"[{', '.join(messages)}]")
    if not policy.rules:
        raise PolicyError("loaded illegal policy with 0 rules")
    return policy


def _rule(raw: Any) -> PolicyRule:
    if not isinstance(raw, dict):
        raise PolicyError("failed decoding: json: cannot unmarshal rule into Go value of type v1.PolicyRule")
    resources = tuple(
        GroupResources(
            group=_string(gr, "group", "GroupResources"),
            resources=tuple(_strings(gr, "resources", "GroupResources")),
            resource_names=tuple(_strings(gr, "resourceNames", "GroupResources")),
        )
        for gr in _list(raw, "resources", "PolicyRule")
    )
    return PolicyRule(
        level=_string(raw, "level", "PolicyRule"),
        users=tuple(_strings(raw, "users", "PolicyRule")),
        user_groups=tuple(_strings(raw, "userGroups", "PolicyRule")),
        verbs=tuple(_strings(raw, "verbs", "PolicyRule")),
        resources=resources,
        namespaces=tuple(_strings(raw, "namespaces", "PolicyRule")),
        non_resource_urls=tuple(_strings(raw, "nonResourceURLs", "PolicyRule")),
        omit_stages=frozenset(_strings(raw, "omitStages", "PolicyRule")),
        omit_managed_fields=_bool(raw, "omitManagedFields", "PolicyRule"),
    )


def validate_policy(
    raw_rules: Sequence[Mapping[str, Any]], omit_stages: Sequence[str] = ()
) -> list[field.FieldError]:
    """kube's ValidatePolicy over the decoded policy, in kube's order."""
    problems = _validate_omit_stages(omit_stages, field.Path("omitStages"))
    for i, rule in enumerate(raw_rules):
        path = field.Path("rules").index(i)
        level = rule.get("level") or ""
        if not level:
            problems.append(field.required(path.child("level")))
        elif level not in LEVELS:
            problems.append(field.not_supported(path.child("level"), level, list(LEVELS)))
        urls = rule.get("nonResourceURLs") or []
        for j, url in enumerate(urls):
            if url == "*":
                continue
            if not url.startswith("/"):
                problems.append(
                    field.invalid(
                        path.child("nonResourceURLs").index(j),
                        url,
                        "non-resource URL rules must begin with a '/' character",
                    )
                )
            if url and "*" in url[:-1]:
                problems.append(
                    field.invalid(
                        path.child("nonResourceURLs").index(j),
                        url,
                        "non-resource URL wildcards '*' must be the final character of the rule",
                    )
                )
        for gr in rule.get("resources") or []:
            problems += _validate_group_resources(gr, path.child("resources"))
        problems += _validate_omit_stages(rule.get("omitStages") or [], path.child("omitStages"))
        if urls and (rule.get("resources") or rule.get("namespaces")):
            problems.append(
                field.invalid(
                    path.child("nonResourceURLs"),
                    list(urls),
                    "rules cannot apply to both regular resources and non-resource URLs",
                )
            )
    return problems


def _validate_omit_stages(stages: Sequence[str], path: field.Path) -> list[field.FieldError]:
    return [
        field.invalid(path.index(j), stage, "allowed stages are " + ",".join(STAGES))
        for j, stage in enumerate(stages)
        if stage not in STAGES
    ]


def _validate_group_resources(gr: Mapping[str, Any], path: field.Path) -> list[field.FieldError]:
    problems: list[field.FieldError] = []
    group = gr.get("group") or ""
    if group:
        messages = []
        if len(group) > 253:
            messages.append("must be no more than 253 characters")
        if not _DNS1123_SUBDOMAIN.match(group):
            messages.append(_DNS1123_SUBDOMAIN_MESSAGE)
        if messages:
            problems.append(field.invalid(path.child("group"), group, ",".join(messages)))
    if gr.get("resourceNames") and not gr.get("resources"):
        problems.append(
            field.invalid(
                path.child("resourceNames"),
                list(gr["resourceNames"]),
                "using resourceNames requires at least one resource",
            )
        )
    return problems


def _list(doc: Mapping[str, Any], key: str, owner: str) -> list[Any]:
    value = doc.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise PolicyError(_type_error(value, owner, key, "[]"))
    return value


def _strings(doc: Mapping[str, Any], key: str, owner: str) -> list[str]:
    items = _list(doc, key, owner)
    for item in items:
        if not isinstance(item, str):
            raise PolicyError(_type_error(item, owner, key, "string"))
    return items


def _string(doc: Mapping[str, Any], key: str, owner: str) -> str:
    value = doc.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise PolicyError(_type_error(value, owner, key, "string"))
    return value


def _bool(doc: Mapping[str, Any], key: str, owner: str) -> bool | None:
    value = doc.get(key)
    if value is not None and not isinstance(value, bool):
        raise PolicyError(_type_error(value, owner, key, "bool"))
    return value


def _type_error(value: Any, owner: str, key: str, want: str) -> str:
    """Shaped like encoding/json's UnmarshalTypeError, which kube's decoder reports."""
    got = {bool: "bool", int: "number", float: "number", str: "string", list: "array", dict: "object"}
    return (
        f"failed decoding: json: cannot unmarshal {got.get(type(value), 'value')} into Go struct field "
        f"{owner}.{key} of type {want}"
    )
