"""x-kubernetes-validations: startup checks (compile, type, cost) and evaluation semantics."""

from __future__ import annotations

from typing import Any

import pytest

from apis.meta.field import ErrorType
from apis.runtime.declare import Version, declare_kind
from apis.schema.cel_eval import PER_CALL_LIMIT, evaluate_rules
from apis.schema.cel_rules import SchemaRulesError, compile_rules


def _obj(spec: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {"spec": spec}}


def _errors(schema: dict[str, Any]) -> list[str]:
    with pytest.raises(SchemaRulesError) as info:
        compile_rules(schema)
    return [str(e) for e in info.value.errors]


UNBOUNDED = {
    "type": "object",
    "properties": {"names": {"type": "array", "items": {"type": "string"}}},
    "x-kubernetes-validations": [{"rule": "self.names.all(x, self.names.all(y, x == y))"}],
}


def test_rule_over_the_cost_limit_is_refused_with_kubes_message() -> None:
    error, total, contributor = _errors(_obj(UNBOUNDED))
    assert error == (
        "openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Forbidden: estimated rule cost "
        "exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, "
        "maxProperties, and maxLength where arrays, maps, and strings are declared)"
    )
    # Over the per-schema total too (1e8), with the rule named as a top contributor.
    assert total.startswith(
        "openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 "
        "schema exceeds budget by factor of more than 100x"
    )
    assert contributor == (
        "openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Forbidden: contributed to "
        "estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"
    )


def test_the_same_rule_with_bounds_passes() -> None:
    bounded = {**UNBOUNDED, "properties": {"names": {**UNBOUNDED["properties"]["names"], "maxItems": 10}}}
    bounded["properties"]["names"]["items"] = {"type": "string", "maxLength": 10}
    assert compile_rules(_obj(bounded)) is not None


def test_a_kind_with_a_rule_over_the_limit_cannot_be_declared() -> None:
    """What stops the server at startup: kinds are declared when their group is imported."""
    schema = {"type": "object", "properties": {"spec": UNBOUNDED}}
    with pytest.raises(SchemaRulesError, match="estimated rule cost exceeds budget"):
        declare_kind(
            "Costly",
            hub_version="v1",
            versions={"v1": Version(schema)},
            storage_version="v1",
            namespaced=False,
            module=__name__,
        )


def test_compile_errors_and_non_bool_rules() -> None:
    schema = _obj(
        {
            "type": "object",
            "properties": {"a": {"type": "integer"}},
            "x-kubernetes-validations": [{"rule": "self.a +"}, {"rule": "self.a"}, {"rule": "1 + 'a' == 2"}],
        }
    )
    errors = _errors(schema)
    assert (
        "x-kubernetes-validations[0].rule: Invalid value" in errors[0] and "compilation failed: " in errors[0]
    )
    assert errors[1].endswith("cel expression must evaluate to a bool")
    assert "compilation failed: " in errors[2] and "no matching overload" in errors[2]


def test_old_self_on_set_items_is_refused() -> None:
    schema = _obj(
        {
            "type": "array",
            "x-kubernetes-list-type": "set",
            "maxItems": 10,
            "items": {
                "type": "string",
                "maxLength": 10,
                "x-kubernetes-validations": [{"rule": "self == oldSelf"}],
            },
        }
    )
    [error] = _errors(schema)
    assert "oldSelf cannot be used on the uncorrelatable portion of the schema within" in error


COST = {
    "type": "object",
    "properties": {
        "cost": {
            "type": "number",
            "x-kubernetes-validations": [
                {
                    "rule": "self <= oldSelf * 2.0",
                    "messageExpression": "'from %s to %s'.format([oldSelf, self])",
                }
            ],
        }
    },
}


def test_transition_rule_runs_only_with_an_old_value() -> None:
    rules = compile_rules(_obj(COST))
    assert rules is not None
    assert evaluate_rules(rules, {"spec": {"cost": 100}}).errors == []
    [error] = evaluate_rules(rules, {"spec": {"cost": 6.5}}, {"spec": {"cost": 3}}).errors
    assert str(error) == "spec.cost: Invalid value: 6.5: from 3 to 6.5"
    # A new property has no old value to compare with.
    assert evaluate_rules(rules, {"spec": {"cost": 9}}, {"spec": {}}).errors == []


