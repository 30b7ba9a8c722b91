"""Evaluate a schema's compiled rules on an object, as apiextensions' schema/cel validator does.

Each rule runs on every non-null value of its node with `self`; a rule using `oldSelf` (a transition
rule) runs only where an old value is correlated — a property of a correlated object, a map-list item
with the same keys, a map value with the same key — unless it sets `optionalOldSelf`. Each evaluation
is costed before it runs (apis.cel.cost): over the per-call limit it is refused, and all rules of
one write share one budget. The cost is the rule's static worst case (computed at startup from the
schema's bounds) where the values are within the sizes it assumed, else the estimate on the actual
values; see `evaluate_rules`.
A failing rule without `oldSelf` whose node is unchanged from the old object is ratcheted
(KEP-4008): reported as a warning, not an error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from apis.cel import cost
from apis.cel.engine import NONE, EvalError, Program
from apis.meta import field as fe
from apis.meta.field import ErrorType, FieldError
from apis.schema.cel_rules import Rule, RuleNode
from apis.schema.cel_types import to_cel

PER_CALL_LIMIT = 1_000_000
RUNTIME_BUDGET = 10_000_000
_MAX_MESSAGE = 5 * 1024
_ABSENT = object()


@dataclass(slots=True)
class Outcome:
    errors: list[FieldError] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # What is left of the write's cost budget: exactly (exact mode), or at most (fast mode).
    budget: float = RUNTIME_BUDGET
    stopped: bool = False
    # Fast mode (False) charges an evaluation its static cost where that bounds the actual one;
    # exact mode estimates every evaluation on the actual values.
    exact: bool = False


class _NeedsExactCosts(Exception):
    """Fast mode's upper bounds would run out of the budget: only the actual estimates can tell."""


def evaluate_rules(node: RuleNode, new: Any, old: Any = _ABSENT, *, exact: bool = False) -> Outcome:
    """Errors and ratcheting warnings of `new` (old: the stored object on update, absent on create).

    Fast mode first, with results exactly as exact mode's: an evaluation is charged its static cost
    where that is at most 1e6 and the values are within the sizes it assumed (so it is at least the
    actual estimate), else its actual estimate. While the budget stays positive under these upper
    bounds it stays positive under the actual estimates too, so the limits stop nothing that exact
    mode would let run and vice versa. Only when the upper bounds would exhaust the budget is the
    write evaluated again in exact mode (every evaluation estimated on its actual values).
    `exact=True` starts in exact mode (what fast mode must equal, for tests); `Outcome.exact` says
    which mode the outcome comes from.
    """
    if exact:
        return _evaluate(node, new, old, exact=True)
    try:
        return _evaluate(node, new, old, exact=False)
    except _NeedsExactCosts:
        return _evaluate(node, new, old, exact=True)


def _evaluate(node: RuleNode, new: Any, old: Any, *, exact: bool) -> Outcome:
    outcome = Outcome(exact=exact)
    _visit(node, new, old, "", outcome)
    return outcome


def _child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _visit(node: RuleNode, value: Any, old: Any, path: str, out: Outcome) -> None:
    if value is None or out.stopped:
        return
    for rule in node.rules:
        _run(rule, node, value, old, path, out)
        if out.stopped:
            return
    if isinstance(value, dict):
        for name, child in node.properties.items():
            if name in value:
                old_child = old.get(name, _ABSENT) if isinstance(old, dict) else _ABSENT
                _visit(child, value[name], old_child, _child(path, name), out)
        if node.values is not None:
            for key, v in value.items():
                if key in node.properties:
                    continue
                old_v = old.get(key, _ABSENT) if isinstance(old, dict) else _ABSENT
                _visit(node.values, v, old_v, f"{path}[{key}]", out)
    elif isinstance(value, list) and node.items is not None:
        olds = _correlate_items(node.schema, value, old)
        for i, item in enumerate(value):
            _visit(node.items, item, olds[i], f"{path}[{i}]", out)


def _correlate_items(s: dict[str, Any], value: list[Any], old: Any) -> list[Any]:
    """Old items by map-list key; set and atomic list items have no old value."""
    keys = s.get("x-kubernetes-list-map-keys") or []
    if s.get("x-kubernetes-list-type") != "map" or not keys or not isinstance(old, list):
        return [_ABSENT] * len(value)

    def key_of(item: Any) -> Any:
        return tuple(item.get(k) for k in keys) if isinstance(item, dict) else None

    by_key = {key_of(o): o for o in old}
    return [by_key.get(key_of(item), _ABSENT) for item in value]


