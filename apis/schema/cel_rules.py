"""x-kubernetes-validations of a structural schema, compiled and cost-checked once, at startup.

What apiextensions-apiserver checks when a CRD is written (validation.go, cel_validation.go), done
when a kind is declared so a bad rule stops the server from starting with kube's messages:
`compilation failed: …`, `cel expression must evaluate to a bool`, the per-expression limit (1e7,
rule estimate x the cardinality of its node) and the per-schema limit (1e8), `oldSelf` on an
uncorrelatable node, and `optionalOldSelf` without `oldSelf`. Each rule keeps its estimate per
evaluation (before the cardinality) with the sizes it assumed: at runtime it stands in for the
estimate on the actual values wherever they are no larger (apis/schema/cel_eval.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from apis.cel import ast, cost, engine
from apis.cel.engine import CompileError, Environment, Program
from apis.cel.library import KUBERNETES_LIBRARY
from apis.meta import field as fe
from apis.meta.field import FieldError
from apis.schema.cel_fields import undefined_field_error
from apis.schema.cel_types import SchemaShape, cardinality_factor, cel_type, has_numbers

Schema = dict[str, Any]
ROOT_PATH = "openAPIV3Schema"

PER_EXPRESSION_LIMIT = 10_000_000  # apiextensions' PerCallLimit x 10: StaticEstimatedCostLimit
PER_SCHEMA_LIMIT = 100_000_000  # StaticEstimatedCRDCostLimit
_HINT = (
    "(try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, "
    "and strings are declared)"
)
VALIDATIONS = "x-kubernetes-validations"


@dataclass(frozen=True, slots=True)
class Rule:
    rule: str
    program: Program
    message: str
    message_program: Program | None
    reason: str
    field_path: str
    uses_old_self: bool
    optional_old_self: bool
    # The most one evaluation of the rule / of its messageExpression can cost on values within the
    # schema's bounds (None: not known).
    static_cost: cost.StaticCost | None = None
    static_message_cost: cost.StaticCost | None = None


@dataclass(frozen=True, slots=True)
class RuleNode:
    """The schema's tree, kept only where a rule sits at or below a node."""

    schema: Schema = field(repr=False)
    rules: tuple[Rule, ...] = ()
    properties: dict[str, RuleNode] = field(default_factory=dict)
    items: RuleNode | None = None  # array items
    values: RuleNode | None = None  # additionalProperties
    # Whether a `type: number` node lies at or below: only then must values be converted for CEL.
    has_numbers: bool = True


class SchemaRulesError(ValueError):
    """A schema whose rules kube would refuse; the message lists every field error."""

    def __init__(self, errors: list[FieldError]) -> None:
        super().__init__("; ".join(str(e) for e in errors))
        self.errors = errors


def compile_rules(schema: Schema) -> RuleNode | None:
    """The compiled rules of `schema`, or None when it declares none; SchemaRulesError if kube
    would refuse them."""
    errors: list[FieldError] = []
    totals: list[tuple[str, float]] = []
    node = _compile(schema, ROOT_PATH, 1.0, True, errors, totals)
    total = sum(c for _, c in totals)
    if total > PER_SCHEMA_LIMIT:
        errors.append(
            fe.forbidden(
                ROOT_PATH,
                "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema "
                "exceeds budget "
                f"by factor of {_factor(total, PER_SCHEMA_LIMIT)} {_HINT}",
            )
        )
        for path, c in sorted(totals, key=lambda t: -t[1])[:4]:
            if c >= PER_SCHEMA_LIMIT / 100:
                errors.append(
                    fe.forbidden(
                        path,
                        "contributed to estimated rule cost total exceeding cost limit "
                        "for entire OpenAPIv3 schema",
                    )
                )
    if errors:
        raise SchemaRulesError(errors)
    return node


def _factor(cost_value: float, limit: float) -> str:
    f = cost_value / limit
    if f > 100:
        return "more than 100x"
    return f"{f:f}x" if f < 1.5 else f"{f:.1f}x"


def _compile(
    s: Schema,
    path: str,
    cardinality: float,
    correlatable: bool,
    errors: list[FieldError],
    totals: list[tuple[str, float]],
) -> RuleNode | None:
    rules = tuple(
        r
        for i, raw in enumerate(s.get(VALIDATIONS) or [])
        if (
            r := _compile_rule(
                s, raw, f"{path}.{VALIDATIONS}[{i}]", cardinality, correlatable, errors, totals
            )
        )
    )
    props: dict[str, RuleNode] = {}
    for name, sub in (s.get("properties") or {}).items():
        child = _compile(sub, f"{path}.properties[{name}]", cardinality, correlatable, errors, totals)
        if child is not None:
            props[name] = child
    items = values = None
    if isinstance(s.get("items"), dict):
        # Only map-list items are matched with their old version; set and atomic items are not.
        item_correlatable = correlatable and s.get("x-kubernetes-list-type") == "map"
        items = _compile(
            s["items"],
            f"{path}.items",
            cardinality * cardinality_factor(s),
            item_correlatable,
            errors,
            totals,
        )
    if isinstance(s.get("additionalProperties"), dict):
        values = _compile(
            s["additionalProperties"],
            f"{path}.additionalProperties",
            cardinality * cardinality_factor(s),
            correlatable and s.get("x-kubernetes-map-type") != "atomic",
            errors,
            totals,
        )
    if not rules and not props and items is None and values is None:
        return None
    return RuleNode(s, rules, props, items, values, has_numbers(s))


