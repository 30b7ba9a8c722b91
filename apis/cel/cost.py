"""Cost of an expression, as kube limits it: estimated from size bounds, or from the actual values.

cel-go estimates a checked AST's worst case (checker/cost.go) from the declared sizes of its inputs;
kube refuses a rule whose estimate exceeds its per-expression limit, and at runtime stops a rule whose
*tracked* cost exceeds the per-call limit or the request's budget. No Python engine tracks cost, so
the same walk is done twice: at startup over the schema's bounds (`Shape`s from maxItems/maxLength),
and before each evaluation over the actual values (`value_shape`), which bounds what the evaluation
can cost before it runs. The startup walk also records which sizes it read (`StaticCost`), so that
a write whose values are no larger there can use the startup result instead of walking again.
The unit costs follow cel-go's: 1 per identifier, field access, call and iteration; 0.1 per
character or element a string/list operation traverses; 10 to build a list.
"""

from __future__ import annotations

import math
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Protocol

from apis.cel import ast

STRING_TRAVERSAL = 0.1
LIST_CREATE = 10.0
MAP_CREATE = 30.0
# Functions whose cost is proportional to the size of their receiver/first argument.
_TRAVERSING = frozenset(
    {
        "contains",
        "startsWith",
        "endsWith",
        "matches",
        "find",
        "findAll",
        "indexOf",
        "lastIndexOf",
        "lowerAscii",
        "upperAscii",
        "replace",
        "split",
        "substring",
        "trim",
        "join",
        "charAt",
        "format",
        "string",
        "_==_",
        "_!=_",
    }
)
_LIST_WALKS = frozenset({"sum", "min", "max", "isSorted", "@in"})
# kube's library/cost.go for the object libraries: building one from a string costs 0.1 per
# character (twice for ip.isCanonical, which parses and prints; a named format's validate runs a
# regex of up to 128 characters, 0.25 per character of it, over the string); accessors and comparisons cost
# 1 (our default); containment compares up to two 16-byte addresses, plus parsing a string argument.
_PARSING = {
    "url": 1.0,
    "quantity": 1.0,
    "isQuantity": 1.0,
    "semver": 1.0,
    "isSemver": 1.0,
    "ip": 1.0,
    "isIP": 1.0,
    "cidr": 1.0,
    "isCIDR": 1.0,
    "ip.isCanonical": 2.0,
    "validate": 128 * 0.25,
}
_CONTAINMENT = {"containsIP": 4.0, "containsCIDR": 7.0}
# kube's cost.go for the authorizer library: a check has a fixed cost "set to allow for only two
# authorization checks per expression" (the per-call limit is 1e6); its builders and accessors cost 1
# (our default). A selector is parsed into requirements: a list (10), 0.1 per character, and per
# requirement (at most one per two characters) a struct and its values list (40 + 10).
AUTHZ_CHECK = 350_000.0
# What a check is charged in the estimate being made: 0 in `estimate_without_checks`.
_CHECK_COST: ContextVar[float] = ContextVar("cel_cost_authz_check", default=AUTHZ_CHECK)
_SELECTORS = frozenset({"fieldSelector", "labelSelector"})
_SELECTOR_REQUIREMENT = LIST_CREATE + 40.0


class Shape(Protocol):
    """What the estimator knows of a value: its largest size and the shapes of its parts."""

    def max_size(self) -> float: ...

    def field(self, name: str) -> Shape: ...

    def item(self) -> Shape: ...


@dataclass(frozen=True, slots=True)
class Sized:
    """A value known only by its size (a literal, a function result)."""

    size: float = 1.0
    items: Shape | None = None

    def max_size(self) -> float:
        return self.size

    def field(self, name: str) -> Shape:
        return SCALAR

    def item(self) -> Shape:
        return self.items or SCALAR


SCALAR = Sized(1.0)


@dataclass(frozen=True, slots=True)
class _ValueShape:
    value: Any

    def max_size(self) -> float:
        v = self.value
        return float(len(v)) if isinstance(v, str | bytes | list | dict) else 1.0

    def field(self, name: str) -> Shape:
        v = self.value
        return _ValueShape(v.get(name)) if isinstance(v, dict) else SCALAR

    def item(self) -> Shape:
        v = self.value
        if isinstance(v, list) and v:
            return _LargestItem(tuple(_ValueShape(x) for x in v))
        if isinstance(v, dict) and v:
            return _LargestItem(tuple(_ValueShape(k) for k in v))
        return SCALAR