@dataclass(frozen=True, slots=True)
class _Costing:
    """How one rule's evaluations on one value are costed: statically, or on the actual values."""

    value: Any
    old_value: Any
    uses_old_self: bool

    def cost(self, static: cost.StaticCost | None, program: Program, out: Outcome) -> float:
        """The static cost where it passes the per-call limit and bounds the actual estimate, else
        the actual estimate (then it alone decides a per-call refusal, as in exact mode)."""
        if (
            static is not None
            and not out.exact
            and static.cost <= PER_CALL_LIMIT
            and static.bounds({"self": self.value, "oldSelf": self.old_value})
        ):
            return static.cost
        shapes = {"self": cost.value_shape(self.value)}
        if self.uses_old_self:
            shapes["oldSelf"] = cost.value_shape(self.old_value)
        return cost.estimate(program.tree, shapes)


def _run(rule: Rule, node: RuleNode, value: Any, old: Any, path: str, out: Outcome) -> None:
    has_old = old is not _ABSENT and old is not None
    if rule.uses_old_self and not has_old and not rule.optional_old_self:
        return
    convert = node.has_numbers
    variables = {"self": to_cel(value, node.schema) if convert else value}
    old_value = None
    if rule.uses_old_self:
        old_value = (to_cel(old, node.schema) if convert else old) if has_old else None
        variables["oldSelf"] = old_value if has_old else NONE  # optionalOldSelf on create
    costing = _Costing(value, old_value, rule.uses_old_self)
    spent = costing.cost(rule.static_cost, rule.program, out)
    if spent > PER_CALL_LIMIT:
        out.errors.append(
            fe.invalid(
                path or "<nil>",
                _shown(node, value),
                "'operation cancelled: actual cost limit exceeded': no further validation rules will be run "
                f"due to call cost exceeds limit for rule: {_describe(rule)}",
            )
        )
        out.stopped = True
        return
    out.budget -= spent
    if out.budget < 0:
        if not out.exact:
            raise _NeedsExactCosts
        out.errors.append(
            fe.invalid(
                path or "<nil>",
                _shown(node, value),
                "validation failed due to running out of cost budget, "
                "no further validation rules will be run",
            )
        )
        out.stopped = True
        return
    try:
        ok = rule.program.evaluate(variables)
    except EvalError as e:
        out.errors.append(
            fe.invalid(path or "<nil>", _shown(node, value), f"{e} evaluating rule: {_describe(rule)}")
        )
        return
    if ok is True:
        return
    detail = _message(rule, variables, costing, out)
    error = _failure(rule, path, value, detail)
    if not rule.uses_old_self and has_old and _same(value, old):
        # Ratcheting: the node is unchanged from the stored object, so the error is only a warning.
        out.warnings.append(str(error))
        return
    out.errors.append(error)


def _shown(node: RuleNode, value: Any) -> Any:
    return _type_name(node.schema) if isinstance(value, dict | list) else value


def _type_name(s: dict[str, Any]) -> str:
    return str(s.get("type", "object"))


def _describe(rule: Rule) -> str:
    return rule.message or rule.rule


def _message(rule: Rule, variables: dict[str, Any], costing: _Costing, out: Outcome) -> str:
    fallback = rule.message or f"failed rule: {rule.rule}"
    if rule.message_program is None:
        return fallback
    spent = costing.cost(rule.static_message_cost, rule.message_program, out)
    if spent > PER_CALL_LIMIT:
        return fallback
    if out.budget - spent < 0:
        if not out.exact:
            raise _NeedsExactCosts
        return fallback
    out.budget -= spent
    try:
        text = rule.message_program.evaluate(variables)
    except EvalError:
        return fallback
    text = str(text).strip()
    if not text or "\n" in text or len(text) > _MAX_MESSAGE:
        return fallback
    return text


def _failure(rule: Rule, path: str, value: Any, detail: str) -> FieldError:
    where = path + rule.field_path if rule.field_path else path
    where = where.lstrip(".") or "<nil>"
    if rule.reason == "FieldValueForbidden":
        return fe.forbidden(where, detail)
    if rule.reason == "FieldValueRequired":
        return fe.required(where, detail)
    if rule.reason == "FieldValueDuplicate":
        return FieldError(ErrorType.DUPLICATE, where, value)
    if isinstance(value, dict | list) or rule.field_path:
        return FieldError(ErrorType.INVALID, where, detail=detail)
    return fe.invalid(where, value, detail)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b) and (isinstance(a, bool) == isinstance(b, bool))
