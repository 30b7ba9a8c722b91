"""Schema validation and CEL rules of a write, run where the Store validates (one 422 with the rest).

kube validates a custom resource in its strategy: ObjectMeta, the OpenAPI schema, list types and the
x-kubernetes-validations rules end up in one field-error list, after PrepareForCreate/Update. This is
that step for the versioned object of the request: the Store calls it with the prepared hub object
(and the stored one on update) and reports its errors together with ObjectMeta's and the
strategy's. On update both the schema errors and the CEL errors of unchanged nodes are ratcheted
(apis/schema/ratchet.py, apis/schema/cel_eval.py); ratcheted CEL failures become warnings.

The rules run on the event loop: the restaurant rules cost microseconds (docs/cel.md), and every
rule's cost is bounded before it runs (at most 1e6 per call, 1e7 per write).
"""

from __future__ import annotations

from typing import Any

from apis.meta.field import ErrorType, FieldError
from apis.runtime.kinds import HubObject
from apis.schema.cel_eval import evaluate_rules
from apis.schema.memo import per_schema
from apis.schema.ratchet import ratchet
from apis.schema.validate import validate
from server.endpoints.decode import Decoded
from server.endpoints.scope import ResourceScope

# kube stops before the CEL rules when one of these is among the schema errors (the rules would
# see a value of the wrong shape).
_STOPS_CEL = {
    ErrorType.NOT_SUPPORTED,
    ErrorType.REQUIRED,
    ErrorType.TOO_LONG,
    ErrorType.TOO_MANY,
    ErrorType.TYPE_INVALID,
}
NOT_CHECKED = (
    "some validation rules were not checked because the object was invalid; "
    "correct the existing errors to complete validation"
)


class SchemaCheck:
    """The Store's `check` for one write; `warnings` collects ratcheted rule failures for the response."""

    def __init__(self, scope: ResourceScope, decoded: Decoded | None = None) -> None:
        self.scope = scope
        self.decoded = decoded
        self.warnings: list[str] = []

    def __call__(self, obj: HubObject, old: HubObject | None) -> list[FieldError]:
        scope, version = self.scope, self.scope.version
        versioned = scope.kind.versions[version]
        decoded = self.decoded
        # The prepared object as the client's version shows it; the data as decoded only when it is
        # too invalid to have gone through the hub unchanged.
        if decoded is not None and decoded.errors:
            data: dict[str, Any] = decoded.data
            errs = list(decoded.errors)
        else:
            data = scope.codec.view(obj, version)  # only read below
            errs = [] if as_decoded(data, decoded, versioned.schema) else validate(data, versioned.schema)
        old_data = scope.codec.view(old, version) if old is not None else None
        if old_data is not None and errs:
            errs = ratchet(errs, data, old_data, versioned.schema)
        if versioned.rules is None:
            return errs
        if any(e.type in _STOPS_CEL for e in errs):
            # kube's unfielded note: `<nil>: Invalid value: "null": some validation rules were not checked…`
            return [*errs, FieldError(ErrorType.INVALID, "<nil>", "null", NOT_CHECKED)]
        outcome = (
            evaluate_rules(versioned.rules, data, old_data)
            if old_data is not None
            else evaluate_rules(versioned.rules, data)
        )
        self.warnings.extend(outcome.warnings)
        return errs + outcome.errors


def as_decoded(data: dict[str, Any], decoded: Decoded | None, schema: dict[str, Any]) -> bool:
    """Whether `data` is the request's object as decoding validated it, error-free, so that validating
    it again (~30 us for a pizza) cannot find anything: nothing but metadata changed on the way (the
    schema checks only metadata's type; ObjectMeta is validated on its own), apart from empty structs
    the hub writes (`status: {}`) where an empty object is valid. Preparation, admission and
    defaulting usually change nothing else; when they do, the object is validated."""
    if decoded is None or decoded.errors:
        return False
    before = decoded.data
    if any(key != "metadata" and key not in data for key in before):
        return False
    props = schema.get("properties") or {}
    for key, value in data.items():
        if key == "metadata":
            continue
        if key in before:
            if before[key] != value:
                return False
        elif value != {} or (sub := props.get(key)) is None or not _empty_object_valid(sub):
            return False
    return True


@per_schema
def _empty_object_valid(schema: dict[str, Any]) -> bool:
    return not validate({}, schema, "x", is_resource_root=False)
