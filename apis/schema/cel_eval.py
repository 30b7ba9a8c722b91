"""Evaluate a schema's compiled rules on an object, as apiextensions' schema/cel validator does.

Each rule runs on every non-null value of its node with `self`; a rule using `oldSelf` (a transition
rule) runs only where an old value is correlated — a property of a correlated object, a map-list item
with the same keys, a map value with the same key — unless it sets `optionalOldSelf`. Each evaluation
is first costed on the actual values (apis.cel.cost): over the per-call limit it is refused, and all
rules of one write share one budget. A failing rule without `oldSelf` whose node is unchanged from
the old object is ratcheted (KEP-4008): reported as a warning, not an error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from apis.cel import cost
from apis.cel.engine import EvalError
from apis.cel.library import optional_value
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
    budget: float = RUNTIME_BUDGET
    stopped: bool = False


def evaluate_rules(
    node: RuleNode, new: Any, old: Any = _ABSENT, *, outcome: Outcome | None = None
) -> Outcome:
    """Errors and ratcheting warnings of `new` (old: the stored object on update, absent on create)."""
    outcome = outcome or Outcome()
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


def _run(rule: Rule, node: RuleNode, value: Any, old: Any, path: str, out: Outcome) -> None:
    has_old = old is not _ABSENT and old is not None
    if rule.uses_old_self and not has_old and not rule.optional_old_self:
        return
    convert = node.has_numbers
    variables = {"self": to_cel(value, node.schema) if convert else value}
    shapes = {"self": cost.value_shape(value)}
    if rule.uses_old_self:
        old_value = (to_cel(old, node.schema) if convert else old) if has_old else None
        variables["oldSelf"] = optional_value(has_old, old_value) if rule.optional_old_self else old_value
        shapes["oldSelf"] = cost.value_shape(old_value)
    where = path or "<nil>"
    shown = _type_name(node.schema) if isinstance(value, dict | list) else value
    spent = cost.estimate(rule.program.tree, shapes)
    if spent > PER_CALL_LIMIT:
        out.errors.append(
            fe.invalid(
                where,
                shown,
                "'operation cancelled: actual cost limit exceeded': no further validation rules will be run "
                f"due to call cost exceeds limit for rule: {_describe(rule)}",
            )
        )
        out.stopped = True
        return
    out.budget -= spent
    if out.budget < 0:
        out.errors.append(
            fe.invalid(
                where,
                shown,
                "validation failed due to running out of cost budget, "
                "no further validation rules will be run",
            )
        )
        out.stopped = True
        return
    try:
        ok = rule.program.evaluate(variables)
    except EvalError as e:
        out.errors.append(fe.invalid(where, shown, f"{e} evaluating rule: {_describe(rule)}"))
        return
    if ok is True:
        return
    detail = _message(rule, variables, shapes, out)
    error = _failure(rule, path, value, detail)
    if not rule.uses_old_self and has_old and _same(value, old):
        # Ratcheting: the node is unchanged from the stored object, so the error is only a warning.
        out.warnings.append(str(error))
        return
    out.errors.append(error)


def _type_name(s: dict[str, Any]) -> str:
    return str(s.get("type", "object"))


def _describe(rule: Rule) -> str:
    return rule.message or rule.rule


def _message(rule: Rule, variables: dict[str, Any], shapes: dict[str, cost.Shape], out: Outcome) -> str:
    fallback = rule.message or f"failed rule: {rule.rule}"
    if rule.message_program is None:
        return fallback
    spent = cost.estimate(rule.message_program.tree, shapes)
    if spent > PER_CALL_LIMIT or out.budget - spent < 0:
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
