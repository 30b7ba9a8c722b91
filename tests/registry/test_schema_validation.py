"""The registry's schema check after admission (registry/generic/validation.py): what decoding
validated is not validated again, a change is."""

from __future__ import annotations

import copy
from typing import Any

from apis.meta.field import FieldError
from apis.restaurant.install import GROUP, PIZZA_KIND
from apis.runtime.codec import Codec
from registry.generic.store import Store
from registry.generic.validation import as_decoded, schema_errors
from registry.restaurant.pizza import strategy as pizza
from server.admission.chain import AdmissionChain
from server.endpoints.decode import Decoded, decode_write
from server.endpoints.scope import ResourceScope

SCOPE = ResourceScope(
    GROUP,
    PIZZA_KIND,
    "v1beta1",
    Store(Codec(GROUP.group, PIZZA_KIND), pizza.STRATEGY, None),  # type: ignore[arg-type]
    AdmissionChain(),
)


def check(decoded: Decoded) -> list[FieldError]:
    """The schema and rule errors the Store finds in the decoded object, in the request's version."""
    errs, _ = schema_errors(SCOPE.codec, SCOPE.version, decoded.hub, None, decoded)
    return errs


def body(quantity: int) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP.group}/v1beta1",
        "kind": "Pizza",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"toppings": [{"name": "tomato", "quantity": quantity}]},
    }


def test_an_object_as_decoded_passes() -> None:
    decoded = decode_write(SCOPE, body(2), field_validation="Strict")
    decoded.hub.metadata["uid"] = "changed by preparation"
    assert check(decoded) == []


def test_a_change_after_decoding_is_validated() -> None:
    decoded = decode_write(SCOPE, body(2), field_validation="Strict")
    hub: Any = decoded.hub
    hub.spec.toppings[0].quantity = 0  # as a mutating plugin might
    [error] = check(decoded)
    assert (error.field, error.detail) == (
        "spec.toppings[0].quantity",
        "spec.toppings[0].quantity in body should be greater than or equal to 1",
    )


def test_an_invalid_request_keeps_its_errors() -> None:
    decoded = decode_write(SCOPE, body(0), field_validation="Strict")
    assert [e.field for e in decoded.errors] == ["spec.toppings[0].quantity"]
    assert [e.field for e in check(decoded)] == ["spec.toppings[0].quantity"]


SCHEMA = PIZZA_KIND.versions["v1beta1"].schema


def prepared(quantity: int = 2) -> tuple[dict[str, Any], Any]:
    """The versioned object as the check sees it (metadata set by preparation; the hub writes its
    empty status struct), and the decoding it came from."""
    decoded = decode_write(SCOPE, body(quantity), field_validation="Strict")
    decoded.hub.metadata["uid"] = "set by preparation"
    return SCOPE.codec.to_version(decoded.hub, "v1beta1"), decoded


def test_what_counts_as_unchanged_since_decoding() -> None:
    data, decoded = prepared()
    assert data["status"] == {} and "status" not in decoded.data
    assert as_decoded(data, decoded, SCHEMA)  # metadata and an empty status only
    changed = copy.deepcopy(data)
    changed["spec"]["toppings"][0]["quantity"] = 3
    assert not as_decoded(changed, decoded, SCHEMA)
    dropped = {k: v for k, v in data.items() if k != "spec"}
    assert not as_decoded(dropped, decoded, SCHEMA)
    unknown = {**data, "extra": {}}
    assert not as_decoded(unknown, decoded, SCHEMA)
    # An empty struct is harmless only where an empty object is valid.
    strict = copy.deepcopy(SCHEMA)
    strict["properties"]["status"]["required"] = ["cost"]
    assert not as_decoded(data, decoded, strict)
    invalid = decode_write(SCOPE, body(0), field_validation="Strict")
    assert not as_decoded(data, invalid, SCHEMA)
