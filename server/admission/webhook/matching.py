"""Which hooks a request reaches, and in which version: kube's Webhook.ShouldCallHook.

Order and error rules are kube's (pkg/admission/plugin/webhook/generic/webhook.go): namespaceSelector,
objectSelector, rules, the Equivalent fallback, then matchConditions. A selector error is returned only
when a rule matched (a hook that does not apply to the request never fails it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from apis.meta import errors
from apis.meta.errors import StatusError
from registry.generic.admission import Attributes
from server.admission.metrics import AdmissionMetrics
from server.admission.namespace_lifecycle import live_namespace
from server.admission.webhook.hooks import Hook, MatchCondition, Rule
from server.cluster.client import ClusterClient
from server.cluster.informer import Informer


@dataclass(frozen=True, slots=True)
class Invocation:
    """A hook to call, with the version of the resource it asked for (kube's WebhookInvocation)."""

    hook: Hook
    version: str
    resource: str
    subresource: str


@dataclass(frozen=True, slots=True)
class MatchResult:
    matches: bool
    errors: tuple[str, ...] = ()
    # Conditions kube counts in apiserver_admission_match_condition_evaluation_errors: those that
    # failed before the first false one, in order (none when the whole evaluation ran out of budget).
    counted_errors: int = 0


class ConditionEvaluator(Protocol):
    """Evaluates a hook's matchConditions (CEL) against the request: the seam where CEL plugs in.

    `request` is the admission/v1 AdmissionRequest the hook would receive (object, oldObject,
    request fields). Kube's rule applies to the result: any false condition skips the hook; otherwise
    errors fail the request (failurePolicy Fail) or skip the hook (Ignore). Async because a condition
    may ask the authorizer (a SubjectAccessReview) for the requesting user.
    """

    async def evaluate(
        self, hook: Hook, conditions: tuple[MatchCondition, ...], request: dict[str, Any]
    ) -> MatchResult: ...


def rule_matches(rule: Rule, attrs: Attributes, version: str, resource: str) -> bool:
    """rules.Matcher.Matches: scope, operation, group, version, resource/subresource."""
    is_namespace = attrs.group == "" and resource == "namespaces"
    if rule.scope == "Namespaced" and (is_namespace or not attrs.namespace):
        return False
    if rule.scope == "Cluster" and not (is_namespace or not attrs.namespace):
        return False
    if rule.scope not in ("*", "Namespaced", "Cluster"):
        return False
    if not ("*" in rule.operations or attrs.operation.value in rule.operations):
        return False
    if not ("*" in rule.api_groups or attrs.group in rule.api_groups):
        return False
    if not ("*" in rule.api_versions or version in rule.api_versions):
        return False
    for entry in rule.resources:
        res, _, sub = entry.partition("/")
        if (res == "*" or res == resource) and (sub == "*" or sub == attrs.subresource):
            return True
    return False


def _equivalent_versions(attrs: Attributes) -> list[str]:
    """EquivalentResourcesFor: the same resource in the group's other served versions."""
    if attrs.codec is None:
        return []
    return [v for v in attrs.codec.kind.versions if v != attrs.version]


def match_rules(hook: Hook, attrs: Attributes) -> Invocation | None:
    for rule in hook.rules:
        if rule_matches(rule, attrs, attrs.version, attrs.resource):
            return Invocation(hook, attrs.version, attrs.resource, attrs.subresource)
    if hook.match_policy != "Equivalent":
        return None
    for rule in hook.rules:  # honour earlier rules first
        for version in _equivalent_versions(attrs):
            if rule_matches(rule, attrs, version, attrs.resource):
                return Invocation(hook, version, attrs.resource, attrs.subresource)
    return None


def _labels(obj: Any) -> dict[str, str] | None:
    """The labels of a hub object, or None when there is no object (DELETE's new object, CONNECT)."""
    if obj is None:
        return None
    metadata = getattr(obj, "metadata", None)
    if not isinstance(metadata, dict):
        return None
    return dict(metadata.get("labels") or {})


@dataclass
class Matcher:
    namespaces: Informer
    client: ClusterClient
    conditions: ConditionEvaluator
    metrics: AdmissionMetrics | None = None

    async def _namespace_labels(self, attrs: Attributes) -> dict[str, str]:
        namespace = self.namespaces.get(attrs.namespace)
        if namespace is None:
            namespace = await live_namespace(self.client, attrs.namespace)
        return dict((namespace.get("metadata") or {}).get("labels") or {})

    async def _namespace_matches(self, hook: Hook, attrs: Attributes) -> bool:
        if not attrs.namespace and not (attrs.group == "" and attrs.resource == "namespaces"):
            return True  # cluster-scoped objects are never exempted
        if hook.selector_error is not None:
            raise errors.internal_error(hook.selector_error)
        selector = hook.namespace_selector
        if selector is None or selector.empty:
            return True
        return selector.matches(await self._namespace_labels(attrs))

    def _object_matches(self, hook: Hook, attrs: Attributes) -> bool:
        if hook.selector_error is not None:
            raise errors.internal_error(hook.selector_error)
        selector = hook.object_selector
        if selector is None or selector.empty:
            return True
        new, old = _labels(attrs.object), _labels(attrs.old_object)
        return any(labels is not None and selector.matches(labels) for labels in (new, old))

    async def should_call(self, hook: Hook, attrs: Attributes, request_for: Any) -> Invocation | None:
        """The invocation, None to skip the hook, or a StatusError (raised) that fails the request.

        `request_for(invocation)` builds the AdmissionRequest the condition evaluator sees.
        """
        ns_error: StatusError | None = None
        try:
            if not await self._namespace_matches(hook, attrs):
                return None
        except StatusError as err:
            ns_error = err
        obj_error: StatusError | None = None
        try:
            if not self._object_matches(hook, attrs):
                return None
        except StatusError as err:
            obj_error = err
        invocation = match_rules(hook, attrs)
        if invocation is None:
            return None
        if ns_error is not None:
            raise ns_error
        if obj_error is not None:
            raise obj_error
        if hook.match_conditions:
            result = await self.conditions.evaluate(hook, hook.match_conditions, request_for(invocation))
            operation = attrs.operation.value
            if self.metrics is not None:
                self.metrics.observe_match_condition_errors(
                    hook.name, hook.type, operation, result.counted_errors
                )
            # kube counts an exclusion whenever the hook is skipped for its conditions (a false one, or
            # errors under failurePolicy Ignore), never when they fail the request.
            if not result.matches or (result.errors and hook.failure_policy == "Ignore"):
                if self.metrics is not None:
                    self.metrics.observe_match_condition_exclusion(hook.name, hook.type, operation)
                return None
            if result.errors:
                why = result.errors[0] if len(result.errors) == 1 else "[" + ", ".join(result.errors) + "]"
                raise errors.forbidden(attrs.group_resource, attrs.name, why)
        return invocation
