"""Comprehensions past the engine's iteration limit, driven from Python.

cel-cpp stops an evaluation after 10,000 comprehension iterations (`comprehension_max_iterations`,
a runtime option the Python binding does not expose); kube has no such limit, its cost limits bound
the work instead, and a rule over a list of 20,000 items is fine there if its cost is. So a program
whose evaluation hits the limit is evaluated again as a second program built at compile time,
where each macro comprehension (`all`, `exists`, `exists_one`, `map`, `filter`) is a call of
`FUNCTION`: Python loops over the range and evaluates the macro's predicate/transform, a separate
program, once per item, each evaluation a new engine frame with its own 10,000. The macros'
semantics are kept: `all`/`exists` stop at the first false/true and absorb errors of other items
as `&&`/`||` do; `exists_one`, `map`, `filter` fail on the first error.

The engine's own `map`/`filter` are quadratic (they copy the result list on every append), so the
first program already drives those whose range is large from Python (`large_maps_only`).

The callers bound every evaluation by a cost estimate before it runs (1e6 per call for a schema
rule, where each iteration costs at least 1); the guard here, `ITERATION_LIMIT` iterations per
evaluation (`budgeted`), keeps a runaway evaluation bounded whoever calls.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from cel_expr_python import cel

from apis.cel import checked

FUNCTION = "k8s_comprehension"  # declared only where programs run, so no rule can call it
ITEM = "k8s_comprehension_item"  # the current item of a macro, by key
ITERATION_LIMIT = 1_000_000  # kube's per-call cost limit; an iteration costs at least 1
_RESULT = "@result"


@dataclass(frozen=True, slots=True, weakref_slot=True)
class Macro:
    kind: str  # all | exists | exists_one | map
    names: tuple[str, ...]  # the variables the sub-programs read, passed to FUNCTION in order
    test: Any  # the predicate (all/exists/exists_one) or the filter of map (None: no filter)
    transform: Any  # map's transform (None: the item itself, as filter())
    env: Any  # where the sub-programs run


# FUNCTION finds its macro by key; the programs hold their macros, so a macro lives as long as the
# program that calls it (expressions compiled at runtime, e.g. matchConditions, come and go).
_MACROS: weakref.WeakValueDictionary[int, Macro] = weakref.WeakValueDictionary()
_KEYS = itertools.count()
_state = threading.local()


def item(key: int) -> Any:
    """The implementation of ITEM: the sub-programs read their macro's variable through it, so
    that one activation serves every item (building one converts every variable in it again,
    which would make `self.all(x, x < self.size())` quadratic in the size of self)."""
    return _state.items[key]


def run(range_value: Any, key: int, outer: list[Any]) -> Any:
    """The implementation of FUNCTION: one macro over `range_value` (a list, or a map's keys)."""
    macro = _MACROS[key]
    if not isinstance(range_value, list | dict):
        raise ValueError("No matching overloads found : <iter_range>")  # the engine's error
    activation = macro.env.Activation(data=dict(zip(macro.names, outer, strict=True)))
    items = _state.__dict__.setdefault("items", {})
    found_error: str | None = None
    count = 0
    mapped: list[Any] = []
    for value in range_value:
        _spend()
        items[key] = value
        if macro.kind in ("all", "exists"):
            try:
                result = _test(macro.test, activation, "_&&_" if macro.kind == "all" else "_||_")
            except ValueError as e:
                found_error = found_error or str(e)
                continue
            if result is (macro.kind == "exists"):
                return result
        elif macro.kind == "exists_one":
            count += _test(macro.test, activation, _CONDITION)
        elif macro.test is None or _test(macro.test, activation, _CONDITION):
            mapped.append(value if macro.transform is None else _evaluate(macro.transform, activation))
    if found_error is not None:
        raise ValueError(found_error)
    if macro.kind == "all":
        return True
    if macro.kind == "exists":
        return False
    return count == 1 if macro.kind == "exists_one" else mapped


def _spend() -> None:
    left = getattr(_state, "left", ITERATION_LIMIT) - 1
    if left < 0:
        raise ValueError("Iteration budget exceeded")
    _state.left = left


def budgeted(evaluate: Callable[[], Any], limit: int = ITERATION_LIMIT) -> Any:
    """Run one top-level evaluation of a rewritten program with a fresh iteration budget."""
    _state.left = limit
    try:
        return evaluate()
    finally:
        _state.left = ITERATION_LIMIT


_CONDITION = "<jump_condition>"  # the engine's name for the condition of `?:` in its error


def _test(expr: Any, activation: Any, operator: str) -> bool:
    """A predicate's value; anything but a bool is the engine's error for `operator` on it."""
    value = _evaluate(expr, activation)
    if not isinstance(value, bool):
        raise ValueError(f"No matching overloads found : {operator}")
    return value


def _evaluate(expr: Any, activation: Any) -> Any:
    value = expr.eval(activation=activation)
    if value.type() == cel.Type.ERROR:
        raise ValueError(_plain_error(str(value.plain_value())))
    return value.plain_value()


def _plain_error(text: str) -> str:
    head, sep, rest = text.partition(": ")
    return rest if sep and head.isupper() else text


def rewrite(
    checked_expr: Any,
    declared: frozenset[str],
    plan: Callable[[Any], Any],
    env: Any,
    *,
    large_maps_only: bool = False,
) -> list[Macro]:
    """Replace every macro comprehension in `checked_expr` with a FUNCTION call (innermost first,
    so a predicate's own macros are calls too); `plan` turns a CheckedExpr into an engine
    expression of `env`. The macros made, which the caller must keep (none: nothing to do).

    `large_maps_only`: only `map`/`filter`, and each only when its range has more than
    `NATIVE_MAP_ITEMS` items, the native comprehension otherwise. The engine appends to the
    result list by copying it (cel-cpp's list-append optimisation is a runtime option the binding
    does not set), so its `map` is quadratic: 9,000 items take seconds, where Python takes 50 ms.
    """
    found = [
        (node, bound)
        for node, bound in checked.walk_scoped(checked_expr.expr)
        if checked.kind(node) == "comprehension_expr"
        and (shape := _shape(node.comprehension_expr)) is not None
        and (not large_maps_only or shape[0] == "map")
    ]
    ids = itertools.count(checked.max_id(checked_expr.expr) + 1)
    made: list[Macro] = []
    for node, bound in reversed(found):
        c = node.comprehension_expr
        kind, test, transform = _shape(c)  # type: ignore[misc]
        parts = [p for p in (test, transform) if p is not None]
        free = set().union(*(_free(p) for p in parts)) - {c.iter_var}
        names = tuple(sorted(n for n in free if n in declared or n in bound))
        key = next(_KEYS)
        programs: list[Any] = []
        for part in (test, transform):
            if part is None:
                programs.append(None)
                continue
            copy = checked.Expr()
            copy.CopyFrom(part)
            _read_item(copy, c.iter_var, key, ids)
            programs.append(plan(_sub(checked_expr, copy)))
        macro = Macro(kind, names, programs[0], programs[1], env)
        _MACROS[key] = macro
        made.append(macro)
        if large_maps_only:
            _choose_by_size(node, key, names, ids)
        else:
            iter_range = checked.Expr()
            iter_range.CopyFrom(c.iter_range)
            node.Clear()
            _call(node, iter_range, key, names, ids)
    return made


NATIVE_MAP_ITEMS = 500
_RANGE = "@k8s_range"


def _call(node: Any, iter_range: Any, key: int, names: tuple[str, ...], ids: Iterator[int]) -> None:
    """Make `node` the call FUNCTION(iter_range, key, [names...])."""
    node.id = next(ids)
    call = node.call_expr
    call.function = FUNCTION
    call.args.add().CopyFrom(iter_range)
    const = call.args.add()
    const.id = next(ids)
    const.const_expr.int64_value = key
    outer = call.args.add()
    outer.id = next(ids)
    outer.list_expr.SetInParent()
    for name in names:
        _ident(outer.list_expr.elements.add(), name, ids)


def _wrap(node: Any, function: str, ids: Iterator[int]) -> Any:
    """Make `node` the call `function(<new node>)`; the new, empty argument node."""
    node.id = next(ids)
    node.call_expr.function = function
    return node.call_expr.args.add()


def _wrap_not(node: Any, ids: Iterator[int]) -> Any:
    return _wrap(node, "!_", ids)


def _ident(node: Any, name: str, ids: Iterator[int]) -> Any:
    node.id = next(ids)
    node.ident_expr.name = name
    return node


def _choose_by_size(node: Any, key: int, names: tuple[str, ...], ids: Iterator[int]) -> None:
    """Make the comprehension `node` `size(r) > NATIVE_MAP_ITEMS ? FUNCTION(r, ...) : <itself
    over r>`, with the range r evaluated once (bound as cel.bind binds: a comprehension over no
    items whose accumulator is r)."""
    native = checked.Expr()
    native.CopyFrom(node)
    native.id = next(ids)
    iter_range = checked.Expr()
    iter_range.CopyFrom(native.comprehension_expr.iter_range)
    _ident(native.comprehension_expr.iter_range, _RANGE, ids)
    node.ClearField("comprehension_expr")
    bind = node.comprehension_expr
    bind.iter_var = "@k8s_unused"
    bind.iter_range.id = next(ids)
    bind.iter_range.list_expr.SetInParent()
    bind.accu_var = _RANGE
    bind.accu_init.CopyFrom(iter_range)
    bind.loop_condition.id = next(ids)
    bind.loop_condition.const_expr.bool_value = False
    _ident(bind.loop_step, _RANGE, ids)
    choose = bind.result
    choose.id = next(ids)
    choose.call_expr.function = "_?_:_"
    # !@not_strictly_false(!(size(r) > N)): false when size() fails (r is not a list or map), so
    # that the native comprehension reports the error the engine always gives.
    condition = choose.call_expr.args.add()
    large = _wrap_not(_wrap(_wrap_not(condition, ids), "@not_strictly_false", ids), ids)
    large.id = next(ids)
    large.call_expr.function = "_>_"
    size = large.call_expr.args.add()
    size.id = next(ids)
    size.call_expr.function = "size"
    _ident(size.call_expr.args.add(), _RANGE, ids)
    bound = large.call_expr.args.add()
    bound.id = next(ids)
    bound.const_expr.int64_value = NATIVE_MAP_ITEMS
    range_ident = checked.Expr()
    _ident(range_ident, _RANGE, ids)
    _call(choose.call_expr.args.add(), range_ident, key, names, ids)
    choose.call_expr.args.add().CopyFrom(native)


def _read_item(expr: Any, iter_var: str, key: int, ids: Iterator[int]) -> None:
    """Make every free read of `iter_var` in `expr` a call of ITEM(key)."""
    for node, bound in list(checked.walk_scoped(expr)):
        if checked.kind(node) == "ident_expr" and node.ident_expr.name == iter_var and iter_var not in bound:
            node.Clear()
            node.id = next(ids)
            node.call_expr.function = ITEM
            const = node.call_expr.args.add()
            const.id = next(ids)
            const.const_expr.int64_value = key


def _sub(checked_expr: Any, expr: Any) -> Any:
    """A CheckedExpr of one sub-expression, with the whole expression's references and types."""
    sub = type(checked_expr)()
    sub.CopyFrom(checked_expr)
    sub.expr.CopyFrom(expr)
    return sub


def _free(expr: Any) -> set[str]:
    return {
        node.ident_expr.name
        for node, bound in checked.walk_scoped(expr)
        if checked.kind(node) == "ident_expr" and node.ident_expr.name not in bound
    }


def _shape(c: Any) -> tuple[str, Any, Any] | None:
    """(macro, test, transform) of a comprehension as the parser expands the macros, else None
    (e.g. the one-iteration comprehensions of `optMap`, which are left as they are)."""
    if c.accu_var != _RESULT or c.iter_var2:
        return None
    step = c.loop_step
    if checked.kind(step) != "call_expr":
        return None
    fn, args = step.call_expr.function, list(step.call_expr.args)
    if fn in ("_&&_", "_||_") and len(args) == 2 and _is_result(args[0]):
        return ("all" if fn == "_&&_" else "exists"), args[1], None
    if fn == "_+_" and len(args) == 2 and _is_result(args[0]) and _single_list(args[1]):
        return "map", None, args[1].list_expr.elements[0]
    if fn == "_?_:_" and len(args) == 3 and _is_result(args[2]):
        then = args[1]
        if checked.kind(then) != "call_expr" or len(then.call_expr.args) != 2:
            return None
        added = then.call_expr.args[1]
        if then.call_expr.function == "_+_" and _is_result(then.call_expr.args[0]):
            if checked.kind(added) == "const_expr":
                return "exists_one", args[0], None
            if _single_list(added):
                element = added.list_expr.elements[0]
                is_item = checked.kind(element) == "ident_expr" and element.ident_expr.name == c.iter_var
                return "map", args[0], None if is_item else element
    return None


def _is_result(expr: Any) -> bool:
    return checked.kind(expr) == "ident_expr" and expr.ident_expr.name == _RESULT


def _single_list(expr: Any) -> bool:
    return checked.kind(expr) == "list_expr" and len(expr.list_expr.elements) == 1