@dataclass(frozen=True, slots=True)
class _LargestItem:
    """Every item of a list at once: an iteration costs at most what its largest item costs.
    (Also the larger of two values, as `a.orValue(b)` is one or the other.)"""

    shapes: tuple[Shape, ...]

    def max_size(self) -> float:
        return max(s.max_size() for s in self.shapes)

    def field(self, name: str) -> Shape:
        return _LargestItem(tuple(s.field(name) for s in self.shapes))

    def item(self) -> Shape:
        return _LargestItem(tuple(s.item() for s in self.shapes))


def value_shape(value: Any) -> Shape:
    return _ValueShape(value)


def estimate(node: ast.Node, variables: dict[str, Shape]) -> float:
    """Worst-case cost of `node` given the shapes of the variables it reads."""
    cost, _ = _walk(node, dict(variables))
    return cost


def _walk(node: ast.Node, scope: dict[str, Shape]) -> tuple[float, Shape]:
    if isinstance(node, ast.Const):
        return 0.0, Sized(float(node.size) if node.kind in ("string", "bytes") else 1.0)
    if isinstance(node, ast.Ident):
        return 1.0, scope.get(node.name, SCALAR)
    if isinstance(node, ast.Select):
        cost, shape = _walk(node.operand, scope)
        return cost + (0.0 if node.test_only else 1.0), SCALAR if node.test_only else shape.field(node.field)
    if isinstance(node, ast.CreateList):
        parts = [_walk(e, scope) for e in node.elements]
        largest = max((s.max_size() for _, s in parts), default=1.0)
        return LIST_CREATE + sum(c for c, _ in parts), Sized(float(len(parts)), Sized(largest))
    if isinstance(node, ast.CreateStruct):
        return MAP_CREATE + sum(_walk(v, scope)[0] for v in node.values), Sized(float(len(node.values)))
    if isinstance(node, ast.Comprehension):
        return _comprehension(node, scope)
    if isinstance(node, ast.Call):
        return _call(node, scope)
    return 1.0, SCALAR


def _comprehension(node: ast.Comprehension, scope: dict[str, Shape]) -> tuple[float, Shape]:
    range_cost, range_shape = _walk(node.iter_range, scope)
    count = range_shape.max_size()
    inner = dict(scope)
    inner[node.iter_var] = range_shape.item()
    init_cost, _ = _walk(node.accu_init, inner)
    # The accumulator of map()/filter() (a list) grows up to the range's size; exists_one's
    # counts and all()/exists()'s is a bool.
    list_accu = isinstance(node.accu_init, ast.CreateList)
    inner[node.accu_var] = Sized(count, range_shape.item()) if list_accu else SCALAR
    cond_cost, _ = _walk(node.loop_condition, inner)
    step_cost, _ = _walk(node.loop_step, inner)
    result_cost, result_shape = _walk(node.result, inner)
    return range_cost + init_cost + count * (cond_cost + step_cost) + result_cost, result_shape


def _call(node: ast.Call, scope: dict[str, Shape]) -> tuple[float, Shape]:
    parts = [_walk(a, scope) for a in ((node.target,) if node.target is not None else ()) + node.args]
    cost = sum(c for c, _ in parts)
    shapes = [s for _, s in parts]
    fn = node.function
    sizes = [s.max_size() for s in shapes]
    if fn == "_+_" and shapes:
        total = sum(sizes)
        # Concatenation copies both sides (0.1 per element/character); numbers cost 1.
        return cost + max(1.0, math.ceil(STRING_TRAVERSAL * total)), Sized(total, shapes[0].item())
    if fn in _LIST_WALKS and shapes:
        walked = sizes[-1] if fn == "@in" else sizes[0]
        return cost + 1.0 + walked, SCALAR
    if fn.startswith("sets.") and len(sizes) == 2:
        return cost + 1.0 + sizes[0] * sizes[1], SCALAR
    if fn in _PARSING and node.args:
        return cost + math.ceil(_PARSING[fn] * STRING_TRAVERSAL * sizes[-len(node.args)]), SCALAR
    if fn == "check" and node.target is not None:
        return cost + _CHECK_COST.get(), SCALAR
    if fn in _SELECTORS and node.args:
        size = sizes[-1]
        parse = math.ceil(STRING_TRAVERSAL * size) + math.ceil(0.5 * size) * _SELECTOR_REQUIREMENT
        return cost + LIST_CREATE + parse, SCALAR
    if fn in _CONTAINMENT and node.args:
        return cost + _CONTAINMENT[fn] + math.ceil(STRING_TRAVERSAL * sizes[-1]), SCALAR
    if fn in _TRAVERSING and shapes:
        traversed = sum(sizes)
        result = (
            Sized(traversed)
            if fn in ("format", "string", "replace", "join", "lowerAscii", "upperAscii")
            else SCALAR
        )
        if fn in ("split", "findAll"):
            result = Sized(sizes[0], Sized(sizes[0]))
        return cost + 1.0 + math.ceil(STRING_TRAVERSAL * traversed), result
    if fn in ("_[_]", "_[?_]") and shapes:
        return cost + 1.0, shapes[0].item()
    if fn in _OPTIONAL_PASSING and shapes:
        # An optional has its value's shape: `oldSelf.value().items` is as long as the items.
        return cost + 1.0, shapes[0] if len(shapes) == 1 else _LargestItem(tuple(shapes))
    if fn == "_?._" and len(node.args) == 2 and isinstance(node.args[1], ast.Const):
        return cost + 1.0, shapes[0].field(node.args[1].text)
    return cost + 1.0, SCALAR


