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

from apis.meta import errors
from apis.meta.errors import StatusError
from apis.schema.strategic_merge import BadPatchFormat, PatchError, UnprocessablePatch, strategic_merge_patch

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
