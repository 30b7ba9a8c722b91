"""Applying JSON merge patches (RFC 7386), JSON patches (RFC 6902) and strategic merge patches to a
versioned object.

Errors follow kube's patch handler: an undecodable patch is 400; a JSON patch that cannot be applied
(including a failed `test`) is 422 with kube's generic message and empty details. A strategic merge
patch is answered as interpretStrategicMergePatchError does: a malformed directive is 400, a list of
lists 422 (generic message). Any other failure (e.g. a merged list item without its merge key) kube
passes through as a plain error and answers 500; it is the client's patch that is wrong, so here it is
a 422 Invalid naming the problem (bad input never gets a 500).
"""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
import jsonpointer
import orjson

from apis.meta import errors
from apis.meta.errors import StatusError
from apis.schema.strategic_merge import (
    BadPatchFormat,
    PatchError,
    UnprocessablePatch,
    go_format,
    strategic_merge_patch,
)
from server.endpoints import body as bodies
from server.endpoints.negotiation import JSON
from server.endpoints.scope import JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH

MAX_JSON_PATCH_OPERATIONS = 10_000
_REJECTED = "the server rejected our request due to an error in our request"
_JSON_TYPES = {list: "array", str: "string", bool: "bool", int: "number", float: "number"}


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge key by key, null deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def json_patch(target: dict[str, Any], operations: Any) -> dict[str, Any]:
    if not isinstance(operations, list):
        raise errors.bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    if len(operations) > MAX_JSON_PATCH_OPERATIONS:
        raise errors.request_entity_too_large(
            f"The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, "
            f"got {len(operations)}"
        )
    try:
        patch = jsonpatch.JsonPatch(operations)
        result = patch.apply(target)
    except jsonpatch.InvalidJsonPatch as e:
        raise errors.bad_request(str(e)) from None
    except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException, TypeError, KeyError, IndexError):
        raise StatusError(422, "Invalid", _REJECTED, {}) from None
    if not isinstance(result, dict):
        raise StatusError(422, "Invalid", _REJECTED, {})
    return result


def strategic_patch_document(document: Any) -> dict[str, Any]:
    """The patch as kube decodes it (into a map; `null` decodes to an empty one)."""
    if document is None:
        return {}
    if not isinstance(document, dict):
        kind = _JSON_TYPES.get(type(document), "value")
        raise errors.bad_request(
            f"json: cannot unmarshal {kind} into Go value of type map[string]interface {{}}"
        )
    return document


def strategic_merge(
    target: dict[str, Any], document: dict[str, Any], schema: dict[str, Any]
) -> dict[str, Any]:
    """kube refuses SMP for custom resources; we apply it with the patch metadata of `schema`."""
    try:
        return strategic_merge_patch(target, document, schema)
    except BadPatchFormat as e:
        raise errors.bad_request(str(e)) from None
    except UnprocessablePatch:
        raise StatusError(422, "Invalid", _REJECTED, {}) from None
    except PatchError as e:
        raise StatusError(422, "Invalid", f"the strategic merge patch cannot be applied: {e}", {}) from None


def patch_document(raw: bytes, patch_type: str, *, track_duplicates: bool) -> tuple[Any, list[str]]:
    """A non-apply patch body as kube reads it, and the keys it repeats (for fieldValidation)."""
    document, duplicates = bodies.decode(raw, JSON, track_duplicates=track_duplicates)
    if patch_type == MERGE_PATCH and not isinstance(document, dict):
        raise errors.bad_request("the body of a merge patch must be a JSON object")
    if patch_type == STRATEGIC_MERGE_PATCH:
        document = strategic_patch_document(document)
    return document, duplicates


def apply_patch(
    patch_type: str, current: dict[str, Any], document: Any, schema: dict[str, Any]
) -> tuple[dict[str, Any], str]:
    """The patched object, and how kube's applyPatchToObject names the patch in a decoding error:
    the patch itself (Go's %v) for a strategic merge, the patched object for the others."""
    if patch_type == STRATEGIC_MERGE_PATCH:
        return strategic_merge(current, document, schema), go_format(document)
    patched = json_patch(current, document) if patch_type == JSON_PATCH else merge_patch(current, document)
    return patched, orjson.dumps(patched).decode()