def estimate_without_checks(node: ast.Node, variables: dict[str, Shape]) -> float:
    """`estimate` with authorization checks free: what an expression costs besides the checks it
    actually makes, which are charged `AUTHZ_CHECK` each as they happen (kube's runtime cost)."""
    token = _CHECK_COST.set(0.0)
    try:
        return estimate(node, variables)
    finally:
        _CHECK_COST.reset(token)


# Optional functions whose result has the shape of their receiver/argument (the larger of two).
_OPTIONAL_PASSING = frozenset({"value", "orValue", "or", "optional.of", "optional.ofNonZeroValue"})


# A path from a variable: field names, None for an item (a list's element, a map's key).
Path = tuple[str | None, ...]


@dataclass(frozen=True, slots=True)
class StaticCost:
    """An expression's worst case over declared bounds, with every size that estimate read.

    The estimator reads sizes at the same paths whatever the inputs (which ones depends only on the
    expression) and its result never decreases when one of them grows. So over actual values whose
    sizes at those paths are no larger than the ones read here, the actual estimate is at most
    `cost`: `bounds` checks exactly that, looking only at the parts of the values the expression
    reads, far cheaper than estimating again.
    """

    cost: float
    sizes: tuple[tuple[str, Path, float], ...]

    def bounds(self, values: dict[str, Any]) -> bool:
        """Whether `cost` is at least estimate(node, {v: value_shape(values[v])}) (a missing variable
        is null, as the estimator sees one it was not given)."""
        return all(_sizes_within(values.get(var), path, size) for var, path, size in self.sizes)


def estimate_static(node: ast.Node, variables: dict[str, Shape]) -> StaticCost:
    """`estimate` over declared shapes, remembering where it read which size."""
    reads: dict[tuple[str, Path], float] = {}
    cost = estimate(node, {name: _Reading(shape, name, (), reads) for name, shape in variables.items()})
    return StaticCost(cost, tuple((var, path, size) for (var, path), size in reads.items()))


@dataclass(frozen=True, slots=True)
class _Reading:
    """A declared shape that records the sizes read from it and its parts."""

    inner: Shape
    var: str
    path: Path
    reads: dict[tuple[str, Path], float]

    def max_size(self) -> float:
        size = self.inner.max_size()
        self.reads[(self.var, self.path)] = size
        return size

    def field(self, name: str) -> Shape:
        return _Reading(self.inner.field(name), self.var, (*self.path, name), self.reads)

    def item(self) -> Shape:
        return _Reading(self.inner.item(), self.var, (*self.path, None), self.reads)


def _sizes_within(value: Any, path: Path, size: float) -> bool:
    """Whether every value at `path` (all items where it says so) is no larger than `size`, each as
    value_shape sizes it: null and a scalar stand for a missing part, as SCALAR does. (Per write:
    tuples rather than unions in isinstance, the faster form.)"""
    level = [value]
    for step in path:
        if step is None:
            below: list[Any] = []
            for v in level:
                if isinstance(v, (list, dict)) and v:
                    below.extend(v)  # a map's items are its keys
                else:
                    below.append(None)
            level = below
        else:
            level = [v.get(step) if isinstance(v, dict) else None for v in level]
    for v in level:
        if isinstance(v, (str, bytes, list, dict)):
            if len(v) > size:
                return False
        elif size < 1.0:
            return False
    return True