def test_map_list_items_correlate_by_key() -> None:
    item = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "n": {"type": "integer"}},
        "x-kubernetes-validations": [{"rule": "self.n >= oldSelf.n", "message": "n may not shrink"}],
    }
    schema = _obj(
        {
            "type": "object",
            "properties": {
                "items": {
                    "type": "array",
                    "maxItems": 10,
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": item,
                }
            },
        }
    )
    rules = compile_rules(schema)
    assert rules is not None
    old = {"spec": {"items": [{"name": "a", "n": 2}, {"name": "b", "n": 2}]}}
    new = {"spec": {"items": [{"name": "c", "n": 0}, {"name": "b", "n": 1}, {"name": "a", "n": 3}]}}
    [error] = evaluate_rules(rules, new, old).errors
    assert error.field == "spec.items[1]" and error.detail == "n may not shrink"


def test_reasons_field_path_and_message_fallbacks() -> None:
    spec = {
        "type": "object",
        "properties": {"a": {"type": "string"}},
        "x-kubernetes-validations": [
            {"rule": "self.a != 'x'", "reason": "FieldValueForbidden", "fieldPath": ".a", "message": "no x"},
            {"rule": "self.a != 'x'", "messageExpression": "''"},  # empty: falls back to the rule
            {"rule": "self.a != 'x'", "reason": "FieldValueDuplicate", "fieldPath": ".a"},
        ],
    }
    rules = compile_rules(_obj(spec))
    assert rules is not None
    errors = evaluate_rules(rules, {"spec": {"a": "x"}}).errors
    assert [str(e) for e in errors] == [
        "spec.a: Forbidden: no x",
        "spec: Invalid value: failed rule: self.a != 'x'",
        'spec.a: Duplicate value: {"a":"x"}',
    ]
    assert errors[2].type is ErrorType.DUPLICATE


def test_per_call_limit_and_budget_at_runtime() -> None:
    spec = {
        "type": "object",
        "properties": {"l": {"type": "array", "maxItems": 1000, "items": {"type": "integer"}}},
        "x-kubernetes-validations": [{"rule": "self.l.all(x, self.l.all(y, x >= 0))"}],
    }
    rules = compile_rules(_obj(spec))
    assert rules is not None
    assert evaluate_rules(rules, {"spec": {"l": list(range(10))}}).errors == []
    [error] = evaluate_rules(rules, {"spec": {"l": list(range(700))}}).errors
    assert error.field == "spec"
    assert "call cost exceeds limit for rule: self.l.all" in error.detail
    assert error.detail.startswith("'operation cancelled: actual cost limit exceeded'")
    assert PER_CALL_LIMIT == 1_000_000


def test_evaluation_error_is_reported_and_validation_goes_on() -> None:
    spec = {
        "type": "object",
        "properties": {"l": {"type": "array", "maxItems": 5, "items": {"type": "integer"}}},
        "x-kubernetes-validations": [{"rule": "self.l.min() > 0"}, {"rule": "size(self.l) < 1"}],
    }
    rules = compile_rules(_obj(spec))
    assert rules is not None
    errors = evaluate_rules(rules, {"spec": {"l": []}}).errors
    assert len(errors) == 1 and "evaluating rule: self.l.min() > 0" in errors[0].detail


def test_ratcheted_rule_becomes_a_warning() -> None:
    spec = {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "x-kubernetes-validations": [{"rule": "self.a < 5", "message": "a too big"}],
    }
    rules = compile_rules({"type": "object", "properties": {"spec": spec, "other": {"type": "string"}}})
    assert rules is not None
    outcome = evaluate_rules(rules, {"spec": {"a": 9}, "other": "new"}, {"spec": {"a": 9}, "other": "old"})
    assert outcome.errors == [] and outcome.warnings == ["spec: Invalid value: a too big"]
    outcome = evaluate_rules(rules, {"spec": {"a": 9, "b": 1}}, {"spec": {"a": 9}})
    assert [str(e) for e in outcome.errors] == ["spec: Invalid value: a too big"]


