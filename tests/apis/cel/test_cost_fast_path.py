"""The static costs that stand in for the per-value estimate: never below it, and no change in outcome.

A write's rules are charged their startup worst case where the values are within the sizes it
assumed (apis/cel/cost.py StaticCost, apis/schema/cel_eval.py); these tests hold that to the
estimate on the actual values, which exact mode still computes for every evaluation.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from apis.cel import cost
from apis.schema.cel_eval import PER_CALL_LIMIT, RUNTIME_BUDGET, evaluate_rules
from apis.schema.cel_rules import RuleNode, compile_rules

RULES = [
    "self.names.all(n, n.size() < 4)",
    "self.names.exists(n, self.s.contains(n))",
    'self.names.map(n, n + self.s).filter(x, x.startsWith("a")).size() < 3',
    "self.m.all(k, self.m[k] > 0 && k.size() < 3)",
    "self.grid.all(r, r.all(x, x in r))",
    'self.s.split(",").join("-") != self.s || self.names.size() > 0',
    '"%s/%s".format([self.s, self.names]) != ""',
    "sets.contains(self.names, [self.s])",
    "self.grid.map(r, r.sum()).sum() < 100",
    '!has(self.free) || self.free.all(k, k != "x")',
    'self.s.matches("^a") || self.names[0] == self.s',
    "[self.s, self.s].all(x, x == oldSelf.s)",
]
SPEC = {
    "type": "object",
    "properties": {
        "names": {"type": "array", "maxItems": 5, "items": {"type": "string", "maxLength": 4}},
        "m": {"type": "object", "maxProperties": 3, "additionalProperties": {"type": "integer"}},
        "s": {"type": "string", "maxLength": 6},
        "grid": {
            "type": "array",
            "maxItems": 3,
            "items": {"type": "array", "maxItems": 3, "items": {"type": "integer"}},
        },
        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    },
    "x-kubernetes-validations": [
        {"rule": r, "messageExpression": "'%s: %s'.format([self.s, self.names])"} for r in RULES
    ],
}


def _spec_rules(spec: dict[str, Any]) -> RuleNode:
    rules = compile_rules({"type": "object", "properties": {"spec": spec}})
    assert rules is not None
    return rules


SPEC_RULES = _spec_rules(SPEC)

# Values around the bounds (a little over them too), and now and then of the wrong type.
_text = st.text(alphabet="a,bé", max_size=8)
_anything = st.recursive(
    st.none() | st.integers(-3, 3) | _text, lambda inner: st.lists(inner, max_size=4), max_leaves=8
)
_specs = st.fixed_dictionaries(
    {},
    optional={
        "names": st.lists(_text, max_size=7) | _anything,
        "m": st.dictionaries(_text, st.integers(-2, 5), max_size=4) | _anything,
        "s": _text | _anything,
        "grid": st.lists(st.lists(st.integers(-2, 9), max_size=4), max_size=4) | _anything,
        "free": st.dictionaries(_text, _anything, max_size=3),
    },
)


@settings(max_examples=300, deadline=None)
@given(new=_specs, old=_specs)
def test_a_static_cost_that_bounds_the_values_is_at_least_their_estimate(
    new: dict[str, Any], old: dict[str, Any]
) -> None:
    values = {"self": new, "oldSelf": old}
    shapes = {"self": cost.value_shape(new), "oldSelf": cost.value_shape(old)}
    for rule in SPEC_RULES.properties["spec"].rules:
        for static, program in (
            (rule.static_cost, rule.program),
            (rule.static_message_cost, rule.message_program),
        ):
            assert static is not None and program is not None
            if static.bounds(values):
                assert cost.estimate(program.tree, shapes) <= static.cost, rule.rule


@settings(max_examples=150, deadline=None)
@given(new=_specs, old=_specs)
def test_fast_mode_decides_as_exact_mode(new: dict[str, Any], old: dict[str, Any]) -> None:
    for args in (({"spec": new},), ({"spec": new}, {"spec": old})):
        fast = evaluate_rules(SPEC_RULES, *args)
        exact = evaluate_rules(SPEC_RULES, *args, exact=True)
        assert [str(e) for e in fast.errors] == [str(e) for e in exact.errors]
        assert fast.warnings == exact.warnings and fast.stopped == exact.stopped


def test_values_within_the_bounds_skip_the_estimate() -> None:
    spec = {"names": ["ab", "c"], "m": {"a": 1}, "s": "ab", "grid": [[1, 2]], "free": {}}
    outcome = evaluate_rules(SPEC_RULES, {"spec": spec}, {"spec": {**spec, "s": "zz"}})
    assert not outcome.exact
    # Only the transition rule fails: every rule and that one messageExpression charged statically.
    [error] = outcome.errors
    rules = SPEC_RULES.properties["spec"].rules
    failed = next(r for r in rules if "oldSelf" in r.rule)
    assert error.field == "spec" and error.detail != failed.rule
    assert failed.static_message_cost is not None
    charged = sum(r.static_cost.cost for r in rules if r.static_cost) + failed.static_message_cost.cost
    assert outcome.budget == RUNTIME_BUDGET - charged


UNBOUNDED = {
    "type": "object",
    "properties": {"l": {"type": "array", "items": {"type": "integer"}}},
    "x-kubernetes-validations": [{"rule": "self.l.all(x, x >= 0)"}],
}


def test_an_unbounded_list_is_still_refused_over_the_per_call_limit() -> None:
    """Without maxItems the static cost is over the per-call limit: the actual values decide."""
    rules = _spec_rules(UNBOUNDED)
    [rule] = rules.properties["spec"].rules
    assert rule.static_cost is not None and rule.static_cost.cost > PER_CALL_LIMIT
    assert evaluate_rules(rules, {"spec": {"l": list(range(1000))}}).errors == []
    big = {"spec": {"l": list(range(200_000))}}
    [error] = evaluate_rules(rules, big).errors
    assert str(error) == (
        "spec: Invalid value: \"object\": 'operation cancelled: actual cost limit exceeded': no further "
        "validation rules will be run due to call cost exceeds limit for rule: self.l.all(x, x >= 0)"
    )
    assert [str(e) for e in evaluate_rules(rules, big, exact=True).errors] == [str(error)]


# Four rules per item, 700 items: under kube's static limits, but 700 x 4 x the static cost of one
# evaluation (a full `l`) is over the write's budget of 1e7.
_ITEM = {
    "type": "object",
    "properties": {"l": {"type": "array", "maxItems": 1000, "items": {"type": "integer"}}},
    "x-kubernetes-validations": [{"rule": "self.l.all(x, x >= 0)"}] * 4,
}
_LIST = {"type": "array", "maxItems": 700, "items": _ITEM}


def test_static_costs_over_the_budget_with_small_values_still_pass() -> None:
    rules = _spec_rules(_LIST)
    [rule, *_] = rules.properties["spec"].items.rules  # type: ignore[union-attr]
    assert rule.static_cost is not None and 700 * 4 * rule.static_cost.cost > RUNTIME_BUDGET
    outcome = evaluate_rules(rules, {"spec": [{"l": list(range(10))} for _ in range(700)]})
    assert outcome.errors == [] and not outcome.stopped
    assert outcome.exact  # the upper bounds ran out: the write was estimated again on its values
    few = evaluate_rules(rules, {"spec": [{"l": list(range(1000))} for _ in range(10)]})
    assert few.errors == [] and not few.exact


def test_actual_costs_over_the_budget_still_fail_with_kubes_message() -> None:
    rules = _spec_rules(_LIST)
    full = {"spec": [{"l": list(range(1000))} for _ in range(700)]}
    fast, exact = evaluate_rules(rules, full), evaluate_rules(rules, full, exact=True)
    [error] = fast.errors
    assert str(error).endswith(
        'Invalid value: "object": validation failed due to running out of cost budget, '
        "no further validation rules will be run"
    )
    assert [str(e) for e in exact.errors] == [str(error)] and fast.stopped


def test_a_value_outside_the_bounds_is_estimated_on_its_actual_sizes() -> None:
    """Over maxItems (a ratcheted node, an old object): the static cost says nothing about it."""
    spec = {
        "type": "object",
        "properties": {"l": {"type": "array", "maxItems": 10, "items": {"type": "integer"}}},
        "x-kubernetes-validations": [{"rule": "self.l.all(x, self.l.all(y, x >= y || true))"}],
    }
    rules = _spec_rules(spec)
    [rule] = rules.properties["spec"].rules
    assert rule.static_cost is not None and rule.static_cost.cost < PER_CALL_LIMIT
    assert not rule.static_cost.bounds({"self": {"l": list(range(500))}})
    [error] = evaluate_rules(rules, {"spec": {"l": list(range(500))}}).errors
    assert "call cost exceeds limit for rule" in error.detail
