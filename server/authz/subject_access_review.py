"""Delegated authorization: ask the cluster with a SubjectAccessReview, and cache the answer.

A port of k8s.io/apiserver plugin/pkg/authorizer/webhook as DelegatingAuthorizerConfig sets it up:
- the review carries the user (name, uid, groups, extra) and either resourceAttributes (group, version,
  resource, subresource, namespace, name, verb, plus field and label selector requirements, as kube
  sends with AuthorizeWithSelectors) or nonResourceAttributes (path, verb);
- `allowed` → allow, `denied` → deny, neither → no opinion (later authorizers may decide), both → deny
  with an error; the reason is kept for the 403 message;
- answers are cached by the review's spec: allowed ones for --authorization-webhook-cache-authorized-ttl,
  the rest for --authorization-webhook-cache-unauthorized-ttl, in an LRU of `CACHE_SIZE` entries, unless
  the caller-controlled attributes are huge (a cache-flooding guard);
- a failed call is "no opinion" with the error, never cached: the filter answers 500 unless someone
  else allowed the request.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from apis.meta.fields import EQUALS, parse_field_selector
from apis.meta.labels import Operator, parse_label_selector
from server.authz.interface import ALLOW, NO_OPINION, AuthzAttributes, Decision, Verdict
from server.cluster.cache import ExpiringLRU
from server.cluster.client import ClusterClient, ClusterError

logger = logging.getLogger(__name__)

SUBJECT_ACCESS_REVIEW_PATH = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
# The book and older kube: 1,024 entries (kube 1.36's webhook authorizer keeps 8192).
CACHE_SIZE = 1024
MAX_CONTROLLED_ATTR_CACHE_SIZE = 10000

_LABEL_OPERATORS = {
    Operator.EQUALS: "In",
    Operator.DOUBLE_EQUALS: "In",
    Operator.IN: "In",
    Operator.NOT_EQUALS: "NotIn",
    Operator.NOT_IN: "NotIn",
    Operator.EXISTS: "Exists",
    Operator.DOES_NOT_EXIST: "DoesNotExist",
}


class SubjectAccessReviewAuthorizer:
    __slots__ = ("_authorized_ttl", "_cache", "_client", "_unauthorized_ttl")

    def __init__(
        self,
        client: ClusterClient,
        *,
        authorized_ttl: float,
        unauthorized_ttl: float,
        cache: ExpiringLRU[dict[str, Any]] | None = None,
    ) -> None:
        self._client = client
        self._authorized_ttl = authorized_ttl
        self._unauthorized_ttl = unauthorized_ttl
        self._cache: ExpiringLRU[dict[str, Any]] = cache if cache is not None else ExpiringLRU(CACHE_SIZE)

    def decide_now(self, attrs: AuthzAttributes) -> Decision | None:
        """The cached review's decision; None when the review must be asked."""
        status = self._cache.get(_cache_key(review_spec(attrs)))
        return None if status is None else _decision(status)

    async def authorize(self, attrs: AuthzAttributes) -> Decision:
        spec = review_spec(attrs)
        key = _cache_key(spec)
        status = self._cache.get(key)
        if status is None:
            body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}
            try:
                answer = await self._client.create(SUBJECT_ACCESS_REVIEW_PATH, body)
            except ClusterError as err:
                logger.error("Failed to make webhook authorizer request: %s", err)
                return Decision(Verdict.NO_OPINION, "", str(err))
            status = answer.get("status") or {}
            if _should_cache(attrs):
                ttl = self._authorized_ttl if status.get("allowed") else self._unauthorized_ttl
                self._cache.add(key, status, ttl)
        return _decision(status)


def _cache_key(spec: dict[str, Any]) -> str:
    return json.dumps(spec, sort_keys=True, separators=(",", ":"))


def _decision(status: dict[str, Any]) -> Decision:
    """kube's webhook authorizer reading a SubjectAccessReview status."""
    reason = str(status.get("reason") or "")
    allowed, denied = bool(status.get("allowed")), bool(status.get("denied"))
    if allowed and denied:
        return Decision(
            Verdict.DENY, reason, "webhook subject access review returned both allow and deny response"
        )
    if denied:
        return Decision(Verdict.DENY, reason)
    if allowed:
        return Decision(Verdict.ALLOW, reason) if reason else ALLOW
    return Decision(Verdict.NO_OPINION, reason) if reason else NO_OPINION


def review_spec(attrs: AuthzAttributes) -> dict[str, Any]:
    """The SubjectAccessReview spec, fields omitted when empty as Go's `omitempty` does."""
    user = attrs.user
    spec: dict[str, Any] = {"user": user.name} if user.name else {}
    if user.groups:
        spec["groups"] = list(user.groups)
    if user.extra:
        spec["extra"] = {k: list(v) for k, v in user.extra.items()}
    if user.uid:
        spec["uid"] = user.uid
    if attrs.is_resource_request:
        attributes = {
            "namespace": attrs.namespace,
            "verb": attrs.verb,
            "group": attrs.api_group,
            "version": attrs.api_version,
            "resource": attrs.resource,
            "subresource": attrs.subresource,
            "name": attrs.name,
        }
        resource: dict[str, Any] = {k: v for k, v in attributes.items() if v}
        if fields := _field_requirements(attrs.request.field_selector):
            resource["fieldSelector"] = {"requirements": fields}
        if labels := _label_requirements(attrs.request.label_selector):
            resource["labelSelector"] = {"requirements": labels}
        spec["resourceAttributes"] = resource
    else:
        spec["nonResourceAttributes"] = {k: v for k, v in (("path", attrs.path), ("verb", attrs.verb)) if v}
    return spec


def _field_requirements(selector: str) -> list[dict[str, Any]]:
    """Selectors only narrow a request, so one that does not parse is left out (kube does the same)."""
    if not selector:
        return []
    try:
        parsed = parse_field_selector(selector)
    except ValueError:
        return []
    return [
        {"key": field, "operator": "In" if op == EQUALS else "NotIn", "values": [value]}
        for field, op, value in parsed.requirements
    ]


def _label_requirements(selector: str) -> list[dict[str, Any]]:
    if not selector:
        return []
    try:
        parsed = parse_label_selector(selector)
    except ValueError:
        return []
    out: list[dict[str, Any]] = []
    for requirement in parsed.requirements:
        operator = _LABEL_OPERATORS.get(requirement.operator)
        if operator is None:
            continue  # Gt/Lt: dropping an ANDed requirement only widens what is checked
        entry: dict[str, Any] = {"key": requirement.key, "operator": operator}
        if requirement.values:
            entry["values"] = list(requirement.values)
        out.append(entry)
    return out


def _should_cache(attrs: AuthzAttributes) -> bool:
    size = sum(
        len(v)
        for v in (
            attrs.namespace,
            attrs.verb,
            attrs.api_group,
            attrs.api_version,
            attrs.resource,
            attrs.subresource,
            attrs.name,
            attrs.path,
        )
    )
    return size < MAX_CONTROLLED_ATTR_CACHE_SIZE