def test_one_budget_for_all_rules_of_a_write() -> None:
    rule = {"rule": "self.l.all(x, x >= 0)"}
    item = {
        "type": "object",
        "properties": {"l": {"type": "array", "maxItems": 1000, "items": {"type": "integer"}}},
        "x-kubernetes-validations": [rule] * 4,
    }
    # Each rule is under the per-expression limit (cost x 700 items), and the four under 1e8.
    rules = compile_rules(_obj({"type": "array", "maxItems": 700, "items": item}))
    assert rules is not None
    full = [{"l": list(range(1000))} for _ in range(700)]
    errors = evaluate_rules(rules, {"spec": full}).errors
    [error] = errors
    assert error.field.startswith("spec[")
    assert str(error).endswith(
        'Invalid value: "object": validation failed due to running out of cost budget, '
        "no further validation rules will be run"
    )


def test_rules_iterate_past_the_engines_own_limit() -> None:
    """cel-cpp stops at 10,000 comprehension iterations; kube only has its cost limits, within
    which 150 x 150 nested iterations and a 20,000-item list are fine (apis/cel/iteration.py)."""
    nested = {
        "type": "array",
        "maxItems": 200,
        "items": {"type": "integer"},
        "x-kubernetes-validations": [{"rule": "self.all(x, self.all(y, x >= 0))"}],
    }
    rules = compile_rules(_obj(nested))
    assert rules is not None
    assert evaluate_rules(rules, {"spec": list(range(150))}).errors == []
    assert [e.detail for e in evaluate_rules(rules, {"spec": [*range(149), -1]}).errors] == [
        "failed rule: self.all(x, self.all(y, x >= 0))"
    ]
    long = {
        "type": "array",
        "maxItems": 20000,
        "items": {"type": "integer"},
        "x-kubernetes-validations": [
            {"rule": "self.all(x, x >= 0)", "message": "no negatives"},
            {"rule": "self.exists_one(x, x == 0)", "message": "one zero"},
        ],
    }
    rules = compile_rules(_obj(long))
    assert rules is not None
    assert evaluate_rules(rules, {"spec": list(range(20000))}).errors == []
    assert [e.detail for e in evaluate_rules(rules, {"spec": [*range(1, 20000), -5]}).errors] == [
        "no negatives",
        "one zero",
    ]
    # map() past NATIVE_MAP_ITEMS runs from Python too (the engine's own map is quadratic).
    mapped = dict(long, maxItems=2000)
    mapped["x-kubernetes-validations"] = [{"rule": "self.map(x, x * 2).filter(y, y % 4 == 0).size() == 1000"}]
    rules = compile_rules(_obj(mapped))
    assert rules is not None
    assert evaluate_rules(rules, {"spec": list(range(2000))}).errors == []
    assert len(evaluate_rules(rules, {"spec": list(range(1998))}).errors) == 1


def test_optional_old_self_runs_on_create_too() -> None:
    spec = {
        "type": "object",
        "properties": {"n": {"type": "integer"}},
        "x-kubernetes-validations": [
            {
                "rule": "!oldSelf.hasValue() || self.n >= oldSelf.value().n",
                "optionalOldSelf": True,
                "message": "n may not shrink",
            },
            {
                "rule": "oldSelf.hasValue() || self.n < 10",
                "optionalOldSelf": True,
                "message": "start below 10",
            },
        ],
    }
    rules = compile_rules(_obj(spec))
    assert rules is not None
    assert [e.detail for e in evaluate_rules(rules, {"spec": {"n": 12}}).errors] == ["start below 10"]
    assert [e.detail for e in evaluate_rules(rules, {"spec": {"n": 1}}, {"spec": {"n": 2}}).errors] == [
        "n may not shrink"
    ]
    assert evaluate_rules(rules, {"spec": {"n": 30}}, {"spec": {"n": 2}}).errors == []


def test_optional_old_self_without_old_self_is_refused() -> None:
    spec = {"type": "object", "x-kubernetes-validations": [{"rule": "true", "optionalOldSelf": True}]}
    [error] = _errors(_obj(spec))
    assert error.endswith(
        "optionalOldSelf: Invalid value: true: may not be set if oldSelf is not used in rule"
    )
