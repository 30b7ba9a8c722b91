"""One webhook call for one request: dry-run rules, the AdmissionReview round trip, annotations,
warnings, a denial, and (for mutating hooks) the JSONPatch applied in the hook's version.

Shared by both dispatchers, as kube's callHook / callAttrMutatingHook share their steps.
"""

from __future__ import annotations

import copy
import json
import logging
import re
from typing import Any

import jsonpatch
import jsonpointer

from apis.meta import errors
from apis.meta.errors import GroupKind, StatusError
from apis.schema.defaults import apply_defaults
from apis.schema.prune import prune
from apis.schema.validate import validate
from registry.generic.admission import Attributes
from server.admission.webhook.calls import CallingError, ClientManager
from server.admission.webhook.hooks import Hook
from server.admission.webhook.matching import Invocation
from server.admission.webhook.review import (
    InvalidResponse,
    build_request,
    build_review,
    review_version,
    verify_response,
)

logger = logging.getLogger(__name__)

# An audit annotation key must be a qualified name (optional DNS prefix, then a name of ≤ 63 chars).
_QUALIFIED = re.compile(r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")


class Rejection(Exception):
    """kube's ErrWebhookRejection: the webhook answered allowed: false."""

    def __init__(self, status: StatusError) -> None:
        super().__init__(status.message)
        self.status = status


def denied(webhook: str, result: dict[str, Any] | None) -> StatusError:
    """webhookerrors.ToStatusErr: a code below 400 becomes 400; the message names the webhook."""
    result = result or {}
    code = result.get("code")
    code = code if isinstance(code, int) and code >= 400 else 400
    prefix = f'admission webhook "{webhook}" denied the request'
    if result.get("message"):
        message = f"{prefix}: {result['message']}"
    elif result.get("reason"):
        message = f"{prefix}: {result['reason']}"
    else:
        message = f"{prefix} without explanation"
    details = result.get("details") if isinstance(result.get("details"), dict) else None
    return StatusError(code, str(result.get("reason") or ""), message, details)


def objects_in(attrs: Attributes, version: str) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The request's new and old objects in `version` (kube's VersionedAttributes)."""
    codec = attrs.codec
    if codec is None:
        return None, None
    obj = codec.to_version(attrs.object, version) if attrs.object is not None else None
    old = codec.to_version(attrs.old_object, version) if attrs.old_object is not None else None
    return obj, old


def admission_request(attrs: Attributes, invocation: Invocation) -> dict[str, Any]:
    obj, old = objects_in(attrs, invocation.version)
    return build_request(attrs, invocation, obj, old)


async def call_hook(
    clients: ClientManager, attrs: Attributes, invocation: Invocation
) -> tuple[dict[str, Any] | None, Any]:
    """POST the review and check the answer. Returns (the object sent, the verified response)."""
    hook = invocation.hook
    if attrs.dry_run:
        if hook.side_effects is None:
            raise CallingError(
                hook.name, "Webhook SideEffects is nil", errors.bad_request("Webhook SideEffects is nil")
            )
        if hook.side_effects not in ("None", "NoneOnDryRun"):
            raise errors.bad_request(f'admission webhook "{hook.name}" does not support dry run')
    version = review_version(invocation)
    if version is None:
        raise CallingError(
            hook.name,
            "could not create admission objects: "
            "webhook does not accept known AdmissionReview versions (v1, v1beta1)",
            errors.bad_request("error creating admission objects"),
        )
    obj, old = objects_in(attrs, invocation.version)
    uid, review = build_review(version, build_request(attrs, invocation, obj, old))
    answer = await clients.post(hook, review)
    try:
        response = verify_response(version, uid, hook.mutating, answer)
    except InvalidResponse as err:
        raise CallingError(
            hook.name,
            f"received invalid webhook response: {err}",
            errors.service_unavailable("error validating webhook response"),
        ) from None
    for key, value in response.audit_annotations.items():
        full = f"{hook.name}/{key}"
        if not _QUALIFIED.match(full):
            logger.warning("webhook %s: invalid audit annotation key %r ignored", hook.name, full)
            continue
        attrs.annotations.setdefault(full, value)
    attrs.warnings.extend(response.warnings)
    if not response.allowed:
        raise Rejection(denied(hook.name, response.result))
    return obj, response


def apply_patch(
    attrs: Attributes, invocation: Invocation, obj: dict[str, Any] | None, response: Any
) -> tuple[dict[str, Any] | None, bool]:
    """The patched object in the hook's version (pruned, defaulted, schema-checked), and whether it
    differs from what the hook was sent. (None, False) when there was nothing to apply."""
    hook: Hook = invocation.hook
    if not response.patch:
        return None, False
    try:
        operations = json.loads(response.patch)
        if not isinstance(operations, list):
            raise ValueError("a JSON patch must be an array")
        patch = jsonpatch.JsonPatch(operations)
    except (ValueError, jsonpatch.InvalidJsonPatch) as err:
        raise CallingError(
            hook.name,
            f"received undecodable patch in webhook response: {err}",
            errors.service_unavailable("error decoding patch in webhook response"),
        ) from None
    if not operations:
        return None, False
    if obj is None:
        raise errors.internal_error(
            f'admission webhook "{hook.name}" attempted to modify the object, '
            "which is not supported for this operation"
        )
    if response.patch_type != "JSONPatch":
        raise CallingError(
            hook.name, f'unsupported patch type "{response.patch_type}"', denied(hook.name, response.result)
        )
    try:
        patched = patch.apply(copy.deepcopy(obj))
    except (
        jsonpatch.JsonPatchException,
        jsonpointer.JsonPointerException,
        TypeError,
        KeyError,
        IndexError,
    ) as err:
        raise errors.internal_error(str(err)) from None
    if not isinstance(patched, dict):
        raise errors.internal_error("the patched object is not a JSON object")
    assert attrs.codec is not None
    schema = attrs.codec.kind.versions[invocation.version].schema
    prune(patched, schema)
    apply_defaults(patched, schema)
    problems = validate(patched, schema)
    if problems:
        raise errors.invalid(GroupKind(attrs.group, attrs.kind), attrs.name, problems)
    return patched, patched != obj
