"""What the Store checks before it writes an object: the validation half of kube's rest.BeforeCreate and
rest.BeforeUpdate, the same steps for a create and an update.

ObjectMeta (and, on update, what may not change in it), the versioned object against its version's
OpenAPI schema and x-kubernetes-validations rules when the strategy declares it (`validate_schema`,
what apiextensions' customResourceStrategy does for every custom resource), the strategy's own checks
(which assume a schema-valid object, so they run only when the schema found nothing), and the scale
subresource's replicas and selector: all in one 422, as kube reports them. Then the strategy
canonicalizes. Nothing here is optional for a caller: every create and update of the Store runs it.

The schema and the rules are checked in the version the client wrote (`WriteOptions.version`; the
storage version when none is given). On update, the schema errors and the CEL errors of unchanged
nodes are ratcheted (apis/schema/ratchet.py, apis/schema/cel_eval.py); ratcheted CEL failures become
the write's warnings. The rules run on the event loop: the restaurant rules cost microseconds
(docs/cel.md), and every rule's cost is bounded before it runs (at most 1e6 per call, 1e7 per write).
"""

from __future__ import annotations

from typing import Any, Protocol

from apis.meta import errors
from apis.meta.errors import GroupKind
from apis.meta.field import ErrorType, FieldError
from apis.meta.validation import validate_object_meta, validate_object_meta_update
from apis.runtime.codec import Codec
from apis.runtime.kinds import HubObject
from apis.runtime.scale import validate_scale_spec, validate_scale_status
from apis.schema.cel_eval import evaluate_rules
from apis.schema.memo import per_schema
from apis.schema.ratchet import ratchet
from apis.schema.validate import validate
from registry.generic.options import WriteOptions
from registry.generic.strategy import Strategy

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


class DecodedObject(Protocol):
    """What decoding learnt about a request's object (server/endpoints/decode.py's Decoded): the
    versioned data as decoded (pruned, defaulted) and the schema errors found then."""

    @property
    def data(self) -> dict[str, Any]: ...

    @property
    def errors(self) -> list[FieldError]: ...


def validate_write(
    codec: Codec, strategy: Strategy, obj: HubObject, old: HubObject | None, write: WriteOptions
) -> None:
    """Every check of `obj` (prepared; `old` the stored object on update, None on create), one 422;
    sets `write.warnings` to this validation's ratcheted rule failures; then canonicalizes."""
    meta = obj.metadata
    errs = validate_object_meta_update(meta, old.metadata) if old is not None else []
    errs += validate_object_meta(meta, namespaced=strategy.namespaced, name_fn=strategy.validate_name)
    schema_errs: list[FieldError] = []
    if strategy.validate_schema:
        version = write.version or codec.kind.storage_version
        schema_errs, write.warnings = schema_errors(codec, version, obj, old, write.decoded)
    if schema_errs:
        errs += schema_errs
    elif old is None:
        errs += strategy.validate(obj)
    else:
        errs += _ratchet(codec, strategy.validate_update(obj, old), obj, old)
    scale = codec.kind.scale
    if scale is not None:
        # A kind with a scale subresource keeps its replicas and selector readable as a Scale on every
        # write, whichever endpoint it came through (apiextensions' ValidateScaleSpec/Status).
        errs += [*validate_scale_spec(obj, scale), *validate_scale_status(obj, scale)]
    if errs:
        raise errors.invalid(GroupKind(codec.group, codec.kind.kind), meta.get("name") or "", errs)
    strategy.canonicalize(obj)


def schema_errors(
    codec: Codec, version: str, obj: HubObject, old: HubObject | None, decoded: DecodedObject | None
) -> tuple[list[FieldError], list[str]]:
    """The schema and rule errors of `obj` seen in `version`, and the ratcheted rule failures.

    With `decoded`, the data as decoded stands in for the object when it is too invalid to have gone
    through the hub unchanged, and is not validated again when nothing but metadata changed since."""
    versioned = codec.kind.versions[version]
    if decoded is not None and decoded.errors:
        data: dict[str, Any] = decoded.data
        errs = list(decoded.errors)
    else:
        data = codec.view(obj, version)  # only read below
        errs = [] if as_decoded(data, decoded, versioned.schema) else validate(data, versioned.schema)
    old_data = codec.view(old, version) if old is not None else None
    if old_data is not None and errs:
        errs = ratchet(errs, data, old_data, versioned.schema)
    if versioned.rules is None:
        return errs, []
    if any(e.type in _STOPS_CEL for e in errs):
        # kube's unfielded note: `<nil>: Invalid value: "null": some validation rules were not checked…`
        return [*errs, FieldError(ErrorType.INVALID, "<nil>", "null", NOT_CHECKED)], []
    outcome = (
        evaluate_rules(versioned.rules, data, old_data)
        if old_data is not None
        else evaluate_rules(versioned.rules, data)
    )
    return errs + outcome.errors, outcome.warnings


def as_decoded(data: dict[str, Any], decoded: DecodedObject | None, schema: dict[str, Any]) -> bool:
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


def _ratchet(codec: Codec, errs: list[FieldError], obj: HubObject, old: HubObject) -> list[FieldError]:
    """Validation ratcheting (KEP-4008) for the strategy's errors too: they repeat schema bounds on
    the hub, so an unchanged old value must pass them as it passes the schema. Their paths are
    the hub's, compared in the storage version (the hub's shape for the kinds declared here; a
    path that does not resolve is compared at the whole object, so it is reported)."""
    if not errs:
        return errs
    version = codec.kind.storage_version
    new_data, old_data = codec.to_version(obj, version), codec.to_version(old, version)
    return ratchet(errs, new_data, old_data, codec.kind.versions[version].schema)
