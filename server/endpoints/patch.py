"""Applying JSON merge patches (RFC 7386) and JSON patches (RFC 6902) to a versioned object.

Errors follow kube's patch handler: an undecodable patch is 400; a JSON patch that cannot be applied
(including a failed `test`) is 422 with kube's generic message and empty details.
"""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
import jsonpointer

from apis.meta import errors
from apis.meta.errors import StatusError

MAX_JSON_PATCH_OPERATIONS = 10_000


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
            f"The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, got {len(operations)}"
        )
    try:
        patch = jsonpatch.JsonPatch(operations)
        result = patch.apply(target)
    except jsonpatch.InvalidJsonPatch as e:
        raise errors.bad_request(str(e)) from None
    except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException, TypeError, KeyError, IndexError):
        raise StatusError(
            422, "Invalid", "the server rejected our request due to an error in our request", {}
        ) from None
    if not isinstance(result, dict):
        raise StatusError(
            422, "Invalid", "the server rejected our request due to an error in our request", {}
        )
    return result