def _uses(node: ast.Node, name: str) -> bool:
    if isinstance(node, ast.Ident):
        return node.name == name
    if isinstance(node, ast.Select):
        return _uses(node.operand, name)
    if isinstance(node, ast.Call):
        return any(_uses(a, name) for a in ((node.target,) if node.target else ()) + node.args)
    if isinstance(node, ast.CreateList | ast.CreateStruct):
        parts = node.elements if isinstance(node, ast.CreateList) else node.values
        return any(_uses(a, name) for a in parts)
    if isinstance(node, ast.Comprehension):
        parts = (node.iter_range, node.accu_init, node.loop_condition, node.loop_step, node.result)
        return any(_uses(a, name) for a in parts)
    return False


def environment(s: Schema, *, optional_old_self: bool = False) -> Environment:
    t = cel_type(s)
    # optionalOldSelf: oldSelf is `optional.of(old)` on update, `optional.none()` on create (kube).
    old_self = engine.optional_of(t) if optional_old_self else t
    return Environment({"self": t, "oldSelf": old_self}, KUBERNETES_LIBRARY)


def _compile_rule(
    s: Schema,
    raw: dict[str, Any],
    path: str,
    cardinality: float,
    correlatable: bool,
    errors: list[FieldError],
    totals: list[tuple[str, float]],
) -> Rule | None:
    optional_old_self = bool(raw.get("optionalOldSelf"))
    env = environment(s, optional_old_self=optional_old_self)
    source = raw.get("rule", "")

    def fields(checked_expr: Any, text: str) -> str | None:
        root = path.startswith(f"{ROOT_PATH}.{VALIDATIONS}")
        return undefined_field_error(s, checked_expr, text, old_self=not optional_old_self, root=root)

    try:
        program = env.compile(source, checks=(fields,))
    except CompileError as e:
        errors.append(fe.invalid(f"{path}.rule", source, f"compilation failed: {e}"))
        return None
    if program.result_type != engine.BOOL:
        errors.append(fe.invalid(f"{path}.rule", source, "cel expression must evaluate to a bool"))
        return None
    uses_old_self = _uses(program.tree, "oldSelf")
    if optional_old_self and not uses_old_self:
        errors.append(
            fe.invalid(f"{path}.optionalOldSelf", True, "may not be set if oldSelf is not used in rule")
        )
    if uses_old_self and not correlatable:
        errors.append(
            fe.invalid(
                f"{path}.rule",
                source,
                "oldSelf cannot be used on the uncorrelatable portion of the schema within "
                + path.rsplit(".", 1)[0],
            )
        )
    shapes: dict[str, cost.Shape] = {"self": SchemaShape(s), "oldSelf": SchemaShape(s)}
    static_cost = cost.estimate_static(program.tree, shapes)
    rule_cost = static_cost.cost * cardinality
    totals.append((f"{path}.rule", rule_cost))
    if rule_cost > PER_EXPRESSION_LIMIT:
        errors.append(
            fe.forbidden(
                f"{path}.rule",
                "estimated rule cost exceeds budget by factor of "
                f"{_factor(rule_cost, PER_EXPRESSION_LIMIT)} {_HINT}",
            )
        )
    message_program = None
    static_message_cost = None
    if raw.get("messageExpression"):
        try:
            message_program = env.compile(raw["messageExpression"], checks=(fields,))
        except CompileError as e:
            errors.append(
                fe.invalid(
                    f"{path}.messageExpression",
                    raw["messageExpression"],
                    f"messageExpression compilation failed: {e}",
                )
            )
        else:
            if message_program.result_type != engine.STRING:
                errors.append(
                    fe.invalid(
                        f"{path}.messageExpression", raw["messageExpression"], "must evaluate to a string"
                    )
                )
            static_message_cost = cost.estimate_static(message_program.tree, shapes)
            message_cost = static_message_cost.cost
            totals.append((f"{path}.messageExpression", message_cost))
            if message_cost > PER_EXPRESSION_LIMIT:
                errors.append(
                    fe.forbidden(
                        f"{path}.messageExpression",
                        "estimated messageExpression cost exceeds budget by factor of "
                        f"{_factor(message_cost, PER_EXPRESSION_LIMIT)} {_HINT}",
                    )
                )
    return Rule(
        rule=source,
        program=program,
        message=raw.get("message", ""),
        message_program=message_program,
        reason=raw.get("reason", "FieldValueInvalid"),
        field_path=raw.get("fieldPath", ""),
        uses_old_self=uses_old_self,
        optional_old_self=optional_old_self,
        static_cost=static_cost,
        static_message_cost=static_message_cost,
    )
