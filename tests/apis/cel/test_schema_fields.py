"""A rule that selects a field its schema does not declare is refused when compiled, as kube's is."""

from __future__ import annotations

from typing import Any

import pytest

from apis.schema.cel_rules import SchemaRulesError, compile_rules

SPEC: dict[str, Any] = {
    "type": "object",
    "properties": {
        "size": {"type": "integer"},
        "labels": {
            "type": "object",
            "maxProperties": 8,
            "additionalProperties": {"type": "string", "maxLength": 16},
        },
        "toppings": {
            "type": "array",
            "maxItems": 8,
            "items": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 16}}},
        },
        "byName": {
            "type": "object",
            "maxProperties": 8,
            "additionalProperties": {"type": "object", "properties": {"quantity": {"type": "integer"}}},
        },
        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True, "properties": {"a": {}}},
        "embedded": {"type": "object", "x-kubernetes-embedded-resource": True, "properties": {"spec": {}}},
    },
}


def _root(rule: str, **extra: Any) -> dict[str, Any]:
    """A resource root whose spec carries `rule`."""
    spec = {**SPEC, "x-kubernetes-validations": [{"rule": rule, **extra}]}
    return {"type": "object", "properties": {"spec": spec}}


def _error(rule: str, **extra: Any) -> str:
    with pytest.raises(SchemaRulesError) as info:
        compile_rules(_root(rule, **extra))
    [error] = info.value.errors
    return str(error)


@pytest.mark.parametrize(
    ("rule", "field"),
    [
        ("self.sise > 0", "sise"),
        ("has(self.sise)", "sise"),
        ("self.toppings.all(t, t.nmae != '')", "nmae"),
        ("self.toppings[0].nmae == ''", "nmae"),
        ("self.byName.all(k, self.byName[k].quantiti > 0)", "quantiti"),
        ("self.size > 0 && self.toppings.exists(t, has(t.label))", "label"),
        ("self.toppings.map(t, t.nmae).size() > 0", "nmae"),
        ("self.sise == oldSelf.size", "sise"),
    ],
)
def test_an_undeclared_field_is_a_compile_error(rule: str, field: str) -> None:
    error = _error(rule)
    assert "compilation failed: ERROR: <input>:1:" in error
    assert f"undefined field '{field}'" in error
    assert "^" in error  # the caret line under the selection


@pytest.mark.parametrize(
    "rule",
    [
        "self.size > 0",
        "has(self.size)",
        "self.labels.anything == 'x'",  # a map: selecting looks a key up
        "self.toppings.all(t, t.name != '')",
        "self.byName.all(k, self.byName[k].quantity > 0)",
        "self.labels.all(k, k.size() > 0)",  # iterating a map yields its keys (strings)
        "self.free.whatever == 1",  # x-kubernetes-preserve-unknown-fields: not typed
        "self.embedded.kind == 'Pizza' && self.embedded.metadata.name != ''",  # kube adds these
        "[1, 2].all(x, x > 0)",
        "self.size == oldSelf.size",
    ],
)
def test_declared_fields_and_untyped_parts_compile(rule: str) -> None:
    assert compile_rules(_root(rule)) is not None


def test_message_expressions_are_checked_too() -> None:
    error = _error("self.size > 0", messageExpression="'size ' + string(self.sise)")
    assert "messageExpression" in error and "undefined field 'sise'" in error


def test_optional_old_self_reads_are_not_typed_here() -> None:
    """oldSelf is an optional with optionalOldSelf: its fields are read through value()/orValue."""
    rule = "oldSelf.hasValue() ? self.size >= oldSelf.value().size : true"
    assert compile_rules(_root(rule, optionalOldSelf=True)) is not None
    assert "undefined field 'sise'" in _error("self.sise > 0", optionalOldSelf=True)


def test_the_resource_root_always_has_api_version_kind_and_metadata() -> None:
    root = {
        "type": "object",
        "properties": {"spec": SPEC},
        "x-kubernetes-validations": [{"rule": "self.kind == 'Pizza' && self.metadata.name != ''"}],
    }
    assert compile_rules(root) is not None
    root["x-kubernetes-validations"] = [{"rule": "self.spek.size > 0"}]
    with pytest.raises(SchemaRulesError, match="undefined field 'spek'"):
        compile_rules(root)
