"""AdmissionReview requests and the checks on their answers (pkg/admission/plugin/webhook/request).

The request names the matched version (`kind`, `resource`) and the one the client used (`request*`);
objects are sent in the matched version. A v1 answer must be an admission.k8s.io/v1 AdmissionReview
with the request's uid; v1beta1 answers are taken as kube takes them (no uid or kind check, a patch is
always a JSONPatch).
"""

from __future__ import annotations

import base64
import binascii
import uuid
from dataclasses import dataclass, field
from typing import Any

from registry.generic.admission import Attributes
from server.admission.webhook.matching import Invocation

GROUP = "admission.k8s.io"
KNOWN_VERSIONS = ("v1", "v1beta1")


class InvalidResponse(ValueError):
    """The webhook answered something that is not a valid AdmissionReview response."""


@dataclass(frozen=True, slots=True)
class Response:
    allowed: bool
    result: dict[str, Any] | None
    patch: bytes = b""
    patch_type: str = ""
    audit_annotations: dict[str, str] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()


def review_version(invocation: Invocation) -> str | None:
    """The first AdmissionReview version the hook accepts that kube knows, else None."""
    for version in invocation.hook.review_versions:
        if version in KNOWN_VERSIONS:
            return version
    return None


def build_request(
    attrs: Attributes,
    invocation: Invocation,
    obj: dict[str, Any] | None,
    old: dict[str, Any] | None,
) -> dict[str, Any]:
    """The AdmissionRequest (without uid): `obj`/`old` are already in the invocation's version."""
    kind = attrs.kind
    user = attrs.user
    user_info: dict[str, Any] = {"username": user.name}
    if user.uid:
        user_info["uid"] = user.uid
    if user.groups:
        user_info["groups"] = list(user.groups)
    if user.extra:
        user_info["extra"] = {k: list(v) for k, v in user.extra.items()}
    request: dict[str, Any] = {
        "kind": {"group": attrs.group, "version": invocation.version, "kind": kind},
        "resource": {"group": attrs.group, "version": invocation.version, "resource": invocation.resource},
        "requestKind": {"group": attrs.group, "version": attrs.version, "kind": kind},
        "requestResource": {"group": attrs.group, "version": attrs.version, "resource": attrs.resource},
        "name": attrs.name or "",
        "operation": attrs.operation.value,
        "userInfo": user_info,
        "object": obj,
        "oldObject": old,
        "dryRun": attrs.dry_run,
        "options": attrs.options,
    }
    if invocation.subresource:
        request["subResource"] = invocation.subresource
        request["requestSubResource"] = attrs.subresource
    if attrs.namespace:
        request["namespace"] = attrs.namespace
    return request


def build_review(version: str, request: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """A fresh uid and the AdmissionReview to POST."""
    uid = str(uuid.uuid4())
    return uid, {
        "apiVersion": f"{GROUP}/{version}",
        "kind": "AdmissionReview",
        "request": {"uid": uid, **request},
    }


def verify_response(version: str, uid: str, mutating: bool, review: Any) -> Response:
    """VerifyAdmissionResponse, with kube's error texts."""
    if not isinstance(review, dict):
        raise InvalidResponse("webhook response was absent")
    response = review.get("response")
    if not isinstance(response, dict):
        raise InvalidResponse("webhook response was absent")
    raw_patch = response.get("patch")
    patch = b""
    if raw_patch:
        try:
            patch = base64.b64decode(str(raw_patch), validate=True)
        except (binascii.Error, ValueError) as err:
            raise InvalidResponse(f"illegal base64 data in response.patch: {err}") from None
    patch_type = response.get("patchType")
    if version == "v1":
        if response.get("uid") != uid:
            raise InvalidResponse(f'expected response.uid="{uid}", got "{response.get("uid", "")}"')
        api_version, kind = review.get("apiVersion", ""), review.get("kind", "")
        if (api_version, kind) != (f"{GROUP}/v1", "AdmissionReview"):
            group, _, ver = str(api_version).rpartition("/")
            got = f"{group}/{ver}, Kind={kind}" if group else f"/{ver}, Kind={kind}"
            raise InvalidResponse(f"expected webhook response of {GROUP}/v1, Kind=AdmissionReview, got {got}")
        if mutating:
            if patch and patch_type is None:
                raise InvalidResponse("webhook returned response.patch but not response.patchType")
            if not patch and patch_type is not None:
                raise InvalidResponse("webhook returned response.patchType but not response.patch")
            if patch_type is not None and not patch_type:
                raise InvalidResponse(f'webhook returned invalid response.patchType of "{patch_type}"')
        else:
            if patch:
                raise InvalidResponse("validating webhook may not return response.patch")
            if patch_type is not None:
                raise InvalidResponse("validating webhook may not return response.patchType")
    else:
        patch = patch if mutating else b""
        patch_type = "JSONPatch" if patch else None
    result = response.get("status")
    annotations = response.get("auditAnnotations") or {}
    warnings = response.get("warnings") or []
    return Response(
        allowed=bool(response.get("allowed")),
        result=result if isinstance(result, dict) else None,
        patch=patch,
        patch_type=str(patch_type or ""),
        audit_annotations={str(k): str(v) for k, v in annotations.items()}
        if isinstance(annotations, dict)
        else {},
        warnings=tuple(str(w) for w in warnings) if isinstance(warnings, list) else (),
    )
